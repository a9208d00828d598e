"""DynamoDBAssetStore on moto: dedupe, advance-only state, crash recovery and the request budget (of the ingest
path as the container builds it for the functions)."""

from __future__ import annotations

from typing import Any

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.ports import AdvanceOutcome
from lakehook.usecases.ingest_state import advance_state
from tests.support import RequestCounter

ORDERS = "paimon://lake/ods_db/ods_order_latest"


def snap(sid: int, asset: str = ORDERS, **extra: Any) -> AssetEvent:
    return AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid, **extra)


def test_novel_event_costs_two_writes_in_one_request_and_no_read(container: Container, counter: RequestCounter) -> None:
    ingest = container.ingest
    before = counter.written
    with counter.measure() as calls:
        result = ingest.ingest(snap(1001, schemaId=5), SourceType.PUSH)
    assert result.status is IngestStatus.ACCEPTED
    # the record, already settled, and the state: one transaction of two writes (it was 3 requests: the note apart)
    assert dict(calls) == {"TransactWriteItems": 1}
    assert counter.written - before == 2
    state = container.asset_store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 1001
    assert [e.event.snapshot_id for e in container.asset_store.list_events(ORDERS, 10).items] == [1001]


def test_each_kind_of_novel_event_in_order_costs_two_writes(container: Container, counter: RequestCounter) -> None:
    events = [
        snap(1, schemaId=0),
        AssetEvent(eventType=EventType.QUALITY_CHECK_PASSED, assetKey=ORDERS, snapshotId=1),
        AssetEvent(eventType=EventType.TAG_CREATED, assetKey=ORDERS, tag="2025-06-01", snapshotId=1),
        AssetEvent(eventType=EventType.BACKFILL_STARTED, assetKey=ORDERS, backfillId="b1"),
        AssetEvent(eventType=EventType.BACKFILL_COMPLETED, assetKey=ORDERS, backfillId="b1"),
    ]
    for event in events:
        before = counter.written
        with counter.measure() as calls:
            assert container.ingest.ingest(event, SourceType.PUSH).status is IngestStatus.ACCEPTED
        assert (dict(calls), counter.written - before) == ({"TransactWriteItems": 1}, 2), event.event_type


def test_duplicate_costs_one_refused_request_and_writes_nothing(container: Container, counter: RequestCounter) -> None:
    store = container.asset_store
    ingest = container.ingest
    ingest.ingest(snap(1001), SourceType.PUSH)
    before = store.get_state(ORDERS)
    with counter.measure() as calls:
        result = ingest.ingest(snap(1001), SourceType.POLL)
    assert result.status is IngestStatus.DUPLICATE
    assert dict(calls) == {"TransactWriteItems": 1}  # cancelled by the record's condition: it hands the note back
    after = store.get_state(ORDERS)
    assert after == before  # version unchanged: no write, so no stream record


def test_a_stale_event_takes_the_step_by_step_path(container: Container, counter: RequestCounter) -> None:
    ingest = container.ingest
    ingest.ingest(snap(10), SourceType.PUSH)
    with counter.measure() as calls:
        assert ingest.ingest(snap(9), SourceType.PUSH).status is IngestStatus.STALE
    # the transaction the state's condition cancels (nothing written), then as before: the record, the refused
    # advance, the late decision (the asset's cursors read, the snapshot noted on them) and the note
    assert dict(calls) == {"TransactWriteItems": 1, "PutItem": 1, "UpdateItem": 3, "Query": 1}


def test_duplicate_of_a_stale_event_costs_one_request_too(container: Container, counter: RequestCounter) -> None:
    ingest = container.ingest
    ingest.ingest(snap(10), SourceType.PUSH)
    assert ingest.ingest(snap(9), SourceType.PUSH).status is IngestStatus.STALE
    with counter.measure() as calls:
        assert ingest.ingest(snap(9), SourceType.POLL).status is IngestStatus.DUPLICATE
    assert dict(calls) == {"TransactWriteItems": 1}


def test_poll_and_push_of_one_snapshot_are_one_event(container: Container) -> None:
    ingest = container.ingest
    pushed = ingest.ingest(snap(7, commitKind="APPEND"), SourceType.PUSH)
    polled = ingest.ingest(snap(7, commitKind="APPEND", totalRecordCount=10), SourceType.POLL)
    assert pushed.event_id == polled.event_id
    assert (pushed.status, polled.status) == (IngestStatus.ACCEPTED, IngestStatus.DUPLICATE)


def test_old_snapshot_never_rolls_state_back(container: Container) -> None:
    store = container.asset_store
    ingest = container.ingest
    ingest.ingest(snap(10, schemaId=2), SourceType.PUSH)
    late = ingest.ingest(snap(9, schemaId=1), SourceType.PUSH)
    assert late.status is IngestStatus.STALE
    state = store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 10 and state.latest_schema_id == 2


def test_redelivery_after_a_crash_between_record_and_advance_still_advances(
    container: Container, counter: RequestCounter
) -> None:
    store = container.asset_store
    event = snap(42)
    assert store.record_event(event, SourceType.PUSH, 1).novel  # ...and the process dies here
    assert store.get_state(ORDERS) is None
    with counter.measure() as calls:
        result = container.ingest.ingest(event, SourceType.PUSH)
    assert result.status is IngestStatus.DUPLICATE
    # the refused transaction hands back the record: no note on it, so every step again
    assert dict(calls) == {"TransactWriteItems": 1, "UpdateItem": 2}
    state = store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 42
    with counter.measure() as calls:  # the redelivery settled it: the next copy stops at its refused put
        assert container.ingest.ingest(event, SourceType.POLL).status is IngestStatus.DUPLICATE
    assert dict(calls) == {"TransactWriteItems": 1}


def test_redelivery_after_a_crash_between_advance_and_note_writes_no_state(
    container: Container, counter: RequestCounter
) -> None:
    store = container.asset_store
    event = snap(43)
    recording = store.record_event(event, SourceType.PUSH, 1)
    assert advance_state(store, event, 2, recorded_at=recording.received_at) is AdvanceOutcome.ADVANCED  # dies here
    before = store.get_state(ORDERS)
    with counter.measure() as calls:
        assert container.ingest.ingest(event, SourceType.PUSH).status is IngestStatus.DUPLICATE
    # the refused transaction (the record is there, unsettled), the state update refused (ALREADY), the note
    assert dict(calls) == {"TransactWriteItems": 1, "UpdateItem": 2}
    assert store.get_state(ORDERS) == before


def test_racing_twin_advance_reports_already(table: Any) -> None:
    store = DynamoDBAssetStore(table)
    assert advance_state(store, snap(5), 1) is AdvanceOutcome.ADVANCED
    assert advance_state(store, snap(5), 2) is AdvanceOutcome.ALREADY
    assert advance_state(store, snap(4), 3) is AdvanceOutcome.STALE


def test_quality_schema_tags_and_backfill_are_kept(container: Container) -> None:
    store = container.asset_store
    ingest = container.ingest
    events = [
        snap(1, schemaId=0),
        AssetEvent(eventType=EventType.QUALITY_CHECK_PASSED, assetKey=ORDERS, snapshotId=1),
        snap(2, schemaId=1),
        AssetEvent(eventType=EventType.QUALITY_CHECK_FAILED, assetKey=ORDERS, snapshotId=2),
        AssetEvent(eventType=EventType.TAG_CREATED, assetKey=ORDERS, tag="2025-06-01", snapshotId=1),
        AssetEvent(eventType=EventType.BACKFILL_COMPLETED, assetKey=ORDERS, backfillId="b1"),
        AssetEvent(eventType=EventType.BACKFILL_STARTED, assetKey=ORDERS, backfillId="b1"),  # late
    ]
    statuses = [ingest.ingest(e, SourceType.PUSH).status for e in events]
    assert statuses[-1] is IngestStatus.ACCEPTED or statuses[-1] is IngestStatus.STALE
    state = store.get_state(ORDERS)
    assert state is not None
    assert state.quality_passed_snapshot_id == 1 and state.quality_failed_snapshot_id == 2
    assert state.quality_status == "FAILED"
    assert state.schema_status.value == "PENDING_APPROVAL"
    assert state.tags == {"2025-06-01"}
    assert state.backfill_status.value == "COMPLETED"  # a late STARTED never reopens it
    ingest.ingest(AssetEvent(eventType=EventType.SCHEMA_CHANGE_APPROVED, assetKey=ORDERS, schemaId=1), SourceType.PUSH)
    state = store.get_state(ORDERS)
    assert state is not None and state.schema_status.value == "COMPATIBLE"


def test_events_are_listed_newest_first_with_pages(table: Any) -> None:
    store = DynamoDBAssetStore(table)
    for sid in range(5):
        store.record_event(snap(sid), SourceType.PUSH, 1000 + sid)
    first = store.list_events(ORDERS, limit=2)
    assert [e.event.snapshot_id for e in first.items] == [4, 3]
    assert first.next_token
    second = store.list_events(ORDERS, limit=10, next_token=first.next_token)
    assert [e.event.snapshot_id for e in second.items] == [2, 1, 0]
    assert second.next_token is None


def test_raw_events_carry_a_ttl(table: Any) -> None:
    store = DynamoDBAssetStore(table, retention_days=7)
    store.record_event(snap(1), SourceType.PUSH, 1_000_000)
    item = table.scan()["Items"]
    (event_item,) = [i for i in item if str(i["SK"]).startswith("EVENT#")]
    assert int(event_item["expiresAt"]) == 1_000 + 7 * 86400


ICEBERG = "iceberg://glue/dwd_db/dwd_trade_event_fact"


def test_iceberg_snapshots_are_ordered_by_sequence_number_not_by_their_random_ids(container: Container) -> None:
    store = container.asset_store
    ingest = container.ingest
    newer = snap(1_234_567, asset=ICEBERG, sequenceNumber=2)  # a small random id, but the later commit
    older = snap(8_765_432_109_876, asset=ICEBERG, sequenceNumber=1)
    assert ingest.ingest(newer, SourceType.POLL).status is IngestStatus.ACCEPTED
    assert ingest.ingest(older, SourceType.POLL).status is IngestStatus.STALE
    passed_old = AssetEvent(
        eventType=EventType.QUALITY_CHECK_PASSED, assetKey=ICEBERG, snapshotId=8_765_432_109_876, sequenceNumber=1
    )
    passed_new = AssetEvent(
        eventType=EventType.QUALITY_CHECK_PASSED, assetKey=ICEBERG, snapshotId=1_234_567, sequenceNumber=2
    )
    ingest.ingest(passed_new, SourceType.PUSH)
    assert ingest.ingest(passed_old, SourceType.PUSH).status is IngestStatus.STALE
    state = store.get_state(ICEBERG)
    assert state is not None
    assert (state.latest_snapshot_id, state.latest_snapshot_order) == (1_234_567, 2)
    assert state.quality_passed_snapshot_id == 1_234_567 and state.quality_status == "PASSED"


def test_an_iceberg_snapshot_without_an_order_is_rejected_naming_the_field() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="sequenceNumber"):
        AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=ICEBERG, snapshotId=99)
    v1 = AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=ICEBERG, snapshotId=99, commitTime=5)
    assert v1.snapshot_order == 5  # a format-v1 table: sequence numbers are all 0, commit time orders it
