"""The keys a commit touched past its event's bound (issue 33), on the fakes: the poll records them as parts beside
the event, once whatever is delivered again, and also when a push recorded the snapshot first; a part's stream record
is a slice of the commit, which the resolver evaluates once however often it is handed over.
(tests/integration/test_partition_overflow_on_moto.py does it all on a real Delta table and DynamoDB.)"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from lakehook.adapters.dynamodb.asset_store import partition_part_item, partition_part_of_item
from lakehook.adapters.dynamodb.stream_records import resolver_input
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType, event_json
from lakehook.domain.limits import MAX_TOUCHED_PARTITIONS
from lakehook.domain.partitions import ReadPartitions, TouchedPartitions
from lakehook.domain.snapshots import PartitionPart, SnapshotInfo, snapshot_event
from lakehook.domain.state import snapshot_record
from lakehook.ports.rules import StateChange
from lakehook.usecases.poll import PollAsset
from tests.fakes.memory import InMemoryAssetStore, InMemoryWatermarkStore
from tests.unit.test_partition_bounds import Bounded
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, daily
from tests.unit.test_poll import FakeSnapshotSource
from tests.wiring import ingest_events

KEY = "paimon://lake/ods/wide"
ASSET = AssetRegistration(assetKey=KEY, format="paimon", source={"catalog": "lake", "table": "ods.wide"})


def days(n: int) -> list[str]:
    return [f"dt={date(2000, 1, 1) + timedelta(days=i)}" for i in range(n)]


class Poller:
    """A table whose commits touch many partitions, polled into the in-memory store."""

    def __init__(self, store: InMemoryAssetStore | None = None) -> None:
        self.source = FakeSnapshotSource()
        self.table = self.source.table("ods.wide")
        self.store = store or InMemoryAssetStore()
        self.ingest = ingest_events(self.store, clock=lambda: 1_000_000)

    def commit(self, keys: list[str]) -> int:
        [sid] = self.table.commit()
        touched = TouchedPartitions.read(keys)  # as every reader answers (adapters/lakehouse/*.py)
        self.table.snapshots[sid] = self.table.snapshots[sid].model_copy(update={"partitions": touched})
        return sid

    def poll(self) -> list[IngestStatus]:
        """A poll by a fresh poller (no offset: it reads the newest snapshot again, as one that died would)."""
        poll = PollAsset(lambda _: self.source, InMemoryWatermarkStore(), self.ingest)
        return [r.status for r in poll(ASSET).results]


def test_a_reader_keeps_the_keys_past_the_bound_in_chunks_and_the_event_holds_the_bounded_value() -> None:
    keys = days(2_500)
    touched = TouchedPartitions.read(reversed(keys))
    assert isinstance(touched, ReadPartitions)
    assert touched.keys == tuple(keys[:MAX_TOUCHED_PARTITIONS]) and touched.count == 2_500 and touched.truncated
    assert touched.more == (tuple(keys[1000:2000]), tuple(keys[2000:]))
    info = SnapshotInfo(snapshotId=3, commitTime=1, partitions=touched)
    assert info.more_partitions == touched.more
    event = snapshot_event(KEY, info)
    assert type(event.partitions) is TouchedPartitions and event.partitions == TouchedPartitions.of(keys)
    assert "more" not in event_json(event)["partitions"] and "more" not in info.model_dump()["partitions"]
    narrow = TouchedPartitions.read(keys[:10])
    assert narrow.more == () and SnapshotInfo(snapshotId=1, commitTime=1, partitions=narrow).more_partitions == ()


def test_a_poll_records_the_keys_past_its_event_as_parts_once_however_often_it_reads_the_commit() -> None:
    poller = Poller()
    keys = days(2_500)
    poller.commit(keys)
    assert poller.poll() == [IngestStatus.ACCEPTED]
    [recorded] = [r.event for r in poller.store.events.values()]
    assert recorded.partitions is not None and len(recorded.partitions.keys) == 1000
    parts = poller.store.partition_parts(KEY, 1)
    assert [(p.part, p.keys) for p in parts] == [(1, tuple(keys[1000:2000])), (2, tuple(keys[2000:]))]
    assert all(p.snapshot == snapshot_record(recorded) for p in parts)
    assert poller.store.inserted_parts == parts  # each part's first write: what the stream hands the resolver

    assert poller.poll() == [IngestStatus.DUPLICATE]  # read again (a settled duplicate): the same parts again
    assert poller.store.partition_parts(KEY, 1) == parts and poller.store.inserted_parts == parts


def test_a_push_recorded_first_without_them_still_gets_the_polls_parts_its_first_keys_as_part_0() -> None:
    poller = Poller()
    keys = days(1_700)
    poller.commit(keys)
    pushed = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=KEY, snapshotId=1, commitKind="APPEND")
    assert poller.ingest.ingest(pushed, SourceType.PUSH).status is IngestStatus.ACCEPTED
    assert poller.poll() == [IngestStatus.DUPLICATE]
    assert [(p.part, p.keys) for p in poller.store.inserted_parts] == [(0, tuple(keys[:1000])), (1, tuple(keys[1000:]))]


def test_a_push_recorded_first_with_some_keys_gets_the_others_of_the_polls_first_keys_as_part_0() -> None:
    """The push named 3 of the keys and one the poll does not: part 0 is the poll's first 1000 keys but those 3;
    a poll of a snapshot whose push named the same keys writes no part 0, nor does a poll read again."""
    poller = Poller()
    keys = days(1_200)
    poller.commit(keys)
    named = [keys[0], keys[500], keys[1100], "dt=2999-01-01"]
    pushed = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=KEY, snapshotId=1, partitions=named)
    poller.ingest.ingest(pushed, SourceType.PUSH)
    assert poller.poll() == [IngestStatus.DUPLICATE]
    first = [k for k in keys[:1000] if k not in named]
    assert [(p.part, p.keys) for p in poller.store.inserted_parts] == [(0, tuple(first)), (1, tuple(keys[1000:]))]
    assert poller.poll() == [IngestStatus.DUPLICATE]
    assert len(poller.store.inserted_parts) == 2 and len(poller.store.parts) == 2

    alike = Poller()
    alike.commit(keys[:10])
    alike.ingest.ingest(pushed.model_copy(update={"partitions": TouchedPartitions.of(keys[:10])}), SourceType.PUSH)
    assert alike.poll() == [IngestStatus.DUPLICATE] and alike.store.inserted_parts == []


def test_a_stale_snapshot_gets_its_parts_too() -> None:
    poller = Poller()
    keys = days(1_200)
    wide = poller.commit(keys)
    newer = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=KEY, snapshotId=wide + 1, commitKind="APPEND")
    poller.ingest.ingest(newer, SourceType.PUSH)
    info = poller.table.snapshots[wide]
    result = poller.ingest.ingest(snapshot_event(KEY, info), SourceType.POLL, more_partitions=info.more_partitions)
    assert result.status is IngestStatus.STALE
    assert [p.keys for p in poller.store.inserted_parts] == [tuple(keys[1000:])]


def part_record(part: PartitionPart, event_name: str = "INSERT") -> dict[str, Any]:
    """A part item's stream record, as Lambda hands it over."""
    item = partition_part_item(part, 2_000_000_000)
    image = {name: TypeSerializer().serialize(value) for name, value in item.items()}
    keys = {"PK": image["PK"], "SK": image["SK"]}
    return {"eventName": event_name, "dynamodb": {"Keys": keys, "NewImage": image, "SequenceNumber": "1"}}


def test_a_part_record_is_a_slice_of_its_commit_and_its_rewrite_is_none() -> None:
    record = snapshot_record(AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=KEY, snapshotId=4))
    part = PartitionPart.of(KEY, record, 1, ["dt=2026-12-01", "dt=2026-12-02"])
    change = resolver_input(part_record(part))
    assert change == StateChange(KEY, snapshot=record, partitions=part.partitions, partitions_only=True)
    assert resolver_input(part_record(part, "MODIFY")) is None
    broken = part_record(part)
    broken["dynamodb"]["NewImage"]["body"] = {"S": "{"}
    assert resolver_input(broken) == StateChange(KEY)  # every rule of the asset again, as for a broken event


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_every_partition_of_two_commits_past_the_bound_runs_once_a_redelivered_part_included() -> None:
    """A rule over two tables, each committing 1,500 days at once (the event holds 1,000, one part the other 500):
    every day runs once, pinning both commits; the part records handed over again run nothing twice."""
    bounded = Bounded.of(daily())
    lake = bounded.lake
    keys = days(1_500)
    parts: list[dict[str, Any]] = []
    for asset, sid in ((PAYMENTS, 7), (ORDERS, 3)):
        touched = TouchedPartitions.read(keys)
        info = SnapshotInfo(snapshotId=sid, commitTime=1_000 + sid, commitKind="APPEND", partitions=touched)
        event = snapshot_event(asset, info)
        seen = len(lake.store.inserted_parts)
        lake.ingest.ingest(event, SourceType.POLL, more_partitions=info.more_partitions)
        new = [part_record(p) for p in lake.store.inserted_parts[seen:]]
        parts += new
        state = lake.store.get_state(asset)
        changes = [
            StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions),
            StateChange(asset, state),
        ]
        bounded.deliver(changes + [c for r in new if isinstance(c := resolver_input(r), StateChange)])
        bounded.drain()
    runs = lake.runs()
    assert sorted(p for p, _ in runs) == sorted(keys)
    assert all(pins == [(ORDERS, 3), (PAYMENTS, 7)] for _, pins in runs)
    bounded.bounded()

    again = [c for r in parts if isinstance(c := resolver_input(r), StateChange)]
    bounded.deliver(again)
    bounded.drain()
    assert len(lake.runs()) == len(keys)


def test_each_part_knows_where_its_keys_start_in_the_commit_and_how_many_it_touched() -> None:
    """A poll's parts follow its event's keys: each knows where its keys start among the commit's sorted keys and the
    commit's count (what the resolver needs to know the commit whole), through the stored item and its stream
    record; a part item without them (0.1.0's) reads as not knowing, and so does part 0."""
    poller = Poller()
    keys = days(2_500)
    poller.commit(keys)
    assert poller.poll() == [IngestStatus.ACCEPTED]
    parts = poller.store.partition_parts(KEY, 1)
    assert [(p.offset, p.total) for p in parts] == [(1000, 2500), (2000, 2500)]
    for part in parts:
        change = resolver_input(part_record(part))
        assert isinstance(change, StateChange) and (change.offset, change.total) == (part.offset, part.total)
    item = partition_part_item(parts[0], 2_000_000_000)
    old = {**item, "body": json.dumps({k: v for k, v in json.loads(item["body"]).items() if k in ("snapshot", "keys")})}
    assert partition_part_of_item(old) == replace(parts[0], offset=None, total=None)

    pushed = Poller()
    pushed.commit(days(1_700))
    push = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=KEY, snapshotId=1, commitKind="APPEND")
    assert pushed.ingest.ingest(push, SourceType.PUSH).status is IngestStatus.ACCEPTED
    assert pushed.poll() == [IngestStatus.DUPLICATE]
    assert [(p.part, p.offset) for p in pushed.store.inserted_parts] == [(0, None), (1, None)]
