"""Writers pushing signed batches of events to a local stack, run in a process of their own.

`bench/localstack.py` fills the stack with it so that the stack's process holds only the stack (moto, the
gateway, the pollers), as when writer jobs push from elsewhere: the clients' HTTP and signing do not share
the stack's interpreter lock, and the stack's CPU per event is the stack's.

    python -m bench.push_clients URL SECRET EVENTS OFFSET [--clients 4] [--batch 25] [--assets 20] [--prefix P]

Pushes EVENTS events (``SNAPSHOT_COMMITTED`` of ``--assets`` assets under ``--prefix``, snapshot ids from
OFFSET up) from ``--clients`` threads, each its own HTTP session and its own assets, in batches of
``--batch``; exits non-zero with the first error if a push fails.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from lakehook.domain.signing import sign


def push(session: requests.Session, url: str, secret: str, events: list[dict[str, Any]]) -> None:
    body = json.dumps({"events": events}).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Lakehook-Producer": "bench",
        "X-Lakehook-Signature": sign(secret, body, int(time.time())),
    }
    session.post(f"{url}/asset-events", data=body, headers=headers, timeout=120).raise_for_status()


def event(asset: str, sid: int) -> dict[str, Any]:
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid, "commitTime": 1_764_547_200_000}


def fill(url: str, secret: str, events: int, offset: int, clients: int, batch: int, assets: int, prefix: str) -> None:
    """Each client writes its own assets (client i: assets i, i + clients, ...), each event the next snapshot
    of its asset, as writer jobs commit their own tables: every event is new and advances its asset's state."""
    per_client = events // clients
    owned = max(1, assets // clients)

    def client(index: int) -> None:
        with requests.Session() as session:
            for start in range(0, per_client, batch):
                size = min(batch, per_client - start)
                batch_events = [
                    event(f"{prefix}fill{index + clients * ((start + i) % owned)}", offset + start + i)
                    for i in range(size)
                ]
                push(session, url, secret, batch_events)

    errors = in_threads(client, clients)
    if errors:
        raise SystemExit(f"{len(errors)} fill clients failed: {errors[0]!r}")


def in_threads(work: Callable[[int], None], count: int) -> list[BaseException]:
    """``work(0)`` ... ``work(count - 1)`` at once, each on a thread of its own; what each raised, if it did."""
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as exc:  # handed back: the caller fails the bench with it
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="push signed batches of events to a local stack")
    parser.add_argument("url")
    parser.add_argument("secret")
    parser.add_argument("events", type=int)
    parser.add_argument("offset", type=int)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=25)
    parser.add_argument("--assets", type=int, default=20)
    parser.add_argument("--prefix", default="paimon://lake/bench/")
    a = parser.parse_args(argv)
    fill(a.url, a.secret, a.events, a.offset, a.clients, a.batch, a.assets, a.prefix)


if __name__ == "__main__":
    main()
