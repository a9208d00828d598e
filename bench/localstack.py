"""Local stack: push -> webhook latency on a fresh stack and after many events, and whole-stack throughput.

Runs the real local stack (`LocalStack`: moto on loopback with lakehook's moto adapter, every function driven
from template.yaml) and a webhook receiver on loopback. One rule per watched asset (ANY_UPDATED, a webhook
target); a signed push of a new snapshot of a watched asset goes ingest -> stream -> resolver (claim) ->
stream -> dispatcher -> webhook.
- latency: each push timed from just before the HTTP push to its webhook request's arrival, sequential (one
  pusher, `LAKEHOOK_BENCH_LOCAL_PUSHES` pushes, default 20) and with 4 concurrent pushers (each its own watched
  asset and rule, each pushing `LAKEHOOK_BENCH_LOCAL_PUSHES` times, waiting for its webhook before the next
  push); measured on the fresh stack, then after the table has taken `LAKEHOOK_BENCH_FILL` events (default
  10,000) of other assets (each one an event item and a state change the resolver reads), then again on the
  same filled stack: p50 / p90 / max per phase, per run, median over runs with min-max;
- throughput: the fill itself, 4 clients pushing signed batches of 25 events over HTTP from a process of
  their own (`bench/push_clients.py`, so the stack's process holds only the stack), counted until the
  stream is drained into the resolver (so every function's work is in it), events per second; with what
  the fill costs the stack's own process per event (CPU), and moto's requests and CPU per event by
  operation (`bench/moto_requests.py`): the functions run in processes of their own, moto in the stack's.
Each run is made twice, interleaved: with lakehook's moto adapter (as `lakehook local up` runs) and on stock
moto (the adapter uninstalled right after the stack starts, filled with `LAKEHOOK_BENCH_STOCK_FILL`, default
2,000, as stock moto's fill slows down with the table), so the adapter's effect is measured, not assumed.
`LAKEHOOK_BENCH_LOCAL_RUNS` runs of each (default 2; `LAKEHOOK_BENCH_LOCAL_STOCK=0` skips the stock ones).
With the defaults one run takes about 7 minutes (the 10,000-event fill at about 25 events/s) plus stock
moto's: pass smaller knobs for a shorter run, and the section says which were used. The machine is shared
(2 cores); its load average is reported next to the figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import requests

from bench import moto_requests
from bench.push_clients import event, in_threads, push
from lakehook.local import moto_dynamodb
from lakehook.local.runtime import LocalStack

ADMIN = "bench-admin"
# made in moto directly, so under the local stack's prefix, where a secretRef of "targets/bench" is looked up
SECRET_NAME = "lakehook/lakehook-local/targets/bench"
FILL = int(os.environ.get("LAKEHOOK_BENCH_FILL", "10000"))
# stock moto slows down as the table fills (that is what is measured): its reference fill is kept smaller
STOCK_FILL = int(os.environ.get("LAKEHOOK_BENCH_STOCK_FILL", str(min(FILL, 2000))))
RUNS = int(os.environ.get("LAKEHOOK_BENCH_LOCAL_RUNS", "2"))
PUSHES = int(os.environ.get("LAKEHOOK_BENCH_LOCAL_PUSHES", "20"))
STOCK = os.environ.get("LAKEHOOK_BENCH_LOCAL_STOCK", "1") != "0"  # 0: the adapted runs only
PUSHERS = 4
WATCHED = [f"paimon://lake/bench/watched{k}" for k in range(PUSHERS)]  # pusher k pushes WATCHED[k] only
PREFIX = "paimon://lake/bench/"
FILL_ASSETS = 20  # the fill spreads over 20 assets: many events, as a day of development makes


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.arrivals: dict[str, list[float]] = {}  # by request path: one rule's webhook per path
        self.cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server names it so
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.cond:
                    seen = receiver.arrivals.setdefault(self.path, [])
                    seen.append(time.perf_counter())
                    receiver.cond.notify_all()
                body = json.dumps({"runId": f"r{len(seen)}"}).encode()
                self.send_response(202)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, path: str) -> int:
        with self.cond:
            return len(self.arrivals.get(path, []))

    def wait_for(self, path: str, count: int, timeout: float = 60.0) -> float:
        """When the ``count``-th webhook request on ``path`` arrived (waiting for it)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.arrivals.get(path, [])) < count:
                if not self.cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"webhook {count} on {path} never arrived")
            return self.arrivals[path][count - 1]


def _hook(k: int) -> str:
    return f"/hooks/bench{k}"


def _latencies(
    session: requests.Session, url: str, secret: str, receiver: _Receiver, k: int, first_sid: int
) -> list[float]:
    """Pusher ``k``: PUSHES pushes of its watched asset, each waiting for its webhook; the latencies."""
    took = []
    for i in range(PUSHES):
        expected = receiver.count(_hook(k)) + 1
        began = time.perf_counter()
        push(session, url, secret, [event(WATCHED[k], first_sid + i)])
        took.append(receiver.wait_for(_hook(k), expected) - began)
    return took


def _concurrent(url: str, secret: str, receiver: _Receiver, first_sid: int) -> list[float]:
    """PUSHERS pushers at once, each on its own asset and rule; every push's latency."""
    took: list[list[float]] = [[] for _ in range(PUSHERS)]

    def pusher(k: int) -> None:
        with requests.Session() as session:
            took[k] = _latencies(session, url, secret, receiver, k, first_sid)

    errors = in_threads(pusher, PUSHERS)
    if errors:  # a lost webhook fails the bench
        raise RuntimeError(f"{len(errors)} pushers failed: {errors[0]!r}")
    return [t for per in took for t in per]


def _fill(stack: LocalStack, url: str, secret: str, events: int, offset: int) -> tuple[float, float, dict[str, Any]]:
    """Push ``events`` events of unwatched assets (4 clients, batches of 25, from a process of their own: the
    stack's process holds only the stack); seconds to accept, to drain, and moto's requests per event, its CPU
    per event and the stack process's CPU per event."""
    command = [sys.executable, "-m", "bench.push_clients", url, secret, str(events), str(offset)]
    command += ["--clients", os.environ.get("FILL_CLIENTS", "4"), "--batch", "25", "--assets", str(FILL_ASSETS)]
    command += ["--prefix", PREFIX]
    with moto_requests.counting() as seen:
        began, cpu = time.perf_counter(), time.process_time()
        subprocess.run(command, check=True, env=os.environ | {"PYTHONPATH": _pythonpath()})
        accepted = time.perf_counter() - began
        stack.wait_idle(timeout=1800)
        drained, cpu = time.perf_counter() - began, time.process_time() - cpu
    requests_per_event, moto_ms = seen.per_event(events)
    costs = {
        "requests": requests_per_event,
        "moto_ms": moto_ms,
        "stack_ms": cpu * 1000 / events,
        "top": seen.top(events),
    }
    return accepted, drained, costs


def _pythonpath() -> str:
    """The pushers' import path: the bench package's and lakehook's source."""
    import lakehook.settings  # lakehook is a namespace package: no file of its own to locate

    return os.pathsep.join([str(Path(__file__).resolve().parents[1]), str(Path(lakehook.settings.__file__).parents[1])])


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


def _one_run(adapted: bool) -> dict[str, Any]:
    receiver = _Receiver()
    try:
        with LocalStack(
            port=0,
            admin_token=ADMIN,
            extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"},
        ) as stack:
            if not adapted:
                moto_dynamodb.uninstall()  # the reference: the same stack on stock moto
            url = stack.api_url
            admin = {"Authorization": f"Bearer {ADMIN}"}
            boto3.client("secretsmanager", endpoint_url=stack.endpoint_url, region_name=stack.region).create_secret(
                Name=SECRET_NAME, SecretString="bench-signing-key"
            )
            secret = requests.put(
                f"{url}/producers/bench", headers=admin, timeout=30, json={"assetKeyPrefixes": [PREFIX]}
            ).json()["secret"]
            for k in range(PUSHERS):
                rule = {
                    "description": f"bench: every snapshot of watched asset {k}",
                    "groups": [
                        {
                            "groupId": "g",
                            "members": [{"assetKey": WATCHED[k], "condition": {"snapshotRequired": True}}],
                        }
                    ],
                    "policy": {"mode": "ANY_UPDATED"},
                    "target": {"type": "webhook", "url": f"{receiver.url}{_hook(k)}", "secretRef": SECRET_NAME},
                }
                requests.put(f"{url}/rules/bench{k}", headers=admin, json=rule, timeout=30).raise_for_status()
            with requests.Session() as session:
                push(session, url, secret, [event(WATCHED[0], 1)])  # warm every function once
                receiver.wait_for(_hook(0), 1)
                fresh = _latencies(session, url, secret, receiver, 0, 10)
                fresh_concurrent = _concurrent(url, secret, receiver, 10 + PUSHES)
                accepted, drained, costs = _fill(stack, url, secret, FILL if adapted else STOCK_FILL, offset=0)
                filled = _latencies(session, url, secret, receiver, 0, 10 + 2 * PUSHES)
                filled_concurrent = _concurrent(url, secret, receiver, 10 + 3 * PUSHES)
            fill = FILL if adapted else STOCK_FILL
            return {
                "fresh": fresh,
                "fresh concurrent": fresh_concurrent,
                "filled": filled,
                "filled concurrent": filled_concurrent,
                "accepted": accepted,
                "drained": drained,
                "costs": costs,
                "fill": fill,
            }
    finally:
        receiver.shutdown()
        receiver.server_close()


def _rows(runs: list[dict[str, Any]], moto: str, load: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    fill = runs[0]["fill"]
    phases = (
        ("fresh", "fresh stack", f"{PUSHES} sequential pushes per run"),
        ("fresh concurrent", f"fresh stack, {PUSHERS} concurrent pushers", f"{PUSHERS} x {PUSHES} pushes per run"),
        ("filled", f"after {fill:,} events", f"{PUSHES} sequential pushes per run"),
        (
            "filled concurrent",
            f"after {fill:,} events, {PUSHERS} concurrent pushers",
            f"{PUSHERS} x {PUSHES} pushes per run",
        ),
    )
    for phase, label, pushes in phases:
        per_run = [_summary(r[phase]) for r in runs]
        for stat in ("p50", "p90", "max"):
            values = [s[stat] for s in per_run]
            rows.append(
                {
                    "moto": moto,
                    "case": f"push -> webhook {stat}, {label}",
                    "value": f"{statistics.median(values):.3f} s",
                    "spread": f"{min(values):.3f}-{max(values):.3f} s over {len(runs)} runs",
                    "detail": f"{pushes}; {load}",
                }
            )
    fresh_p50 = statistics.median(_summary(r["fresh"])["p50"] for r in runs)
    filled_p50 = statistics.median(_summary(r["filled"])["p50"] for r in runs)
    rows.append(
        {
            "moto": moto,
            "case": "p50 after the fill / p50 fresh (goal <= 2)",
            "value": f"{filled_p50 / fresh_p50:.2f}",
            "spread": "",
            "detail": "medians over runs",
        }
    )
    rates = [fill / r["drained"] for r in runs]
    accepted = [fill / r["accepted"] for r in runs]
    rows.append(
        {
            "moto": moto,
            "case": "whole-stack throughput, 4 clients x batches of 25 (goal >= 100 events/s)",
            "value": f"{statistics.median(rates):.0f} events/s",
            "spread": f"{min(rates):.0f}-{max(rates):.0f} over {len(runs)} runs",
            "detail": f"{fill:,} events until the stream is drained; accepted by the API at "
            f"{statistics.median(accepted):.0f} events/s; moto's CPU per event alone (below) caps its one "
            f"process at {1000 / statistics.median(r['costs']['moto_ms'] for r in runs):.0f} events/s; {load}",
        }
    )
    costs = [r["costs"] for r in runs]
    rows.append(
        {
            "moto": moto,
            "case": "the fill's cost in the stack's process (moto, the gateway, the pollers), per event",
            "value": f"{statistics.median(c['stack_ms'] for c in costs):.1f} ms CPU",
            "spread": f"{min(c['stack_ms'] for c in costs):.1f}-{max(c['stack_ms'] for c in costs):.1f} ms",
            "detail": f"moto: {statistics.median(c['requests'] for c in costs):.2f} requests and "
            f"{statistics.median(c['moto_ms'] for c in costs):.1f} ms CPU per event (its serving threads, "
            f"counted at its WSGI entry: bench/moto_requests.py); first run's commonest: {costs[0]['top']}",
        }
    )
    return rows


def run() -> list[dict[str, Any]]:
    """Runs interleaved: adapted moto, then stock moto, RUNS times each."""
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    load_seen = []
    for _ in range(RUNS):
        for adapted in (True, False) if STOCK else (True,):
            load_seen.append(os.getloadavg()[0])
            runs[adapted].append(_one_run(adapted))
            load_seen.append(os.getloadavg()[0])
    load = f"load average (1 min) {min(load_seen):.1f}-{max(load_seen):.1f}"
    stock = _rows(runs[False], "stock", load) if STOCK else []
    return _rows(runs[True], "adapted (lakehook.local.moto_dynamodb)", load) + stock


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
