"""The ``databricks`` target against a local server that answers as the Jobs API 2.1 documents
(``tests/fakes/databricks.py``): run-now with the key's idempotency token, the payload as job parameters, a run
found before any retry, run state from runs/get, each documented refusal classified."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from pydantic import ValidationError as PydanticValidationError

from lakehook.adapters.targets.databricks import PAGE_SIZE, DatabricksTargetClient, idempotency_token
from lakehook.adapters.targets.deps import CachedSecrets
from lakehook.domain.dispatch import OutcomeKind
from lakehook.domain.rules import Rule
from lakehook.domain.targets import DatabricksJobTarget, InvalidTargetError, validate_target
from lakehook.domain.url_policy import UrlPolicy
from lakehook.receiver import parse_invocation
from lakehook.usecases.dispatch import DispatchStatus
from tests.fakes.databricks import FakeDatabricks
from tests.fakes.memory import InMemorySecretStore
from tests.integration.test_targets_http import T0, Harness, claim, invocation

TOKEN = "dapi-0123456789abcdef"


@pytest.fixture
def workspace() -> Iterator[FakeDatabricks]:
    with FakeDatabricks(TOKEN) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def secrets() -> InMemorySecretStore:
    store = InMemorySecretStore()
    store.put_secret("lakehook/targets/databricks", TOKEN)
    store.put_secret("lakehook/targets/databricks-json", json.dumps({"token": TOKEN}))
    return store


def target(workspace: FakeDatabricks, job: int = 42, ref: str = "lakehook/targets/databricks") -> dict[str, Any]:
    return {"type": "databricks", "host": workspace.base_url, "jobId": job, "tokenRef": ref, "timeoutSeconds": 2}


def config(workspace: FakeDatabricks, **kwargs: Any) -> Any:
    return validate_target(target(workspace, **kwargs))


@pytest.fixture
def client(secrets: InMemorySecretStore) -> Iterator[DatabricksTargetClient]:
    with requests.Session() as session:
        yield DatabricksTargetClient(CachedSecrets(secrets), session, UrlPolicy(local_mode=True))


def test_run_now_carries_the_keys_token_and_the_payload_and_a_resend_is_the_same_run(
    workspace: FakeDatabricks, client: DatabricksTargetClient
) -> None:
    trigger = claim()
    assert client.find_run(trigger.trigger_key, config(workspace), T0) is None
    first = client.start(invocation(trigger), config(workspace))
    assert first.kind is OutcomeKind.STARTED and first.run_id is not None
    posted = next(r for r in workspace.requests if r.method == "POST").json()
    assert posted["job_id"] == 42
    assert posted["idempotency_token"] == hashlib.sha256(trigger.trigger_key.encode()).hexdigest()
    assert len(posted["idempotency_token"]) == 64
    parameters = posted["job_parameters"]
    assert parameters["lakehook_trigger_key"] == trigger.trigger_key
    assert json.loads(parameters["lakehook_payload"]) == invocation(trigger).payload()
    assert parse_invocation(json.loads(parameters["lakehook_payload"])).trigger_key == trigger.trigger_key
    # Databricks' idempotency token: the same key starts no second run, whatever attempt sends it
    again = client.start(invocation(trigger, attempt=2), config(workspace))
    assert again.kind is OutcomeKind.STARTED and again.run_id == first.run_id
    assert workspace.runs == {idempotency_token(trigger.trigger_key): 1}
    assert client.find_run(trigger.trigger_key, config(workspace), T0) == first.run_id


def test_a_token_stored_as_json_works_and_a_refused_token_is_read_again_once_then_fatal(
    workspace: FakeDatabricks, client: DatabricksTargetClient, secrets: InMemorySecretStore
) -> None:
    trigger = claim()
    ok = client.start(invocation(trigger), config(workspace, ref="lakehook/targets/databricks-json"))
    assert ok.kind is OutcomeKind.STARTED
    workspace.token = "rotated"
    refused = client.start(invocation(claim(snapshot=2)), config(workspace))
    assert (
        refused.kind is OutcomeKind.FATAL and refused.code == "auth_failed" and "UNAUTHENTICATED" in str(refused.reason)
    )
    assert sum(r.method == "POST" for r in workspace.requests) == 3  # the refused one was sent twice
    secrets.put_secret("lakehook/targets/databricks", "rotated")  # the secret rotated too: read again on a 401
    assert client.start(invocation(claim(snapshot=3)), config(workspace)).kind is OutcomeKind.STARTED


@pytest.mark.parametrize(
    ("fault", "kind", "code"),
    [
        ("429", OutcomeKind.RETRYABLE, "throttled"),
        ("503", OutcomeKind.RETRYABLE, "http_503"),
        ("denied", OutcomeKind.FATAL, "auth_failed"),
    ],
)
def test_documented_refusals_are_classified(
    workspace: FakeDatabricks, client: DatabricksTargetClient, fault: str, kind: OutcomeKind, code: str
) -> None:
    workspace.script = [fault]
    outcome = client.start(invocation(claim()), config(workspace))
    assert (outcome.kind, outcome.code) == (kind, code), outcome
    if fault == "429":
        assert outcome.retry_after_seconds == 2 and not outcome.ambiguous
    if fault == "503":
        assert "TEMPORARILY_UNAVAILABLE" in str(outcome.reason)
    assert workspace.runs == {}


def test_an_unknown_job_or_a_parameter_the_job_does_not_define_is_fatal(
    workspace: FakeDatabricks, client: DatabricksTargetClient
) -> None:
    missing = client.start(invocation(claim()), config(workspace, job=7))
    assert missing.kind is OutcomeKind.FATAL and missing.code == "resource_does_not_exist"
    assert "Job 7 does not exist" in str(missing.reason)
    workspace.jobs[43] = ["run_date"]  # a job without lakehook's parameters
    undefined = client.start(invocation(claim()), config(workspace, job=43))
    assert undefined.kind is OutcomeKind.FATAL and undefined.code == "invalid_parameter_value"


def test_a_run_started_before_a_lost_answer_is_found_and_never_started_twice(
    workspace: FakeDatabricks, secrets: InMemorySecretStore
) -> None:
    harness = Harness(secrets, target(workspace))
    key = harness.add(claim())
    workspace.script = ["500-after"]  # started, then a 500: ambiguous
    result = harness.dispatch(key)
    assert result.status is DispatchStatus.SUCCEEDED and result.attempts == 2
    assert workspace.runs == {idempotency_token(key): 1}
    assert result.run_id == str(workspace.by_token[idempotency_token(key)])
    # the second attempt looked first (runs/list) and found the run: it never posted again
    assert sum(r.method == "POST" for r in workspace.requests) == 1
    assert any(r.path.endswith("/runs/list") for r in workspace.requests)


def test_find_run_pages_through_the_runs_since_the_claim(
    workspace: FakeDatabricks, client: DatabricksTargetClient
) -> None:
    ours = claim()
    client.start(invocation(ours), config(workspace))
    for n in range(PAGE_SIZE + 5):  # newer runs of other keys push ours to the second page
        client.start(invocation(claim(snapshot=5000 + n)), config(workspace))
    found = client.find_run(ours.trigger_key, config(workspace), T0)
    assert found == str(workspace.by_token[idempotency_token(ours.trigger_key)])
    lists = [r for r in workspace.requests if r.path.endswith("/runs/list")]
    assert len(lists) == 2 and lists[1].query["page_token"] and lists[0].query["start_time_from"] == str(T0)


def test_run_state_is_the_runs_life_cycle_as_runs_get_answers_it(
    workspace: FakeDatabricks, client: DatabricksTargetClient
) -> None:
    outcome = client.start(invocation(claim()), config(workspace))
    assert outcome.run_id is not None
    queued = client.run_state(outcome.run_id, config(workspace))
    assert queued is not None and queued.state == "queued" and "Waiting for a cluster" in str(queued.detail)
    workspace.set_state(int(outcome.run_id), "RUNNING")
    running = client.run_state(outcome.run_id, config(workspace))
    assert running is not None and running.state == "running" and running.waiting
    workspace.set_state(int(outcome.run_id), "TERMINATED", "FAILED", "Task failed with an exception.")
    ended = client.run_state(outcome.run_id, config(workspace))
    assert ended is not None and ended.state == "failed" and not ended.waiting
    assert "Task failed" in str(ended.detail)
    assert client.run_state("99999", config(workspace)) is None  # RESOURCE_DOES_NOT_EXIST


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"host": "http://dbc-1234.cloud.databricks.com"}, "target.host"),
        ({"host": "not a url"}, "target.host"),
        ({"jobId": "42"}, "target.jobId"),
        ({"jobId": 0}, "target.jobId"),
        ({"jobId": 4.2}, "target.jobId"),
        ({"tokenRef": ""}, "target.tokenRef"),
        ({"clusterId": "x"}, "target.clusterId"),
    ],
)
def test_a_bad_databricks_target_is_refused_when_the_rule_is_written_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    written = {"type": "databricks", "host": "https://dbc-1234.cloud.databricks.com", "jobId": 42,
               "tokenRef": "targets/databricks", **change}  # fmt: skip
    with pytest.raises(InvalidTargetError) as raised:
        validate_target(written, UrlPolicy())
    assert field in str(raised.value)
    rule = {"ruleId": "r", "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}]}
    with pytest.raises(PydanticValidationError):
        Rule.model_validate({**rule, "target": written}, context={"lakehook.urlPolicy": UrlPolicy()})
    good = validate_target({**written, **VALID}, UrlPolicy()) if "clusterId" not in change else None
    assert good is None or (isinstance(good, DatabricksJobTarget) and good.job_id == 42)


VALID = {"host": "https://dbc-1234.cloud.databricks.com", "jobId": 42, "tokenRef": "targets/databricks"}
