"""Dispatch: requests and time per claim through the dispatcher function's handler, a webhook on loopback.

A fresh moto server on loopback (`bench.timed_moto`, stock moto) with the table, manifest bucket and target
secret; a rule (ANY_UPDATED over one asset, a webhook target: `tests.fakes.webhook_receiver`, which checks the
signature and the idempotency key) written through the API handler. Per claim: a new snapshot is ingested,
the table's stream is read as the local runtime reads it and the resolver function's handler gets the
records its subscription passes; the claim's stream record is then handed, as the dispatcher's subscription
filters it, to the dispatcher function's handler (`functions/dispatcher/app.py`, called in this process
with the batch, as Lambda's event source mapping invokes it). That call is measured: the requests the
server served during it, by service and operation (exact; every client's), the webhook requests, the wall
time, the CPU time of the calling thread (moto's server thread excluded) and the time spent inside moto's
application. Then the same record is delivered again (as a stream redelivers it): the lease refuses it.
`LAKEHOOK_BENCH_DISPATCH_CLAIMS` claims (default 30); times are the median over claims, with min-max.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from typing import Any

import boto3
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support import FakeLambdaContext, api_event, load_handler

from bench.timed_moto import ADMIN, StreamReader, TimedMotoServer, deliver, fresh_lakehook, quiet_stdout
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, EventType, SourceType

CLAIMS = int(os.environ.get("LAKEHOOK_BENCH_DISPATCH_CLAIMS", "30"))
ASSET = "paimon://lake/bench/orders"
SECRET_NAME = "lakehook/targets/bench"
SIGNING_KEY = "bench-signing-key"


def _measure(handler: Any, records: list[dict[str, Any]], server: TimedMotoServer) -> dict[str, Any]:
    with server.served() as served:
        wall, cpu = time.perf_counter(), time.thread_time()
        answer = handler({"Records": records}, FakeLambdaContext())
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert answer == {"batchItemFailures": []}, answer
    return {"calls": served.calls, "wall": wall, "cpu": cpu, "moto": served.seconds}


def _claim_record(wired: Container, reader: StreamReader, resolver: Any, sid: int) -> dict[str, Any]:
    """Ingest snapshot ``sid`` and resolve it; the claim's stream record, as the dispatcher gets it."""
    wired.ingest.ingest(
        AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=ASSET, snapshotId=sid), SourceType.PUSH
    )
    changes = deliver(reader.read(), "ResolverFunction")
    assert resolver({"Records": changes}, FakeLambdaContext()) == {"batchItemFailures": []}
    claims = deliver(reader.read(), "DispatcherFunction")
    assert len(claims) == 1, f"snapshot {sid}: {len(claims)} claims"
    return claims[0]


def run() -> list[dict[str, Any]]:
    with fresh_lakehook() as (server, wired), quiet_stdout(), WebhookReceiver(SIGNING_KEY) as receiver:
        boto3.client("secretsmanager", endpoint_url=server.endpoint, region_name=wired.settings.region).create_secret(
            Name=SECRET_NAME, SecretString=SIGNING_KEY
        )
        rule = {
            "groups": [{"groupId": "g", "members": [{"assetKey": ASSET}]}],
            "policy": {"mode": "ANY_UPDATED"},
            "target": {"type": "webhook", "url": f"{receiver.base_url}/hooks/bench", "secretRef": SECRET_NAME},
        }
        written = load_handler("ingest_api")(
            api_event("PUT", "/rules/bench", rule, headers={"Authorization": f"Bearer {ADMIN}"}), FakeLambdaContext()
        )
        assert written["statusCode"] in (200, 201), written
        reader = StreamReader(server.endpoint, wired.settings.region)
        reader.read()
        resolver, dispatcher = load_handler("resolver"), load_handler("dispatcher")
        _measure(dispatcher, [_claim_record(wired, reader, resolver, 1)], server)  # warm: clients, cached secret
        first: list[dict[str, Any]] = []
        again: list[dict[str, Any]] = []
        for sid in range(2, CLAIMS + 2):
            record = _claim_record(wired, reader, resolver, sid)
            hooks = len(receiver.requests)
            first.append({**_measure(dispatcher, [record], server), "hooks": len(receiver.requests) - hooks})
            hooks = len(receiver.requests)
            again.append({**_measure(dispatcher, [record], server), "hooks": len(receiver.requests) - hooks})
        runs = sum(receiver.runs.values())
        assert runs == CLAIMS + 1, f"{runs} runs started for {CLAIMS + 1} claims"
    load = os.getloadavg()[0]
    return [_row("a new claim", first, load), _row("the same claim record redelivered", again, load)]


def _row(case: str, measured: list[dict[str, Any]], load: float) -> dict[str, Any]:
    calls: Counter[tuple[str, str]] = Counter()
    for m in measured:
        calls.update(m["calls"])
    n = len(measured)
    per_claim = {f"{svc} {op}": count / n for (svc, op), count in sorted(calls.items())}

    def ms(key: str) -> str:
        values = [m[key] * 1000 for m in measured]
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    share = [m["moto"] / m["wall"] for m in measured]
    return {
        "case": case,
        "claims": n,
        "AWS requests per claim": f"{sum(per_claim.values()):g}",
        "by operation": ", ".join(f"{k} {v:g}" for k, v in per_claim.items()),
        "webhook requests per claim": f"{sum(m['hooks'] for m in measured) / n:g}",
        "wall ms (min-max)": ms("wall"),
        "CPU ms, calling thread": ms("cpu"),
        "ms inside moto": ms("moto"),
        "share inside moto": f"{statistics.median(share):.0%}",
        "load avg": f"{load:.2f}",
    }


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
