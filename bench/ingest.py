"""Ingest: the push handler against the same DynamoDB requests made bare, on a fresh moto server; HTTP throughput.

- handler vs bare: a fresh moto server on loopback (`bench.timed_moto`, stock moto: nothing else on it); the
  ingest function's handler (`functions/ingest_api/app.py`, imported from its file and called in this process
  with an API Gateway event of a signed push of one event, as API Gateway invokes it) against bare boto3: the
  very DynamoDB requests the handler made (captured on its client as sent: items, conditions, expressions),
  replayed with a plain `boto3.client("dynamodb")` into a second table of the same server that has taken the
  same requests before. `LAKEHOOK_BENCH_INGEST_RUNS` runs (default 5) interleaved (handler, bare, handler,
  bare ...), each of `LAKEHOOK_BENCH_INGEST_EVENTS` novel events (default 100) and then the same events again
  (duplicates: every condition fails). Per event: wall time, CPU time of the calling thread (the handler or
  the bare requests; the moto server is a thread of this process, so `time.process_time` of the whole
  process, also shown, includes moto's work), and the time spent inside moto's application serving the
  requests (its share of the handler's wall time is stated). Median over runs, min-max, ratio handler/bare.
- requests per event: what the handler's requests were, counted on the server by service and operation.
- throughput: concurrent clients pushing signed batches over HTTP to the local stack (`LocalStack`, the
  ingest function driven from template.yaml), wall clock.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import requests
from botocore import xform_name
from botocore.exceptions import ClientError
from tests.support import FakeLambdaContext, api_event, create_table, load_handler

from bench.timed_moto import ADMIN, TABLE, Served, TimedMotoServer, fresh_lakehook, quiet_stdout
from lakehook.adapters import aws
from lakehook.domain.signing import sign
from lakehook.local.runtime import LocalStack

RUNS = int(os.environ.get("LAKEHOOK_BENCH_INGEST_RUNS", "5"))
EVENTS = int(os.environ.get("LAKEHOOK_BENCH_INGEST_EVENTS", "100"))
THROUGHPUT = os.environ.get("LAKEHOOK_BENCH_INGEST_THROUGHPUT", "1") != "0"
HANDLER_TABLE = TABLE
BARE_TABLE = "lakehook-bench-bare"


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
    rows = _handler_vs_bare()
    if THROUGHPUT:
        rows += _stack_throughput()
    return rows


# --- handler vs bare requests, fresh server -------------------------------------------------------------


@dataclass
class Cost:
    """One phase of one run: totals over its events."""

    wall: float
    thread_cpu: float
    process_cpu: float
    served: Served


def _timed(work: Callable[[], None], server: TimedMotoServer) -> Cost:
    with server.served() as served:
        wall, thread_cpu, process_cpu = time.perf_counter(), time.thread_time(), time.process_time()
        work()
        wall, thread_cpu, process_cpu = (
            time.perf_counter() - wall,
            time.thread_time() - thread_cpu,
            time.process_time() - process_cpu,
        )
    return Cost(wall, thread_cpu, process_cpu, served)


class Capture:
    """The DynamoDB requests a client sends, as sent (the JSON body is the operation's parameters)."""

    def __init__(self, client: Any) -> None:
        self.requests: list[tuple[str, str]] = []
        client.meta.events.register("before-call.dynamodb.*", self._seen)

    def _seen(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        body = params.get("body", b"")
        self.requests.append((model.name, body.decode() if isinstance(body, bytes) else str(body)))

    def take(self) -> list[tuple[str, str]]:
        taken, self.requests = self.requests, []
        return taken


def _binary(value: Any) -> Any:
    """Wire JSON back to boto3 parameters: binary attributes travel base64-encoded."""
    import base64

    if isinstance(value, dict):
        if set(value) == {"B"} and isinstance(value["B"], str):
            return {"B": base64.b64decode(value["B"])}
        if set(value) == {"BS"}:
            return {"BS": [base64.b64decode(v) for v in value["BS"]]}
        return {k: _binary(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_binary(v) for v in value]
    return value


def _replay(client: Any, captured: list[tuple[str, str]]) -> Callable[[], None]:
    """The captured requests against the bare table, parsed beforehand (not part of the timed work)."""
    calls = [
        (getattr(client, xform_name(op)), _binary(json.loads(body.replace(f'"{HANDLER_TABLE}"', f'"{BARE_TABLE}"'))))
        for op, body in captured
    ]

    def work() -> None:
        for call, params in calls:
            try:
                call(**params)
            except ClientError as exc:  # the handler's duplicates fail their conditions the same way
                if not aws.is_conditional_failure(exc):
                    raise

    return work


def _handler_vs_bare() -> list[dict[str, Any]]:
    with fresh_lakehook() as (server, wired), quiet_stdout():
        bare = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name=wired.settings.region)
        create_table(bare, BARE_TABLE)
        handler = load_handler("ingest_api")
        registered = handler(
            api_event(
                "PUT",
                "/producers/bench",
                {"assetKeyPrefixes": ["paimon://lake/bench/"]},
                headers={"Authorization": f"Bearer {ADMIN}"},
            ),
            FakeLambdaContext(),
        )
        assert registered["statusCode"] == 201, registered
        secret = json.loads(registered["body"])["secret"]
        capture = Capture(wired.table.meta.client)

        def pushes(asset: int) -> Callable[[], None]:
            """Pushing EVENTS one-event pushes through the handler (built and signed beforehand)."""
            events = []
            for sid in range(EVENTS):
                body = json.dumps({"events": [_event(asset, sid)]})
                headers = {
                    "Content-Type": "application/json",
                    "X-Lakehook-Producer": "bench",
                    "X-Lakehook-Signature": sign(secret, body.encode(), int(time.time())),
                }
                events.append(api_event("POST", "/asset-events", raw=body, headers=headers))

            def work() -> None:
                for event in events:
                    answer = handler(event, FakeLambdaContext())
                    assert answer["statusCode"] == 200, answer

            return work

        pushes(0)()  # warm: the container's clients, the producer's cached secret
        _replay(bare, capture.take())()  # warm the bare client too; both tables hold the same items
        costs: dict[tuple[str, str], list[Cost]] = {}
        for run in range(RUNS):
            for kind in ("novel", "duplicate"):  # a duplicate run pushes the novel run's events again
                handled = _timed(pushes(1 + run), server)
                captured = capture.take()
                if len(captured) != sum(handled.served.by_service("dynamodb").values()):
                    raise RuntimeError("the handler made DynamoDB requests the capture did not see")
                costs.setdefault(("handler", kind), []).append(handled)
                costs.setdefault(("bare", kind), []).append(_timed(_replay(bare, captured), server))
    return _comparison_rows(costs)


def _spread(values: list[float], unit: str = " ms", digits: int = 2) -> tuple[str, str]:
    return (
        f"{statistics.median(values):.{digits}f}{unit}",
        f"{min(values):.{digits}f}-{max(values):.{digits}f}{unit} over {len(values)} runs",
    )


def _comparison_rows(costs: dict[tuple[str, str], list[Cost]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    per_event = 1000 / EVENTS
    for kind in ("novel", "duplicate"):
        handler, bare = costs[("handler", kind)], costs[("bare", kind)]
        served = handler[0].served
        ddb = served.by_service("dynamodb")
        others = {f"{svc} {op}": n for (svc, op), n in sorted(served.calls.items()) if svc != "dynamodb"}
        rows.append(
            {
                "case": f"{kind}: requests per one-event push",
                "handler": f"{sum(ddb.values()) / EVENTS:g}",
                "spread": "exact",
                "bare boto3": f"{sum(bare[0].served.by_service('dynamodb').values()) / EVENTS:g}",
                "handler / bare": "",
                "detail": ", ".join(f"{op} {n / EVENTS:g}" for op, n in ddb.items())
                + (f"; also {', '.join(f'{k} {n / EVENTS:g}' for k, n in others.items())}" if others else "")
                + "; counted on the server",
            }
        )
        for label, metric in (
            ("wall time per event", lambda c: c.wall),
            ("CPU per event, calling thread (moto excluded)", lambda c: c.thread_cpu),
            ("CPU per event, whole process (moto's thread included)", lambda c: c.process_cpu),
            ("time inside moto per event", lambda c: c.served.seconds),
        ):
            h = [metric(c) * per_event for c in handler]
            b = [metric(c) * per_event for c in bare]
            ratios = [x / y for x, y in zip(h, b, strict=True) if y > 0]
            value, spread = _spread(h)
            bare_value, bare_spread = _spread(b)
            ratio, ratio_spread = _spread(ratios, "", 2) if ratios else ("", "")
            rows.append(
                {
                    "case": f"{kind}: {label}",
                    "handler": value,
                    "spread": spread,
                    "bare boto3": f"{bare_value} ({bare_spread})",
                    "handler / bare": f"{ratio} ({ratio_spread})" if ratio else "",
                    "detail": "",
                }
            )
        share = [c.served.seconds / c.wall for c in handler]
        bare_share = [c.served.seconds / c.wall for c in bare]
        own = [(x.wall - y.wall) * per_event for x, y in zip(handler, bare, strict=True)]
        rows.append(
            {
                "case": f"{kind}: share of the wall time inside moto",
                "handler": f"{statistics.median(share):.0%}",
                "spread": f"{min(share):.0%}-{max(share):.0%} over {len(share)} runs",
                "bare boto3": f"{statistics.median(bare_share):.0%}",
                "handler / bare": "",
                "detail": f"handler minus bare (lakehook's own work, Powertools and the API's routing): "
                f"{statistics.median(own):.2f} ms per event ({min(own):.2f}-{max(own):.2f})",
            }
        )
    load = os.getloadavg()[0]
    for row in rows:
        row["detail"] = "; ".join(x for x in (row["detail"], f"{EVENTS} events per run") if x)
    rows[-1]["detail"] += f"; load average (1 min) at the end {load:.2f}"
    return rows


# --- throughput through the local stack's HTTP API ----------------------------------------------------


def _stack_throughput() -> list[dict[str, Any]]:
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
        for clients, batch, per_client in ((1, 1, 200), (4, 1, 100), (4, 25, 250), (8, 100, 300)):
            result = _throughput(url, secret, clients, batch, per_client, base=10_000 * (clients + batch))
            rows.append(
                {
                    "case": f"throughput (local stack, HTTP), {result['case']}",
                    "handler": f"{result['events_per_second']} events/s",
                    "spread": "one run",
                    "detail": f"{result['events']} events in {result['seconds']} s, errors {result['errors']}; "
                    f"load average (1 min) {os.getloadavg()[0]:.2f}",
                }
            )
    return rows


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
