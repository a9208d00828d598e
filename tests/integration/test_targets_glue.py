"""The Glue job target on in-process moto: one run per key, confirmed through GetJobRuns before any retry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.moto_api import state_manager

from lakehook.adapters.targets.glue import KEY_ARGUMENT, PAYLOAD_ARGUMENT, GlueTargetClient
from lakehook.domain.dispatch import OutcomeKind, TargetUnavailableError
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import TriggerStatus
from lakehook.receiver import from_job_arguments
from lakehook.usecases.dispatch import DispatchStatus
from tests.aws_dispatch import MotoDispatch
from tests.input_details import assert_details, detailed
from tests.integration.test_targets_aws import REGION, T0, claim, invocation

JOB = "lakehook-dwd-trade"


@pytest.fixture
def glue() -> Iterator[Any]:
    with mock_aws():
        # moto's manual progression: a run moves STARTING -> RUNNING -> SUCCEEDED, one step per two looks
        state_manager.set_transition(model_name="glue::job_run", transition={"progression": "manual", "times": 2})
        client = boto3.client("glue", region_name=REGION)
        client.create_job(
            Name=JOB,
            Role="arn:aws:iam::123456789012:role/lakehook-glue",
            Command={"Name": "glueetl", "ScriptLocation": "s3://scripts/dwd.py"},
            ExecutionProperty={"MaxConcurrentRuns": 1000},
        )
        yield client
        state_manager.unset_transition(model_name="glue::job_run")


def config(**extra: Any) -> Any:
    return validate_target({"type": "glue", "jobName": JOB, **extra})


def test_glue_starts_a_run_carrying_the_key_and_the_payload_as_arguments(glue: Any) -> None:
    client = GlueTargetClient(glue)
    target = config(arguments={"--env": "prod"})
    trigger = claim()
    assert client.find_run(trigger.trigger_key, target, T0) is None
    started = client.start(invocation(trigger), target)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    run = glue.get_job_run(JobName=JOB, RunId=started.run_id)["JobRun"]
    assert run["Arguments"][KEY_ARGUMENT] == trigger.trigger_key and run["Arguments"]["--env"] == "prod"
    assert json.loads(run["Arguments"][PAYLOAD_ARGUMENT]) == invocation(trigger).payload()
    argv = ["dwd.py", *(word for pair in run["Arguments"].items() for word in pair)]  # the script's sys.argv
    received = from_job_arguments(argv)
    assert received.trigger_key == trigger.trigger_key and received.manifest_uri == invocation(trigger).manifest_uri
    assert client.find_run(trigger.trigger_key, target, T0) == started.run_id
    assert client.find_run(claim(snapshot=1002).trigger_key, target, T0) is None


def test_glue_finds_a_run_on_a_later_page_and_refuses_to_guess_past_its_bound(glue: Any) -> None:
    target = config()
    trigger = claim()
    for snapshot in range(201):  # other keys' runs fill GetJobRuns' first page of 200
        GlueTargetClient(glue).start(invocation(claim(snapshot=snapshot)), target)
    ours = GlueTargetClient(glue).start(invocation(trigger), target).run_id
    assert GlueTargetClient(glue, max_pages=2).find_run(trigger.trigger_key, target, T0) == ours
    with pytest.raises(TargetUnavailableError, match="more than 1 pages"):
        GlueTargetClient(glue, max_pages=1).find_run(trigger.trigger_key, target, T0)


def test_glue_run_status_frees_a_slot_once_the_run_ended(glue: Any) -> None:
    """GetJobRun: moto moves a run STARTING -> RUNNING -> SUCCEEDED, as moto's manual progression moves it."""
    client = GlueTargetClient(glue)
    target = config()
    run_id = client.start(invocation(claim()), target).run_id
    assert run_id is not None
    seen = [client.run_state(run_id, target) for _ in range(5)]
    assert [(s.state, s.waiting, s.detail) for s in seen if s is not None] == [
        ("queued", True, "Glue: STARTING"),
        ("running", True, "Glue: RUNNING"),
        ("running", True, "Glue: RUNNING"),
        ("succeeded", False, "Glue: SUCCEEDED"),
        ("succeeded", False, "Glue: SUCCEEDED"),
    ]
    assert client.run_state("jr_" + "0" * 64, target) is None


def test_glue_busy_job_retries_and_a_missing_job_is_fatal(glue: Any) -> None:
    glue.create_job(
        Name="lakehook-one-at-a-time",
        Role="arn:aws:iam::123456789012:role/lakehook-glue",
        Command={"Name": "glueetl", "ScriptLocation": "s3://scripts/dwd.py"},
        ExecutionProperty={"MaxConcurrentRuns": 1},
    )
    one = validate_target({"type": "glue", "jobName": "lakehook-one-at-a-time"})
    client = GlueTargetClient(glue)
    assert client.start(invocation(claim()), one).kind is OutcomeKind.STARTED
    busy = client.start(invocation(claim(snapshot=1002)), one)
    assert busy.kind is OutcomeKind.RETRYABLE and not busy.ambiguous and busy.code == "throttled"
    missing = client.start(invocation(claim()), validate_target({"type": "glue", "jobName": "lakehook-none"}))
    assert missing.kind is OutcomeKind.FATAL and missing.code == "aws_EntityNotFoundException"


def test_dispatch_on_glue_confirms_a_run_started_before_a_crash_and_starts_no_second(glue: Any) -> None:
    on_glue = MotoDispatch(claim(), {"type": "glue", "jobName": JOB}, REGION, [T0])
    started, _ = on_glue.crash_after_start()
    assert started.kind is OutcomeKind.STARTED
    result = on_glue.redrive_after_the_lease()
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == started.run_id
    assert len(glue.get_job_runs(JobName=JOB)["JobRuns"]) == 1
    stored = on_glue.claims.get(on_glue.trigger.trigger_key)
    assert stored is not None and stored.status is TriggerStatus.SUCCEEDED and stored.target_run_id == started.run_id


def test_glue_receives_the_inputs_details_in_its_payload_argument(glue: Any) -> None:
    client = GlueTargetClient(glue)
    started = client.start(detailed(claim(), limit=client.payload_limit), config())
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    run = glue.get_job_run(JobName=JOB, RunId=started.run_id)["JobRun"]
    assert_details(from_job_arguments(["dwd.py", *(word for pair in run["Arguments"].items() for word in pair)]))
