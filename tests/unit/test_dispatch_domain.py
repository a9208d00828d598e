"""Dispatch domain: the run manifest and its hash, the invocation payload, retries, outcomes, target configs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.dispatch import (
    Invocation,
    ManifestIntegrityError,
    OutcomeKind,
    RetryPolicy,
    RunManifest,
    classify_http_status,
    http_outcome,
    payload_identity,
)
from lakehook.domain.json_form import json_form
from lakehook.domain.targets import (
    AirflowTarget,
    DolphinSchedulerTarget,
    EventBridgeTarget,
    InvalidTargetError,
    LambdaTarget,
    StepFunctionsTarget,
    WebhookTarget,
    validate_target,
)
from lakehook.domain.triggers import PinnedInput, Trigger, Window, trigger_key
from tests.hypothesis_profiles import examples

A = "paimon://lake/ods_db/ods_order_latest"
B = "iceberg://glue/ods_db/ods_payment_latest"
CLAIMED_AT = 1_725_963_330_123


def trigger(window: Window | None = None, epoch: int = 0, **pins: Any) -> Trigger:
    inputs = (
        PinnedInput(asset_key=A, snapshot_id=1001, schema_id=5, commit_time=1_725_963_000_000),
        PinnedInput(asset_key=B, snapshot_id=77, watermark=1_725_960_000_000),
    )
    key = trigger_key("dwd_trade", "trade_group", inputs, window, epoch)
    return Trigger(
        trigger_key=key,
        rule_id="dwd_trade",
        group_id="trade_group",
        inputs=inputs,
        window=window,
        replay_epoch=epoch,
        created_at=CLAIMED_AT,
        updated_at=CLAIMED_AT,
        **pins,
    )


# --- the run manifest ---------------------------------------------------------------------------------


def test_the_manifest_pins_every_input_with_the_claim_time() -> None:
    manifest = RunManifest.for_trigger(trigger())
    body = manifest.body()
    assert body["triggerKey"] == trigger().trigger_key
    assert body["ruleId"] == "dwd_trade" and body["groupId"] == "trade_group"
    assert body["createdAt"] == "2024-09-10T10:15:30.123Z"
    assert body["inputs"] == [
        {"assetKey": A, "snapshotId": 1001, "schemaId": 5, "commitTime": 1_725_963_000_000},
        {"assetKey": B, "snapshotId": 77, "watermark": 1_725_960_000_000},
    ]


def test_the_manifest_is_the_same_bytes_on_every_attempt() -> None:
    # A retry after a crash rebuilds the manifest from the claim: it must not differ by a byte.
    first, second = RunManifest.for_trigger(trigger()), RunManifest.for_trigger(trigger())
    assert first.document() == second.document()


def test_the_stored_hash_is_the_sha256_of_the_canonical_json_without_it() -> None:
    manifest = RunManifest.for_trigger(trigger())
    document = json.loads(manifest.document())
    claimed = document.pop("sha256")
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert claimed == hashlib.sha256(canonical).hexdigest() == manifest.sha256


def test_a_stored_manifest_reads_back_and_a_tampered_one_is_refused() -> None:
    manifest = RunManifest.for_trigger(trigger())
    assert RunManifest.from_document(manifest.document()) == manifest
    tampered = manifest.document().replace(b"1001", b"1002")
    with pytest.raises(ManifestIntegrityError, match="does not match"):
        RunManifest.from_document(tampered)
    with pytest.raises(ManifestIntegrityError):
        RunManifest.from_document(b"not json")


def test_a_windowed_trigger_puts_its_interval_on_every_input() -> None:
    window = Window(start=1_749_722_400_000, end=1_749_726_000_000)
    manifest = RunManifest.for_trigger(trigger(window=window))
    interval = {"start": "2025-06-12T10:00:00Z", "end": "2025-06-12T11:00:00Z"}
    assert manifest.window == interval
    assert all(i.interval == interval for i in manifest.inputs)


def test_different_pins_make_a_different_manifest_hash() -> None:
    assert RunManifest.for_trigger(trigger()).sha256 != RunManifest.for_trigger(trigger(epoch=1)).sha256


# --- the invocation payload -----------------------------------------------------------------------------


def test_the_payload_has_the_design_shape() -> None:
    claim = trigger()
    manifest = RunManifest.for_trigger(claim)
    payload = Invocation.of(claim, manifest, "s3://b/manifests/k.json", attempt=2, completion_token="ab" * 32).payload()
    assert set(payload) == {
        "triggerKey",
        "ruleId",
        "groupId",
        "inputs",
        "window",
        "manifestUri",
        "replayOf",
        "attempt",
        "completionPath",
        "completionToken",
    }
    assert payload["completionPath"] == f"/runs/{claim.trigger_key}/complete"
    assert payload["completionToken"] == "ab" * 32
    assert payload["triggerKey"] == claim.trigger_key
    assert payload["inputs"][0] == {"assetKey": A, "snapshotId": 1001, "schemaId": 5, "commitTime": 1_725_963_000_000}
    assert payload["manifestUri"] == "s3://b/manifests/k.json"
    assert payload["attempt"] == 2 and payload["replayOf"] is None


def test_the_completion_token_travels_in_the_invocation_only_never_in_the_manifest() -> None:
    claim = trigger()
    manifest = RunManifest.for_trigger(claim)
    token = "cd" * 32
    invocation = Invocation.of(claim, manifest, "s3://b/m.json", attempt=1, completion_token=token)
    assert token.encode() in invocation.body()
    assert token.encode() not in manifest.document() and b"completion" not in manifest.document()
    # A rotated completion key changes the token, not the run a target recognizes.
    rotated = Invocation.of(claim, manifest, "s3://b/m.json", attempt=1, completion_token="ef" * 32)
    assert rotated.identity() == invocation.identity() and rotated.body() != invocation.body()
    assert token not in repr(invocation)


def test_the_payload_identity_ignores_only_the_attempt() -> None:
    claim = trigger()
    manifest = RunManifest.for_trigger(claim)
    one = Invocation.of(claim, manifest, "s3://b/m.json", attempt=1)
    three = Invocation.of(claim, manifest, "s3://b/m.json", attempt=3)
    other = Invocation.of(trigger(epoch=1), RunManifest.for_trigger(trigger(epoch=1)), "s3://b/m.json", attempt=1)
    assert one.body() != three.body()
    assert one.identity() == three.identity() == payload_identity(json.loads(three.body()))
    assert other.identity() != one.identity()


def test_a_replay_sent_with_the_original_manifest_says_what_it_replays() -> None:
    original = trigger()
    replay = trigger(epoch=1)
    manifest = RunManifest.for_trigger(original)
    payload = Invocation.of(replay, manifest, "s3://b/manifests/orig.json", attempt=1).payload()
    assert payload["triggerKey"] == replay.trigger_key
    assert payload["replayOf"] == original.trigger_key
    assert payload["inputs"] == [json_form(i) for i in manifest.inputs]


# --- retries ---------------------------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay_seconds=0.5, max_delay_seconds=8.0)
    assert [policy.ceiling(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_full_jitter_spans_zero_to_the_ceiling() -> None:
    policy = RetryPolicy(max_attempts=5, base_delay_seconds=1.0, max_delay_seconds=30.0)
    assert policy.delay(3, rand=lambda: 0.0) == 0.0
    assert policy.delay(3, rand=lambda: 1.0) == 4.0
    assert policy.delay(3, rand=lambda: 0.25) == 1.0


def test_retry_after_is_a_floor_but_never_beyond_the_cap() -> None:
    policy = RetryPolicy(max_attempts=5, base_delay_seconds=1.0, max_delay_seconds=10.0)
    assert policy.delay(1, rand=lambda: 0.0, at_least=3.0) == 3.0
    assert policy.delay(1, rand=lambda: 0.0, at_least=3600.0) == 10.0


@settings(max_examples=examples(200), deadline=None)
@given(attempt=st.integers(1, 10_000), r=st.floats(0, 1), base=st.floats(0, 5), extra=st.floats(0, 100))
def test_a_delay_is_never_negative_nor_beyond_the_cap(attempt: int, r: float, base: float, extra: float) -> None:
    policy = RetryPolicy(max_attempts=3, base_delay_seconds=base, max_delay_seconds=base + extra)
    assert 0.0 <= policy.delay(attempt, rand=lambda: r) <= base + extra


def test_a_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_seconds=5, max_delay_seconds=1)
    assert RetryPolicy(max_attempts=3).exhausted(3) and not RetryPolicy(max_attempts=3).exhausted(2)


# --- outcomes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, "STARTED"),
        (201, "STARTED"),
        (202, "STARTED"),
        (409, "ALREADY_STARTED"),
        (429, "RETRYABLE"),
        (408, "RETRYABLE"),
        (500, "RETRYABLE"),
        (503, "RETRYABLE"),
        (400, "FATAL"),
        (401, "FATAL"),
        (403, "FATAL"),
        (404, "FATAL"),
        (422, "FATAL"),
        (302, "FATAL"),
    ],
)
def test_http_statuses_are_classified(status: int, kind: str) -> None:
    assert classify_http_status(status) is OutcomeKind(kind)


def test_a_5xx_may_have_acted_and_a_429_did_not() -> None:
    server_error = http_outcome(502, "run-1", "bad gateway")
    throttled = http_outcome(429, "run-1", "slow down", retry_after="7")
    assert server_error.ambiguous and server_error.code == "http_502"
    assert not throttled.ambiguous and throttled.code == "throttled" and throttled.retry_after_seconds == 7.0
    assert http_outcome(400, "run-1", "no").kind is OutcomeKind.FATAL
    assert http_outcome(201, "run-1", "").run_id == "run-1"


# --- target configs ---------------------------------------------------------------------------------------

VALID: list[tuple[dict[str, Any], type]] = [
    (
        {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "lakehook/targets/dwd"},
        WebhookTarget,
    ),
    (
        {"type": "stepfunctions", "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:dwd"},
        StepFunctionsTarget,
    ),
    ({"type": "lambda", "functionName": "dwd-loader", "qualifier": "live"}, LambdaTarget),
    ({"type": "eventbridge", "eventBusName": "lakehook-runs"}, EventBridgeTarget),
    (
        {
            "type": "airflow",
            "baseUrl": "https://airflow.example.com/",
            "dagId": "dwd_trade",
            "credentialsRef": "lakehook/targets/airflow",
        },
        AirflowTarget,
    ),
    (
        {
            "type": "dolphinscheduler",
            "baseUrl": "https://ds.example.com/dolphinscheduler",
            "projectCode": 12,
            "processDefinitionCode": 345,
            "tokenRef": "lakehook/targets/ds",
        },
        DolphinSchedulerTarget,
    ),
]


@pytest.mark.parametrize(("config", "model"), VALID)
def test_every_target_type_validates(config: dict[str, Any], model: type) -> None:
    parsed = validate_target(config)
    assert isinstance(parsed, model)
    assert parsed.type == config["type"]


def test_defaults_and_normalization() -> None:
    airflow = validate_target(VALID[4][0])
    assert isinstance(airflow, AirflowTarget) and airflow.base_url == "https://airflow.example.com"
    bus = validate_target(VALID[3][0])
    assert isinstance(bus, EventBridgeTarget) and bus.source == "lakehook" and bus.detail_type == "lakehook.trigger"


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        ({"type": "ftp"}, "target.type", "must be one of"),
        ({"url": "https://x"}, "target.type", "must be one of"),
        (
            {"type": "webhook", "url": "https://x.example.com", "secretRef": "s", "retries": 3},
            "target.retries",
            "Extra inputs",
        ),
        (
            {"type": "webhook", "url": "http://scheduler.example.com/hook", "secretRef": "s"},
            "target.url",
            "only to a loopback host",
        ),
        (
            {"type": "webhook", "url": "https://user:pw@scheduler.example.com/", "secretRef": "s"},
            "target.url",
            "credentials",
        ),
        ({"type": "webhook", "url": "https://x.example.com"}, "target.secretRef", "Field required"),
        (
            {"type": "webhook", "url": "https://x.example.com", "secretRef": "s", "timeoutSeconds": 120},
            "target.timeoutSeconds",
            "less than or equal",
        ),
        ({"type": "stepfunctions", "stateMachineArn": "dwd"}, "target.stateMachineArn", "pattern"),
        ({"type": "eventbridge", "eventBusName": "b", "source": "aws.events"}, "target.source", "reserved"),
        (
            {
                "type": "dolphinscheduler",
                "baseUrl": "https://ds",
                "projectCode": 0,
                "processDefinitionCode": 1,
                "tokenRef": "t",
            },
            "target.projectCode",
            "greater than 0",
        ),
    ],
)
def test_a_bad_target_is_refused_naming_the_field(config: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidTargetError) as caught:
        validate_target(config)
    assert caught.value.field == field
    assert message in str(caught.value)


def test_plain_http_is_valid_only_to_loopback() -> None:
    for host in ("127.0.0.1", "localhost", "[::1]", "127.0.0.2"):
        assert validate_target({"type": "webhook", "url": f"http://{host}:8080/hook", "secretRef": "s"})
    with pytest.raises(InvalidTargetError):
        validate_target({"type": "webhook", "url": "http://10.0.0.1/hook", "secretRef": "s"})


def test_a_rule_validator_can_call_it_directly() -> None:
    # InvalidTargetError is a ValueError: inside a pydantic validator it becomes a field error.
    class RuleLike(BaseModel):
        target: dict[str, Any]

        @field_validator("target")
        @classmethod
        def _target(cls, value: dict[str, Any]) -> dict[str, Any]:
            validate_target(value)
            return value

    with pytest.raises(PydanticValidationError) as caught:
        RuleLike(target={"type": "lambda"})
    assert "target.functionName: Field required" in str(caught.value)
    assert RuleLike(target=VALID[2][0]).target == VALID[2][0]
