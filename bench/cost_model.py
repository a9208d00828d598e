"""The cost model: counted requests and measured CPU (bench/cost_measured.json) priced at bench/prices.py's prices.

Pure: it reads the measurements, template.yaml (each function's memory size, the poll schedule's defaults) and
the prices, and answers figures and Markdown; ``python -m bench.cost`` measures, and writes what this renders
into bench/results.md, docs/deploy.md and docs/architecture.md.

How a Lambda invocation is timed: Lambda gives a function CPU in proportion to its memory, one full vCPU at
1,769 MB (`VCPU_MB`), so the CPU time measured here on one full core takes ``cpu / share`` at a smaller size;
a single-threaded handler gains nothing above it. To that each request it makes adds the service's typical
round trip (`ROUND_TRIP_MS`, what AWS documents, or an assumption where nothing is published). The CPU is this
machine's core, taken as equal to a Lambda (Graviton) core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bench.prices import price

ROOT = Path(__file__).resolve().parents[1]
VCPU_MB = 1769  # https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
SIZES = (128, 256, 512, 1024, 1769, 3008)
MONTH_SECONDS = 30 * 86_400
COMPENSATION_SECONDS = 15 * 60  # template.yaml's Compensate schedule: rate(15 minutes)
TABLES = 1000
TABLES_PER_WORKER = 50  # a queue message carries 10 tables, a worker batch 5 messages
POLL_THREADS = 4  # PollAssets polls 4 tables at a time (usecases/poll.py): their round trips overlap, not their CPU
QUEUE_REQUESTS_PER_POLL = 1 / 100 + 2 / TABLES_PER_WORKER  # sent 10 messages a request; received, deleted in fives
PLANNER_READ_UNITS_PER_1000 = 75.0  # docs/deploy.md: one GSI1 query of 1,000 registrations a tick (not counted)
PLANNER_SECONDS = 1.0  # a planner invocation, assumed (not measured here)
LOG_KB_PER_EVENT = 0.5  # the ingest's and the resolver's log lines for one event (docs/deploy.md)

# A warm in-region round trip, per service, in ms: what the request adds to a function's duration and latency.
ROUND_TRIP_MS = {
    # "single-digit millisecond performance": docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html
    "dynamodb": 5.0,
    "s3": 20.0,  # small requests: "median latencies are often in the tens of milliseconds" (S3 performance whitepaper)
    "glue": 30.0,  # not published: an assumption
    "secretsmanager": 20.0,  # not published: an assumption
    "sqs": 10.0,  # not published: an assumption
}
# Each operation's price per request, where it is priced by the request (DynamoDB is priced by its units).
REQUEST_PRICES = {
    "s3 GetObject": "s3_get",
    "s3 HeadObject": "s3_get",
    "s3 ListObjects": "s3_put_list",
    "s3 PutObject": "s3_put_list",
    "glue GetTable": "glue_request",
    "secretsmanager GetSecretValue": "secrets_api_call",
}
FORMATS = {"iceberg": "Iceberg (Glue catalog)", "paimon": "Paimon", "delta": "Delta", "hudi": "Hudi"}


@dataclass(frozen=True)
class Step:
    """One measured handler invocation: requests by ``"service Operation"``, DynamoDB units, CPU ms."""

    requests: dict[str, float]
    read_units: float
    write_units: float
    cpu_ms: float

    @classmethod
    def of(cls, measured: dict[str, Any]) -> Step:
        return cls(measured["requests"], measured["read_units"], measured["write_units"], measured["cpu_ms"])

    def wait_ms(self) -> float:
        return sum(n * ROUND_TRIP_MS.get(op.split(" ", 1)[0], 0.0) for op, n in self.requests.items())

    def duration_ms(self, memory_mb: int, overlap: int = 1) -> float:
        """Its CPU at the memory's share of a vCPU, then its requests' round trips (``overlap`` at a time)."""
        return self.cpu_ms / cpu_share(memory_mb) + self.wait_ms() / overlap

    def request_dollars(self) -> float:
        dynamodb = self.read_units * price("dynamodb_read_unit") + self.write_units * price("dynamodb_write_unit")
        return dynamodb + sum(n * price(REQUEST_PRICES[op]) for op, n in self.requests.items() if op in REQUEST_PRICES)

    def dollars(self, memory_mb: int, invocation: float = 1.0) -> float:
        """What the step costs: its requests, its share of an invocation's request charge, its GB-seconds."""
        seconds = self.duration_ms(memory_mb) / 1000
        return (
            self.request_dollars()
            + invocation * price("lambda_request")
            + seconds * memory_mb / 1024 * price("lambda_gb_second")
        )

    def total_requests(self) -> float:
        return sum(self.requests.values())


def cpu_share(memory_mb: int) -> float:
    """The fraction of a vCPU a single-threaded function gets at ``memory_mb``."""
    return min(1.0, memory_mb / VCPU_MB)


@cache
def template_defaults() -> tuple[dict[str, int], dict[str, Any]]:
    """(memory size per function, parameter defaults) from template.yaml."""
    from lakehook.local.template import Template

    template = Template.load(ROOT / "template.yaml")
    memory = {f.name: f.memory_size for f in template.functions()}
    return memory, {k: v.get("Default") for k, v in template.document["Parameters"].items()}


def memory(function: str) -> int:
    return template_defaults()[0][function]


def money(dollars: float) -> str:
    return f"${dollars:,.2f}" if dollars >= 0.1 else f"${dollars:,.3f}"


_READS = {"GetItem", "Query", "Scan"}
_WRITES = {"PutItem", "UpdateItem", "DeleteItem"}


def units(operation: str, request: dict[str, Any], answer_bytes: int) -> tuple[float, float]:
    """(read units, write units) one DynamoDB request consumes."""
    consistency = 1.0 if request.get("ConsistentRead") else 0.5
    if operation in _WRITES:
        return 0.0, 1.0
    if operation in _READS:
        return consistency * max(1, math.ceil(answer_bytes / 4096)), 0.0
    if operation == "BatchGetItem":
        tables = request.get("RequestItems", {}).values()
        return sum((1.0 if t.get("ConsistentRead") else 0.5) * len(t.get("Keys", [])) for t in tables), 0.0
    if operation == "BatchWriteItem":
        return 0.0, float(sum(len(items) for items in request.get("RequestItems", {}).values()))
    if operation == "TransactWriteItems":
        return 0.0, 2.0 * len(request.get("TransactItems", []))
    if operation == "TransactGetItems":
        return 2.0 * len(request.get("TransactItems", [])), 0.0
    return 0.0, 0.0


# --- per million events and runs -----------------------------------------------------------------------


def steps(measured: dict[str, Any]) -> dict[str, Step]:
    return {name: Step.of(m) for name, m in measured["event path"]["steps"].items() if m is not None}


def event_lines(measured: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(item, requests, dollars) per million novel events, pushed one per request, each resolved on its own."""
    s = steps(measured)
    ingest, resolve = s["ingest novel"], s["resolver, no run"]
    ingest_mb, resolver_mb = memory("IngestApiFunction"), memory("ResolverFunction")
    return [
        ("API Gateway REST request", "1", price("api_gateway_request") * 1e6),
        (f"ingest function ({ingest_mb} MB)", _described(ingest, ingest_mb), ingest.dollars(ingest_mb) * 1e6),
        (
            f"resolver function ({resolver_mb} MB), one invocation per event "
            "(at most: a busy stream batches up to 100)",
            _described(resolve, resolver_mb),
            resolve.dollars(resolver_mb) * 1e6,
        ),
        ("CloudWatch Logs", f"≈ {LOG_KB_PER_EVENT} KB", LOG_KB_PER_EVENT / 1e6 * price("cloudwatch_logs_gb") * 1e6),
        ("X-Ray (default: `Tracing` `Disabled`, `ApiTraceRate` `0`)", "0 traces", 0.0),
    ]


def duplicate_dollars(measured: dict[str, Any]) -> float:
    """A million duplicate pushes: API Gateway and the ingest function (its refused write is billed)."""
    ingest = steps(measured)["ingest duplicate"]
    return (price("api_gateway_request") + ingest.dollars(memory("IngestApiFunction"))) * 1e6


def run_lines(measured: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(item, requests, dollars) per million runs started, beyond the event that started each."""
    s = steps(measured)
    resolver_mb, dispatcher_mb = memory("ResolverFunction"), memory("DispatcherFunction")
    claim, no_run = s["resolver, claim"], s["resolver, no run"]
    extra = Step(
        {op: n - no_run.requests.get(op, 0.0) for op, n in claim.requests.items() if n != no_run.requests.get(op)},
        max(0.0, claim.read_units - no_run.read_units),  # the two rules' reads differ by their members alone
        claim.write_units - no_run.write_units,
        max(0.0, claim.cpu_ms - no_run.cpu_ms),
    )
    out = [
        (
            "the claim, in the event's resolver invocation",
            _described(extra, resolver_mb, invoked=False),
            extra.dollars(resolver_mb, invocation=0) * 1e6,
        ),
        (
            f"dispatcher function ({dispatcher_mb} MB), the target's call aside",
            _described(s["dispatcher"], dispatcher_mb),
            s["dispatcher"].dollars(dispatcher_mb) * 1e6,
        ),
    ]
    after = s.get("resolver, after the run started")
    if after is not None:
        out.append(
            (
                "the run's own records back in the resolver",
                _described(after, resolver_mb),
                after.dollars(resolver_mb) * 1e6,
            )
        )
    return out


def run_requests(measured: dict[str, Any]) -> tuple[float, float]:
    """(requests per run after the claim, the claim's own) counted end to end."""
    s = steps(measured)
    after = s.get("resolver, after the run started")
    claim = s["resolver, claim"].total_requests() - s["resolver, no run"].total_requests()
    return s["dispatcher"].total_requests() + (after.total_requests() if after else 0.0), claim


def _described(step: Step, memory_mb: int, invoked: bool = True) -> str:
    ops = ", ".join(f"{op.split(' ', 1)[1]} {n:g}" for op, n in sorted(step.requests.items()))
    units = f"{step.read_units:g} RRU + {step.write_units:g} WRU"
    lam = f"{step.cpu_ms:.1f} ms CPU → {step.duration_ms(memory_mb):.0f} ms" + (" + 1 request" if invoked else "")
    return f"{ops or 'none'}; {units}; {lam}"


# --- per 1,000 tables a month --------------------------------------------------------------------------


def polls_a_month(notices: bool) -> float:
    """Unchanged checks of one table a month: the fast poll, or the safety net plus compensation."""
    _, defaults = template_defaults()
    if not notices:
        return MONTH_SECONDS / int(defaults["PollIntervalSeconds"])
    return MONTH_SECONDS / int(defaults["NoticeSafetyNetSeconds"]) + MONTH_SECONDS / COMPENSATION_SECONDS


def table_month(measured: dict[str, Any], fmt: str, notices: bool) -> dict[str, float]:
    """Dollars a month for ``TABLES`` unchanged tables of ``fmt``, by part."""
    poll = Step.of(measured["polls"][fmt]["unchanged"])
    worker_mb, planner_mb = memory("PollWorkerFunction"), memory("PollPlannerFunction")
    checks = TABLES * polls_a_month(notices)
    storage = {op: n for op, n in poll.requests.items() if not op.startswith("dynamodb")}
    ticks = MONTH_SECONDS / 60
    planner = ticks * (
        price("lambda_request")
        + PLANNER_SECONDS * planner_mb / 1024 * price("lambda_gb_second")
        + PLANNER_READ_UNITS_PER_1000 * TABLES / 1000 * price("dynamodb_read_unit")
    )
    return {
        "catalog / storage": checks * Step(storage, 0, 0, 0).request_dollars(),
        "DynamoDB": checks
        * (poll.read_units * price("dynamodb_read_unit") + poll.write_units * price("dynamodb_write_unit")),
        "poll worker": checks
        * (
            price("lambda_request") / TABLES_PER_WORKER
            + poll.duration_ms(worker_mb, POLL_THREADS) / 1000 * worker_mb / 1024 * price("lambda_gb_second")
        ),
        "queue": checks * QUEUE_REQUESTS_PER_POLL * price("sqs_request"),
        "planner": planner,
    }


# --- Markdown ------------------------------------------------------------------------------------------


def _table(head: str, lines: list[tuple[str, str, float]]) -> str:
    out = [f"| {head} | requests and work | $ |", "|---|---|---|"]
    out += [f"| {item} | {how} | {money(d)} |" for item, how, d in lines]
    out.append(f"| **total** | | **{money(sum(d for *_, d in lines))}** |")
    return "\n".join(out)


def tables_markdown(measured: dict[str, Any]) -> str:
    head = (
        "| 1,000 unchanged tables, a month | unchanged check (counted) | checks | catalog / storage | DynamoDB "
        "| poll worker | queue | planner | **total** |"
    )
    out = [head, "|---|---|---|---|---|---|---|---|---|"]
    for fmt, name in FORMATS.items():
        if fmt not in measured.get("polls", {}):
            continue
        poll = Step.of(measured["polls"][fmt]["unchanged"])
        check = ", ".join(f"{op.split(' ', 1)[1]} {n:g}" for op, n in sorted(poll.requests.items()))
        for notices in (False, True):
            parts = table_month(measured, fmt, notices)
            label = f"{name}, notices arriving" if notices else f"{name}, polled every minute"
            cells = " | ".join(money(v) for v in parts.values())
            checks = f"{TABLES * polls_a_month(notices) / 1e6:,.2f} M"
            out.append(f"| {label} | {check} | {checks} | {cells} | **{money(sum(parts.values()))}** |")
    return "\n".join(out)


def notes_markdown(measured: dict[str, Any]) -> str:
    """docs/deploy.md's generated cost notes."""
    after, claim = run_requests(measured)
    events = event_lines(measured)
    runs = run_lines(measured)
    return "\n\n".join(
        [
            f"Measured {measured['measured']} by `python -m bench.cost` (requests counted on moto, CPU on "
            f"{measured['machine']}); priced at bench/prices.py's us-east-1 list prices. RRU / WRU: DynamoDB "
            "read / write request units; a function's duration is its CPU time over its memory's share of a "
            f"vCPU (1 at {VCPU_MB:,} MB) plus a typical round trip per request (bench/cost_model.py).",
            "**Per million novel events**, pushed one per request:\n\n" + _table("per million events", events),
            f"A million duplicates cost **{money(duplicate_dollars(measured))}** (API Gateway and the ingest "
            "function; the refused conditional write is billed). Not per event: a warm ingest function re-reads "
            "a producer's secret once every `LAKEHOOK_PRODUCER_CACHE_SECONDS` (30 s by default), one Secrets "
            "Manager call ($0.05 per 10,000) per producer and execution environment.",
            "**Per million runs started**, beyond the events that started them; the target's own price aside. "
            f"A run costs {claim:g} request for its claim and {after:g} after it:\n\n"
            + _table("per million runs", runs),
            f"**Per {TABLES:,} tables a month**, unchanged (each commit then costs its poll's reads and its "
            "event's writes): polled every minute, or with commit notices arriving (the hourly safety net and the "
            "15-minute compensation, each the same unchanged check). The planner (one invocation a minute, "
            f"{PLANNER_SECONDS:g} s assumed, its GSI query ≈ {PLANNER_READ_UNITS_PER_1000:g} read units per 1,000 "
            "tables) and the queue's requests are modelled, not counted:\n\n" + tables_markdown(measured),
        ]
    )


def memory_markdown(measured: dict[str, Any]) -> str:
    """Duration and GB-second cost per invocation at each memory size, for the event, run and poll paths."""
    s = steps(measured)
    cases = [
        ("IngestApiFunction", "a novel one-event push", s["ingest novel"], 1),
        ("ResolverFunction", "a change that claims a run", s["resolver, claim"], 1),
        ("DispatcherFunction", "a claim dispatched", s["dispatcher"], 1),
    ]
    if "iceberg" in measured.get("polls", {}):
        poll = Step.of(measured["polls"]["iceberg"]["unchanged"])
        n = TABLES_PER_WORKER
        batch = Step({op: k * n for op, k in poll.requests.items()}, 0, 0, poll.cpu_ms * n)
        cases.append(
            ("PollWorkerFunction", f"{n} unchanged Iceberg tables, {POLL_THREADS} at a time", batch, POLL_THREADS)
        )
    head = "| function (template's size) | invocation | CPU ms | " + " | ".join(f"{mb} MB" for mb in SIZES) + " |"
    out = [head, "|---|---|---|" + "---|" * len(SIZES)]
    for function, what, step, overlap in cases:
        cells = []
        for mb in SIZES:
            ms = step.duration_ms(mb, overlap)
            cell = f"{ms:.0f} ms, ${ms / 1000 * mb / 1024 * price('lambda_gb_second') * 1e6:.2f}"
            cells.append(f"**{cell}**" if mb == memory(function) else cell)
        out.append(f"| {function} ({memory(function)} MB) | {what} | {step.cpu_ms:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def cold_markdown(measured: dict[str, Any]) -> str:
    rows = measured.get("cold start", [])
    out = [
        "| function | `import boto3` alone (CPU ms) | handler import (CPU ms) | lakehook's own (CPU ms) | own / boto3 "
        "| first invocation adds (CPU ms) | of which building boto3 clients | init at the template's size (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        init = (row["handler_ms"] + row["first_invocation_ms"]) / cpu_share(memory(row["function"]))
        out.append(
            f"| {row['function']} | {row['boto3_ms']:.0f} | {row['handler_ms']:.0f} | {row['own_ms']:.1f} | "
            f"{row['own_ms'] / row['boto3_ms']:.2f} | {row['first_invocation_ms']:.0f} | "
            f"{row.get('client_building_ms', 0.0):.0f} | {init:.0f} |"
        )
    return "\n".join(out)


STREAM_HOP_MS = (125.0, 250.0)  # Lambda polls a stream shard 4 times a second: half a period on average, at most one


def latency_lines(measured: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    """(hop, typical ms, at most ms, how) push → run, warm, at each function's memory size."""
    s = steps(measured)
    hop = (
        "Lambda polls each shard 4 times a second, invokes at once (no batching window); "
        "the record's own propagation is not published"
    )
    out = []
    for function, step_name, what in (
        ("IngestApiFunction", "ingest novel", "the push"),
        (None, "", "DynamoDB Streams → resolver"),
        ("ResolverFunction", "resolver, claim", "the resolver's claim"),
        (None, "", "DynamoDB Streams → dispatcher"),
        ("DispatcherFunction", "dispatcher", "the dispatcher, the target's call aside (its last write follows it)"),
    ):
        if function is None:
            out.append((what, STREAM_HOP_MS[0], STREAM_HOP_MS[1], hop))
            continue
        step, mb = s[step_name], memory(function)
        d = step.duration_ms(mb)
        how = (
            f"{step.cpu_ms:.1f} ms CPU / {cpu_share(mb):.2f} vCPU ({mb} MB) "
            f"+ {step.total_requests():g} requests ({step.wait_ms():.0f} ms)"
        )
        out.append((f"{what} ({function})", d, d, how))
    return out


def latency_markdown(measured: dict[str, Any]) -> str:
    lines = latency_lines(measured)
    out = ["| hop | typical ms | at most ms | how |", "|---|---|---|---|"]
    out += [f"| {hop} | {t:.0f} | {m:.0f} | {how} |" for hop, t, m, how in lines]
    typical, most = sum(t for _, t, _, _ in lines), sum(m for _, _, m, _ in lines)
    out.append(
        f"| **push → run, warm** | **{typical:.0f}** | **{most:.0f}** "
        "| plus API Gateway's overhead and the target's own time |"
    )
    return "\n".join(out)


def cold_addition_ms(measured: dict[str, Any], function: str) -> float | None:
    for row in measured.get("cold start", []):
        if row["function"] == function:
            return (row["handler_ms"] + row["first_invocation_ms"]) / cpu_share(memory(function))
    return None
