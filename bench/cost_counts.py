"""Count what lakehook's event, run and poll paths ask of AWS, per operation, on moto (used by bench/cost.py).

The real handlers run in this process against a fresh moto server on loopback (`bench.timed_moto`): the ingest
API's handler takes signed one-event pushes, the table's stream is read as the local runtime reads it and the
records each subscription's filter passes (template.yaml) go to the resolver's and the dispatcher's handlers,
the dispatcher starts a webhook run on loopback (`tests.fakes.webhook_receiver`), and the poll worker's handler
polls a real Iceberg (Glue), Paimon, Delta and Hudi table (`bench.poll`'s tables, through the SQS message the
planner sends). Each handler call is one measured invocation: the requests the server served during it by
service and operation (every client's: boto3, pyarrow's S3, delta-rs), the DynamoDB request units they
consume (read from each request on the server: see `DynamoDBUnits`) and the CPU time of the calling thread
(`time.thread_time`: moto's server thread left out). Counts are exact; CPU times are this machine's.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support import FakeLambdaContext, api_event, load_handler

from bench.cost_model import units
from bench.timed_moto import ADMIN, StreamReader, TimedMotoServer, deliver, fresh_lakehook, quiet_stdout
from lakehook import container
from lakehook.container import Container
from lakehook.domain.signing import sign

REPEATS = int(os.environ.get("LAKEHOOK_BENCH_COST_REPEATS", "10"))
FORMATS = ("iceberg", "paimon", "delta", "hudi")
# Snapshots a polled table holds before it is measured: Delta 100, so it has the checkpoint delta-rs writes every
# 100 commits (a table past its first checkpoint, the steady state; before it, its unchanged check is 1 HEAD more)
POLL_HISTORY = {"iceberg": 2, "paimon": 2, "delta": 100, "hudi": 2}
RUN_ASSET = "paimon://lake/bench/runs"  # a rule over it alone starts a run on every new snapshot
QUIET_ASSET = "paimon://lake/bench/quiet"  # its rule also waits for WAITING_ASSET, never pushed: no run
WAITING_ASSET = "paimon://lake/bench/never"
SECRET_NAME = "lakehook/targets/bench-cost"
SIGNING_KEY = "bench-cost-key"


class DynamoDBUnits:
    """Request units of the DynamoDB requests a moto server answers, read from each request and its answer.

    On-demand units as DynamoDB bills them, for the item sizes lakehook writes (≤ 1 KB, so one write unit a
    write): a write 1 (a conditional write that fails too), a transactional item 2, a batch write 1 an item;
    a read 1 per 4 KB read (the answer's size), half that when eventually consistent, a batch read per key.
    """

    def __init__(self) -> None:
        self.read = 0.0
        self.write = 0.0
        self._lock = threading.Lock()

    def install(self, server: TimedMotoServer) -> None:
        wsgi = server._server._server
        assert wsgi is not None
        inner = wsgi.app

        def counted(environ: dict[str, Any], start_response: Any) -> Any:
            target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
            if not target.startswith("DynamoDB_"):
                return inner(environ, start_response)
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            answer = list(inner(environ, start_response))
            self._add(target.rsplit(".", 1)[-1], json.loads(body or b"{}"), sum(len(part) for part in answer))
            return answer

        wsgi.app = counted

    def _add(self, operation: str, request: dict[str, Any], answer_bytes: int) -> None:
        read, write = units(operation, request, answer_bytes)
        with self._lock:
            self.read += read
            self.write += write

    def snapshot(self) -> tuple[float, float]:
        with self._lock:
            return self.read, self.write


@dataclass
class Invocation:
    """One handler call: the requests served during it, the DynamoDB units, the caller's CPU seconds."""

    calls: Counter[str] = field(default_factory=Counter)
    read_units: float = 0.0
    write_units: float = 0.0
    cpu: float = 0.0
    building: float = 0.0  # of which building boto3 clients (botocore's create_client), CPU seconds


class ClientBuilding:
    """CPU seconds the calling threads spent in botocore's ``create_client`` (every boto3 client and resource)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextmanager
    def counting(self) -> Iterator[None]:
        original = botocore.session.Session.create_client

        def timed(session: Any, *args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return original(session, *args, **kwargs)
            finally:
                self.seconds += time.thread_time() - began

        botocore.session.Session.create_client = timed  # type: ignore[method-assign]
        try:
            yield
        finally:
            botocore.session.Session.create_client = original  # type: ignore[method-assign]


BUILDING = ClientBuilding()


@dataclass
class Meter:
    server: TimedMotoServer
    dynamodb: DynamoDBUnits

    @contextmanager
    def invocation(self) -> Iterator[Invocation]:
        measured = Invocation()
        read, write = self.dynamodb.snapshot()
        with self.server.served() as served:
            began, building = time.thread_time(), BUILDING.seconds
            yield measured
            measured.cpu, measured.building = time.thread_time() - began, BUILDING.seconds - building
        after_read, after_write = self.dynamodb.snapshot()
        measured.calls = Counter({f"{svc} {op}": n for (svc, op), n in served.calls.items()})
        measured.read_units, measured.write_units = after_read - read, after_write - write


# Reads a warm function repeats by the clock, not per invocation (a producer's secret: once every
# LAKEHOOK_PRODUCER_CACHE_SECONDS per environment): kept apart, as how many a whole measurement made
CACHED_BY_TIME = frozenset({"secretsmanager GetSecretValue"})


def summary(measured: list[Invocation]) -> dict[str, Any]:
    """Per invocation: requests by operation and units (the same every time, so the mean), median CPU ms."""
    n = len(measured)
    calls: Counter[str] = Counter()
    for m in measured:
        calls.update(m.calls)
    return {
        "invocations": n,
        "requests": {op: round(count / n, 3) for op, count in sorted(calls.items()) if op not in CACHED_BY_TIME},
        "cached_reads": {op: count for op, count in sorted(calls.items()) if op in CACHED_BY_TIME},
        "read_units": round(sum(m.read_units for m in measured) / n, 3),
        "write_units": round(sum(m.write_units for m in measured) / n, 3),
        "cpu_ms": round(statistics.median(m.cpu for m in measured) * 1000, 2),
    }


# --- the event and run paths ---------------------------------------------------------------------------


class EventPath:
    """A producer, two rules and a webhook on a fresh lakehook; pushes, stream hand-offs and dispatches."""

    def __init__(self, meter: Meter, wired: Container, receiver: WebhookReceiver) -> None:
        self.meter, self.wired, self.receiver = meter, wired, receiver
        self.ingest, self.resolver = load_handler("ingest_api"), load_handler("resolver")
        self.dispatcher = load_handler("dispatcher")
        self.reader = StreamReader(meter.server.endpoint, wired.settings.region)
        self.first_admin_cpu: list[tuple[float, float]] = []  # (CPU, of which building clients) per call
        self.secret = self._register()
        self.reader.read()
        self.sid = 0

    def _admin(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        began, building = time.thread_time(), BUILDING.seconds
        answer = self.ingest(
            api_event(method, path, body, headers={"Authorization": f"Bearer {ADMIN}"}), FakeLambdaContext()
        )
        # the first builds the ingest's clients
        self.first_admin_cpu.append((time.thread_time() - began, BUILDING.seconds - building))
        assert answer["statusCode"] in (200, 201), answer
        return json.loads(answer["body"])  # type: ignore[no-any-return]

    def _register(self) -> str:
        target = {"type": "webhook", "url": f"{self.receiver.base_url}/hooks/cost", "secretRef": SECRET_NAME}
        for name, members, mode in (
            ("runs", [RUN_ASSET], "ANY_UPDATED"),
            ("waits", [QUIET_ASSET, WAITING_ASSET], "ALL_UPDATED"),
        ):
            group = {"groupId": "g", "members": [{"assetKey": key} for key in members]}
            self._admin("PUT", f"/rules/{name}", {"groups": [group], "policy": {"mode": mode}, "target": target})
        produced = self._admin("PUT", "/producers/cost", {"assetKeyPrefixes": ["paimon://lake/bench/"]})
        return str(produced["secret"])

    def push(self, asset: str, sid: int) -> Invocation:
        body = json.dumps({"events": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid}]})
        headers = {
            "Content-Type": "application/json",
            "X-Lakehook-Producer": "cost",
            "X-Lakehook-Signature": sign(self.secret, body.encode(), int(time.time())),
        }
        event = api_event("POST", "/asset-events", raw=body, headers=headers)
        with self.meter.invocation() as measured:
            answer = self.ingest(event, FakeLambdaContext())
        assert answer["statusCode"] == 200, answer
        return measured

    def stream_to(self, function: str, handler: Any) -> Invocation | None:
        """The records since the last read that ``function``'s subscription passes, handed to it (None: none)."""
        return self._hand(self.reader.read(), function, handler)

    def round(self, fresh: bool = False) -> dict[str, Invocation | None]:
        """A novel event that starts no run, one that starts a run (to its SUCCEEDED record), a duplicate.
        ``fresh``: the resolver and the dispatcher each start on a new container, as in a process of their own
        (its clients not built yet), so their first invocation is a cold one's."""
        self.sid += 1
        out: dict[str, Invocation | None] = {"ingest novel": self.push(QUIET_ASSET, self.sid)}
        self._fresh(fresh)
        out["resolver, no run"] = self.stream_to("ResolverFunction", self.resolver)
        out["ingest duplicate"] = self.push(QUIET_ASSET, self.sid)
        self.push(RUN_ASSET, self.sid)
        records = self.reader.read()
        out["resolver, claim"] = self._hand(records, "ResolverFunction", self.resolver)
        self._fresh(fresh)
        out["dispatcher"] = self._hand(records + self.reader.read(), "DispatcherFunction", self.dispatcher)
        out["resolver, after the run started"] = self.stream_to("ResolverFunction", self.resolver)
        return out

    def _fresh(self, fresh: bool) -> None:
        if fresh:
            container.use(Container(self.wired.settings))

    def _hand(self, records: list[dict[str, Any]], function: str, handler: Any) -> Invocation | None:
        passed = deliver(records, function)
        if not passed:
            return None
        with self.meter.invocation() as measured:
            answer = handler({"Records": passed}, FakeLambdaContext())
        assert answer == {"batchItemFailures": []}, answer
        return measured


def event_path(meter: Meter, wired: Container, repeats: int = REPEATS) -> dict[str, Any]:
    """Per invocation of each step, warm; and what each function's first invocation cost more (its clients)."""
    boto3.client("secretsmanager", endpoint_url=meter.server.endpoint, region_name=wired.settings.region).create_secret(
        Name=SECRET_NAME, SecretString=SIGNING_KEY
    )
    with WebhookReceiver(SIGNING_KEY) as receiver, BUILDING.counting():
        path = EventPath(meter, wired, receiver)
        first = path.round(fresh=True)
        # the fresh round ended on a new container, whose producer cache is empty: a copy of the last push (it writes
        # nothing, so no stream record) reads the producer once, as a warm function did before (its read is by the
        # clock, every LAKEHOOK_PRODUCER_REGISTRATION_SECONDS, not per event) and the warm rounds count none
        path.push(QUIET_ASSET, path.sid)
        rounds = [path.round() for _ in range(repeats)]
        runs = sum(receiver.runs.values())
    assert runs == repeats + 1, f"{runs} runs started in {repeats + 1} rounds"
    steps: dict[str, Any] = {}
    for step in first:
        measured = [r[step] for r in rounds if r[step] is not None]
        steps[step] = summary(measured) if measured else None
    adds, building = _first_invocations(path, first, steps)
    return {"steps": steps, "first_invocation_adds_cpu_ms": adds, "first_invocation_client_building_cpu_ms": building}


def _first_invocations(
    path: EventPath, first: dict[str, Invocation | None], steps: dict[str, Any]
) -> tuple[dict[str, float], dict[str, float]]:
    """What each function's first invocation in a process cost more than a warm one of the same work (the
    ingest: its first two rule writes, the same work), and of that, building its boto3 clients (CPU ms)."""
    resolver, dispatcher = first["resolver, no run"], first["dispatcher"]
    assert resolver is not None and dispatcher is not None
    (ingest_first, ingest_building), (ingest_second, _) = path.first_admin_cpu[:2]
    adds = {
        "IngestApiFunction": ingest_first - ingest_second,
        "ResolverFunction": resolver.cpu - steps["resolver, no run"]["cpu_ms"] / 1000,
        "DispatcherFunction": dispatcher.cpu - steps["dispatcher"]["cpu_ms"] / 1000,
    }
    building = {"IngestApiFunction": ingest_building, "ResolverFunction": resolver.building}
    building["DispatcherFunction"] = dispatcher.building
    return {k: round(v * 1000, 2) for k, v in adds.items()}, {k: round(v * 1000, 2) for k, v in building.items()}


# --- polls ---------------------------------------------------------------------------------------------


def poll_cases(meter: Meter, found: dict[str, Any]) -> Callable[..., list[dict[str, Any]]]:
    """``bench.poll``'s cases hook: an unchanged poll (``repeats`` times) and one new snapshot, measured."""

    def cases(bench: Any, fmt: str, _history: int, asset: Any, add_one: Any, _add_many: Any) -> list[dict[str, Any]]:
        bench.poll(asset)  # its offset on the newest snapshot, its clients built
        unchanged = []
        for _ in range(REPEATS):
            with meter.invocation() as measured:
                bench.poll(asset)
            unchanged.append(measured)
        add_one()
        with meter.invocation() as changed:
            bench.poll(asset)
        found[fmt] = {"unchanged": summary(unchanged), "one new snapshot": summary([changed])}
        return []

    return cases


def polls(meter: Meter, wired: Container, formats: tuple[str, ...] = FORMATS) -> dict[str, Any]:
    from bench.poll import WorkerBench, _format

    found: dict[str, Any] = {}
    worker = WorkerBench(meter.server, wired)
    with tempfile.TemporaryDirectory() as workdir:
        for fmt in formats:
            _format(worker, fmt, POLL_HISTORY[fmt], workdir, poll_cases(meter, found))
    return found


def measure(repeats: int = REPEATS, formats: tuple[str, ...] = FORMATS) -> dict[str, Any]:
    """Everything bench/cost.py prices, counted on fresh moto servers."""
    out: dict[str, Any] = {}
    for part, work in (("event path", lambda m, w: event_path(m, w, repeats)), ("polls", polls)):
        if part == "polls" and not formats:
            continue
        with fresh_lakehook() as (server, wired), quiet_stdout():
            dynamodb = DynamoDBUnits()
            dynamodb.install(server)
            meter = Meter(server, dynamodb)
            out[part] = work(meter, wired) if part != "polls" else polls(meter, wired, formats)
    return out
