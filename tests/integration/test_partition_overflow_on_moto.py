"""A commit touching more partitions than one event holds: every partition is recorded and evaluated (issue 33).

Two real Delta tables (delta-rs, ``partition_by=["dt"]``) polled through the real source and the real ingest into
DynamoDB (moto, with lakehook's moto adapter as the local stack runs it); the table's own stream handed to the
resolver in batches of 100 through the FilterCriteria it ships with, and the resolver's queue (SQS on moto)
drained through its own handler, one message an invocation, as Lambda would. A commit of each table touching
1,300 days runs the rule once per day, every day, pinning both commits, once however often the commit's records
come; the poll's extra requests for the keys past the event's 1,000, and the resolver's for each part, are counted
(docs/partitions.md#limits states them).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from moto import mock_aws

from lakehook import container as container_module
from lakehook.adapters.dynamodb.stream_records import RESOLVER_FILTER_PATTERNS
from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import IngestStatus
from lakehook.domain.limits import MAX_TOUCHED_PARTITIONS
from lakehook.handlers import handle_resolver_queue, handle_stream_batch
from lakehook.local import moto_dynamodb
from lakehook.local.filters import matches_any
from lakehook.settings import Settings
from lakehook.usecases.poll import CompensateAsset
from tests.conftest import ADMIN_TOKEN, BUCKET, TABLE
from tests.integration.test_resolver_on_moto import Stream, call
from tests.pollers import Lake
from tests.support import RequestCounter, create_table

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # 1,300 claims and 5,200 fact writes on moto: minutes

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
TOUCHED = 1_300  # the event's 1000 keys and one part of 300 (small: every claim copies moto's table)
STREAM_BATCH = 100  # the resolver's event source mapping's BatchSize (template.yaml)


class Wired:
    """The poller, the resolver (with its queue) and the API on one moto table."""

    def __init__(self, container: Container, ddb_client: Any, queue_url: str) -> None:
        from lakehook.api.app import build_app

        self.container = container
        self.app = build_app()
        self.stream = Stream(ddb_client)
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.queue_url = queue_url
        self.counter = RequestCounter().attach(container.table.meta.client)
        self.lake = Lake(container.table, container=container)

    def deliver(self, records: list[dict[str, Any]]) -> None:
        """Stream records to the resolver as its event source mapping hands them over: batches of 100."""
        for start in range(0, len(records), STREAM_BATCH):
            batch = {"Records": records[start : start + STREAM_BATCH]}
            assert handle_stream_batch(batch, self.container) == {"batchItemFailures": []}

    def read(self) -> list[dict[str, Any]]:
        """The stream's new records, every one read (1000 a read), that the resolver's FilterCriteria let through."""
        found: list[dict[str, Any]] = []
        while read := self.stream.records():
            found += [r for r in read if matches_any(r, RESOLVER_FILTER_PATTERNS)]
        return found

    def settle(self, records: list[dict[str, Any]] | None = None) -> int:
        """Hand ``records`` (else the stream's) to the resolver, then whatever the stream and the resolver's queue
        bring, one message an invocation, until both are quiet; how many queue messages that took."""
        messages = 0
        self.deliver(self.read() if records is None else records)
        while True:
            records = self.read()
            self.deliver(records)
            received = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=1).get("Messages", [])
            if not records and not received:
                return messages
            for message in received:
                record = {"messageId": message["MessageId"], "body": message["Body"], "eventSource": "aws:sqs"}
                assert handle_resolver_queue({"Records": [record]}, self.container) == {"batchItemFailures": []}
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
                messages += 1

    def runs(self, rule_id: str) -> list[tuple[str | None, dict[str, int | None]]]:
        """Every run of the rule (its claims, as GET /triggers lists them): its partition and each member's pin."""
        found: list[tuple[str | None, dict[str, int | None]]] = []
        token: str | None = None
        while True:
            page = self.container.trigger_store.list_for_rule(rule_id, limit=1000, next_token=token)
            found += [(t.partition, {i.asset_key: i.snapshot_id for i in t.inputs}) for t in page.items]
            token = page.next_token
            if not token:
                return found


class Table:
    """One Delta table, registered and polled."""

    def __init__(self, wired: Wired, root: Path, name: str) -> None:
        self.wired = wired
        self.location = str(root / name)
        self.key = f"delta://lake/ods/{name}"
        self.asset = AssetRegistration.model_validate(
            {"assetKey": self.key, "format": "delta", "source": {"catalog": "lake", "location": self.location}}
        )
        self.rows = 0

    def write(self, *days: str) -> None:
        data = pa.Table.from_pylist([{"id": self.rows + i, "dt": d} for i, d in enumerate(days)], schema=SCHEMA)
        self.rows += len(days)
        write_deltalake(self.location, data, mode="append", partition_by=["dt"])

    def poll(self) -> Counter[str]:
        """Poll the table; the DynamoDB requests the poll made, by operation."""
        with self.wired.counter.measure() as calls:
            self.wired.lake.poll(self.asset)
        return calls


@pytest.fixture
def wired(tmp_path: Path) -> Iterator[Wired]:
    with mock_aws(), moto_dynamodb.adapted(True):
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        queue_url = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="resolver-work")["QueueUrl"]
        settings = Settings(
            table_name=TABLE,
            bucket_name=BUCKET,
            admin_token=ADMIN_TOKEN,
            region="us-east-1",
            resolver_queue_url=queue_url,
        )
        container = Container(settings)
        container.overrides["table"] = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        container_module.use(container)
        try:
            yield Wired(container, client, queue_url)
        finally:
            container_module.use(None)


def days(n: int) -> list[str]:
    first = date(2000, 1, 1)
    return [(first + timedelta(days=i)).isoformat() for i in range(n)]


@pytest.mark.timeout(900)
def test_a_commit_touching_more_partitions_than_its_event_holds_runs_the_rule_for_every_one_once(
    wired: Wired, tmp_path: Path
) -> None:
    orders, payments = Table(wired, tmp_path, "orders"), Table(wired, tmp_path, "payments")
    orders.write("1999-01-01")  # version 0 of each: the poller's first look starts here
    payments.write("1999-01-02")
    orders.poll()
    payments.poll()
    status, body = call(
        wired.app,
        "PUT",
        "/rules/daily",
        {
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": orders.key, "partition": {}}, {"assetKey": payments.key, "partition": {}}],
                }
            ],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        },
    )
    assert status == 201, body
    wired.settle()
    assert not wired.container.trigger_store.list_for_rule("daily", limit=1).items  # no day both tables touched

    touched = days(TOUCHED)
    parts = math.ceil((TOUCHED - MAX_TOUCHED_PARTITIONS) / MAX_TOUCHED_PARTITIONS)  # 2 parts past the event's 1000
    payments.write(*touched)  # version 1: 1,300 days at once
    polled = payments.poll()
    # the offset read, the event's put, the state's update, the settled note, the offset's write; and for the keys
    # past the event's 1000, one BatchWriteItem (up to 25 parts a request)
    assert polled == {"GetItem": 1, "PutItem": 1, "UpdateItem": 3, "BatchWriteItem": math.ceil(parts / 25)}
    event = wired.lake.events(payments.key)[-1]
    assert event.partitions is not None and event.partitions.count == TOUCHED and event.partitions.truncated
    stored = wired.container.asset_store.partition_parts(payments.key, 1)
    assert [len(p.keys) for p in stored] == [TOUCHED - MAX_TOUCHED_PARTITIONS]
    assert [k for p in stored for k in p.keys] == [f"dt={d}" for d in touched[MAX_TOUCHED_PARTITIONS:]]
    wired.settle()
    assert not wired.container.trigger_store.list_for_rule("daily", limit=1).items  # orders touched none of them yet

    orders.write(*touched)  # version 1: the same 1,300 days
    assert orders.poll() == polled
    recorded = wired.read()  # what the resolver gets of the commit: its event, the state and its part
    kinds = Counter(r["dynamodb"]["NewImage"]["itemType"]["S"] for r in recorded)
    assert kinds == {"EVENT": 1, "STATE": 1, "PARTITIONS": parts}
    is_part = [r["dynamodb"]["NewImage"]["itemType"]["S"] == "PARTITIONS" for r in recorded]
    queued = wired.settle([r for r, part in zip(recorded, is_part, strict=True) if not part])
    resolving: list[dict[str, int]] = []  # what the invocation handling one part sends DynamoDB
    for record in [r for r, part in zip(recorded, is_part, strict=True) if part]:
        with wired.counter.measure() as calls:
            wired.deliver([record])
        resolving.append(dict(calls))
        queued += wired.settle()
    runs = wired.runs("daily")
    by_day = Counter(partition for partition, _ in runs)
    assert set(by_day) == {f"dt={d}" for d in touched}  # every day the commit touched, past the first 1000 too
    assert set(by_day.values()) == {1}  # each once
    assert all(pins == {orders.key: 1, payments.key: 1} for _, pins in runs)
    # a part is resolved as a commit of its keys: the rules, batched reads, its facts (100 conditional puts a
    # transaction), its claims (50 a transaction) and the pending marks it clears (100 a transaction)
    for calls, size in zip(resolving, (TOUCHED - MAX_TOUCHED_PARTITIONS,), strict=True):
        transactions = 2 * math.ceil(size / 100) + math.ceil(size / 50)
        assert calls["Query"] == 1 and "PutItem" not in calls and calls["TransactWriteItems"] == transactions, calls
        assert calls["BatchGetItem"] == 1 + math.ceil(size / 100) * 4, calls  # states; marks, 2 members' facts, cursors

    # the commit's stream records again (a redelivered batch: its event, state and parts) run nothing twice
    wired.settle(recorded)
    assert len(wired.runs("daily")) == TOUCHED
    # the same commit read again (as by a poller that died before its offset moved): a DUPLICATE whose parts are
    # written again with the same content, which no INSERT, and so no resolver input, follows
    refill = CompensateAsset(wired.lake.sources, wired.lake.store, wired.lake.ingest)
    with wired.counter.measure() as reread:
        [result] = refill.fill(orders.asset, {"snapshotId": 0, "order": 0}).results
    assert result.status is IngestStatus.DUPLICATE and reread["BatchWriteItem"] == 1
    assert wired.read() == []
    assert len(wired.runs("daily")) == TOUCHED
    print(json.dumps({"poll": polled, "resolving a part": resolving, "queued": queued, "read again": reread}))


RULE = "after"


def put_rule(wired: Wired, orders: Table, payments: Table) -> None:
    members = [{"assetKey": orders.key, "partition": {}}, {"assetKey": payments.key, "partition": {}}]
    body = {
        "groups": [{"groupId": "g", "partitionBy": ["dt"], "members": members}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }
    status, answer = call(wired.app, "PUT", f"/rules/{RULE}", body)
    assert status == 201, answer


@pytest.mark.timeout(900)
def test_a_rule_put_after_a_commit_touching_more_than_its_event_holds_runs_every_day_both_touched(
    wired: Wired, tmp_path: Path
) -> None:
    """Orders committed 1,300 days (the state keeps the first 1000, a part item the other 300) and payments the 310
    days from the 991st, before the rule existed. The PUT's own evaluation writes at most 1000 facts (orders' first
    1000) and sends the rest to the resolver's queue (payments' 310 keys, orders' part): every day both touched
    runs, once, pinning both commits."""
    orders, payments = Table(wired, tmp_path, "orders"), Table(wired, tmp_path, "payments")
    touched = days(TOUCHED)
    orders.write("1999-01-01")
    payments.write("1999-01-02")
    orders.poll()
    payments.poll()
    orders.write(*touched)
    payments.write(*touched[990:])
    orders.poll()
    payments.poll()
    wired.settle()  # no rule names them yet
    with wired.counter.measure() as calls:
        put_rule(wired, orders, payments)
    # one invocation's facts (orders' first 1000, 100 a transaction, and the claims), its pending marks; the pending
    # page and each member's parts
    assert (calls["TransactWriteItems"] >= 10, calls["BatchWriteItem"], calls["Query"]) == (True, 40, 3), calls
    queued = wired.settle()
    runs = wired.runs(RULE)
    assert sorted(p for p, _ in runs) == [f"dt={d}" for d in touched[990:]]  # 300 of them past orders' first 1000
    assert all(pins == {orders.key: 1, payments.key: 1} for _, pins in runs)
    print(json.dumps({"put": dict(calls), "queued": queued}))


@pytest.mark.timeout(900)
def test_a_poll_of_a_commit_a_push_recorded_first_with_fewer_keys_runs_every_day_the_poll_read(
    wired: Wired, tmp_path: Path
) -> None:
    """Orders' writer pushed its commit naming 5 days before the poll read the commit's 1,050: the event and the
    state keep the push's 5; the poll records the 995 other keys of its first 1000 as part 0 and the last 50 as part
    1. Every day payments touched too (the 150 from the 901st) runs, once."""
    from lakehook.domain.events import AssetEvent, SourceType

    orders, payments = Table(wired, tmp_path, "orders"), Table(wired, tmp_path, "payments")
    touched = days(1_050)
    orders.write("1999-01-01")
    payments.write("1999-01-02")
    orders.poll()
    payments.poll()
    put_rule(wired, orders, payments)
    payments.write(*touched[900:])
    payments.poll()
    wired.settle()
    orders.write(*touched)
    pushed = AssetEvent.model_validate(
        {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": orders.key,
            "snapshotId": 1,
            "partitions": [f"dt={d}" for d in touched[:5]],
        }
    )
    assert wired.container.ingest.ingest(pushed, SourceType.PUSH).status is IngestStatus.ACCEPTED
    polled = orders.poll()
    assert polled["BatchWriteItem"] == 1
    stored = wired.container.asset_store.partition_parts(orders.key, 1)
    assert [(p.part, len(p.keys)) for p in stored] == [(0, 995), (1, 50)]
    state = wired.container.asset_store.get_state(orders.key)
    assert state is not None and state.latest_partitions is not None and state.latest_partitions.count == 5
    wired.settle()
    runs = wired.runs(RULE)
    assert sorted(p for p, _ in runs) == [f"dt={d}" for d in touched[900:]]  # 100 of them from part 0
    assert all(pins == {orders.key: 1, payments.key: 1} for _, pins in runs)
