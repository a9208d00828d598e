"""The AWS Batch target on in-process moto (its Docker-free Batch): a job per key, the key and payload in the
container's environment, confirmed through ListJobs by the key-derived job name before any retry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.targets.aws_runs import KEY_VARIABLE, PAYLOAD_VARIABLE, run_name
from lakehook.adapters.targets.batch import BatchTargetClient
from lakehook.domain.dispatch import OutcomeKind
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import TriggerStatus
from lakehook.receiver import from_environment
from lakehook.usecases.dispatch import DispatchStatus
from tests.aws_dispatch import MotoDispatch
from tests.input_details import assert_details, detailed
from tests.integration.test_targets_aws import REGION, T0, claim, invocation

QUEUE = "lakehook-dwd"
DEFINITION = "lakehook-dwd-trade"


@pytest.fixture
def batch() -> Iterator[Any]:
    with mock_aws(config={"batch": {"use_docker": False}}):
        iam = boto3.client("iam", region_name=REGION)
        role = iam.create_role(RoleName="lakehook-batch", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        client = boto3.client("batch", region_name=REGION)
        env = client.create_compute_environment(
            computeEnvironmentName="lakehook-env", type="UNMANAGED", state="ENABLED", serviceRole=role
        )
        client.create_job_queue(
            jobQueueName=QUEUE,
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": env["computeEnvironmentArn"]}],
        )
        client.register_job_definition(
            jobDefinitionName=DEFINITION,
            type="container",
            containerProperties={"image": "dwd:1", "vcpus": 1, "memory": 512, "command": ["python", "dwd.py"]},
        )
        yield client


def target(**change: Any) -> Any:
    return validate_target({"type": "batch", "jobQueue": QUEUE, "jobDefinition": DEFINITION, **change})


def test_batch_submits_a_job_with_the_key_and_payload_in_its_environment(batch: Any) -> None:
    plugin = BatchTargetClient(batch)
    trigger = claim()
    assert plugin.find_run(trigger.trigger_key, target(), T0) is None
    started = plugin.start(invocation(trigger), target())
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    [job] = batch.describe_jobs(jobs=[started.run_id])["jobs"]
    assert job["jobName"] == run_name(trigger.trigger_key)
    environment = {e["name"]: e["value"] for e in job["container"]["environment"]}
    assert environment[KEY_VARIABLE] == trigger.trigger_key
    assert json.loads(environment[PAYLOAD_VARIABLE]) == invocation(trigger).payload()
    assert from_environment(environment).trigger_key == trigger.trigger_key
    assert plugin.find_run(trigger.trigger_key, target(), T0) == started.run_id
    assert plugin.find_run(claim(snapshot=1002).trigger_key, target(), T0) is None


def test_batch_job_names_fit_batch_and_never_collide() -> None:
    names = {run_name(claim(snapshot=s, rule_id="_r" * 40).trigger_key) for s in range(50)}
    assert len(names) == 50
    assert all(len(n) <= 128 and n[0].isalpha() and all(c.isalnum() or c in "-_" for c in n) for n in names)


def test_batch_run_status_and_a_missing_job(batch: Any) -> None:
    """moto's Docker-free Batch ends a job at once: its slot is freed; a job Batch has not is None."""
    plugin = BatchTargetClient(batch)
    run_id = plugin.start(invocation(claim()), target()).run_id
    assert run_id is not None
    state = plugin.run_state(run_id, target())
    assert state is not None and not state.waiting and state.detail is not None and state.detail.startswith("Batch: ")
    assert plugin.run_state("00000000-0000-0000-0000-000000000000", target()) is None


def test_batch_a_missing_queue_or_definition_is_fatal(batch: Any) -> None:
    plugin = BatchTargetClient(batch)
    for bad in ({"jobQueue": "lakehook-none"}, {"jobDefinition": "lakehook-none"}):
        refused = plugin.start(invocation(claim()), target(**bad))
        assert refused.kind is OutcomeKind.FATAL and refused.code == "aws_ClientException", bad


def test_dispatch_on_batch_confirms_a_job_submitted_before_a_crash(batch: Any) -> None:
    on_batch = MotoDispatch(claim(), {"type": "batch", "jobQueue": QUEUE, "jobDefinition": DEFINITION}, REGION, [T0])
    started, _ = on_batch.crash_after_start()
    assert started.kind is OutcomeKind.STARTED
    result = on_batch.redrive_after_the_lease()
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == started.run_id
    assert (
        len(batch.list_jobs(jobQueue=QUEUE, filters=[{"name": "JOB_NAME", "values": ["lakehook-*"]}])["jobSummaryList"])
        == 1
    )
    stored = on_batch.claims.get(on_batch.trigger.trigger_key)
    assert stored is not None and stored.status is TriggerStatus.SUCCEEDED and stored.target_run_id == started.run_id


def test_batch_receives_the_inputs_details_in_its_environment(batch: Any) -> None:
    plugin = BatchTargetClient(batch)
    started = plugin.start(detailed(claim(), limit=plugin.payload_limit), target())
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    [job] = batch.describe_jobs(jobs=[started.run_id])["jobs"]
    assert_details(from_environment({e["name"]: e["value"] for e in job["container"]["environment"]}))
