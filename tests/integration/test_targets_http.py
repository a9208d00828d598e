"""The HTTP targets (webhook, Airflow 3, DolphinScheduler) against local servers that answer as those
systems document, including 409 on a duplicate run id; each server counts the runs it started per key."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from lakehook.adapters.targets import TargetDeps, build_target_clients
from lakehook.adapters.targets.airflow import AirflowTargetClient, dag_run_id_for
from lakehook.adapters.targets.deps import CachedSecrets
from lakehook.adapters.targets.dolphinscheduler import DolphinSchedulerTargetClient, carries_key
from lakehook.adapters.targets.webhook import WebhookTargetClient
from lakehook.domain.dispatch import Invocation, OutcomeKind, RetryPolicy, RunManifest, TargetUnavailableError
from lakehook.domain.rules import Rule
from lakehook.domain.targets import InvalidTargetError, validate_target
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.receiver import from_dolphinscheduler_params, parse_invocation
from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus, RedriveTriggers
from tests.fakes.airflow import FakeAirflow
from tests.fakes.dolphinscheduler import FakeDolphinScheduler
from tests.fakes.memory import InMemorySecretStore
from tests.fakes.memory_dispatch import InMemoryManifestStore, InMemoryTriggerLedger
from tests.fakes.memory_rules import InMemoryRuleStore
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.input_details import assert_details, detailed
from tests.replay_choices import CHOICES, replay_of
from tests.wiring import dispatch_trigger

SECRET = "s3cr3t-signing-key"
T0 = 1_750_000_000_000


def claim(snapshot: int = 1001, rule_id: str = "dwd") -> Trigger:
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=snapshot),)
    key = trigger_key(rule_id, "g", pins, None, 0)
    return Trigger(trigger_key=key, rule_id=rule_id, group_id="g", inputs=pins, created_at=T0, updated_at=T0)


def invocation(trigger: Trigger, attempt: int = 1) -> Invocation:
    manifest = RunManifest.for_trigger(trigger)
    return Invocation.of(trigger, manifest, f"s3://m/manifests/{trigger.trigger_key}.json", attempt)


@pytest.fixture
def secrets() -> InMemorySecretStore:
    store = InMemorySecretStore()
    store.put_secret("lakehook/targets/hook", SECRET)
    store.put_secret("lakehook/targets/airflow", json.dumps({"username": "lakehook", "password": "pw"}))
    store.put_secret("lakehook/targets/airflow-token", json.dumps({"token": "preissued"}))
    store.put_secret("lakehook/targets/ds", "ds-access-token")
    return store


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Harness:
    """DispatchTrigger with real HTTP plug-ins and fakes of our own ports; a clock the test moves."""

    def __init__(self, secrets: InMemorySecretStore, target: dict[str, Any], attempts: int = 3) -> None:
        self.now = T0
        self.ledger = InMemoryTriggerLedger()
        self.rules = InMemoryRuleStore()
        self.rules.put_rule(
            Rule.model_validate(
                {
                    "ruleId": "dwd",
                    "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
                    "target": target,
                }
            ),
            T0,
        )
        deps = TargetDeps(secrets=secrets, aws=lambda service: None, allow_insecure_loopback=True)
        self.dispatch = dispatch_trigger(
            self.ledger,
            self.rules,
            InMemoryManifestStore(),
            build_target_clients(deps),
            DispatchPolicy(attempts=RetryPolicy(attempts, 0.5, 8.0)),
            clock=lambda: self.now,
            sleep=self.advance,
            rand=lambda: 0.5,
            metrics=None,
        )
        self.redrive = RedriveTriggers(self.ledger, self.dispatch, clock=lambda: self.now)

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)

    def add(self, trigger: Trigger) -> str:
        self.ledger.add(trigger.model_copy(update={"created_at": self.now, "updated_at": self.now}))
        return trigger.trigger_key


# --- webhook -----------------------------------------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(SECRET, slow_seconds=0.6) as server:
        yield server  # type: ignore[misc]


def webhook(receiver: WebhookReceiver, timeout: float = 2.0) -> Any:
    return validate_target(
        {
            "type": "webhook",
            "url": f"{receiver.base_url}/hooks/dwd",
            "secretRef": "lakehook/targets/hook",
            "timeoutSeconds": timeout,
        }
    )


def webhook_client(secrets: InMemorySecretStore, session: requests.Session, local: bool = True) -> WebhookTargetClient:
    return WebhookTargetClient(CachedSecrets(secrets), session, allow_insecure_loopback=local)


def test_webhook_posts_the_signed_payload_with_the_idempotency_key(
    receiver: WebhookReceiver, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    trigger = claim()
    client = webhook_client(secrets, session)
    outcome = client.start(invocation(trigger), webhook(receiver))
    assert outcome.kind is OutcomeKind.STARTED and outcome.run_id == "wh-1"
    [request] = receiver.requests
    assert request.headers["idempotency-key"] == trigger.trigger_key
    assert request.headers["x-lakehook-trigger-key"] == trigger.trigger_key
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == invocation(trigger).payload()  # the receiver verified the signature
    again = client.start(invocation(trigger, attempt=2), webhook(receiver))
    assert again.kind is OutcomeKind.ALREADY_STARTED and again.run_id == "wh-1"
    assert receiver.runs == {trigger.trigger_key: 1}


@pytest.mark.parametrize(
    ("action", "kind", "code", "ambiguous"),
    [
        ("503", "RETRYABLE", "http_503", True),
        ("503-after", "RETRYABLE", "http_503", True),
        ("429", "RETRYABLE", "throttled", False),
        ("400", "FATAL", "http_400", False),
        ("302", "FATAL", "http_302", False),
    ],
)
def test_webhook_answers_are_classified(
    receiver: WebhookReceiver,
    secrets: InMemorySecretStore,
    session: requests.Session,
    action: str,
    kind: str,
    code: str,
    ambiguous: bool,
) -> None:
    receiver.script = [action]
    outcome = webhook_client(secrets, session).start(invocation(claim()), webhook(receiver))
    assert (outcome.kind.value, outcome.code, outcome.ambiguous) == (kind, code, ambiguous)


def test_webhook_read_timeout_is_ambiguous_and_the_resend_is_deduplicated(
    receiver: WebhookReceiver, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    receiver.script = ["slow-after"]
    client = webhook_client(secrets, session)
    trigger = claim()
    first = client.start(invocation(trigger), webhook(receiver, timeout=0.2))
    assert first.kind is OutcomeKind.RETRYABLE and first.ambiguous and first.code == "timeout"
    second = client.start(invocation(trigger, attempt=2), webhook(receiver, timeout=0.2))
    assert second.kind is OutcomeKind.ALREADY_STARTED and receiver.runs[trigger.trigger_key] == 1


def test_webhook_connection_refused_never_reached_the_target(
    secrets: InMemorySecretStore, session: requests.Session
) -> None:
    config = validate_target(
        {"type": "webhook", "url": f"http://127.0.0.1:{closed_port()}/hooks/dwd", "secretRef": "lakehook/targets/hook"}
    )
    outcome = webhook_client(secrets, session).start(invocation(claim()), config)
    assert outcome.kind is OutcomeKind.RETRYABLE and not outcome.ambiguous and outcome.code == "connect"


def test_webhook_refuses_plain_http_outside_local_mode_and_missing_secrets(
    receiver: WebhookReceiver, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    outcome = webhook_client(secrets, session, local=False).start(invocation(claim()), webhook(receiver))
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "insecure_url"
    missing = validate_target({"type": "webhook", "url": f"{receiver.base_url}/hooks/dwd", "secretRef": "nope"})
    outcome = webhook_client(secrets, session).start(invocation(claim()), missing)
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "secret_missing"
    assert receiver.requests == []


def test_webhook_signed_with_the_wrong_secret_is_refused_for_good(
    receiver: WebhookReceiver, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    secrets.put_secret("lakehook/targets/hook", "rotated-elsewhere")
    outcome = webhook_client(secrets, session).start(invocation(claim()), webhook(receiver))
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "http_401" and receiver.runs == {}


def test_webhook_dispatch_survives_a_timeout_whose_request_arrived(
    receiver: WebhookReceiver, secrets: InMemorySecretStore
) -> None:
    harness = Harness(
        secrets,
        {
            "type": "webhook",
            "url": f"{receiver.base_url}/hooks/dwd",
            "secretRef": "lakehook/targets/hook",
            "timeoutSeconds": 0.2,
        },
    )
    key = harness.add(claim())
    receiver.script = ["slow-after", "503"]
    result = harness.dispatch(key)
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == "wh-1" and result.attempts == 3
    assert receiver.runs == {key: 1}
    assert harness.ledger.get(key).trigger.target_run_id == "wh-1"  # type: ignore[union-attr]


# --- Airflow 3 -------------------------------------------------------------------------------------------


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    with FakeAirflow(users={"lakehook": "pw"}, dags={"dwd_trade"}, slow_seconds=0.6) as server:
        yield server  # type: ignore[misc]


def airflow_config(
    airflow: FakeAirflow, ref: str = "lakehook/targets/airflow", dag: str = "dwd_trade", timeout: float = 2.0
) -> Any:
    return validate_target(
        {"type": "airflow", "baseUrl": airflow.base_url, "dagId": dag, "credentialsRef": ref, "timeoutSeconds": timeout}
    )


def airflow_client(secrets: InMemorySecretStore, session: requests.Session) -> AirflowTargetClient:
    return AirflowTargetClient(CachedSecrets(secrets), session, allow_insecure_loopback=True)


def test_airflow_triggers_a_dag_run_named_after_the_key(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    trigger = claim()
    client = airflow_client(secrets, session)
    assert client.find_run(trigger.trigger_key, airflow_config(airflow), T0) is None
    outcome = client.start(invocation(trigger), airflow_config(airflow))
    run_id = dag_run_id_for(trigger.trigger_key)
    assert outcome.kind is OutcomeKind.STARTED and outcome.run_id == run_id
    run = airflow.dag_runs[("dwd_trade", run_id)]
    assert run["logical_date"] is None and run["conf"] == invocation(trigger).payload()
    assert client.find_run(trigger.trigger_key, airflow_config(airflow), T0) == run_id
    assert airflow.token_requests == 1  # fetched once, then cached
    posted = next(r for r in airflow.requests if r.path.endswith("/dagRuns"))
    assert posted.json()["dag_run_id"] == run_id and "logical_date" in posted.json()


def test_airflow_409_is_confirmed_as_ours(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    trigger = claim()
    client = airflow_client(secrets, session)
    client.start(invocation(trigger), airflow_config(airflow))
    again = client.start(invocation(trigger, attempt=2), airflow_config(airflow))
    assert again.kind is OutcomeKind.ALREADY_STARTED and again.run_id == dag_run_id_for(trigger.trigger_key)
    assert airflow.runs == {trigger.trigger_key: 1}
    gets = [r for r in airflow.requests if r.method == "GET"]
    assert any(g.path.endswith(dag_run_id_for(trigger.trigger_key)) for g in gets)  # the 409 was confirmed


def test_airflow_run_id_held_by_another_run_is_a_clash(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    trigger = claim()
    airflow.add_run("dwd_trade", dag_run_id_for(trigger.trigger_key), {"triggerKey": "someone.else.0"})
    client = airflow_client(secrets, session)
    assert client.find_run(trigger.trigger_key, airflow_config(airflow), T0) is None
    outcome = client.start(invocation(trigger), airflow_config(airflow))
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "run_id_taken"


def test_airflow_token_is_fetched_again_after_it_expires(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    client = airflow_client(secrets, session)
    client.start(invocation(claim(1)), airflow_config(airflow))
    airflow.expire_tokens()
    outcome = client.start(invocation(claim(2)), airflow_config(airflow))
    assert outcome.kind is OutcomeKind.STARTED and airflow.token_requests == 2


def test_airflow_auth_and_dag_failures_are_fatal(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    secrets.put_secret("bad", json.dumps({"username": "lakehook", "password": "wrong"}))
    client = airflow_client(secrets, session)
    bad = client.start(invocation(claim()), airflow_config(airflow, ref="bad"))
    assert bad.kind is OutcomeKind.FATAL and bad.code == "auth_failed"
    unknown = client.start(invocation(claim()), airflow_config(airflow, dag="no_such_dag"))
    assert unknown.kind is OutcomeKind.RETRYABLE and unknown.code == "dag_not_found"  # for a while: see below
    assert airflow.runs == {}


def test_airflow_with_a_preissued_token(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    airflow.tokens.add("preissued")
    outcome = airflow_client(secrets, session).start(
        invocation(claim()), airflow_config(airflow, ref="lakehook/targets/airflow-token")
    )
    assert outcome.kind is OutcomeKind.STARTED and airflow.token_requests == 0


@pytest.mark.parametrize("fault", ["503-after", "slow-after"])
def test_airflow_dispatch_after_a_failure_that_created_the_run(
    airflow: FakeAirflow, secrets: InMemorySecretStore, fault: str
) -> None:
    harness = Harness(
        secrets,
        {
            "type": "airflow",
            "baseUrl": airflow.base_url,
            "dagId": "dwd_trade",
            "credentialsRef": "lakehook/targets/airflow",
            "timeoutSeconds": 0.2,
        },
    )
    key = harness.add(claim())
    airflow.script = [fault]
    result = harness.dispatch(key)
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == dag_run_id_for(key)
    assert result.attempts == 2 and airflow.runs == {key: 1}
    # The second attempt looked (GET) and found the run: it never POSTed again.
    assert sum(1 for r in airflow.requests if r.method == "POST" and r.path.endswith("/dagRuns")) == 1


# --- DolphinScheduler ---------------------------------------------------------------------------------------


@pytest.fixture(params=["3.2", "3.3"])
def ds(request: pytest.FixtureRequest) -> Iterator[FakeDolphinScheduler]:
    definitions = {12: {345}, 13: {678}}
    with FakeDolphinScheduler("ds-access-token", definitions, slow_seconds=0.6, version=request.param) as server:
        yield server  # type: ignore[misc]


def ds_config(
    ds: FakeDolphinScheduler, definition: int = 345, timeout: float = 2.0, settle: int = 120, api: str = "auto"
) -> Any:
    return validate_target(
        {
            "type": "dolphinscheduler",
            "baseUrl": f"{ds.base_url}/dolphinscheduler",
            "projectCode": 12,
            "processDefinitionCode": definition,
            "tokenRef": "lakehook/targets/ds",
            "timeoutSeconds": timeout,
            "settleSeconds": settle,
            "apiVersion": api,
        }
    )


def starts_seen(ds: FakeDolphinScheduler) -> list[str]:
    return [r.path.rsplit("/", 1)[-1] for r in ds.requests if r.method == "POST"]


def ds_client(secrets: InMemorySecretStore, session: requests.Session) -> DolphinSchedulerTargetClient:
    return DolphinSchedulerTargetClient(CachedSecrets(secrets), session, allow_insecure_loopback=True)


def test_dolphinscheduler_starts_with_the_key_in_the_start_params(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    trigger = claim()
    client = ds_client(secrets, session)
    outcome = client.start(invocation(trigger), ds_config(ds))
    assert outcome.kind is OutcomeKind.STARTED
    form = ds.requests[-1].form()
    if ds.version == "3.3":
        assert outcome.run_id == "workflow-instance/1"
        assert form["workflowDefinitionCode"] == "345" and form["workflowInstancePriority"] == "MEDIUM"
        assert "processDefinitionCode" not in form
    else:
        assert outcome.run_id == "trigger/9000000"
        assert form["processDefinitionCode"] == "345" and form["processInstancePriority"] == "MEDIUM"
        assert "workflowDefinitionCode" not in form
    assert form["execType"] == "START_PROCESS"
    params = json.loads(form["startParams"])
    assert params["lakehook_trigger_key"] == trigger.trigger_key
    assert json.loads(params["lakehook_payload"]) == invocation(trigger).payload()
    assert all(isinstance(v, str) for v in params.values())


def test_dolphinscheduler_auto_tries_3_3_falls_back_on_404_and_remembers_per_base_url(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    client = ds_client(secrets, session)
    for _ in range(3):
        assert client.start(invocation(claim()), ds_config(ds)).kind is OutcomeKind.STARTED
    if ds.version == "3.3":
        assert starts_seen(ds) == ["start-workflow-instance"] * 3
    else:  # one 404 for 3.3's path, then 3.2's is remembered for the base URL
        assert starts_seen(ds) == ["start-workflow-instance"] + ["start-process-instance"] * 3
    assert sum(ds.runs.values()) == 3
    # The server is upgraded: a remembered 3.2 path is gone (404), and 3.3's is found and remembered.
    was = ds.version
    ds.version = "3.3"
    ds.requests.clear()
    assert client.start(invocation(claim()), ds_config(ds)).kind is OutcomeKind.STARTED
    assert client.start(invocation(claim()), ds_config(ds)).kind is OutcomeKind.STARTED
    again = ["start-process-instance"] if was == "3.2" else []
    assert starts_seen(ds) == [*again, "start-workflow-instance", "start-workflow-instance"]


@pytest.mark.parametrize("api", ["3.2", "3.3"])
def test_dolphinscheduler_a_configured_version_is_used_alone(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session, api: str
) -> None:
    outcome = ds_client(secrets, session).start(invocation(claim()), ds_config(ds, api=api))
    if api == ds.version:
        assert outcome.kind is OutcomeKind.STARTED
    else:  # the other version's path is not there: a 404, not retried, nothing started
        assert outcome.kind is OutcomeKind.FATAL and outcome.code == "http_404"
        assert ds.runs == {}
    assert len(starts_seen(ds)) == 1


def test_dolphinscheduler_api_version_is_validated_when_the_target_is_written() -> None:
    body = {
        "type": "dolphinscheduler",
        "baseUrl": "https://ds.example.com/dolphinscheduler",
        "projectCode": 12,
        "processDefinitionCode": 345,
        "tokenRef": "lakehook/targets/ds",
    }
    assert validate_target(body).api_version == "auto"
    for bad in ("3.4", "3", "", 3.3, None):
        with pytest.raises(InvalidTargetError, match="apiVersion") as raised:
            validate_target({**body, "apiVersion": bad})
        assert raised.value.field == "target.apiVersion"


@pytest.mark.parametrize("list_params", [True, False])
@pytest.mark.parametrize("version", ["3.2", "3.3"])
def test_dolphinscheduler_finds_the_instance_carrying_the_key(
    secrets: InMemorySecretStore, session: requests.Session, list_params: bool, version: str
) -> None:
    definitions = {12: {345}}
    with FakeDolphinScheduler("ds-access-token", definitions, list_params=list_params, version=version) as ds:
        assert isinstance(ds, FakeDolphinScheduler)
        client = ds_client(secrets, session)
        mine, other = claim(1), claim(2)
        client.start(invocation(other), ds_config(ds))
        client.start(invocation(mine), ds_config(ds))
        prefix = "workflow-instance" if version == "3.3" else "process-instance"
        if version == "3.2":
            assert client.find_run(mine.trigger_key, ds_config(ds), T0) is None  # still a queued command
            ds.run_master()
        assert client.find_run(mine.trigger_key, ds_config(ds), T0) == f"{prefix}/2"
        assert client.find_run(other.trigger_key, ds_config(ds), T0) == f"{prefix}/1"
        assert client.find_run(claim(3).trigger_key, ds_config(ds), T0) is None
        assert ds_client(secrets, session).find_run(mine.trigger_key, ds_config(ds), T0) == f"{prefix}/2"
        details = [r for r in ds.requests if r.path.rsplit("/", 1)[-1].isdigit()]
        assert bool(details) is (not list_params)  # the detail is read only when the list lacks params
        assert all(ds.instances_path in r.path for r in details)


def test_dolphinscheduler_run_state_is_the_instances_state_as_the_server_answers_it(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    """maxInFlight's run status (docs/targets.md#runs-in-flight-and-the-targets-run-status): waiting until the
    instance is in a state DolphinScheduler counts finished."""
    client, config, trigger = ds_client(secrets, session), ds_config(ds), claim()
    started = client.start(invocation(trigger), config)
    assert started.run_id is not None
    run_id = started.run_id
    if ds.version == "3.2":
        assert client.run_state(run_id, config) is None  # trigger/<code>: a queued command, no instance to ask
        ds.run_master()
        run_id = client.find_run(trigger.trigger_key, config, T0) or ""
    prefix, _, instance = run_id.partition("/")
    assert prefix == ("workflow-instance" if ds.version == "3.3" else "process-instance")
    running = client.run_state(run_id, config)
    assert running is not None and running.waiting
    assert (running.state, running.detail) == ("running", "DolphinScheduler state RUNNING_EXECUTION")
    for state, word in [
        ("WAIT_TO_RUN", "queued"),
        ("SERIAL_WAIT", "queued"),
        ("READY_STOP", "running"),
        ("FAILOVER", "running"),
        ("SUCCESS", "success"),
        ("FAILURE", "failure"),
        ("STOP", "stop"),
        ("PAUSE", "pause"),
    ]:
        ds.set_state(int(instance), state)
        found = client.run_state(run_id, config)
        assert found is not None and (found.state, found.detail) == (word, f"DolphinScheduler state {state}")
        assert found.waiting is (word in ("queued", "running"))
    assert client.run_state(f"{prefix}/999", config) is None  # no such instance: code 50001
    asked = [r for r in ds.requests if r.method == "GET" and r.path.endswith(f"/{ds.instances_path}/{instance}")]
    assert asked and all(r.headers.get("token") == "ds-access-token" for r in asked)


def test_dolphinscheduler_refusals_are_classified_as_its_source_answers_them(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    client = ds_client(secrets, session)
    unknown = client.start(invocation(claim()), ds_config(ds, definition=999))
    if ds.version == "3.3":  # "Internal Server Error: Cannot find the workflow: 999"
        assert unknown.kind is OutcomeKind.FATAL and unknown.code == "ds_10000"
    else:  # a NullPointerException in 3.2.2, answered as any unexpected start error: looked for, then retried
        assert unknown.kind is OutcomeKind.RETRYABLE and unknown.code == "ds_50014" and unknown.ambiguous
        elsewhere = client.start(invocation(claim()), ds_config(ds, definition=678))
        assert elsewhere.kind is OutcomeKind.FATAL and elsewhere.code == "ds_50003"
        ds.offline = {345}
        offline = client.start(invocation(claim()), ds_config(ds))
        assert offline.kind is OutcomeKind.FATAL and offline.code == "ds_50004"
        ds.offline = set()
        ds.script = ["db-error"]
        lost = client.start(invocation(claim()), ds_config(ds))
        assert lost.kind is OutcomeKind.RETRYABLE and lost.ambiguous and lost.code == "ds_50014"
    ds.masters = False
    no_master = client.start(invocation(claim()), ds_config(ds))
    assert no_master.kind is OutcomeKind.RETRYABLE and not no_master.ambiguous
    assert no_master.code == ("ds_10000" if ds.version == "3.3" else "ds_10025")
    ds.masters = True
    ds.script = ["500"]
    failed = client.start(invocation(claim()), ds_config(ds))
    assert failed.kind is OutcomeKind.RETRYABLE and failed.ambiguous
    secrets.put_secret("lakehook/targets/ds", "wrong")
    denied = ds_client(secrets, session).start(invocation(claim()), ds_config(ds))
    assert denied.kind is OutcomeKind.FATAL and denied.code == "http_401"
    with pytest.raises(TargetUnavailableError):
        ds_client(secrets, session).find_run(claim().trigger_key, ds_config(ds), T0)
    assert ds.runs == {}


def test_dolphinscheduler_a_missing_parameter_is_answered_as_the_real_server_answers_it(
    ds: FakeDolphinScheduler, session: requests.Session
) -> None:
    """The fake as the client sees it: HTTP 200 and code 50014, not a 400 (ApiExceptionHandler)."""
    start = "start-workflow-instance" if ds.version == "3.3" else "start-process-instance"
    url = f"{ds.base_url}/dolphinscheduler/projects/12/executors/{start}"
    answer = session.post(url, data={"scheduleTime": ""}, headers={"token": "ds-access-token"}, timeout=5)
    assert answer.status_code == 200 and answer.json()["code"] == 50014 and answer.json()["failed"] is True
    other = "start-process-instance" if ds.version == "3.3" else "start-workflow-instance"
    missing = session.post(url.replace(start, other), headers={"token": "ds-access-token"}, timeout=5)
    assert missing.status_code == 404 and missing.json()["error"] == "Not Found"
    assert session.post(url.replace(start, other), timeout=5).status_code == 401  # the interceptor first


def test_dolphinscheduler_dispatch_waits_for_the_instance_instead_of_starting_twice(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore
) -> None:
    harness = Harness(
        secrets,
        {
            "type": "dolphinscheduler",
            "baseUrl": f"{ds.base_url}/dolphinscheduler",
            "projectCode": 12,
            "processDefinitionCode": 345,
            "tokenRef": "lakehook/targets/ds",
            "timeoutSeconds": 0.2,
            "settleSeconds": 120,
        },
    )
    key = harness.add(claim())
    ds.script = ["slow-after"]  # the command is queued, the answer is lost
    first = harness.dispatch(key)
    assert first.status is DispatchStatus.RETRY_LATER and ds.runs == {key: 1}
    harness.advance(60)
    assert harness.redrive().results == []  # not before the settle time
    ds.run_master()  # the master turns the command into an instance (3.3's start made it already)
    harness.advance(61)
    [result] = harness.redrive().results
    prefix = "workflow-instance" if ds.version == "3.3" else "process-instance"
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == f"{prefix}/1"
    assert ds.runs == {key: 1}
    entry = harness.ledger.get(key)
    assert entry is not None and entry.status is TriggerStatus.SUCCEEDED


def test_carries_key_reads_every_shape_dolphinscheduler_uses() -> None:
    key = "dwd.g.abc"
    assert carries_key(json.dumps({"StartParams": json.dumps({"lakehook_trigger_key": key})}), key)
    assert carries_key(json.dumps([{"prop": "lakehook_trigger_key", "direct": "IN", "value": key}]), key)
    assert carries_key({"StartParams": [{"prop": "lakehook_trigger_key", "value": key}]}, key)
    assert not carries_key(json.dumps({"StartParams": json.dumps({"lakehook_trigger_key": key + "x"})}), key)
    assert not carries_key("not json", key) and not carries_key(None, key)


# --- a replay's choices reach each target its own way (docs/targets.md, "Replay choices") ------------------


def test_webhook_sends_a_replays_choices_in_the_payload_the_receiver_reads(
    receiver: WebhookReceiver, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    replay = replay_of(claim())
    outcome = webhook_client(secrets, session).start(invocation(replay), webhook(receiver))
    assert outcome.kind is OutcomeKind.STARTED
    [request] = receiver.requests
    received = parse_invocation(request.body)
    assert received.start_from == "4242" and received.variables == CHOICES["variables"]
    plain = parse_invocation(invocation(claim()).body())  # a run without choices: none sent, none read
    assert (plain.start_from, plain.variables) == (None, {}) and "variables" not in invocation(claim()).payload()


def test_airflow_sends_a_replays_choices_in_the_dag_run_conf(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    replay = replay_of(claim(), start_from="load_dwd", variables={"full_refresh": True})
    outcome = airflow_client(secrets, session).start(invocation(replay), airflow_config(airflow))
    assert outcome.kind is OutcomeKind.STARTED
    conf = airflow.dag_runs[("dwd_trade", dag_run_id_for(replay.trigger_key))]["conf"]
    assert conf["startFrom"] == "load_dwd" and conf["variables"] == {"full_refresh": True}
    assert parse_invocation(conf).start_from == "load_dwd"


def test_dolphinscheduler_starts_a_replay_at_its_task_with_its_variables_as_start_params(
    ds: FakeDolphinScheduler, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    replay = replay_of(claim())
    outcome = ds_client(secrets, session).start(invocation(replay), ds_config(ds))
    assert outcome.kind is OutcomeKind.STARTED
    form = ds.requests[-1].form()
    assert form["startNodeList"] == "4242" and form["taskDependType"] == "TASK_POST"
    params = json.loads(form["startParams"])
    assert {k: params[k] for k in ("full_refresh", "batch", "note")} == {
        "full_refresh": "true",
        "batch": "5000",
        "note": "fix",
    }
    assert params["lakehook_start_from"] == "4242" and params["lakehook_trigger_key"] == replay.trigger_key
    assert all(isinstance(v, str) for v in params.values())
    received = from_dolphinscheduler_params(params)
    assert (received.start_from, received.variables) == ("4242", CHOICES["variables"])
    plain = ds_client(secrets, session).start(invocation(claim(1002)), ds_config(ds))
    assert plain.kind is OutcomeKind.STARTED and "startNodeList" not in ds.requests[-1].form()


# --- the pinned versions' event details reach each target (docs/targets.md, "What the run receives") --------


def test_webhook_airflow_and_dolphinscheduler_receive_the_inputs_details(
    receiver: WebhookReceiver,
    airflow: FakeAirflow,
    ds: FakeDolphinScheduler,
    secrets: InMemorySecretStore,
    session: requests.Session,
) -> None:
    trigger = claim()
    hook = webhook_client(secrets, session)
    assert hook.start(detailed(trigger, limit=hook.payload_limit), webhook(receiver)).kind is OutcomeKind.STARTED
    [request] = receiver.requests
    assert_details(parse_invocation(request.body))
    flow = airflow_client(secrets, session)
    assert flow.start(detailed(trigger, limit=flow.payload_limit), airflow_config(airflow)).succeeded
    assert_details(parse_invocation(airflow.dag_runs[("dwd_trade", dag_run_id_for(trigger.trigger_key))]["conf"]))
    scheduler = ds_client(secrets, session)
    assert scheduler.start(detailed(trigger, limit=scheduler.payload_limit), ds_config(ds)).succeeded
    assert_details(from_dolphinscheduler_params(json.loads(ds.requests[-1].form()["startParams"])))
