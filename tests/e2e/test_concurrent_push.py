"""16 writers push overlapping, duplicated, reordered events through the local stack's HTTP API at once."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, defaultdict
from typing import Any

import requests

from lakehook.local.runtime import LocalStack
from tests.support import signed_headers

ASSETS = [f"paimon://lake/ods_db/table_{i}" for i in range(3)]
THREADS = 16
SNAPSHOTS = 12


def _events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for asset in ASSETS:
        for sid in range(1, SNAPSHOTS + 1):
            events.append(
                {
                    "eventType": "SNAPSHOT_COMMITTED",
                    "assetKey": asset,
                    "snapshotId": sid,
                    "commitTime": 1_725_963_330_000 + sid,
                }
            )
            events.append({"eventType": "WATERMARK_ADVANCED", "assetKey": asset, "watermark": 1_725_960_000_000 + sid})
    return events


def test_sixteen_concurrent_writers_converge_on_the_maxima(
    stack: LocalStack, admin: dict[str, str], http: requests.Session
) -> None:
    # GIVEN a producer allowed to write the ODS tables
    answer = http.put(
        f"{stack.api_url}/producers/writer", headers=admin, json={"assetKeyPrefixes": ["paimon://lake/ods_db/"]}
    )
    assert answer.status_code == 201, answer.text
    secret = answer.json()["secret"]
    everything = _events()
    results: list[tuple[int, dict[str, Any]]] = []
    lock = threading.Lock()

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        mine = rng.sample(everything, k=len(everything) * 2 // 3) + rng.sample(everything, k=10)  # overlap + dupes
        rng.shuffle(mine)
        with requests.Session() as session:
            for start in range(0, len(mine), 7):
                body = json.dumps({"events": mine[start : start + 7]}).encode()
                reply = session.post(
                    f"{stack.api_url}/asset-events",
                    data=body,
                    headers=signed_headers("writer", secret, body),
                    timeout=60,
                )
                with lock:
                    results.extend((reply.status_code, r) for r in (reply.json().get("results") or [{}]))

    # WHEN 16 writers push at once
    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # THEN no request failed, every distinct event was recorded exactly once, and state sits at the maxima
    assert {status for status, _ in results} == {200}
    per_event: dict[str, Counter[str]] = defaultdict(Counter)
    for _, result in results:
        per_event[result["eventId"]][result["status"]] += 1
    pushed = {e for e in per_event}
    assert all(c["ACCEPTED"] + c["STALE"] == 1 for c in per_event.values()), "each event recorded exactly once"
    assert not any(c["REJECTED"] for c in per_event.values())
    for asset in ASSETS:
        state = http.get(f"{stack.api_url}/assets/state", params={"assetKey": asset}, headers=admin).json()
        assert state["latestSnapshotId"] == SNAPSHOTS
        assert state["latestWatermark"] == 1_725_960_000_000 + SNAPSHOTS
        listed: list[str] = []
        token = None
        while True:
            params = {"assetKey": asset, "limit": "100", **({"nextToken": token} if token else {})}
            page = http.get(f"{stack.api_url}/assets/events", params=params, headers=admin).json()
            listed += [item["eventId"] for item in page["items"]]
            token = page["nextToken"]
            if not token:
                break
        assert len(listed) == len(set(listed))
        assert set(listed) <= pushed
    assert sum(len(c) for c in per_event.values()) >= len(pushed)
