"""EACH_VERSION on a real Paimon table: a lost push leaves a gap; the resolver queues a targeted fill poll; the poll
worker (its handler, fed the queued SQS message) reads the missing snapshot from the table; the runs come in order.

Everything is the production path on in-process moto: ingest into DynamoDB, the table's own stream through the
resolver's FilterCriteria, the resolver's SQS message, the poll worker's Lambda handler and pypaimon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import EventType, SourceType
from lakehook.domain.time import now_ms
from lakehook.handlers import handle_stream_batch
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, push, put_rule, triggers_of
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.support import FakeLambdaContext, load_handler, mark_claims_succeeded

pytestmark = pytest.mark.integration


def runs_succeed(container: Container, stream: Stream) -> None:
    """The dispatcher starts each claimed run and marks it SUCCEEDED; that write's stream record wakes the group
    (head of line), until nothing more is claimed."""
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    while True:
        started = mark_claims_succeeded(container.table)
        assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
        if not started:
            return


def queued(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the poll queue, as the poll worker's SQS event records."""
    found: list[dict[str, Any]] = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return found
        found += [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:polls",
                "awsRegion": "us-east-1",
            }
            for m in got
        ]


def test_a_lost_push_is_filled_by_the_targeted_poll_and_the_runs_come_in_order(
    container: Container, ddb_client: Any, tmp_path: Path
) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="polls")["QueueUrl"]
    container.settings.poll_queue_url = url
    stream = Stream(ddb_client)
    app = build_app()

    # GIVEN a Paimon table with snapshots 1, 2 and 3, and an EACH_VERSION rule on it
    warehouse = {"warehouse": str(tmp_path / "warehouse")}
    table = create_paimon_table(warehouse, "ods_db.ods_order_latest")
    for batch in (rows(1), rows(2, 3), rows(4)):
        paimon_commit(table, batch)
    container.asset_registry.put_asset(
        AssetRegistration.model_validate(
            {
                "assetKey": ORDERS,
                "format": "paimon",
                "source": {"catalog": "lake", "properties": warehouse, "table": "ods_db.ods_order_latest"},
            }
        ),
        now_ms(),
    )
    put_rule(app, "each", {"assetKey": ORDERS}, mode="EACH_VERSION")

    # WHEN the writer's pushes of 1 and 3 arrive, and that of 2 is lost
    for sid in (1, 3):
        push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=sid, schemaId=0, commitKind="APPEND")
    runs_succeed(container, stream)

    # THEN 1 ran, and the rule waits for 2, which a targeted poll looks for
    assert triggers_of(app, "each") == [[1]]
    status, explained = call(app, "GET", "/rules/each/explain")
    assert status == 200 and explained["ready"] is False
    group = explained["groups"][0]
    assert group["status"] == "WAITING_FOR_VERSION" and "the snapshot after 1 is missing" in group["reason"]
    assert group["members"][0]["status"] == "WAITING_FOR_VERSION"
    records = queued(sqs, url)
    bodies = [json.loads(r["body"]) for r in records]
    assert bodies and all(
        b == {"mode": "fill", "assetKeys": [ORDERS], "after": {"snapshotId": 1, "order": 1}} for b in bodies
    )

    # WHEN the poll worker takes the queued fill message
    answer = load_handler("poll_worker")({"Records": records}, FakeLambdaContext())
    assert answer == {"batchItemFailures": []}

    # THEN snapshot 2 is read from the table (what Paimon recorded of it) and ingested, late, through the ingest path
    page = container.asset_store.list_events(ORDERS, limit=50)
    found = {r.event.snapshot_id: r for r in page.items if r.event.event_type is EventType.SNAPSHOT_COMMITTED}
    assert sorted(found) == [1, 2, 3]
    assert found[2].source is SourceType.COMPENSATION
    assert (found[2].event.parent_snapshot_id, found[2].event.total_record_count) == (1, 3)
    state = container.asset_store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 3  # the state never moved back

    # AND the event item's stream record wakes the rule: 2 runs, then 3, in version order, each once
    runs_succeed(container, stream)
    assert triggers_of(app, "each") == [[1], [2], [3]]
    status, explained = call(app, "GET", "/rules/each/explain")
    assert explained["groups"][0]["status"] == "WAITING_FOR_UPDATE"
    assert queued(sqs, url) == []  # no gap left: no more fill polls
