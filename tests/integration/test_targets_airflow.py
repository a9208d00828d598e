"""The Airflow target where Airflow 3 answers in ways that must not lose a trigger (issue 11), against the
fake in tests/fakes/airflow.py, which answers as a real Airflow 3.3.2 does (see its docstring):

- a cached token Airflow refuses with 403 ``Invalid JWT token`` (the JWT secret rotated, or the token is
  not yet valid) is fetched again once, as on 401, and a token that stays refused is not kept;
- a 404 for the DAG (being deployed, failing to import) is RETRYABLE for ``dagNotFoundRetrySeconds``, then
  FINAL; a retry by hand after that starts the run;
- a paused DAG accepts the run and leaves it queued: the trigger's ``runState`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.dispatch import OutcomeKind
from lakehook.domain.targets import validate_target
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import FailureKind, TriggerStatus
from lakehook.usecases.dispatch import DispatchStatus, RetryTrigger
from tests.fakes.airflow import FakeAirflow
from tests.fakes.memory import InMemorySecretStore
from tests.integration.test_targets_http import Harness, airflow_client, claim, invocation

pytestmark = pytest.mark.integration


@pytest.fixture
def secrets() -> InMemorySecretStore:
    store = InMemorySecretStore()
    store.put_secret("lakehook/targets/airflow", json.dumps({"username": "lakehook", "password": "pw"}))
    return store


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    with FakeAirflow(users={"lakehook": "pw"}, dags={"dwd_trade"}, slow_seconds=0.6) as server:
        yield server  # type: ignore[misc]


def target(airflow: FakeAirflow, dag: str = "dwd_trade", **extra: Any) -> dict[str, Any]:
    return {
        "type": "airflow",
        "baseUrl": airflow.base_url,
        "dagId": dag,
        "credentialsRef": "lakehook/targets/airflow",
        "timeoutSeconds": 2.0,
        **extra,
    }


def config(airflow: FakeAirflow, **kwargs: Any) -> Any:
    return validate_target(target(airflow, **kwargs))


def statuses(airflow: FakeAirflow) -> list[int]:
    return [r.status for r in airflow.answers]


# --- tokens ---------------------------------------------------------------------------------------------


def test_a_token_signed_with_a_rotated_key_is_fetched_again_once(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    client = airflow_client(secrets, session)
    assert client.start(invocation(claim(1)), config(airflow)).kind is OutcomeKind.STARTED
    airflow.rotate_key()  # every cached token now answers 403 Invalid JWT token
    outcome = client.start(invocation(claim(2)), config(airflow))
    assert outcome.kind is OutcomeKind.STARTED and airflow.token_requests == 2
    refused = [a for a in airflow.answers if a.status == 403]
    assert len(refused) == 1 and refused[0].body == {"detail": "Invalid JWT token"}
    # The fresh token is kept: the next start needs no new one.
    assert client.start(invocation(claim(3)), config(airflow)).kind is OutcomeKind.STARTED
    assert airflow.token_requests == 2


def test_an_expired_token_is_fetched_again_once(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    client = airflow_client(secrets, session)
    client.start(invocation(claim(1)), config(airflow))
    airflow.expire_tokens()
    assert client.start(invocation(claim(2)), config(airflow)).kind is OutcomeKind.STARTED
    assert [a.body for a in airflow.answers if a.status == 401] == [{"detail": "Token Expired"}]
    assert airflow.token_requests == 2


def test_a_token_that_stays_refused_is_not_kept(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    # A token issued beforehand, revoked: re-reading the secret gives the same bad token, so the start fails;
    # once someone stores a good token in the secret, the very next start uses it.
    secrets.put_secret("lakehook/targets/airflow", json.dumps({"token": "revoked"}))
    client = airflow_client(secrets, session)
    refused = client.start(invocation(claim(1)), config(airflow))
    assert refused.kind is OutcomeKind.FATAL and refused.code == "http_403"
    assert statuses(airflow) == [403, 403]
    airflow.tokens.add("fresh")
    secrets.put_secret("lakehook/targets/airflow", json.dumps({"token": "fresh"}))
    assert client.start(invocation(claim(1)), config(airflow)).kind is OutcomeKind.STARTED


# --- a DAG that is not there (yet) ------------------------------------------------------------------------


def test_a_dag_not_found_is_retryable_within_its_window(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    outcome = airflow_client(secrets, session).start(invocation(claim()), config(airflow, dag="dwd_new"))
    assert outcome.kind is OutcomeKind.RETRYABLE and outcome.code == "dag_not_found" and not outcome.ambiguous
    assert outcome.retry_window_seconds == 600 and "Dag with dag_id: 'dwd_new' not found" in (outcome.reason or "")
    shorter = airflow_client(secrets, session).start(
        invocation(claim()), config(airflow, dag="dwd_new", dagNotFoundRetrySeconds=120)
    )
    assert shorter.retry_window_seconds == 120


def test_another_404_is_final(airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session) -> None:
    # A baseUrl that is not Airflow's API (a token issued beforehand, so only the trigger call is made).
    secrets.put_secret("lakehook/targets/airflow", json.dumps({"token": "preissued"}))
    wrong = validate_target({**target(airflow), "baseUrl": f"{airflow.base_url}/not-airflow"})
    outcome = airflow_client(secrets, session).start(invocation(claim()), wrong)
    assert outcome.kind is OutcomeKind.FATAL and outcome.code == "http_404"


def test_a_dag_deployed_within_the_window_gets_its_run(airflow: FakeAirflow, secrets: InMemorySecretStore) -> None:
    harness = Harness(secrets, target(airflow, dag="dwd_new"))
    key = harness.add(claim())
    assert harness.dispatch(key).status is DispatchStatus.RETRY_LATER
    trigger = harness.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.RETRYABLE and trigger.failure_code == "dag_not_found"
    assert trigger.next_attempt_at is not None and trigger.next_attempt_at <= harness.now + 600_000
    harness.advance(120)
    airflow.deploy("dwd_new", paused=False)
    for _ in range(30):
        harness.advance(60)
        harness.redrive()
    assert harness.ledger.store.triggers[key].status is TriggerStatus.SUCCEEDED
    assert airflow.runs == {key: 1}


def test_a_dag_that_never_appears_is_final_after_its_window_and_retry_starts_it_once_deployed(
    airflow: FakeAirflow, secrets: InMemorySecretStore
) -> None:
    harness = Harness(secrets, target(airflow, dag="dwd_new", dagNotFoundRetrySeconds=300))
    key = harness.add(claim())
    start = harness.now
    harness.dispatch(key)
    for _ in range(40):
        harness.advance(30)
        harness.redrive()
    trigger = harness.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.FINAL and trigger.failure_code == "dag_not_found"
    assert "still so 300 s after it was first seen" in (trigger.reason or "")
    assert trigger.updated_at - start <= 330_000  # FINAL when the window ended, not later
    assert airflow.runs == {}
    airflow.deploy("dwd_new", paused=False)
    RetryTrigger(harness.ledger, clock=lambda: harness.now)(key)
    assert harness.dispatch(key).status is DispatchStatus.SUCCEEDED
    assert airflow.runs == {key: 1}


# --- a paused DAG ---------------------------------------------------------------------------------------------


def test_a_run_on_a_paused_dag_says_it_stays_queued(airflow: FakeAirflow, secrets: InMemorySecretStore) -> None:
    airflow.paused.add("dwd_trade")
    harness = Harness(secrets, target(airflow))
    key = harness.add(claim())
    assert harness.dispatch(key).status is DispatchStatus.SUCCEEDED
    shown = TriggerAnswer.from_domain(harness.ledger.store.triggers[key]).dump()
    assert shown["runState"]["state"] == "queued"
    assert shown["runState"]["detail"] == "DAG 'dwd_trade' is paused: the run stays queued until the DAG is unpaused"
    assert airflow.runs == {key: 1}


def test_a_run_left_queued_by_a_paused_dag_is_asked_about_again_until_it_ends(
    airflow: FakeAirflow, secrets: InMemorySecretStore
) -> None:
    airflow.paused.add("dwd_trade")
    harness = Harness(secrets, target(airflow))
    harness.now = now_ms()  # the run state's checkedAt is the real time of the look
    key = harness.add(claim())
    harness.dispatch(key)
    harness.advance(60)
    assert harness.redrive().refreshed == []  # asked less than 5 minutes ago
    harness.advance(250)
    assert harness.redrive().refreshed == [key]  # still paused: still queued, checked again
    assert (
        TriggerAnswer.from_domain(harness.ledger.store.triggers[key])
        .dump()["runState"]["detail"]
        .startswith("DAG 'dwd_trade' is paused")
    )

    airflow.paused.discard("dwd_trade")  # someone unpaused it: the scheduler ran the run
    harness.advance(310)
    assert harness.redrive().refreshed == [key]
    shown = TriggerAnswer.from_domain(harness.ledger.store.triggers[key]).dump()["runState"]
    assert shown["state"] == "success" and shown["detail"] is None
    harness.advance(310)
    assert harness.redrive().refreshed == []  # it ended: nothing more to ask
    assert airflow.runs == {key: 1}


def test_a_run_on_an_active_dag_says_only_its_state(
    airflow: FakeAirflow, secrets: InMemorySecretStore, session: requests.Session
) -> None:
    outcome = airflow_client(secrets, session).start(invocation(claim()), config(airflow))
    assert outcome.run_state is not None and outcome.run_state.state == "queued" and outcome.run_state.detail is None
