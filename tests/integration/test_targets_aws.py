"""The AWS targets (Step Functions, Lambda, EventBridge) and the S3 manifest store on in-process moto."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError
from moto import mock_aws

from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.adapters.targets.aws_errors import client_error_outcome, transport_outcome
from lakehook.adapters.targets.eventbridge import EventBridgeTargetClient, entry_outcome
from lakehook.adapters.targets.lambda_target import LambdaTargetClient
from lakehook.adapters.targets.stepfunctions import StepFunctionsTargetClient, execution_name
from lakehook.domain.dispatch import (
    Invocation,
    ManifestConflictError,
    ManifestIntegrityError,
    OutcomeKind,
    RunManifest,
)
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.receiver import from_eventbridge_event, parse_invocation
from lakehook.usecases.dispatch import DispatchStatus
from tests.aws_dispatch import MotoDispatch
from tests.input_details import DETAILS, assert_details, detailed
from tests.replay_choices import CHOICES, replay_of
from tests.support import RequestCounter

REGION = "us-east-1"
T0 = 1_750_000_000_000


def claim(snapshot: int = 1001, rule_id: str = "dwd", group_id: str = "g") -> Trigger:
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=snapshot),)
    key = trigger_key(rule_id, group_id, pins, None, 0)
    return Trigger(trigger_key=key, rule_id=rule_id, group_id=group_id, inputs=pins, created_at=T0, updated_at=T0)


def invocation(trigger: Trigger, attempt: int = 1) -> Invocation:
    return Invocation.of(
        trigger, RunManifest.for_trigger(trigger), f"s3://m/manifests/{trigger.trigger_key}.json", attempt
    )


@pytest.fixture
def moto() -> Iterator[None]:
    # Lambda without Docker: moto's simple backend records the invoke and answers 202.
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


def role() -> str:
    iam = boto3.client("iam", region_name=REGION)
    return str(iam.create_role(RoleName="lakehook-target", AssumeRolePolicyDocument="{}")["Role"]["Arn"])


# --- Step Functions ------------------------------------------------------------------------------------------


@pytest.fixture
def state_machine(moto: None) -> str:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Run", "States": {"Run": {"Type": "Pass", "End": True}}}
    return str(
        sfn.create_state_machine(name="dwd-trade", definition=json.dumps(definition), roleArn=role(), type="STANDARD")[
            "stateMachineArn"
        ]
    )


def test_execution_names_fit_step_functions_and_never_collide() -> None:
    long_key = trigger_key("r" * 64, "g" * 64, claim().inputs, None, 0)
    names = {execution_name(k) for k in ("a.b.1", "a-b.1", "a.b-1", long_key, claim().trigger_key)}
    assert len(names) == 5
    for name in names:
        assert len(name) <= 80 and all(c.isalnum() or c in "-_" for c in name)
    assert execution_name(long_key) == execution_name(long_key)


def test_stepfunctions_starts_one_execution_per_key(state_machine: str) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    client = StepFunctionsTargetClient(sfn)
    config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    trigger = claim()
    assert client.find_run(trigger.trigger_key, config, T0) is None
    started = client.start(invocation(trigger), config)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    assert started.run_id.endswith(f":execution:dwd-trade:{execution_name(trigger.trigger_key)}")
    described = sfn.describe_execution(executionArn=started.run_id)
    assert json.loads(described["input"]) == invocation(trigger).payload()
    # A later attempt carries another 'attempt': ExecutionAlreadyExists, confirmed as ours by the input hash.
    again = client.start(invocation(trigger, attempt=2), config)
    assert again.kind is OutcomeKind.ALREADY_STARTED and again.run_id == started.run_id
    assert client.find_run(trigger.trigger_key, config, T0) == started.run_id
    executions = sfn.list_executions(stateMachineArn=state_machine)["executions"]
    assert len(executions) == 1


def test_stepfunctions_says_whether_an_execution_still_runs(state_machine: str) -> None:
    """Its run status API (DescribeExecution): what frees a maxInFlight slot of an execution that never reported."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    client = StepFunctionsTargetClient(sfn)
    config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    started = client.start(invocation(claim()), config)
    assert started.run_id is not None
    running = client.run_state(started.run_id, config)
    assert running is not None and running.state == "running" and running.waiting
    sfn.stop_execution(executionArn=started.run_id)
    stopped = client.run_state(started.run_id, config)
    assert stopped is not None and stopped.state == "aborted" and not stopped.waiting
    assert client.run_state(started.run_id.replace("dwd-trade:", "dwd-trade:x"), config) is None


def test_stepfunctions_name_taken_by_another_input_is_fatal(state_machine: str) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    trigger = claim()
    sfn.start_execution(
        stateMachineArn=state_machine,
        name=execution_name(trigger.trigger_key),
        input=json.dumps({"triggerKey": "someone.else.0"}),
    )
    client = StepFunctionsTargetClient(sfn)
    config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    assert client.find_run(trigger.trigger_key, config, T0) is None
    outcome = client.start(invocation(trigger), config)
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "execution_name_taken"


def test_stepfunctions_missing_state_machine_is_fatal(moto: None) -> None:
    client = StepFunctionsTargetClient(boto3.client("stepfunctions", region_name=REGION))
    config = validate_target(
        {"type": "stepfunctions", "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:nope"}
    )
    outcome = client.start(invocation(claim()), config)
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "aws_StateMachineDoesNotExist"


# --- Lambda ----------------------------------------------------------------------------------------------


@pytest.fixture
def function(moto: None) -> str:
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    lam = boto3.client("lambda", region_name=REGION)
    lam.create_function(
        FunctionName="dwd-loader",
        Runtime="python3.12",
        Role=role(),
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return "dwd-loader"


def test_lambda_invokes_asynchronously_with_the_key(function: str) -> None:
    lam = boto3.client("lambda", region_name=REGION)
    invokes = RequestCounter().attach(lam)
    sent: list[dict[str, Any]] = []
    lam.meta.events.register("before-call.lambda.Invoke", lambda params, **_: sent.append(params))
    client = LambdaTargetClient(lam)
    trigger = claim()
    outcome = client.start(invocation(trigger), validate_target({"type": "lambda", "functionName": function}))
    assert outcome.kind is OutcomeKind.STARTED and outcome.run_id and outcome.run_id.startswith("lambda/")
    assert invokes.calls == {"Invoke": 1}
    [params] = sent
    assert params["headers"]["X-Amz-Invocation-Type"] == "Event"
    assert json.loads(params["body"])["triggerKey"] == trigger.trigger_key
    assert (
        client.find_run(trigger.trigger_key, validate_target({"type": "lambda", "functionName": function}), T0) is None
    )  # Lambda cannot be asked: consumers deduplicate


def test_lambda_missing_function_is_fatal(aws: None) -> None:
    # moto's Docker-less backend answers 202 for any name; its default backend checks the function first.
    outcome = LambdaTargetClient(boto3.client("lambda", region_name=REGION)).start(
        invocation(claim()), validate_target({"type": "lambda", "functionName": "missing"})
    )
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "aws_ResourceNotFoundException"


# --- EventBridge -----------------------------------------------------------------------------------------


@pytest.fixture
def bus_queue(moto: None) -> tuple[str, str]:
    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    events.create_event_bus(Name="lakehook-runs")
    queue_url = sqs.create_queue(QueueName="dwd-runs")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(
        Name="to-dwd",
        EventBusName="lakehook-runs",
        EventPattern=json.dumps({"source": ["lakehook"], "detail-type": ["lakehook.trigger"]}),
    )
    events.put_targets(Rule="to-dwd", EventBusName="lakehook-runs", Targets=[{"Id": "q", "Arn": queue_arn}])
    return "lakehook-runs", queue_url


def test_eventbridge_puts_one_event_with_the_key_in_the_detail(bus_queue: tuple[str, str]) -> None:
    bus, queue_url = bus_queue
    client = EventBridgeTargetClient(boto3.client("events", region_name=REGION))
    trigger = claim()
    outcome = client.start(invocation(trigger), validate_target({"type": "eventbridge", "eventBusName": bus}))
    assert outcome.kind is OutcomeKind.STARTED and outcome.run_id and outcome.run_id.startswith("event/")
    messages = boto3.client("sqs", region_name=REGION).receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    [message] = messages["Messages"]
    event = json.loads(message["Body"])
    assert event["source"] == "lakehook" and event["detail-type"] == "lakehook.trigger"
    assert event["detail"] == invocation(trigger).payload() and event["id"] == outcome.run_id.removeprefix("event/")


def test_eventbridge_missing_bus_is_fatal(moto: None) -> None:
    client = EventBridgeTargetClient(boto3.client("events", region_name=REGION))
    outcome = client.start(invocation(claim()), validate_target({"type": "eventbridge", "eventBusName": "missing"}))
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "aws_ResourceNotFoundException"


@pytest.mark.parametrize(
    ("entry", "kind", "code"),
    [
        ({"EventId": "e-1"}, "STARTED", None),
        ({"ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"}, "RETRYABLE", "throttled"),
        ({"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}, "RETRYABLE", "aws_entry_internal"),
        ({"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."}, "FATAL", "aws_MalformedDetail"),
        ({"ErrorCode": "AccessDeniedException", "ErrorMessage": "no"}, "FATAL", "aws_AccessDeniedException"),
    ],
)
def test_eventbridge_partial_failures_are_classified_per_entry(
    entry: dict[str, str], kind: str, code: str | None
) -> None:
    # The documented PutEvents answer: the call succeeds, the entry carries the error.
    answer = {"FailedEntryCount": 0 if "EventId" in entry else 1, "Entries": [entry]}
    outcome = entry_outcome(answer)
    assert outcome.kind is OutcomeKind(kind) and outcome.code == code and not outcome.ambiguous


# --- AWS errors --------------------------------------------------------------------------------------------


def _error(code: str, status: int) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "Op")


@pytest.mark.parametrize(
    ("code", "status", "kind", "ambiguous"),
    [
        ("ThrottlingException", 400, "RETRYABLE", False),
        ("TooManyRequestsException", 429, "RETRYABLE", False),
        ("ServiceException", 500, "RETRYABLE", True),
        ("InternalServerError", 500, "RETRYABLE", True),
        ("ValidationException", 400, "FATAL", False),
        ("AccessDeniedException", 403, "FATAL", False),
        ("ResourceNotFoundException", 404, "FATAL", False),
    ],
)
def test_aws_errors_are_classified(code: str, status: int, kind: str, ambiguous: bool) -> None:
    outcome = client_error_outcome(_error(code, status), "Op")
    assert (outcome.kind.value, outcome.ambiguous) == (kind, ambiguous)


def test_an_aws_read_timeout_may_have_acted_and_a_connect_timeout_did_not() -> None:
    assert transport_outcome(ReadTimeoutError(endpoint_url="https://x"), "Op").ambiguous
    assert not transport_outcome(ConnectTimeoutError(endpoint_url="https://x"), "Op").ambiguous


# --- the S3 manifest store -------------------------------------------------------------------------------


@pytest.fixture
def s3(moto: None) -> Any:
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(Bucket="lakehook-manifests")
    client.put_bucket_versioning(Bucket="lakehook-manifests", VersioningConfiguration={"Status": "Enabled"})
    return client


def test_a_manifest_is_written_once_and_an_identical_retry_is_fine(s3: Any) -> None:
    store = S3ManifestStore(s3, "lakehook-manifests")
    trigger = claim()
    manifest = RunManifest.for_trigger(trigger)
    uri = store.put_if_absent(trigger.trigger_key, manifest)
    assert uri == f"s3://lakehook-manifests/manifests/{trigger.trigger_key}.json" == store.uri_for(trigger.trigger_key)
    assert store.put_if_absent(trigger.trigger_key, RunManifest.for_trigger(trigger)) == uri
    versions = s3.list_object_versions(Bucket="lakehook-manifests")["Versions"]
    assert len(versions) == 1  # the retry wrote nothing
    stored = s3.get_object(Bucket="lakehook-manifests", Key=f"manifests/{trigger.trigger_key}.json")
    assert stored["ContentType"] == "application/json" and stored["Metadata"]["sha256"] == manifest.sha256
    assert store.get(uri) == manifest


def test_a_different_manifest_is_refused_and_the_first_kept(s3: Any) -> None:
    store = S3ManifestStore(s3, "lakehook-manifests")
    trigger = claim()
    first = RunManifest.for_trigger(trigger)
    uri = store.put_if_absent(trigger.trigger_key, first)
    other = first.model_copy(update={"created_at": "2030-01-01T00:00:00Z"})
    with pytest.raises(ManifestConflictError):
        store.put_if_absent(trigger.trigger_key, other)
    assert store.get(uri) == first


def test_a_tampered_or_missing_manifest_is_never_used(s3: Any) -> None:
    store = S3ManifestStore(s3, "lakehook-manifests")
    trigger = claim()
    uri = store.put_if_absent(trigger.trigger_key, RunManifest.for_trigger(trigger))
    body = s3.get_object(Bucket="lakehook-manifests", Key=f"manifests/{trigger.trigger_key}.json")["Body"].read()
    s3.put_object(
        Bucket="lakehook-manifests", Key=f"manifests/{trigger.trigger_key}.json", Body=body.replace(b"1001", b"1002")
    )
    with pytest.raises(ManifestIntegrityError):
        store.get(uri)
    with pytest.raises(NotFoundError):
        store.get("s3://lakehook-manifests/manifests/missing.json")
    with pytest.raises(NotFoundError):
        store.get("s3://another-bucket/manifests/x.json")


# --- the whole dispatch on AWS, with a crash after Step Functions accepted -----------------------------------------


def test_dispatch_on_aws_survives_a_crash_after_the_execution_started(state_machine: str, s3: Any) -> None:
    on_aws = MotoDispatch(claim(), {"type": "stepfunctions", "stateMachineArn": state_machine}, REGION, [T0])
    started, uri = on_aws.crash_after_start()
    assert started.kind is OutcomeKind.STARTED
    trigger = on_aws.trigger
    assert on_aws.dispatch(trigger.trigger_key).status is DispatchStatus.BUSY  # the redelivered record: still leased
    result = on_aws.redrive_after_the_lease()
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == started.run_id
    sfn = boto3.client("stepfunctions", region_name=REGION)
    assert len(sfn.list_executions(stateMachineArn=state_machine)["executions"]) == 1
    stored = on_aws.claims.get(trigger.trigger_key)
    assert stored is not None and stored.status is TriggerStatus.SUCCEEDED and stored.attempts == 2
    assert stored.target_run_id == started.run_id and stored.manifest_uri == uri


# --- a replay's choices reach each AWS target in its input (docs/targets.md, "Replay choices") ----------------


def test_stepfunctions_gets_a_replays_choices_in_the_execution_input(state_machine: str) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    replay = replay_of(claim())
    started = StepFunctionsTargetClient(sfn).start(invocation(replay), config)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    received = parse_invocation(sfn.describe_execution(executionArn=started.run_id)["input"])
    assert (received.start_from, received.variables) == (CHOICES["start_from"], CHOICES["variables"])
    # the next attempt sends the same choices: the execution is confirmed as ours, not a clash
    again = StepFunctionsTargetClient(sfn).start(invocation(replay, attempt=2), config)
    assert again.kind is OutcomeKind.ALREADY_STARTED and again.run_id == started.run_id


def test_lambda_and_eventbridge_get_a_replays_choices_in_the_event(function: str, bus_queue: tuple[str, str]) -> None:
    lam = boto3.client("lambda", region_name=REGION)
    sent: list[dict[str, Any]] = []
    lam.meta.events.register("before-call.lambda.Invoke", lambda params, **_: sent.append(params))
    replay = replay_of(claim())
    lambda_config = validate_target({"type": "lambda", "functionName": function})
    assert LambdaTargetClient(lam).start(invocation(replay), lambda_config).kind is OutcomeKind.STARTED
    [params] = sent
    assert parse_invocation(params["body"]).variables == CHOICES["variables"]
    bus, queue_url = bus_queue
    events = EventBridgeTargetClient(boto3.client("events", region_name=REGION))
    assert events.start(invocation(replay), validate_target({"type": "eventbridge", "eventBusName": bus})).succeeded
    [message] = boto3.client("sqs", region_name=REGION).receive_message(QueueUrl=queue_url)["Messages"]
    received = from_eventbridge_event(json.loads(message["Body"]))
    assert (received.start_from, received.variables) == (CHOICES["start_from"], CHOICES["variables"])


# --- the pinned versions' event details reach each AWS target in its input (docs/targets.md) ------------------


def test_stepfunctions_receives_the_inputs_details(state_machine: str) -> None:
    trigger = claim()
    sfn = boto3.client("stepfunctions", region_name=REGION)
    sfn_client = StepFunctionsTargetClient(sfn)
    sfn_config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    started = sfn_client.start(detailed(trigger, limit=sfn_client.payload_limit), sfn_config)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    assert_details(parse_invocation(sfn.describe_execution(executionArn=started.run_id)["input"]))
    again = sfn_client.start(detailed(trigger, attempt=2, limit=sfn_client.payload_limit), sfn_config)
    assert again.kind is OutcomeKind.ALREADY_STARTED  # every attempt sends the same details


def test_lambda_and_eventbridge_receive_the_inputs_details(function: str, bus_queue: tuple[str, str]) -> None:
    trigger = claim()
    lam = boto3.client("lambda", region_name=REGION)
    sent: list[dict[str, Any]] = []
    lam.meta.events.register("before-call.lambda.Invoke", lambda params, **_: sent.append(params))
    lambda_client = LambdaTargetClient(lam)
    lambda_config = validate_target({"type": "lambda", "functionName": function})
    assert lambda_client.start(detailed(trigger, limit=lambda_client.payload_limit), lambda_config).succeeded
    [params] = sent
    assert_details(parse_invocation(params["body"]))
    bus, queue_url = bus_queue
    events = EventBridgeTargetClient(boto3.client("events", region_name=REGION))
    bus_config = validate_target({"type": "eventbridge", "eventBusName": bus})
    assert events.start(detailed(trigger, limit=events.payload_limit), bus_config).succeeded
    [message] = boto3.client("sqs", region_name=REGION).receive_message(QueueUrl=queue_url)["Messages"]
    assert_details(from_eventbridge_event(json.loads(message["Body"])))


def test_details_past_step_functions_input_limit_stay_in_the_manifest_and_the_execution_starts(
    state_machine: str,
) -> None:
    """A pin per member, each with a payload near the ingest bound: more than Step Functions takes as input."""
    pins = tuple(PinnedInput(asset_key=f"paimon://lake/ods/t{n}", snapshot_id=n) for n in range(20))
    key = trigger_key("dwd", "g", pins, None, 0)
    trigger = Trigger(trigger_key=key, rule_id="dwd", group_id="g", inputs=pins, created_at=T0, updated_at=T0)
    big = DETAILS.model_copy(update={"payload": {"blob": "x" * 15_000}})
    manifest = RunManifest.for_trigger(trigger, details=[big] * len(pins))
    whole = Invocation.of(trigger, manifest, "s3://m/manifests/k.json", 1)
    assert len(whole.body()) > 256 * 1024  # as it is, Step Functions would refuse it
    sfn = boto3.client("stepfunctions", region_name=REGION)
    client = StepFunctionsTargetClient(sfn)
    config = validate_target({"type": "stepfunctions", "stateMachineArn": state_machine})
    started = client.start(whole.fitted(client.payload_limit), config)
    assert started.kind is OutcomeKind.STARTED and started.run_id is not None
    received = parse_invocation(sfn.describe_execution(executionArn=started.run_id)["input"])
    assert received.details_in_manifest and all(i.payload is None for i in received.inputs)
