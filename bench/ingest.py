"""Ingest: events per second through the local runtime's HTTP API, DynamoDB requests per event, handler overhead.

Runs the real stack (`LocalStack`: moto server on loopback, the ingest function driven from template.yaml).
- throughput: concurrent clients pushing signed batches over HTTP (wall clock, this machine);
- requests per novel / duplicate event: boto3 calls the handler made, counted on its DynamoDB client;
- overhead: time inside the Lambda handler per event vs. the same DynamoDB calls made directly against the
  same moto server (so the moto cost cancels out and what is left is lakehook's own work).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import requests
from tests.support import RequestCounter

from lakehook import container
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.signing import sign
from lakehook.local.runtime import LocalStack

ADMIN = "bench-admin"


class ApiThreadCounter(RequestCounter):
    """Counts only the calls made on the HTTP gateway's request threads (the ingest handler's own)."""

    BACKGROUND = ("lakehook-stream-tailer", "schedule-", "sqs-", "s3-")

    def _count(self, model: Any, **kwargs: Any) -> None:
        if not threading.current_thread().name.startswith(self.BACKGROUND):
            super()._count(model, **kwargs)


def _event(asset: int, sid: int) -> dict[str, Any]:
    return {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": f"paimon://lake/bench/t{asset}",
        "snapshotId": sid,
        "schemaId": 1,
        "commitKind": "APPEND",
        "commitTime": 1_725_963_330_000 + sid,
    }


def _push(session: requests.Session, url: str, secret: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    body = json.dumps({"events": events}).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Lakehook-Producer": "bench",
        "X-Lakehook-Signature": sign(secret, body, int(time.time())),
    }
    answer = session.post(f"{url}/asset-events", data=body, headers=headers, timeout=60)
    answer.raise_for_status()
    return answer.json()  # type: ignore[no-any-return]


def _throughput(url: str, secret: str, clients: int, batch: int, per_client: int, base: int) -> dict[str, Any]:
    errors: list[BaseException] = []

    def client(index: int) -> None:
        with requests.Session() as session:
            for n in range(per_client // batch):
                start = base + index * per_client + n * batch
                try:
                    _push(session, url, secret, [_event(index % 8, start + i) for i in range(batch)])
                except BaseException as exc:
                    errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    total = clients * (per_client // batch) * batch
    return {
        "case": f"{clients} clients x batches of {batch}",
        "events": total,
        "seconds": round(elapsed, 2),
        "events_per_second": round(total / elapsed, 1),
        "errors": len(errors),
    }


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with LocalStack(
        port=0, admin_token=ADMIN, extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    ) as stack:
        url = stack.api_url
        admin = {"Authorization": f"Bearer {ADMIN}"}
        secret = requests.put(
            f"{url}/producers/bench", headers=admin, timeout=30, json={"assetKeyPrefixes": ["paimon://lake/bench/"]}
        ).json()["secret"]
        with requests.Session() as session:
            _push(session, url, secret, [_event(0, 0)])  # warm: builds the container, caches the producer

            # requests per novel and per duplicate event, counted on the handler's own clients
            # The resolver and dispatcher run in this process on the same clients: count the API's threads only.
            ddb = ApiThreadCounter().attach(container.current().table.meta.client)
            secrets = ApiThreadCounter().attach(container.current().secret_store._client)  # type: ignore[attr-defined]
            n = 50
            with ddb.measure() as novel_calls, secrets.measure() as novel_secret_calls:
                for sid in range(1, n + 1):
                    _push(session, url, secret, [_event(1, sid)])
            with ddb.measure() as dup_calls:
                for sid in range(1, n + 1):
                    _push(session, url, secret, [_event(1, sid)])
        rows.append(
            {
                "case": "DynamoDB requests per novel event (1 event per push, warm)",
                "value": round(sum(novel_calls.values()) / n, 2),
                "detail": ", ".join(f"{k} {v / n:g}" for k, v in sorted(novel_calls.items()))
                + f"; Secrets Manager {sum(novel_secret_calls.values()) / n:g}",
            }
        )
        rows.append(
            {
                "case": "DynamoDB requests per duplicate event",
                "value": round(sum(dup_calls.values()) / n, 2),
                "detail": ", ".join(
                    f"{k} {v / n:g} (all condition-failed: no write)" for k, v in sorted(dup_calls.items())
                ),
            }
        )

        for clients, batch, per_client in ((1, 1, 200), (4, 1, 100), (4, 25, 250), (8, 100, 300)):
            result = _throughput(url, secret, clients, batch, per_client, base=10_000 * (clients + batch))
            rows.append(
                {
                    "case": f"throughput, {result['case']}",
                    "value": result["events_per_second"],
                    "detail": f"{result['events']} events in {result['seconds']} s, errors {result['errors']}",
                }
            )

        rows.append(_overhead(stack, secret))
    return rows


def _overhead(stack: LocalStack, secret: str) -> dict[str, Any]:
    """Handler time per event vs. the same three DynamoDB calls made directly, both against the same server."""
    from tests.support import api_event

    (ingest_fn,) = [f for f in stack.functions if f.spec.name == "IngestApiFunction"]
    n = 200
    began = time.perf_counter()
    for sid in range(n):
        body = json.dumps(_event(100, sid))
        headers = {
            "Content-Type": "application/json",
            "X-Lakehook-Producer": "bench",
            "X-Lakehook-Signature": sign(secret, body.encode(), int(time.time())),
        }
        answer = ingest_fn.invoke(api_event("POST", "/asset-events", raw=body, headers=headers))
        assert answer["statusCode"] == 200, answer
    handler = (time.perf_counter() - began) / n
    store = DynamoDBAssetStore(container.current().table)
    events = [AssetEvent.model_validate(_event(101, sid)) for sid in range(n)]
    began = time.perf_counter()
    for event in events:
        store.record_event(event, SourceType.PUSH, 1)
        store.advance_state(event, 1)
        store.mark_settled(event)
    direct = (time.perf_counter() - began) / n
    return {
        "case": "handler time / its DynamoDB calls alone (same moto server)",
        "value": round(handler / direct, 2),
        "detail": f"handler {handler * 1000:.2f} ms per event, DynamoDB calls alone {direct * 1000:.2f} ms",
    }


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
