"""Opt-in (marker ``airflow_real``; ``make test-airflow-sensor``): the example deferrable sensor
(docs/examples/sensors/) in a REAL Airflow 3.3.2, waiting on lakehook's sensor API.

The fixture brings Airflow up with the shared harness (``LAKEHOOK_AIRFLOW_REAL_TOOLS``: the airflow-real tool dir,
``up.sh`` / ``down.sh``), installs the ``lakehook-client`` wheel into Airflow's venv, the sensor module into its
plugins folder (on every component's ``sys.path``, so the triggerer imports the trigger by its module path) and the
example DAG into its dags folder, and stops it at the end. ``LAKEHOOK_AIRFLOW_SENSOR_WORK`` reuses a work dir (the
install then takes ~20 s instead of ~60 s); ``LAKEHOOK_AIRFLOW_SENSOR_PORT`` picks the port (default 28461).

lakehook's API is the real app on the in-memory fakes behind an HTTP server on 127.0.0.1: the DAG's sensor defers,
the triggerer long-polls ``POST /sensors/evaluate``, a commit arrives, and the run resumes with the pinned versions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from lakehook import container
from tests.api_server import ApiServer, api_on_fakes
from tests.support import ROOT
from tests.waiting import wait_until

TOOLS = os.environ.get("LAKEHOOK_AIRFLOW_REAL_TOOLS", "")
REUSED_WORK = os.environ.get("LAKEHOOK_AIRFLOW_SENSOR_WORK", "")
PORT = int(os.environ.get("LAKEHOOK_AIRFLOW_SENSOR_PORT", "28461"))
EXAMPLES = ROOT / "docs" / "examples" / "sensors"
DAG = "lakehook_sensor_example"
TOKEN = "airflow-sensor-admin"
ORDERS = "paimon://lake/ods/orders"

pytestmark = [
    pytest.mark.airflow_real,
    pytest.mark.skipif(not TOOLS, reason="set LAKEHOOK_AIRFLOW_REAL_TOOLS to the airflow-real tool dir"),
]


@dataclass
class Airflow:
    url: str
    session: requests.Session

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.session.request(method, f"{self.url}/api/v2{path}", timeout=30, **kwargs)


def sh(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"{args} exited {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done


def client_wheel(into: Path) -> Path:
    """The lakehook-client wheel, built from a copy of the tree as ``scripts/build-dists.sh`` builds it."""
    sh(ROOT / "scripts" / "build-dists.sh", into, Path(sys.executable).parent / "pip")
    (wheel,) = into.glob("lakehook_client-*.whl")
    return wheel


def eventually(what: str, check: Callable[[], Any], seconds: float = 180) -> Any:
    """Wait for Airflow to get somewhere (its scheduler's pace, not a verdict): check's first truthy answer."""
    return wait_until(f"Airflow did not get there: {what}", check, seconds, every=0.5)


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Airflow]:
    tools = Path(TOOLS)
    work = Path(REUSED_WORK) if REUSED_WORK else tmp_path_factory.mktemp("airflow-real")
    sh(tools / "down.sh", work, check=False)  # a reused dir may still run
    if not (work / "venv" / "bin" / "airflow").exists():  # first use: up.sh installs Airflow
        sh(tools / "up.sh", work, str(PORT), check=False)
        sh(tools / "down.sh", work)
    wheel = client_wheel(tmp_path_factory.mktemp("dist"))
    sh(work / "venv" / "bin" / "pip", "install", "--quiet", "--no-deps", "--force-reinstall", wheel)
    (work / "home" / "plugins").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "lakehook_airflow_sensor.py", work / "home" / "plugins" / "lakehook_airflow_sensor.py")
    shutil.copy(EXAMPLES / "lakehook_sensor_dag.py", work / "home" / "dags" / "lakehook_sensor_dag.py")
    up = sh(tools / "up.sh", work, str(PORT), check=False)
    url = f"http://127.0.0.1:{PORT}"
    try:
        # up.sh's last step unpauses its own lakehook_sink DAG, which this test does not use
        assert requests.get(f"{url}/api/v2/monitor/health", timeout=10).ok, up.stdout + up.stderr
        password = (work / "home" / "simple_auth_manager_passwords.json.generated").read_text()
        token = requests.post(
            f"{url}/auth/token", json={"username": "admin", "password": _admin(password)}, timeout=10
        ).json()["access_token"]
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {token}"
            yield Airflow(url, session)
    finally:
        sh(tools / "down.sh", work, check=False)


def _admin(passwords: str) -> str:
    return str(json.loads(passwords)["admin"])


@pytest.fixture
def lakehook(airflow: Airflow) -> Iterator[ApiServer]:
    """lakehook's API on 127.0.0.1, with a disabled rule dwd_orders (orders at snapshot 2 or later); the DAG's
    Variables point at it."""
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS, "condition": {"minSnapshotId": 2}}]}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        "enabled": False,
    }
    with api_on_fakes(TOKEN) as server:
        container.current().put_rule.put("dwd_orders", rule)
        for key, value in (("lakehook_api_url", server.base_url), ("lakehook_token", TOKEN)):
            airflow.call("DELETE", f"/variables/{key}")
            answer = airflow.call("POST", "/variables", json={"key": key, "value": value})
            assert answer.status_code in (200, 201), answer.text
        yield server


def commit(snapshot_id: int) -> None:
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": snapshot_id, "commitTime": 1}
    assert [r.status.value for r in container.current().push_events(event, None)] == ["ACCEPTED"]


def start_run(airflow: Airflow, run_id: str, conf: dict[str, Any]) -> str:
    eventually(f"{DAG} registered", lambda: airflow.call("GET", f"/dags/{DAG}").status_code == 200)
    assert airflow.call("PATCH", f"/dags/{DAG}", json={"is_paused": False}).status_code == 200
    answer = airflow.call(
        "POST", f"/dags/{DAG}/dagRuns", json={"dag_run_id": run_id, "logical_date": None, "conf": conf}
    )
    assert answer.status_code == 200, answer.text
    return run_id


def task_state(airflow: Airflow, run_id: str, task_id: str) -> str | None:
    answer = airflow.call("GET", f"/dags/{DAG}/dagRuns/{run_id}/taskInstances/{task_id}")
    return answer.json().get("state") if answer.status_code == 200 else None


def run_state(airflow: Airflow, run_id: str) -> str | None:
    state = airflow.call("GET", f"/dags/{DAG}/dagRuns/{run_id}").json().get("state")
    return state if state in ("success", "failed") else None


def xcom(airflow: Airflow, run_id: str, task_id: str) -> Any:
    answer = airflow.call("GET", f"/dags/{DAG}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value")
    assert answer.status_code == 200, answer.text
    return answer.json()["value"]


def test_the_sensor_defers_then_resumes_with_the_pins_once_a_commit_satisfies_the_rule(
    airflow: Airflow, lakehook: ApiServer
) -> None:
    commit(1)  # below minSnapshotId: the rule does not hold yet
    run_id = start_run(airflow, f"sensor-{time.time_ns()}", {"rule": "dwd_orders"})
    eventually("the sensor deferred", lambda: task_state(airflow, run_id, "wait_for_inputs") == "deferred")
    eventually("the trigger polled lakehook", lambda: any(r.path == "/sensors/evaluate" for r in lakehook.requests))
    assert run_state(airflow, run_id) is None  # still waiting: nothing satisfies the rule
    commit(2)
    assert eventually("the run ended", lambda: run_state(airflow, run_id)) == "success"
    pins = xcom(airflow, run_id, "wait_for_inputs")
    assert [(p["assetKey"], p["snapshotId"]) for p in pins] == [(ORDERS, 2)]
    assert xcom(airflow, run_id, "build") == f"{ORDERS}@2"
    bodies = [r.json() for r in lakehook.requests if r.path == "/sensors/evaluate"]
    assert all(b["ruleId"] == "dwd_orders" and b["waitSeconds"] >= 1 for b in bodies), bodies  # long-polls


def test_an_unknown_rule_fails_the_sensor_without_waiting(airflow: Airflow, lakehook: ApiServer) -> None:
    run_id = start_run(airflow, f"sensor-unknown-{time.time_ns()}", {"rule": "no_such_rule"})
    assert eventually("the run ended", lambda: run_state(airflow, run_id), seconds=120) == "failed"
    assert task_state(airflow, run_id, "wait_for_inputs") == "failed"
    assert task_state(airflow, run_id, "build") == "upstream_failed"
