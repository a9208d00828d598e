"""`lakehook local up --poll-every 1`: a commit to a registered table shows in GET /assets/state, polled.

No verdict here depends on the clock: the poll is waited for up to :data:`HANG_STOP` seconds, a stop for a stack
that never polls, not a bound on how fast it polls (on a loaded 2-core machine a turn of the poll and its queue can
take many seconds; the time it took is printed)."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from lakehook.local.runtime import LocalStack
from tests.lakehouse import create_paimon_table, paimon_commit, rows

ADMIN = "poll-admin"
HANG_STOP = 300.0  # seconds: a stack that has not polled a commit by then never will


def test_a_commit_to_a_registered_paimon_table_is_polled_into_the_state(tmp_path: Path) -> None:
    warehouse = {"warehouse": str(tmp_path / "warehouse")}
    orders = create_paimon_table(warehouse, "ods_db.orders")
    paimon_commit(orders, rows(1))
    with LocalStack(port=0, admin_token=ADMIN, poll_every=1) as stack:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        asset = "paimon://lake/ods_db/orders"
        answer = requests.put(
            f"{stack.api_url}/assets",
            headers=admin,
            timeout=30,
            json={
                "assetKey": asset,
                "format": "paimon",
                "source": {"catalog": "lake", "properties": warehouse, "table": "ods_db.orders"},
            },
        )
        assert answer.status_code == 201, answer.text

        def latest() -> int | None:
            state = requests.get(
                f"{stack.api_url}/assets/state", params={"assetKey": asset}, headers=admin, timeout=30
            ).json()
            return state.get("latestSnapshotId")

        def wait_for(snapshot: int) -> float:
            began = time.monotonic()
            while time.monotonic() - began < HANG_STOP:
                if latest() == snapshot:
                    return time.monotonic() - began
                time.sleep(0.2)
            raise AssertionError(f"snapshot {snapshot} not polled in {HANG_STOP} s; state at {latest()}")

        wait_for(1)  # the first poll records the table's newest snapshot
        paimon_commit(orders, rows(2))
        paimon_commit(orders, rows(3))
        print(f"snapshot 3 polled {wait_for(3):.1f} s after its commit")
        state = requests.get(
            f"{stack.api_url}/assets/state", params={"assetKey": asset}, headers=admin, timeout=30
        ).json()
        assert state["pollStatus"]["consecutiveFailures"] == 0
        events = requests.get(
            f"{stack.api_url}/assets/events", params={"assetKey": asset}, headers=admin, timeout=30
        ).json()["items"]
        assert sorted(e["snapshotId"] for e in events if e["eventType"] == "SNAPSHOT_COMMITTED") == [1, 2, 3]
        assert {e["source"] for e in events} <= {"POLL", "COMPENSATION"}  # --poll-every fires both schedules
