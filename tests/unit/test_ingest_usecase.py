"""IngestEvents with in-memory fakes: per-event answers, prefixes, duplicates, crashes."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.coverage import CoverageTooFragmentedError, Span
from lakehook.domain.errors import AuthorizationError, ValidationError
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.producers import Producer
from lakehook.usecases.coverage import RecordCoverage
from lakehook.usecases.ingest import IngestEvents
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.wiring import ingest_events

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
SPOOL = "s3://spool/orders"


def snap(sid: int, asset: str = ORDERS, **fields: Any) -> dict[str, Any]:
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid, **fields}


class Ticks:
    def __init__(self) -> None:
        self.now = 1_748_772_300_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


@pytest.fixture
def store() -> InMemoryAssetStore:
    return InMemoryAssetStore()


@pytest.fixture
def ingest(store: InMemoryAssetStore) -> IngestEvents:
    return ingest_events(store, clock=Ticks())


PRODUCER = Producer(
    producer_id="orders-writer",
    asset_key_prefixes=["paimon://lake/ods_db/ods_order_latest"],  # prefixes match whole path segments
    secret_ref="ref",
    created_at=0,
    updated_at=0,
)


def test_each_event_gets_its_own_answer_in_order(ingest: IngestEvents, store: InMemoryAssetStore) -> None:
    raw = [
        snap(2),
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS},  # no snapshotId
        snap(1),  # older than 2: evidence, but the state stays
        snap(2),  # again
        5,  # not an object
        {"eventType": "NOPE", "assetKey": ORDERS},
        snap(3, asset=PAYMENTS),
    ]
    results = ingest.ingest_raw(raw, SourceType.PUSH)
    assert [r.status for r in results] == [
        IngestStatus.ACCEPTED,
        IngestStatus.REJECTED,
        IngestStatus.STALE,
        IngestStatus.DUPLICATE,
        IngestStatus.REJECTED,
        IngestStatus.REJECTED,
        IngestStatus.ACCEPTED,
    ]
    assert [r.index for r in results] == list(range(len(raw)))
    assert results[0].event_id == AssetEvent.model_validate(snap(2)).event_id == results[3].event_id
    assert results[1].event_id is None and "snapshotId is required" in (results[1].reason or "")
    assert "valid dictionary" in (results[4].reason or "")
    assert (results[5].reason or "").startswith("eventType:")
    assert "newer version" in (results[2].reason or "")
    assert "recorded before" in (results[3].reason or "")
    assert results[0].reason is None
    orders = store.get_state(ORDERS)
    assert orders is not None and orders.latest_snapshot_id == 2
    assert len(store.events) == 3  # 2, 1 (stale evidence is kept) and the payments snapshot


def test_an_event_outside_the_producer_prefixes_refuses_the_whole_push(
    ingest: IngestEvents, store: InMemoryAssetStore
) -> None:
    raw = [snap(1), snap(1, asset=PAYMENTS), {"eventType": "NOPE"}]
    with pytest.raises(AuthorizationError) as raised:
        ingest.ingest_raw(raw, SourceType.PUSH, PRODUCER)
    assert PAYMENTS in str(raised.value) and "orders-writer" in str(raised.value)
    assert f"may not write {PAYMENTS}:" in str(raised.value)  # only the offending asset is named
    assert store.events == {} and store.states == {}  # nothing from that push was recorded


def test_a_producer_push_within_its_prefixes_records_who_sent_it(
    ingest: IngestEvents, store: InMemoryAssetStore
) -> None:
    (result,) = ingest.ingest_raw([snap(9)], SourceType.PUSH, PRODUCER)
    assert result.status is IngestStatus.ACCEPTED
    recorded = store.events[result.event_id or ""]
    assert (recorded.source, recorded.producer_id) == (SourceType.PUSH, "orders-writer")
    assert recorded.received_at == 1_748_772_300_001


def test_rejected_events_do_not_count_against_the_prefixes(ingest: IngestEvents) -> None:
    # A malformed key cannot be checked against prefixes; it is REJECTED, not a 403 for the push.
    results = ingest.ingest_raw([snap(1), snap(2, asset="paimon://other")], SourceType.PUSH, PRODUCER)
    assert [r.status for r in results] == [IngestStatus.ACCEPTED, IngestStatus.REJECTED]


def test_a_poll_and_a_push_of_one_snapshot_are_one_event(ingest: IngestEvents) -> None:
    pushed = ingest.ingest(AssetEvent.model_validate(snap(7, commitKind="APPEND")), SourceType.PUSH)
    polled = ingest.ingest(AssetEvent.model_validate(snap(7, totalRecordCount=10)), SourceType.POLL)
    assert (pushed.status, polled.status) == (IngestStatus.ACCEPTED, IngestStatus.DUPLICATE)


def test_a_redelivery_after_a_crash_finishes_the_advance(ingest: IngestEvents, store: InMemoryAssetStore) -> None:
    event = AssetEvent.model_validate(snap(42))
    assert store.record_event(event, SourceType.POLL, 1).novel  # ...and the process dies before advancing
    assert store.get_state(ORDERS) is None
    result = ingest.ingest(event, SourceType.POLL)
    assert result.status is IngestStatus.DUPLICATE
    state = store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 42


def interval_event(start: str, end: str) -> dict[str, Any]:
    return {"eventType": "INTERVAL_COVERED", "assetKey": SPOOL, "interval": {"start": start, "end": end}}


def test_an_interval_is_recorded_as_evidence_and_touches_the_state(
    ingest: IngestEvents, store: InMemoryAssetStore
) -> None:
    body = interval_event("2025-06-01T10:05:00Z", "2025-06-01T10:10:00Z")
    first, second = ingest.ingest_raw([body, body], SourceType.PUSH)
    assert (first.status, second.status) == (IngestStatus.ACCEPTED, IngestStatus.DUPLICATE)
    interval = AssetEvent.model_validate(body).interval
    assert [r.event.interval for r in store.list_events(SPOOL, 10).items] == [interval]
    state = store.get_state(SPOOL)  # the touch whose stream record wakes the resolver
    assert state is not None and interval is not None
    assert (state.last_coverage_start, state.last_coverage_end, state.version) == (interval.start, interval.end, 1)


class FragmentedCoverage(InMemoryCoverageStore):
    """A coverage store whose day segment is full."""

    def add(self, asset_key: str, span: Span, now_ms: int, partition_key: str | None = None) -> bool:
        raise CoverageTooFragmentedError("2025-06-01 would hold 70000 fragments; send coarser intervals")


def test_intervals_unite_into_the_coverage_store_once_even_when_redelivered(store: InMemoryAssetStore) -> None:
    coverage = InMemoryCoverageStore()
    ingest = ingest_events(store, clock=Ticks(), coverage=RecordCoverage(coverage))
    late = interval_event("2025-06-01T10:05:00Z", "2025-06-01T10:10:00Z")
    early = interval_event("2025-06-01T10:00:00Z", "2025-06-01T10:05:00Z")
    # the first attempt was recorded but the process died before its interval reached the coverage
    store.record_event(AssetEvent.model_validate(late), SourceType.PUSH, 1)
    results = ingest.ingest_raw([late, early, early], SourceType.PUSH)
    assert [r.status for r in results] == [IngestStatus.DUPLICATE, IngestStatus.ACCEPTED, IngestStatus.DUPLICATE]
    start, end = 1_748_772_000_000, 1_748_772_600_000  # 10:00 to 10:10 on 2025-06-01
    assert coverage.spans(SPOOL, 0, 2 * end) == [Span(start, end)]


def test_a_too_fragmented_interval_is_rejected_with_the_reason_and_wakes_nobody(store: InMemoryAssetStore) -> None:
    ingest = ingest_events(store, clock=Ticks(), coverage=RecordCoverage(FragmentedCoverage()))
    snapshot, interval = ingest.ingest_raw(
        [snap(1), interval_event("2025-06-01T10:05:00Z", "2025-06-01T10:10:00Z")], SourceType.PUSH
    )
    assert snapshot.status is IngestStatus.ACCEPTED
    assert interval.status is IngestStatus.REJECTED and "coarser intervals" in (interval.reason or "")
    assert store.get_state(SPOOL) is None


def test_the_fake_pages_like_the_real_store(ingest: IngestEvents, store: InMemoryAssetStore) -> None:
    ingest.ingest_raw([snap(i) for i in range(3)], SourceType.POLL)
    first = store.list_events(ORDERS, 2)
    assert [r.event.snapshot_id for r in first.items] == [2, 1] and first.next_token is not None
    rest = store.list_events(ORDERS, 2, first.next_token)
    assert [r.event.snapshot_id for r in rest.items] == [0] and rest.next_token is None
    for token in ("garbage", "-1", "²"):
        with pytest.raises(ValidationError) as raised:
            store.list_events(ORDERS, 2, token)
        assert raised.value.field == "nextToken"
