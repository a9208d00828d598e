"""A pushed spool manifest must be where the spool verifier may read it: what the template grants its role is
what the push accepts (``domain.spool_buckets``), for any list of buckets in ``SpoolBucketArns``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.spool_buckets import SPOOL_BUCKETS_PARAMETER, ReadableSpool
from lakehook.settings import Settings
from tests.sam_template import deployed
from tests.support import TEMPLATE

STACK = "lakehook-manifests-123456789012"
WAREHOUSE = "lakehook-warehouse"
BUCKETS = st.from_regex(r"[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]", fullmatch=True)


def evaluate(value: Any, parameters: dict[str, str]) -> Any:
    """The few intrinsics the spool statements use (Ref, Fn::Join, Fn::Split), as CloudFormation evaluates them."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, args),) = value.items()
        if name == "Ref":
            return parameters[args]
        if name == "Fn::Join":
            return args[0].join(evaluate(args[1], parameters))
        if name == "Fn::Split":
            return evaluate(args[1], parameters).split(args[0])
    if isinstance(value, list):
        return [evaluate(v, parameters) for v in value]
    return value


def spool_grants(role: str, arns: str) -> dict[str, list[str]]:
    """Action → resources of the role's HasSpoolBuckets statements, as deployed with SpoolBucketArns = arns."""
    properties = deployed()["Resources"][role]["Properties"]
    (entry,) = [p for p in properties["Policies"] if p.get("Fn::If", [None])[0] == "HasSpoolBuckets"]
    _, then, otherwise = entry["Fn::If"]
    assert otherwise == {"Ref": "AWS::NoValue"}  # nothing at all without a bucket listed
    grants: dict[str, list[str]] = {}
    for statement in then["PolicyDocument"]["Statement"]:
        (action,) = statement["Action"]
        grants[action] = evaluate(statement["Resource"], {SPOOL_BUCKETS_PARAMETER: arns})
    return grants


@settings(deadline=None)  # the first example translates the template (SAM), once
@given(buckets=st.lists(BUCKETS, min_size=1, max_size=5, unique=True), other=BUCKETS)
def test_the_verifier_and_the_replay_read_exactly_the_buckets_a_push_may_name(buckets: list[str], other: str) -> None:
    arns = ",".join(f"arn:aws:s3:::{b}" for b in buckets)
    assert re.fullmatch(TEMPLATE.document["Parameters"][SPOOL_BUCKETS_PARAMETER]["AllowedPattern"], arns)
    for role in ("SpoolVerifierFunctionRole", "ReplayApiFunctionRole"):
        assert spool_grants(role, arns) == {
            "s3:GetObject": [f"arn:aws:s3:::{b}/*" for b in buckets],
            "s3:ListBucket": [f"arn:aws:s3:::{b}" for b in buckets],
        }
    readable = ReadableSpool.of(STACK, WAREHOUSE, arns)
    for bucket in buckets:
        assert readable.refusal(f"s3://{bucket}/spool/run-1.manifest.json") is None
    if other not in (*buckets, STACK, WAREHOUSE):
        refusal = readable.refusal(f"s3://{other}/run-1.manifest.json")
        assert refusal is not None and repr(other) in refusal and SPOOL_BUCKETS_PARAMETER in refusal


def test_the_stacks_own_bucket_is_readable_under_spool_only_and_the_warehouse_anywhere() -> None:
    readable = ReadableSpool.of(STACK, WAREHOUSE, "")
    assert readable.refusal(f"s3://{STACK}/spool/orders/run.manifest.json") is None
    assert readable.refusal(f"s3://{WAREHOUSE}/extracts/run.manifest.json") is None
    refusal = readable.refusal(f"s3://{STACK}/manifests/run.manifest.json")
    assert refusal is not None and f"s3://{STACK}/spool/" in refusal


def test_every_function_is_told_the_buckets_and_the_template_states_the_verifiers_own_grants() -> None:
    environment = TEMPLATE.document["Globals"]["Function"]["Environment"]["Variables"]
    assert environment["LAKEHOOK_SPOOL_BUCKET_ARNS"] == {"Ref": SPOOL_BUCKETS_PARAMETER}
    assert environment["LAKEHOOK_WAREHOUSE_BUCKET_NAME"] == {"Ref": "WarehouseBucketName"}


@given(arn=st.text(max_size=80))
def test_a_malformed_bucket_arn_is_refused_when_the_settings_load(arn: str) -> None:
    if re.fullmatch(r"\s*(arn:[a-z-]+:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])?\s*", arn) or "," in arn:
        return
    with pytest.raises(ValueError, match=SPOOL_BUCKETS_PARAMETER):
        Settings(spool_bucket_arns=arn)


def test_the_local_stack_reads_any_bucket_and_a_deployed_one_its_list() -> None:
    assert Settings(admin_token="local").readable_spool is None
    deployed_stack = Settings(  # not local whatever LAKEHOOK_* variables an earlier test left in the environment
        bucket_name=STACK,
        spool_bucket_arns="arn:aws:s3:::partner-spool",
        admin_token=None,
        allow_insecure_loopback_targets=False,
    )
    assert deployed_stack.readable_spool == ReadableSpool(STACK, frozenset({"partner-spool"}))
