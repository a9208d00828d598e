"""The downstream jobs of the GMV chain, served as webhook targets on 127.0.0.1.

Each layer's job receives lakehook's signed invocation, answers at once (202, or 409 for a trigger key it
has already started: the receiver's side of the idempotency contract), then in a worker thread reads
exactly the pinned snapshots, writes the next layer's table and reports completion with the snapshot it
wrote as the outlet. That outlet wakes the next rule: ODS -> DWD -> DWS -> ADS with no cron.

A job reports its end the way a real downstream run does: to the ``completionPath`` of its invocation,
with the invocation's ``completionToken`` as ``X-Lakehook-Completion-Token``. It has no credentials of its
own, and its outlet must be one its rule declares.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import requests

from lakehook.demo.lake import DAILY_SCHEMA, DASHBOARD_SCHEMA, EVENTS_SCHEMA, Committed, Lake
from lakehook.domain.completion import COMPLETION_TOKEN_HEADER
from lakehook.domain.errors import AuthenticationError
from lakehook.domain.signing import SIGNATURE_HEADER, verify

# Under the local stack's prefix (lakehook/<stack>/), so the name is the same as typed and as looked up.
TARGET_SECRET = "lakehook/lakehook-local/demo-targets"
TARGET_SECRET_VALUE = "demo-target-signing-secret"


@dataclass(frozen=True)
class Layer:
    """One downstream job: the rule that starts it, what it reads, what it writes."""

    rule_id: str
    output_asset: str
    output_table: str
    build: Callable[[Lake, dict[str, int]], pa.Table]
    reads: dict[str, tuple[str, str]]  # asset key -> (format, db.table)


@dataclass
class Run:
    """What a job did for one trigger: the snapshots it read, the rows, the snapshot it wrote."""

    trigger_key: str
    rule_id: str
    read: dict[str, int]
    rows_read: dict[str, int]
    completion_path: str = ""
    completion_token: str = ""
    wrote: Committed | None = None
    completed: bool = False
    error: str | None = None


@dataclass
class Consumers:
    """The HTTP receiver and the job runner; counts every request per trigger key."""

    lake: Lake
    api_url: str
    layers: dict[str, Layer]
    fail_once: str | None = None  # the rule whose first request is answered 503, to show a retry
    requests_per_key: Counter[str] = field(default_factory=Counter)
    started_per_key: Counter[str] = field(default_factory=Counter)
    refused: list[str] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _jobs: queue.Queue[tuple[Layer, dict[str, Any]] | None] = field(default_factory=queue.Queue)
    _server: ThreadingHTTPServer | None = None
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        consumers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = consumers.receive(self.path, body, self.headers.get(SIGNATURE_HEADER))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._threads = [
            threading.Thread(target=self._server.serve_forever, name="demo-consumers", daemon=True),
            threading.Thread(target=self._work, name="demo-jobs", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._jobs.put(None)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=30)

    # --- the webhook ----------------------------------------------------------------------------

    def receive(self, path: str, body: bytes, signature: str | None) -> tuple[int, dict[str, Any]]:
        try:
            verify(TARGET_SECRET_VALUE, body, signature, int(time.time()))
        except AuthenticationError as exc:
            return 401, {"error": str(exc)}
        payload = json.loads(body)
        key, rule_id = payload["triggerKey"], payload["ruleId"]
        layer = self.layers.get(path.rstrip("/").rsplit("/", 1)[-1])
        if layer is None or layer.rule_id != rule_id:
            return 404, {"error": f"no job at {path} for rule {rule_id}"}
        with self._lock:
            self.requests_per_key[key] += 1
            if self.fail_once == rule_id:
                self.fail_once = None
                self.refused.append(key)
                return 503, {"error": "the scheduler is restarting; try again"}
            if self.started_per_key[key]:
                return 409, {"runId": f"{rule_id}-{key[:12]}", "error": "already started"}
            self.started_per_key[key] += 1
        self._jobs.put((layer, payload))
        return 202, {"runId": f"{rule_id}-{key[:12]}"}

    # --- the jobs -------------------------------------------------------------------------------

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            layer, payload = job
            self._run(layer, payload)

    def _run(self, layer: Layer, payload: dict[str, Any]) -> None:
        key = payload["triggerKey"]
        pins = {i["assetKey"]: int(i["snapshotId"]) for i in payload["inputs"]}
        run = Run(key, layer.rule_id, pins, {}, payload["completionPath"], payload["completionToken"] or "")
        self.runs[key] = run
        try:
            run.rows_read = {asset: self._read(layer, asset, sid).num_rows for asset, sid in pins.items()}
            run.wrote = self.lake.iceberg_overwrite(layer.output_table, layer.build(self.lake, pins))
            self._complete(run, {"status": "SUCCEEDED", "outlets": [run.wrote.event(layer.output_asset)]})
        except Exception as exc:  # the job fails, the demo reports it
            run.error = f"{type(exc).__name__}: {exc}"

    def _complete(self, run: Run, body: dict[str, Any], attempts: int = 3) -> None:
        """Report the run's end with the invocation's token; a 5xx is retried (the same completion again is
        idempotent: the first one recorded stands and its outlets deduplicate)."""
        for attempt in range(1, attempts + 1):
            answer = requests.post(
                f"{self.api_url}{run.completion_path}",
                headers={COMPLETION_TOKEN_HEADER: run.completion_token},
                json=body,
                timeout=30,
            )
            run.completed = answer.status_code == 200
            run.error = None if run.completed else f"completion answered {answer.status_code}: {answer.text[:200]}"
            if answer.status_code < 500 or attempt == attempts:
                return
            time.sleep(attempt)

    def _read(self, layer: Layer, asset: str, snapshot_id: int) -> pa.Table:
        kind, table = layer.reads[asset]
        if kind == "paimon":
            return self.lake.paimon_read(table, snapshot_id)
        if kind == "delta":
            return self.lake.delta_read(table, snapshot_id)
        return self.lake.iceberg_read(table, snapshot_id)


# --- what each layer computes --------------------------------------------------------------------


def trade_events(orders: pa.Table, payments: pa.Table) -> pa.Table:
    """DWD: one PAYMENT event per order that has a payment, with the amount paid."""
    paid = {row["order_id"]: row["paid_cents"] for row in payments.to_pylist()}
    events = [
        {
            "order_id": o["order_id"],
            "order_date": o["order_date"],
            "event": "PAYMENT",
            "amount_cents": paid[o["order_id"]],
        }
        for o in orders.to_pylist()
        if o["order_id"] in paid
    ]
    return pa.Table.from_pylist(events, schema=EVENTS_SCHEMA)


def gmv_daily(events: pa.Table, calendar: pa.Table) -> pa.Table:
    """DWS: GMV and paid orders per day, with the day's week from the calendar dimension."""
    weeks = {row["order_date"]: row["week"] for row in calendar.to_pylist()}
    grouped = events.group_by("order_date").aggregate([("amount_cents", "sum"), ("order_id", "count")])
    rows = [
        {
            "order_date": r["order_date"],
            "week": weeks.get(r["order_date"]),
            "gmv_cents": r["amount_cents_sum"],
            "orders": r["order_id_count"],
        }
        for r in grouped.sort_by("order_date").to_pylist()
    ]
    return pa.Table.from_pylist(rows, schema=DAILY_SCHEMA)


def dashboard(daily: pa.Table, source_snapshot: int) -> pa.Table:
    """ADS: what the report shows, with the DWS snapshot it came from."""
    rows = [
        {
            "order_date": r["order_date"],
            "gmv": f"{r['gmv_cents'] / 100:,.2f}",
            "orders": r["orders"],
            "source_snapshot": source_snapshot,
        }
        for r in daily.to_pylist()
    ]
    return pa.Table.from_pylist(rows, schema=DASHBOARD_SCHEMA)


def total_gmv_cents(daily: pa.Table) -> int:
    return int(pc.sum(daily["gmv_cents"]).as_py() or 0)
