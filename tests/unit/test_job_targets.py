"""The job targets' models (Glue, EMR Serverless, ...): checked when a rule is written, a bad field named."""

from __future__ import annotations

import re
from pathlib import Path

import boto3
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from lakehook.adapters.targets import TargetDeps, build_target_clients
from lakehook.domain.dispatch import TargetUnavailableError
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.targets import (
    MAX_GLUE_ARGUMENTS,
    RESERVED_ARGUMENT_PREFIX,
    GlueJobTarget,
    InvalidTargetError,
    validate_target,
)
from tests.fakes.memory import InMemorySecretStore

ARGUMENT_NAMES = st.from_regex(r"--[A-Za-z0-9_.-]{1,126}", fullmatch=True)


@pytest.mark.parametrize(
    ("target", "field", "says"),
    [
        ({"type": "glue"}, "target.jobName", "Field required"),
        ({"type": "glue", "jobName": "a b"}, "target.jobName", "should match pattern"),
        ({"type": "glue", "jobName": "j" * 256}, "target.jobName", "should match pattern"),
        ({"type": "glue", "jobName": "j", "arguments": {"env": "x"}}, "target.arguments", "must match"),
        ({"type": "glue", "jobName": "j", "arguments": {"--lakehook_payload": "x"}}, "target.arguments", "lakehook's"),
        ({"type": "glue", "jobName": "j", "arguments": {"--a": "x" * 4097}}, "target.arguments", "4096"),
        ({"type": "glue", "jobName": "j", "arguments": {"--a": 1}}, "target.arguments.--a", "valid string"),
        ({"type": "glue", "jobName": "j", "jobname": "x"}, "target.jobname", "Extra inputs"),
    ],
)
def test_a_bad_glue_target_is_refused_naming_the_field(target: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        validate_target(target)
    assert refused.value.field == field and says in str(refused.value)


def test_a_glue_target_takes_at_most_fifty_arguments() -> None:
    many = {f"--a{i}": "x" for i in range(MAX_GLUE_ARGUMENTS + 1)}
    with pytest.raises(InvalidTargetError, match="at most 50 arguments"):
        validate_target({"type": "glue", "jobName": "j", "arguments": many})


@given(names=st.lists(ARGUMENT_NAMES, max_size=5, unique=True), value=st.text(max_size=64))
def test_glue_arguments_are_taken_unless_they_name_lakehooks_own(names: list[str], value: str) -> None:
    arguments = dict.fromkeys(names, value)
    if any(name.startswith(RESERVED_ARGUMENT_PREFIX) for name in names):
        with pytest.raises(InvalidTargetError, match="lakehook's"):
            validate_target({"type": "glue", "jobName": "j", "arguments": arguments})
        return
    target = validate_target({"type": "glue", "jobName": "lakehook-j", "arguments": arguments})
    assert isinstance(target, GlueJobTarget) and (target.arguments or {}) == arguments
    assert json_form(target) == {"type": "glue", "jobName": "lakehook-j", "arguments": arguments}


EMR = {
    "type": "emrserverless",
    "applicationId": "00fabcdef1234567",
    "executionRoleArn": "arn:aws:iam::123456789012:role/lakehook-emr",
    "jobDriver": {"sparkSubmit": {"entryPoint": "s3://code/dwd.py"}},
}


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"applicationId": "APP-1"}, "target.applicationId", "should match pattern"),
        ({"executionRoleArn": "arn:aws:iam::123:role/x"}, "target.executionRoleArn", "should match pattern"),
        ({"executionRoleArn": "arn:aws:iam::123456789012:user/x"}, "target.executionRoleArn", "should match pattern"),
        ({"jobDriver": {"hive": {"query": "s3://q.sql"}}}, "target.jobDriver.sparkSubmit", "Field required"),
        ({"jobDriver": {"sparkSubmit": {}}}, "target.jobDriver.sparkSubmit.entryPoint", "Field required"),
        (
            {"jobDriver": {"sparkSubmit": {"entryPoint": "s3://a.py", "entryPointArgs": []}}},
            "target.jobDriver.sparkSubmit.entryPointArgs",
            "Extra inputs",
        ),
        ({"executionTimeoutMinutes": 4}, "target.executionTimeoutMinutes", "greater than or equal to 5"),
        ({"clientToken": "x"}, "target.clientToken", "Extra inputs"),
    ],
)
def test_a_bad_emr_serverless_target_is_refused_naming_the_field(
    change: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        validate_target({**EMR, **change})
    assert refused.value.field == field and says in str(refused.value)


def test_an_emr_serverless_target_reads_back_as_written() -> None:
    written = {**EMR, "jobDriver": {"sparkSubmit": {"entryPoint": "s3://a.py", "entryPointArguments": ["--x", "1"]}}}
    assert json_form(validate_target(written)) == written


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"type": "batch", "jobDefinition": "d"}, "target.jobQueue"),
        ({"type": "batch", "jobQueue": "q q", "jobDefinition": "d"}, "target.jobQueue"),
        (
            {"type": "batch", "jobQueue": "arn:aws:batch:us-east-1:123:job-queue/q", "jobDefinition": "d"},
            "target.jobQueue",
        ),
        ({"type": "batch", "jobQueue": "q", "jobDefinition": "d:0"}, "target.jobDefinition"),
        (
            {"type": "batch", "jobQueue": "q", "jobDefinition": "arn:aws:batch:us-east-1:123456789012:job-queue/d"},
            "target.jobDefinition",
        ),
    ],
)
def test_a_bad_batch_target_is_refused_naming_the_field(target: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        validate_target(target)
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("queue", "definition"),
    [
        ("lakehook-q", "lakehook-d"),
        ("arn:aws:batch:eu-west-1:123456789012:job-queue/lakehook-q", "lakehook-d:12"),
        ("lakehook-q", "arn:aws-cn:batch:cn-north-1:123456789012:job-definition/lakehook-d:3"),
    ],
)
def test_a_batch_target_takes_names_revisions_and_arns(queue: str, definition: str) -> None:
    written = {"type": "batch", "jobQueue": queue, "jobDefinition": definition}
    assert json_form(validate_target(written)) == written


ECS = {"type": "ecs", "cluster": "lakehook-etl", "taskDefinition": "lakehook-dwd:3", "containerName": "dwd"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cluster": "etl/x"}, "target.cluster"),
        ({"cluster": "arn:aws:ecs:us-east-1:123456789012:service/etl"}, "target.cluster"),
        ({"taskDefinition": "dwd:0"}, "target.taskDefinition"),
        ({"containerName": ""}, "target.containerName"),
        ({"launchType": "LAMBDA"}, "target.launchType"),
        (
            {"networkConfiguration": {"awsvpcConfiguration": {"subnets": []}}},
            "target.networkConfiguration.awsvpcConfiguration.subnets",
        ),
        (
            {"networkConfiguration": {"awsvpcConfiguration": {"subnets": ["vpc-1"]}}},
            "target.networkConfiguration.awsvpcConfiguration.subnets.0",
        ),
        (
            {
                "networkConfiguration": {
                    "awsvpcConfiguration": {"subnets": ["subnet-0123abcd"], "securityGroups": ["x"]}
                }
            },
            "target.networkConfiguration.awsvpcConfiguration.securityGroups.0",
        ),
        ({"overrides": {}}, "target.overrides"),
    ],
)
def test_a_bad_ecs_target_is_refused_naming_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        validate_target({**ECS, **change})
    assert refused.value.field == field


def test_an_ecs_target_reads_back_as_written() -> None:
    network = {"awsvpcConfiguration": {"subnets": ["subnet-0123abcd"], "assignPublicIp": "ENABLED"}}
    written = {
        **ECS,
        "cluster": "arn:aws:ecs:eu-west-1:123456789012:cluster/lakehook-etl",
        "launchType": "FARGATE",
        "networkConfiguration": network,
    }
    assert json_form(validate_target(written)) == written


def test_the_job_targets_make_their_aws_clients_only_when_they_dispatch() -> None:
    """Building every plug-in (a dispatcher's cold start) makes no Glue, EMR Serverless, Batch or ECS client."""
    made: list[str] = []

    def aws(service: str) -> object:
        made.append(service)
        return boto3.session.Session(region_name="us-east-1").client(service)

    targets = build_target_clients(TargetDeps(secrets=InMemorySecretStore(), aws=aws))
    assert not {"glue", "emr-serverless", "batch", "ecs"} & set(made)
    client = targets["glue"]._client  # type: ignore[attr-defined]
    assert client.meta.service_model.service_name == "glue" and made.count("glue") == 1
    assert client.meta.region_name == "us-east-1" and made.count("glue") == 1  # made once


@pytest.mark.parametrize("type_name", ["glue", "emrserverless", "batch", "ecs"])
def test_the_documented_example_of_each_job_target_is_a_rule_that_validates(type_name: str) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "targets.md").read_text(encoding="utf-8")
    start = page.index(f"## `{type_name}`")
    section = page[start : page.find("\n## ", start + 1) if page.find("\n## ", start + 1) != -1 else None]
    [example] = re.findall(r"```yaml\n(.*?)```", section, re.S)
    [rule] = yaml.safe_load(example)["rules"]
    assert Rule.model_validate(rule).target.type == type_name


@pytest.mark.parametrize("type_name", ["glue", "emrserverless", "batch", "ecs"])
def test_a_job_targets_client_that_cannot_be_made_leaves_its_run_unconfirmed_not_the_dispatch_failed(
    type_name: str,
) -> None:
    """Confirming before a retry is often a container's first use of the client: a client that cannot be made (here
    a profile that does not exist, a BotoCoreError) is TargetUnavailableError, as a failed list request is, which the
    dispatcher records as RETRYABLE ``confirm_unavailable``; it used to escape find_run as the BotoCoreError."""

    def aws(service: str) -> object:
        if service not in ("glue", "emr-serverless", "batch", "ecs"):  # the other plug-ins' clients: made as usual
            return boto3.session.Session(region_name="us-east-1").client(service)
        return boto3.session.Session(region_name="us-east-1", profile_name="lakehook-no-such-profile").client(service)

    client = build_target_clients(TargetDeps(secrets=InMemorySecretStore(), aws=aws))[type_name]
    written = {
        "glue": {"type": "glue", "jobName": "lakehook-j"},
        "emrserverless": EMR,
        "batch": {"type": "batch", "jobQueue": "q", "jobDefinition": "d"},
        "ecs": ECS,
    }
    config = validate_target(written[type_name])
    with pytest.raises(TargetUnavailableError, match="ProfileNotFound"):
        client.find_run("r.g.0123456789abcdef01234567", config, 1_750_000_000_000)
