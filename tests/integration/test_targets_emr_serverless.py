"""The EMR Serverless target on in-process moto: a Spark job run per key, clientToken from the key, the run looked
up by its name before any retry.

moto starts a new run for a repeated clientToken (EMR Serverless answers the first run): so here a re-send is
kept from starting a second run by the look-up the dispatcher makes before it, which is what these tests prove.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook.adapters.targets.aws_runs import client_token
from lakehook.adapters.targets.emr_serverless import EmrServerlessTargetClient
from lakehook.adapters.targets.stepfunctions import execution_name
from lakehook.domain.dispatch import OutcomeKind, TargetUnavailableError
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import TriggerStatus
from lakehook.receiver import from_job_arguments
from lakehook.usecases.dispatch import DispatchStatus
from tests.aws_dispatch import MotoDispatch
from tests.input_details import assert_details, detailed
from tests.integration.test_targets_aws import REGION, T0, claim, invocation

ROLE = "arn:aws:iam::123456789012:role/lakehook-emr"


@pytest.fixture
def emr() -> Iterator[tuple[Any, str]]:
    with mock_aws():
        client = boto3.client("emr-serverless", region_name=REGION)
        app = client.create_application(name="lakehook-dwd", releaseLabel="emr-7.2.0", type="SPARK")
        yield client, str(app["applicationId"])


def target(application_id: str, **spark: Any) -> dict[str, Any]:
    return {
        "type": "emrserverless",
        "applicationId": application_id,
        "executionRoleArn": ROLE,
        "jobDriver": {"sparkSubmit": {"entryPoint": "s3://code/dwd.py", **spark}},
    }


def test_emr_serverless_starts_a_spark_run_with_the_key_token_and_payload(emr: tuple[Any, str]) -> None:
    client, app = emr
    plugin = EmrServerlessTargetClient(client)
    config = validate_target(target(app, entryPointArguments=["--env", "prod"], sparkSubmitParameters="--conf a=b"))
    trigger = claim()
    assert plugin.find_run(trigger.trigger_key, config, T0) is None
    started = plugin.start(invocation(trigger), config)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    run = client.get_job_run(applicationId=app, jobRunId=started.run_id)["jobRun"]
    assert run["name"] == execution_name(trigger.trigger_key) and run["executionRole"] == ROLE
    spark = run["jobDriver"]["sparkSubmit"]
    assert spark["entryPoint"] == "s3://code/dwd.py" and spark["sparkSubmitParameters"] == "--conf a=b"
    arguments = spark["entryPointArguments"]
    assert arguments[:4] == ["--env", "prod", "--lakehook_trigger_key", trigger.trigger_key]
    assert json.loads(arguments[5]) == invocation(trigger).payload()
    assert from_job_arguments(["dwd.py", *arguments]).trigger_key == trigger.trigger_key
    assert plugin.find_run(trigger.trigger_key, config, T0) == started.run_id
    assert plugin.find_run(claim(snapshot=1002).trigger_key, config, T0) is None


def test_the_client_token_is_the_keys_alone_and_fits_the_api() -> None:
    keys = [claim(snapshot=s).trigger_key for s in range(50)]
    tokens = {client_token(k) for k in keys}
    assert len(tokens) == 50 and all(len(t) == 64 and t.isalnum() for t in tokens)
    assert client_token(keys[0]) == client_token(keys[0])


def test_emr_serverless_run_status_and_a_missing_run(emr: tuple[Any, str]) -> None:
    """moto's job runs have ended at once (SUCCESS): the slot they hold is freed; a run it has not is None."""
    client, app = emr
    plugin = EmrServerlessTargetClient(client)
    config = validate_target(target(app))
    run_id = plugin.start(invocation(claim()), config).run_id
    assert run_id is not None
    state = plugin.run_state(run_id, config)
    assert state is not None and (state.state, state.waiting, state.detail) == (
        "success",
        False,
        "EMR Serverless: SUCCESS",
    )
    assert plugin.run_state("00000000000000000", config) is None


def test_emr_serverless_pages_and_refuses_to_guess_past_its_bound(emr: tuple[Any, str]) -> None:
    client, app = emr
    config = validate_target(target(app))
    for snapshot in range(50):
        EmrServerlessTargetClient(client).start(invocation(claim(snapshot=snapshot)), config)
    ours = EmrServerlessTargetClient(client).start(invocation(claim()), config).run_id
    assert EmrServerlessTargetClient(client, max_pages=2).find_run(claim().trigger_key, config, T0) == ours
    with pytest.raises(TargetUnavailableError, match="more than 1 pages"):
        EmrServerlessTargetClient(client, max_pages=1).find_run(claim().trigger_key, config, T0)


def test_emr_serverless_missing_application_and_foreign_role_are_fatal(emr: tuple[Any, str]) -> None:
    client, app = emr
    plugin = EmrServerlessTargetClient(client)
    missing = plugin.start(invocation(claim()), validate_target(target("00000000000000000")))
    assert missing.kind is OutcomeKind.FATAL and missing.code == "aws_ResourceNotFoundException"
    foreign = {**target(app), "executionRoleArn": "arn:aws:iam::210987654321:role/lakehook-emr"}
    denied = plugin.start(invocation(claim()), validate_target(foreign))
    assert denied.kind is OutcomeKind.FATAL and denied.code == "aws_AccessDeniedException"


def test_dispatch_on_emr_serverless_confirms_a_run_started_before_a_crash(emr: tuple[Any, str]) -> None:
    client, app = emr
    on_emr = MotoDispatch(claim(), target(app), REGION, [T0])
    started, _ = on_emr.crash_after_start()
    assert started.kind is OutcomeKind.STARTED
    result = on_emr.redrive_after_the_lease()
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == started.run_id
    assert len(client.list_job_runs(applicationId=app)["jobRuns"]) == 1
    stored = on_emr.claims.get(on_emr.trigger.trigger_key)
    assert stored is not None and stored.status is TriggerStatus.SUCCEEDED and stored.target_run_id == started.run_id


def test_emr_serverless_receives_the_inputs_details_in_its_payload_argument(emr: tuple[Any, str]) -> None:
    client, app = emr
    plugin = EmrServerlessTargetClient(client)
    started = plugin.start(detailed(claim(), limit=plugin.payload_limit), validate_target(target(app)))
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    run = client.get_job_run(applicationId=app, jobRunId=started.run_id)["jobRun"]
    assert_details(from_job_arguments(["dwd.py", *run["jobDriver"]["sparkSubmit"]["entryPointArguments"]]))
