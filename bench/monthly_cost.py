"""A month of a lakehook estate, priced: the worked total in docs/deploy.md (``python -m bench.monthly_cost``).

Every figure is computed here from the estate (tables, events, triggers, secrets), the request counts per event,
trigger and poll that docs/deploy.md#what-it-costs-per-million-events gives (the benchmarks and the request-
counting tests measure them), us-east-1 on-demand list prices, and what template.yaml declares (its alarms and
dashboard). tests/unit/test_monthly_cost.py holds docs/deploy.md's table to what this prints, so a price or a
count changed here changes the page too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.prices import price

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"

DAYS = 30
MINUTES = DAYS * 24 * 60  # one poll a table a minute: 43,200 a month

# us-east-1 list prices: bench/prices.py keeps them with their source and date
PER_MILLION_EVENTS = 7.14  # one per request: API Gateway, ingest (a 2-write transaction), resolver, logs (the doc)
PER_MILLION_TRIGGERS = 2.50 + 5.00 + 1.50  # the claim's 4 write units, the manifest PUT, the dispatcher
READ_UNIT = price("dynamodb_read_unit")
GLUE_REQUEST = price("glue_request")
LAMBDA_REQUEST = price("lambda_request")
LAMBDA_GB_SECOND = price("lambda_gb_second")
SQS_REQUEST = price("sqs_request")
LOGS_GB = price("cloudwatch_logs_gb")
STORAGE_GB_MONTH = price("dynamodb_storage_gb_month")
PITR_GB_MONTH = price("dynamodb_pitr_gb_month")
ALARM_MONTH = price("cloudwatch_alarm_month")
DASHBOARD_MONTH = price("cloudwatch_dashboard_month")
METRIC_MONTH = price("cloudwatch_metric_month")
SECRET_MONTH = price("secret_month")

TABLES_PER_WORKER = 50  # 5 queue messages of 10 tables an invocation: 1,000 tables are 20 a minute (docs/deploy.md)
UNCHANGED_POLL_SECONDS = 0.0527  # bench/results.md: an unchanged Iceberg poll, 100 snapshots of history (median)
OPERATIONS = TEMPLATE.parent / "docs" / "operations.md"
QUEUE_REQUESTS_PER_TABLE_POLL = 2e6 / (1000 * MINUTES)  # the doc's ≈ 2 M requests a month for 1,000 tables
EVENT_ITEM_KB = 0.5


@dataclass(frozen=True)
class Estate:
    """What is priced: the estate, and the assumptions the page states with the total."""

    tables: int = 500  # Iceberg in Glue, polled every minute, unchanged at almost every poll
    rules: int = 50
    events_per_day: int = 20_000  # novel events, pushed one per request
    runs_per_rule_per_day: int = 24  # one run an hour
    producers: int = 20  # one signing secret each
    target_secrets: int = 10  # webhook keys, Airflow / DolphinScheduler credentials
    worker_seconds: float = TABLES_PER_WORKER * UNCHANGED_POLL_SECONDS  # one poll worker invocation, at 512 MB
    extra_metric_series: int = 10  # blocked_by reasons and (target type, failure) pairs that occur in a month
    log_kb_per_poll_invocation: float = 1.0  # Lambda's START / END / REPORT lines and one metric line


def documented_metrics() -> int:
    """The metrics docs/operations.md#metrics lists: each is at least one series (its ``service`` dimension)."""
    return sum(1 for line in OPERATIONS.read_text(encoding="utf-8").splitlines() if line.startswith("| `lakehouse_"))


def template_counts() -> tuple[int, int]:
    """(alarms, dashboards) template.yaml declares."""
    text = TEMPLATE.read_text(encoding="utf-8")
    types = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("Type: AWS::")]
    return types.count("AWS::CloudWatch::Alarm"), types.count("AWS::CloudWatch::Dashboard")


def reserved_concurrency() -> tuple[int, dict[str, int]]:
    """The concurrency the defaults reserve in all, and per parameter how many functions reserve it."""
    loader = yaml.SafeLoader
    loader.add_multi_constructor("!", lambda _loader, tag, node: {tag: node.value})
    text = TEMPLATE.read_text(encoding="utf-8")
    defaults = {k: v.get("Default") for k, v in yaml.load(text, Loader=loader)["Parameters"].items()}
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if "ReservedConcurrentExecutions:" in line:
            parameter = next(p for p in defaults if f"!Ref {p}," in line or f"!Ref {p}]" in line)
            counts[parameter] = counts.get(parameter, 0) + 1
    return sum(int(defaults[p]) * n for p, n in counts.items()), counts


def lines(estate: Estate) -> list[tuple[str, str, float]]:
    """(item, how it is computed, dollars a month)."""
    events = estate.events_per_day * DAYS
    triggers = estate.rules * estate.runs_per_rule_per_day * DAYS
    polls = estate.tables * MINUTES
    workers = polls / TABLES_PER_WORKER
    alarms, dashboards = template_counts()
    secrets = 1 + estate.producers + estate.target_secrets
    table_gb = events * EVENT_ITEM_KB / 1e6
    series = documented_metrics() + estate.extra_metric_series
    return [
        ("events", f"{events:,} x ${PER_MILLION_EVENTS} / M", events * PER_MILLION_EVENTS / 1e6),
        ("triggers", f"{triggers:,} x ${PER_MILLION_TRIGGERS:.2f} / M", triggers * PER_MILLION_TRIGGERS / 1e6),
        ("polls: Glue GetTable", f"{polls:,} x $1 / M", polls * GLUE_REQUEST),
        ("polls: DynamoDB (2 strong reads)", f"{2 * polls:,} read units x $0.125 / M", 2 * polls * READ_UNIT),
        (
            "poll workers",
            f"{workers:,.0f} invocations: requests + {estate.worker_seconds:.2f} s x 0.5 GB",
            workers * (LAMBDA_REQUEST + estate.worker_seconds * 0.5 * LAMBDA_GB_SECOND),
        ),
        (
            "poll queue",
            f"≈ {polls * QUEUE_REQUESTS_PER_TABLE_POLL:,.0f} requests x $0.40 / M",
            polls * QUEUE_REQUESTS_PER_TABLE_POLL * SQS_REQUEST,
        ),
        (
            "poll logs",
            f"{workers + MINUTES:,.0f} invocations x {estate.log_kb_per_poll_invocation} KB x $0.50 / GB",
            (workers + MINUTES) * estate.log_kb_per_poll_invocation / 1e6 * LOGS_GB,
        ),
        (
            "table storage and PITR",
            f"{table_gb:.2f} GB of events x ($0.25 + $0.20)",
            table_gb * (STORAGE_GB_MONTH + PITR_GB_MONTH),
        ),
        ("alarms (fixed)", f"{alarms} in template.yaml x $0.10", alarms * ALARM_MONTH),
        ("dashboard (fixed)", f"{dashboards} x $3", dashboards * DASHBOARD_MONTH),
        (
            "custom metrics (fixed)",
            f"{documented_metrics()} metrics + {estate.extra_metric_series} dimension values x $0.30",
            series * METRIC_MONTH,
        ),
        (
            "secrets (fixed)",
            f"{secrets} (completion key, {estate.producers} producers, {estate.target_secrets} targets) x $0.40",
            secrets * SECRET_MONTH,
        ),
    ]


def markdown(estate: Estate) -> str:
    rows = lines(estate)
    out = ["| item | computed as | $ a month |", "|---|---|---|"]
    out += [f"| {item} | {how} | {cost:,.2f} |" for item, how, cost in rows]
    out.append(f"| **total** | | **{sum(c for _, _, c in rows):,.2f}** |")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(Estate()))
