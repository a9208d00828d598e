"""Opt-in: the Airflow target against a REAL Airflow 3 (not part of ``make test``).

Start one with ``/work/shared/tools/airflow-real/up.sh WORKDIR PORT`` (it installs Airflow 3.3.2 and a DAG
``lakehook_sink``), then::

    LAKEHOOK_AIRFLOW_REAL_URL=http://127.0.0.1:PORT \\
    LAKEHOOK_AIRFLOW_REAL_PASSWORD_FILE=WORKDIR/home/simple_auth_manager_passwords.json.generated \\
    .venv/bin/pytest -m airflow_real tests/integration/test_airflow_real.py

and ``down.sh WORKDIR``. It checks the answers tests/fakes/airflow.py imitates: a token Airflow refuses with
403 ``Invalid JWT token`` is fetched again; an unknown DAG is a retryable ``dag_not_found``; a paused DAG
accepts the run and leaves it queued; a duplicate ``dag_run_id`` is 409, confirmed as our own run.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from lakehook.adapters.targets.airflow import AirflowTargetClient
from lakehook.adapters.targets.deps import CachedSecrets
from lakehook.domain.dispatch import Invocation, OutcomeKind, RunManifest
from lakehook.domain.targets import validate_target
from lakehook.domain.triggers import PinnedInput, Trigger, trigger_key
from tests.fakes.memory import InMemorySecretStore

URL = os.environ.get("LAKEHOOK_AIRFLOW_REAL_URL", "")
PASSWORD_FILE = os.environ.get("LAKEHOOK_AIRFLOW_REAL_PASSWORD_FILE", "")
DAG = os.environ.get("LAKEHOOK_AIRFLOW_REAL_DAG", "lakehook_sink")
REF = "lakehook/targets/airflow-real"

pytestmark = [
    pytest.mark.airflow_real,
    pytest.mark.skipif(not (URL and PASSWORD_FILE), reason="set LAKEHOOK_AIRFLOW_REAL_URL and _PASSWORD_FILE"),
]


def claim() -> Trigger:
    pins = (PinnedInput(asset_key="custom://real/airflow", snapshot_id=uuid.uuid4().int % 10**9),)
    key = trigger_key("real", "g", pins, None, 0)
    return Trigger(trigger_key=key, rule_id="real", group_id="g", inputs=pins, created_at=1, updated_at=1)


def invocation(trigger: Trigger, attempt: int = 1) -> Invocation:
    return Invocation.of(
        trigger, RunManifest.for_trigger(trigger), f"s3://m/manifests/{trigger.trigger_key}.json", attempt
    )


def config(dag: str = DAG) -> Any:
    return validate_target({"type": "airflow", "baseUrl": URL, "dagId": dag, "credentialsRef": REF})


@pytest.fixture
def credentials() -> dict[str, str]:
    return {"username": "admin", "password": json.loads(Path(PASSWORD_FILE).read_text())["admin"]}


@pytest.fixture
def client(credentials: dict[str, str]) -> Iterator[AirflowTargetClient]:
    secrets = InMemorySecretStore()
    secrets.put_secret(REF, json.dumps(credentials))
    with requests.Session() as session:
        yield AirflowTargetClient(CachedSecrets(secrets), session, allow_insecure_loopback=True)


def set_paused(credentials: dict[str, str], paused: bool) -> None:
    token = requests.post(f"{URL}/auth/token", json=credentials, timeout=10).json()["access_token"]
    answer = requests.patch(
        f"{URL}/api/v2/dags/{DAG}", json={"is_paused": paused}, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert answer.status_code == 200, answer.text


def test_start_then_a_duplicate_is_confirmed_as_ours(client: AirflowTargetClient) -> None:
    trigger = claim()
    first = client.start(invocation(trigger), config())
    assert first.kind is OutcomeKind.STARTED and first.run_state is not None and first.run_state.state == "queued"
    again = client.start(invocation(trigger, attempt=2), config())
    assert again.kind is OutcomeKind.ALREADY_STARTED and again.run_id == first.run_id
    assert client.find_run(trigger.trigger_key, config(), 0) == first.run_id


def test_a_refused_token_is_fetched_again(credentials: dict[str, str]) -> None:
    class Rotating(InMemorySecretStore):
        """The secret held a token Airflow no longer accepts; re-read, it holds the credentials."""

        reads = 0

        def get_secret(self, ref: str) -> str:
            self.reads += 1
            return json.dumps({"token": "not-a-jwt"}) if self.reads == 1 else json.dumps(credentials)

    with requests.Session() as session:
        client = AirflowTargetClient(CachedSecrets(Rotating()), session, allow_insecure_loopback=True)
        outcome = client.start(invocation(claim()), config())
    assert outcome.kind is OutcomeKind.STARTED, outcome


def test_an_unknown_dag_is_retryable_dag_not_found(client: AirflowTargetClient) -> None:
    outcome = client.start(invocation(claim()), config("lakehook_no_such_dag"))
    assert outcome.kind is OutcomeKind.RETRYABLE and outcome.code == "dag_not_found", outcome
    assert outcome.retry_window_seconds == 600


def test_a_paused_dag_accepts_the_run_and_leaves_it_queued(
    client: AirflowTargetClient, credentials: dict[str, str]
) -> None:
    set_paused(credentials, True)
    try:
        outcome = client.start(invocation(claim()), config())
    finally:
        set_paused(credentials, False)
    assert outcome.kind is OutcomeKind.STARTED and outcome.run_state is not None
    assert outcome.run_state.state == "queued" and "is paused" in (outcome.run_state.detail or "")
