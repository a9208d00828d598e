"""Every metric docs/operations.md's Metrics table names is emitted by the function it names, and a function emits no
metric the table does not name for it: each function's real handler (``functions/<name>/app.py``) is driven on
in-process moto (a real Paimon table for the poll worker, the table's own stream for the resolver and the dispatcher)
far enough to emit its metrics, and Powertools' EMF lines on stdout are read back, function by function."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS
from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.rules import Rule
from lakehook.domain.time import now_ms
from lakehook.local.filters import matches_any
from lakehook.observability import MetricName, metrics
from tests.conftest import ADMIN_TOKEN
from tests.integration.test_bus_ingest_function import (
    GLUE_DQ,
    OTHER_ACCOUNT,
    STACK_ACCOUNT,
    from_account,
    producer,
    with_detail,
)
from tests.integration.test_partition_key_limits import LONG, SHORT, DeltaWriter, data
from tests.integration.test_resolver_on_moto import Stream
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.support import ROOT, FakeLambdaContext, api_event, load_handler

pytestmark = pytest.mark.integration

OPERATIONS = ROOT / "docs" / "operations.md"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
PUSHED = "custom://erp/orders"
OTHER = "custom://erp/payments"
POLLED = "paimon://lake/ods_db/ods_order_latest"
MISSED = "paimon://lake/ods_db/ods_payment_latest"
BROKEN = "paimon://lake/ods_db/missing_table"
EXPIRING = "paimon://lake/ods_db/ods_refund_latest"
BUSSED = "paimon://lake/ods_db/ods_bus_orders"
UNREADABLE = "custom://erp/unreadable_rules"
NOTIFIED = "iceberg://glue/dw_db/dwd_trade_event_fact"
BUS = "lakehook-runs"
RECEIVED, UPDATED = MetricName.EVENT_RECEIVED, MetricName.STATE_UPDATED
DEDUPLICATED, STALE, INVALID = MetricName.EVENT_DEDUPLICATED, MetricName.EVENT_STALE, MetricName.EVENT_INVALID
# what the table's "emitted by" calls each function: functions/<directory>
FUNCTIONS = {
    "ingest API": "ingest_api",
    "bus ingest": "bus_ingest",
    "poll planner": "poll_planner",
    "poll worker": "poll_worker",
    "resolver": "resolver",
    "dispatcher": "dispatcher",
    "deferral sweep": "deferral_sweep",
}


def documented() -> dict[str, set[str]]:
    """docs/operations.md's Metrics table as {function directory: the metrics named for it}; "same" is the row above.
    A parenthesis says which of a function's paths emits it (drop it); each name must be one of FUNCTIONS."""
    section = OPERATIONS.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    by_function: dict[str, set[str]] = {name: set() for name in FUNCTIONS.values()}
    previous: list[str] = []
    for metric, emitted_by in re.findall(r"^\| `(lakehouse_[a-z_]+)` \| ([^|]+) \|", section, re.MULTILINE):
        names = previous if emitted_by.strip() == "same" else _names(emitted_by)
        for name in names:
            assert name in FUNCTIONS, f"operations.md names {name!r} as emitting {metric}: no such function"
            by_function[FUNCTIONS[name]].add(metric)
        previous = names
    return by_function


def _names(cell: str) -> list[str]:
    return [part.strip() for part in re.sub(r"\([^)]*\)", "", cell).split(",") if part.strip()]


def emf_values(out: str) -> dict[str, float]:
    """The metrics of the EMF documents Powertools printed, each summed over the documents and their values."""
    sums: dict[str, float] = {}
    for line in out.splitlines():
        if line.startswith('{"_aws"'):
            document = json.loads(line)
            for directive in document["_aws"]["CloudWatchMetrics"]:
                for metric in directive["Metrics"]:
                    value = document[metric["Name"]]
                    sums[metric["Name"]] = sums.get(metric["Name"], 0) + sum(
                        value if isinstance(value, list) else [value]
                    )
    return sums


class Stack:
    """The functions' handlers on moto, each invocation's EMF output kept under the function that printed it."""

    def __init__(self, container: Container, capsys: pytest.CaptureFixture[str], ddb_client: Any) -> None:
        self.container = container
        self.capsys = capsys
        self.emitted: dict[str, set[str]] = {name: set() for name in FUNCTIONS.values()}
        self.last: dict[str, float] = {}  # what the last invocation emitted
        self.resolver_stream = Stream(ddb_client)
        self.dispatcher_stream = Stream(ddb_client)
        metrics.clear_metrics()  # Powertools keeps one buffer per process: what an earlier test left unflushed
        capsys.readouterr()

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        answer = load_handler(function)(event, FakeLambdaContext())
        self.last = emf_values(self.capsys.readouterr().out)
        self.emitted[function] |= set(self.last)
        return answer

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        answer = self.invoke("ingest_api", api_event(method, path, body, headers=ADMIN))
        return int(answer["statusCode"]), json.loads(answer["body"]) if answer.get("body") else None

    def trigger_keys(self, rule_id: str) -> list[str]:
        answer = self.invoke("ingest_api", api_event("GET", "/triggers", headers=ADMIN, query={"ruleId": rule_id}))
        assert int(answer["statusCode"]) == 200, answer["body"]
        return [str(t["triggerKey"]) for t in json.loads(answer["body"])["items"]]

    def resolve(self) -> None:
        self.invoke("resolver", self.resolver_stream.batch())

    def dispatch(self) -> None:
        records = [r for r in self.dispatcher_stream.records() if matches_any(r, DISPATCH_FILTER_PATTERNS)]
        self.invoke("dispatcher", {"Records": records})


@pytest.fixture
def stack(container: Container, capsys: pytest.CaptureFixture[str], ddb_client: Any) -> Stack:
    container.settings.compensation_grace_seconds = 0  # compensation takes what the poll has not read yet
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=container.settings.bucket_name)
    boto3.client("events", region_name="us-east-1").create_event_bus(Name=BUS)
    return Stack(container, capsys, ddb_client)


def rule(rule_id: str, *members: dict[str, Any], **more: Any) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "groups": [{"groupId": "g", "members": list(members)}],
            "target": {"type": "eventbridge", "eventBusName": BUS},
            **more,
        }
    )


def snapshot(asset: str, snapshot_id: int, **more: Any) -> dict[str, Any]:
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": snapshot_id, **more}


def register(container: Container, body: dict[str, Any]) -> None:
    container.asset_registry.put_asset(AssetRegistration.model_validate(body), now_ms())


def paimon_source(warehouse: dict[str, str], table: str) -> dict[str, Any]:
    return {"catalog": "lake", "properties": warehouse, "table": table}


def drive_ingest_and_resolve(stack: Stack) -> str:
    """Pushes of every outcome and a CDC recovery; a rule that claims and one that waits, resolved from the
    stream; answers the claim's trigger key."""
    now = now_ms()
    confirmed = {"outlets": ["custom://erp/orders_out"], "confirm": {"withinSeconds": 60}}
    stack.container.rule_store.put_rule(rule("ready", {"assetKey": PUSHED}, **confirmed), now)
    stack.container.rule_store.put_rule(rule("waiting", {"assetKey": PUSHED}, {"assetKey": OTHER}), now)
    gated = {"assetKey": OTHER, "condition": {"qualityStatus": "PASSED"}}
    stack.container.rule_store.put_rule(rule("gated", gated), now)
    register(stack.container, {"assetKey": PUSHED, "format": "custom"})
    register(stack.container, {"assetKey": OTHER, "format": "custom"})
    # a rule whose stored copy under its asset no longer parses: the asset's rules cannot be read, a rule error
    stack.container.rule_store.put_rule(rule("unreadable", {"assetKey": UNREADABLE}), now)
    stack.container.table.update_item(
        Key=keys.rule_index_key(UNREADABLE, "unreadable"),
        UpdateExpression="SET body = :garbage",
        ExpressionAttributeValues={":garbage": "{not json"},
    )
    status, body = stack.call(
        "POST",
        "/asset-events",
        {
            "events": [
                snapshot(PUSHED, 2, commitTime=now - 60_000),
                snapshot(PUSHED, 2, commitTime=now - 60_000),  # a duplicate
                snapshot(PUSHED, 1, commitTime=now - 120_000),  # older than the state: stale
                snapshot("not a key", 1),  # rejected
                {"eventType": "CDC_LAG_RECOVERED", "assetKey": OTHER, "watermark": now - 5_000},
                {"eventType": "WATERMARK_ADVANCED", "assetKey": PUSHED, "watermark": now - 30_000},
                snapshot(UNREADABLE, 1, commitTime=now),
            ]
        },
    )
    assert status == 200, body
    statuses = [r["status"] for r in body["results"]]
    assert statuses == ["ACCEPTED", "DUPLICATE", "STALE", "REJECTED", "ACCEPTED", "ACCEPTED", "ACCEPTED"], body
    counted = {name: stack.last.get(name) for name in (RECEIVED, UPDATED, DEDUPLICATED, STALE, INVALID)}
    assert counted == {RECEIVED: 7, UPDATED: 4, DEDUPLICATED: 1, STALE: 1, INVALID: 1}  # each event once
    stack.resolve()
    (key,) = stack.trigger_keys("ready")
    return key


def drive_dispatch(stack: Stack, key: str) -> None:
    """The claim starts its run; a claim of a rule deleted before its dispatch fails; a retry of it asks first."""
    stack.dispatch()
    status, shown = stack.call("GET", f"/triggers/{key}")
    assert status == 200 and shown["status"] == "SUCCEEDED", shown
    # the run's confirm window ended a moment ago (moved back, as time would), with no outlet commit carrying its key
    stack.container.table.update_item(
        Key=keys.trigger_item_key(key),
        UpdateExpression="SET confirmBy = :past",
        ExpressionAttributeValues={":past": now_ms() - 1},
    )
    now = now_ms()
    stack.container.rule_store.put_rule(rule("gone", {"assetKey": OTHER}), now)
    stack.call("POST", "/asset-events", snapshot(OTHER, 7, commitTime=now))
    stack.resolve()
    (gone,) = stack.trigger_keys("gone")
    stack.container.rule_store.delete_rule("gone")
    stack.dispatch()
    stack.container.rule_store.put_rule(rule("gone", {"assetKey": OTHER}), now)
    status, retried = stack.call("POST", f"/triggers/{gone}/retry")
    assert status in (200, 202), retried
    stack.dispatch()


def drive_completion(stack: Stack, key: str) -> None:
    status, body = stack.call(
        "POST", f"/runs/{key}/complete", {"status": "SUCCEEDED", "outlets": [snapshot("custom://erp/orders_out", 1)]}
    )
    assert status == 200, body
    assert (stack.last.get(RECEIVED), stack.last.get(UPDATED)) == (1, 1)  # its outlet, counted at completion


def drive_bus(stack: Stack) -> None:
    producer(stack.container, "glue-etl", ["com.example.glue-etl"])
    now = now_ms()
    events = [
        snapshot(BUSSED, 42, commitTime=now),
        snapshot(BUSSED, 42, commitTime=now),  # a duplicate
        snapshot(BUSSED, 41, commitTime=now - 1_000),  # stale
        {"eventType": "CDC_LAG_RECOVERED", "assetKey": BUSSED, "watermark": now - 5_000},
    ]
    answer = stack.invoke("bus_ingest", {**with_detail({"events": events}), "account": STACK_ACCOUNT})
    assert [r["status"] for r in answer["results"]] == ["ACCEPTED", "DUPLICATE", "STALE", "ACCEPTED"], answer
    stack.invoke("bus_ingest", from_account(OTHER_ACCOUNT))  # refused: invalid, and from a foreign account
    # a Glue Data Quality result for a table no registration names: UNMATCHED, counted, nothing recorded
    answer = stack.invoke("bus_ingest", GLUE_DQ)
    assert [v["status"] for v in answer["verdicts"]] == ["UNMATCHED"], answer


def sqs_work(mode: str, asset_keys: list[str]) -> dict[str, Any]:
    """An SQS batch of one poll message, as the planner queues it."""
    body = json.dumps({"mode": mode, "assetKeys": asset_keys})
    record = {"messageId": f"{mode}-1", "receiptHandle": "r", "body": body, "attributes": {}, "messageAttributes": {}}
    record |= {"md5OfBody": "", "eventSource": "aws:sqs", "awsRegion": "us-east-1"}
    return {"Records": [{**record, "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:polls"}]}


def drive_planner(stack: Stack) -> None:
    """A Glue notice of a registered table queues its poll; an S3 notice of no registered table is ignored."""
    stack.container.settings.poll_queue_url = boto3.client("sqs", region_name="us-east-1").create_queue(
        QueueName="polls"
    )["QueueUrl"]
    glue = {"catalog": "glue", "properties": {"type": "glue", "glue.id": "123456789012"}}
    register(
        stack.container,
        {"assetKey": NOTIFIED, "format": "iceberg", "source": {**glue, "table": "dw_db.dwd_trade_event_fact"}},
    )
    for notice in ("glue_table_change", "s3_commit_file_created"):
        stack.invoke("poll_planner", json.loads((ROOT / "events" / "poll_planner" / f"{notice}.json").read_text()))


def drive_polls(stack: Stack, tmp_path: Path) -> None:
    """The worker's polls: new snapshots, one pushed before (a duplicate) and one older than a push (stale); a table
    that cannot be read; snapshots expired before a poll read them; a partition key too long to record; and a
    compensation of a table no poll has read."""
    warehouse = {"warehouse": str(tmp_path / "wh")}
    tables = {}
    for key, name in ((POLLED, "ods_order_latest"), (MISSED, "ods_payment_latest"), (EXPIRING, "ods_refund_latest")):
        tables[key] = create_paimon_table(warehouse, f"ods_db.{name}")
        paimon_commit(tables[key], rows(1))
        register(
            stack.container, {"assetKey": key, "format": "paimon", "source": paimon_source(warehouse, f"ods_db.{name}")}
        )
    register(
        stack.container,
        {"assetKey": BROKEN, "format": "paimon", "source": paimon_source({"warehouse": "/nowhere"}, "ods_db.x")},
    )
    wide = DeltaWriter(tmp_path)
    stack.container.asset_registry.put_asset(wide.asset, now_ms())
    stack.invoke("poll_worker", sqs_work("poll", [POLLED, BROKEN, EXPIRING, wide.asset.asset_key]))

    paimon_commit(tables[POLLED], rows(2))  # snapshot 2: pushed too, so the poll finds it recorded
    paimon_commit(tables[POLLED], rows(3))  # snapshot 3: older than the pushed snapshot 4, so stale
    status, _ = stack.call("POST", "/asset-events", {"events": [snapshot(POLLED, 2), snapshot(POLLED, 4)]})
    assert status == 200
    for i in range(5):
        paimon_commit(tables[EXPIRING], rows(i))  # snapshots 2..6, of which 1..4 expire (as in test_paimon_source)
    snapshots = tmp_path / "wh" / "ods_db.db" / "ods_refund_latest" / "snapshot"
    for sid in (1, 2, 3, 4):
        (snapshots / f"snapshot-{sid}").unlink()
    (snapshots / "EARLIEST").write_text("5")
    wide.commit(data(SHORT, LONG, start=10))
    stack.invoke("poll_worker", sqs_work("poll", [POLLED, EXPIRING, wide.asset.asset_key]))
    # POLLED: 2 (pushed before) and 3 (older than the pushed 4); EXPIRING: 5 and 6; the wide commit
    counted = {name: stack.last.get(name) for name in (RECEIVED, UPDATED, DEDUPLICATED, STALE)}
    assert counted == {RECEIVED: 5, UPDATED: 3, DEDUPLICATED: 1, STALE: 1}
    stack.invoke("poll_worker", sqs_work("compensate", [MISSED]))


def test_every_documented_metric_is_emitted_by_the_function_the_docs_name_and_no_other(
    stack: Stack, tmp_path: Path
) -> None:
    key = drive_ingest_and_resolve(stack)
    drive_dispatch(stack, key)
    drive_completion(stack, key)
    drive_bus(stack)
    drive_planner(stack)
    drive_polls(stack, tmp_path)
    stack.invoke("deferral_sweep", {"check": "freshness"})

    wanted = documented()
    missing = {f: sorted(wanted[f] - stack.emitted[f]) for f in wanted if wanted[f] - stack.emitted[f]}
    undocumented = {f: sorted(stack.emitted[f] - wanted[f]) for f in wanted if stack.emitted[f] - wanted[f]}
    assert missing == {}, f"documented in operations.md but not emitted there: {missing}"
    assert undocumented == {}, f"emitted but not in operations.md's table for that function: {undocumented}"
