"""Snapshots, tags, offsets and poll status: the pure rules the poller relies on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.answers.assets import PollStatusAnswer
from lakehook.domain.events import AssetEvent, EventType, event_json
from lakehook.domain.snapshots import (
    BackoffPolicy,
    PollOffset,
    PollStatus,
    RefKind,
    SnapshotCursor,
    SnapshotGap,
    SnapshotInfo,
    TagInfo,
    mark_schema_changes,
    snapshot_event,
    tag_event,
)

ORDERS = "paimon://lake/ods_db/ods_order_latest"


def info(sid: int, schema: int | None = 0, parent: int | None = -1, **extra: object) -> SnapshotInfo:
    return SnapshotInfo(
        snapshotId=sid,
        parentSnapshotId=(sid - 1 if sid > 1 else None) if parent == -1 else parent,
        commitTime=1_725_963_330_000 + sid,
        schemaId=schema,
        **extra,
    )


def test_a_polled_snapshot_has_the_identity_of_a_pushed_one() -> None:
    polled = snapshot_event(ORDERS, info(1001, schema=5, commitKind="APPEND", totalRecordCount=10))
    pushed = AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=ORDERS, snapshotId=1001, schemaId=5)
    assert polled.event_id == pushed.event_id


def test_snapshot_event_carries_every_field_the_formats_report() -> None:
    snapshot = info(
        7,
        schema=2,
        commitKind="COMPACT",
        watermark=1_725_963_000_000,
        totalRecordCount=100,
        deltaRecordCount=-3,
        changelogRecordCount=4,
        commitUser="flink-job",
        commitIdentifier=42,
        sequenceNumber=9,
        schemaChanged=True,
    )
    body = event_json(snapshot_event(ORDERS, snapshot))
    assert body == {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": ORDERS,
        "snapshotId": 7,
        "parentSnapshotId": 6,
        "sequenceNumber": 9,
        "schemaId": 2,
        "watermark": 1_725_963_000_000,
        "commitKind": "COMPACT",
        "commitTime": 1_725_963_330_007,
        "commitUser": "flink-job",
        "commitIdentifier": 42,
        "totalRecordCount": 100,
        "deltaRecordCount": -3,
        "changelogRecordCount": 4,
        "schemaChanged": True,
    }


def test_tags_and_branches_are_tag_created_events_named_like_a_push() -> None:
    tag = tag_event(ORDERS, TagInfo(name="2025-06-01", snapshotId=3))
    pushed = AssetEvent(eventType=EventType.TAG_CREATED, assetKey=ORDERS, tag="2025-06-01")
    assert tag.event_id == pushed.event_id
    assert tag.snapshot_id == 3
    branch = tag_event(ORDERS, TagInfo(name="audit", snapshotId=4, kind=RefKind.BRANCH))
    assert branch.tag == "branch:audit" and branch.payload == {"refType": "BRANCH"}
    assert branch.event_id != tag_event(ORDERS, TagInfo(name="audit", snapshotId=4)).event_id


def test_schema_changes_are_marked_against_the_previous_snapshot() -> None:
    marked = mark_schema_changes([info(5, 1), info(6, 1), info(7, 2), info(8, 2)], previous_schema_id=1)
    assert [s.schema_changed for s in marked] == [False, False, True, False]


def test_schema_change_across_batches_uses_the_previous_schema() -> None:
    (marked,) = mark_schema_changes([info(9, 3)], previous_schema_id=2)
    assert marked.schema_changed is True


def test_first_snapshot_of_a_table_did_not_change_the_schema_and_unknown_stays_unknown() -> None:
    first, second = mark_schema_changes([info(1, 0), info(2, 1)], previous_schema_id=None)
    assert (first.schema_changed, second.schema_changed) == (False, True)
    (unknown,) = mark_schema_changes([info(40, 3)], previous_schema_id=None)  # its parent was not read
    assert unknown.schema_changed is None


@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=20), st.integers(0, 3))
def test_schema_changed_exactly_when_the_schema_id_differs_from_the_one_before(schemas: list[int], first: int) -> None:
    snapshots = [info(i + 2, schema) for i, schema in enumerate(schemas)]
    marked = mark_schema_changes(snapshots, previous_schema_id=first)
    before = [first, *schemas[:-1]]
    assert [s.schema_changed for s in marked] == [now != prev for now, prev in zip(schemas, before, strict=True)]


def test_offset_round_trips_through_its_stored_value() -> None:
    offset = PollOffset(
        cursor=SnapshotCursor(snapshotId=12, schemaId=1, sequenceNumber=12),
        pointer="s3://w/m/00012.metadata.json",
        tags=("a", "b"),
    )
    value = offset.to_value()
    assert value == {
        "cursor": {"snapshotId": 12, "schemaId": 1, "sequenceNumber": 12},
        "pointer": "s3://w/m/00012.metadata.json",
        "tags": ["a", "b"],
    }
    assert PollOffset.from_value(value) == offset


@pytest.mark.parametrize("value", [None, "garbage", 3, {"cursor": {"snapshotId": -1}}])
def test_an_unreadable_offset_counts_as_none(value: object) -> None:
    assert PollOffset.from_value(value) == PollOffset()


def test_offset_advances_to_the_last_snapshot_and_keeps_the_pointer_only_when_complete() -> None:
    start = PollOffset(cursor=SnapshotCursor(snapshotId=3), pointer="3")
    done = start.advanced([info(4), info(5, schema=1)], "5", ["t2", "t1"], complete=True)
    assert done.cursor == SnapshotCursor(snapshotId=5, schemaId=1) and done.pointer == "5"
    assert done.tags == ("t1", "t2") and done.unchanged("5") and not done.unchanged("6")
    partial = start.advanced([info(4)], "5", [], complete=False)
    assert partial.cursor is not None and partial.cursor.snapshot_id == 4
    assert partial.pointer is None and not partial.unchanged("5")  # the next poll reads on
    nothing_new = start.advanced([], "3b", [], complete=True)
    assert nothing_new.cursor == start.cursor and nothing_new.pointer == "3b"


def test_an_empty_table_read_once_gets_a_cursor_before_its_first_snapshot() -> None:
    never_read = PollOffset()
    empty = never_read.advanced([], "v0.metadata.json", [], complete=True)
    assert never_read.cursor is None  # "never read": a first poll takes only the newest snapshots
    assert empty.cursor == SnapshotCursor.beginning()  # "read while empty": every snapshot after it is new


def test_backoff_doubles_from_the_base_and_is_capped() -> None:
    policy = BackoffPolicy(base_ms=30_000, max_ms=3_600_000)
    assert [policy.delay_ms(n) for n in range(0, 10)] == [
        0,
        30_000,
        60_000,
        120_000,
        240_000,
        480_000,
        960_000,
        1_920_000,
        3_600_000,
        3_600_000,
    ]
    assert policy.delay_ms(10_000) == 3_600_000


def test_status_backs_off_after_failures_and_recovers_on_success() -> None:
    policy = BackoffPolicy(base_ms=1_000, max_ms=10_000)
    status = PollStatus(assetKey=ORDERS)
    assert status.due(0)
    once = status.failed(100, "SourceAccessError", "catalog down", policy)
    twice = once.failed(1_100, "SourceAccessError", "catalog down", policy)
    assert (once.consecutive_failures, once.next_attempt_at) == (1, 1_100)
    assert (twice.consecutive_failures, twice.next_attempt_at) == (2, 3_100)
    assert not twice.due(3_099) and twice.due(3_100)
    gap = SnapshotGap(afterSnapshotId=1, resumedAtSnapshotId=4, missed=2)
    healed = twice.succeeded(4_000, 9, gap)
    assert healed.consecutive_failures == 0 and healed.next_attempt_at is None and healed.due(4_000)
    assert healed.last_error == "catalog down"  # the last error stays visible after recovery
    assert healed.last_snapshot_id == 9 and healed.last_gap == gap
    api = PollStatusAnswer.from_domain(healed).dump()
    assert api["lastSuccessAt"] == "1970-01-01T00:00:04Z" and api["lastGap"] == {
        "afterSnapshotId": 1,
        "resumedAtSnapshotId": 4,
        "missed": 2,
    }
