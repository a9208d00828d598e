"""Event history with a range (AssetStore.list_events ``within``), on the fake and on DynamoDB: paging through a
range of received times ``[start, end)`` or of snapshot orders ``[fromVersion, toVersion]`` yields exactly the
events in it, once each, newest first; each page is one Query of one index's key range; a token pages only the
listing that issued it; events of 0.1.0 (no GSI2 key) still list by time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from lakehook.domain.errors import ValidationError
from lakehook.domain.event_range import EVERY_EVENT, EventRange
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.ports.store import RecordedEvent
from tests.contracts.conftest import Backend, dynamodb_backend
from tests.hypothesis_profiles import examples
from tests.support import RequestCounter

pytestmark = pytest.mark.integration

ORDERS = "paimon://lake/ods_db/orders"
ICEBERG = "iceberg://glue/db/orders"
PAYMENTS = "paimon://lake/ods_db/payments"


def snap(sid: int, asset: str = ORDERS) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid})


def mark(ms: int) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": ms})


def every_page(backend: Backend, asset: str, limit: int, within: EventRange) -> list[RecordedEvent]:
    found: list[RecordedEvent] = []
    token: str | None = None
    for _ in range(200):
        page = backend.assets.list_events(asset, limit, token, within)
        assert len(page.items) <= limit
        found += page.items
        token = page.next_token
        if token is None:
            return found
    raise AssertionError("paging did not end")


def ids(recorded: list[RecordedEvent]) -> list[str]:
    return [r.event.event_id for r in recorded]


RECORDS = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 40), st.booleans()), max_size=25, unique_by=lambda r: r[0]
)  # (snapshot id, received offset, a watermark event too)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    records=RECORDS,
    bounds=st.tuples(st.none() | st.integers(0, 45), st.none() | st.integers(0, 45)),
    by_version=st.booleans(),
    limit=st.integers(1, 7),
)
def test_paging_through_a_range_yields_exactly_its_events_once_each_newest_first(
    fresh_backend: Callable[[], Backend],
    records: list[tuple[int, int, bool]],
    bounds: tuple[int | None, int | None],
    by_version: bool,
    limit: int,
) -> None:
    backend = fresh_backend()
    t0 = 1_750_000_000_000
    for sid, offset, with_mark in records:
        backend.assets.record_event(snap(sid), SourceType.PUSH, t0 + offset)
        backend.assets.record_event(snap(sid, PAYMENTS), SourceType.PUSH, t0 + offset)  # another asset: never listed
        if with_mark:
            backend.assets.record_event(mark(sid), SourceType.PUSH, t0 + offset)
    low, high = sorted(bounds) if None not in bounds else bounds
    if by_version:
        within = EventRange(from_version=low, to_version=high)
    else:
        if low is not None and high is not None and high == low:
            high += 1
        within = EventRange(None if low is None else t0 + low, None if high is None else t0 + high)
    everything = backend.assets.list_events(ORDERS, 500).items
    expected = [r for r in everything if within.holds(r.event, r.received_at)]
    if within.by_version:  # by snapshot order, then id
        expected.sort(key=lambda r: (r.event.snapshot_order or 0, r.event.event_id), reverse=True)
    paged = every_page(backend, ORDERS, limit, within)
    assert ids(paged) == ids(expected)
    assert len(set(ids(paged))) == len(paged)


def test_a_version_range_lists_an_iceberg_tables_snapshots_by_sequence_number(backend: Backend) -> None:
    """Iceberg snapshot ids are random: the order is the sequence number, and the range is over it."""
    for sid, sequence in ((9_000_000_001, 3), (5, 4), (7_000_000_000, 5)):
        event = AssetEvent.model_validate(
            {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ICEBERG, "snapshotId": sid, "sequenceNumber": sequence}
        )
        backend.assets.record_event(event, SourceType.POLL, 1000 + sequence)
    listed = backend.assets.list_events(ICEBERG, 10, None, EventRange(from_version=4, to_version=5)).items
    assert [r.event.snapshot_id for r in listed] == [7_000_000_000, 5]


def test_a_token_pages_only_the_range_that_issued_it(backend: Backend) -> None:
    for sid in range(6):
        backend.assets.record_event(snap(sid), SourceType.PUSH, 1000 + sid)
    versions = EventRange(from_version=1, to_version=4)
    token = backend.assets.list_events(ORDERS, 2, None, versions).next_token
    assert token is not None
    assert [r.event.snapshot_id for r in backend.assets.list_events(ORDERS, 10, token, versions).items] == [2, 1]
    for other in (EVERY_EVENT, EventRange(start=1000), EventRange(from_version=0, to_version=4)):
        with pytest.raises(ValidationError) as refused:
            backend.assets.list_events(ORDERS, 2, token, other)
        assert refused.value.field == "nextToken"


def test_each_page_of_a_range_is_one_query_of_its_index() -> None:
    with mock_aws():
        backend = dynamodb_backend("lakehook-event-ranges")
        for sid in range(30):
            backend.assets.record_event(snap(sid), SourceType.PUSH, 1000 + sid)
        counter = RequestCounter().attach(backend.assets._table.meta.client)  # the store's own client
        for within in (EventRange(start=1005, end=1025), EventRange(from_version=5, to_version=24)):
            counter.reset()
            pages = 0
            token: str | None = None
            while True:
                page = backend.assets.list_events(ORDERS, 5, token, within)
                pages += 1
                token = page.next_token
                if token is None:
                    break
            assert dict(counter.calls) == {"Query": pages} and pages in (4, 5)  # 20 events: 4 full pages (+1 empty)


def test_events_of_0_1_0_list_by_time_and_are_not_in_a_version_range() -> None:
    """The golden event items of 0.1.0 have no GSI2 key: a time range finds them, a version range does not (they
    expire within the event retention; docs/api.md)."""
    golden = json.loads((Path(__file__).parents[1] / "golden" / "0.1.0" / "event.json").read_text())["items"]
    with mock_aws():
        backend = dynamodb_backend("lakehook-event-ranges-old")
        table = boto3.resource("dynamodb", region_name="us-east-1").Table("lakehook-event-ranges-old")
        for item in golden:
            table.put_item(Item=item)
        timed = backend.assets.list_events(ORDERS, 5, None, EventRange(start=1_750_000_000_008)).items
        assert [(r.event.event_type.value, r.event.snapshot_id) for r in timed] == [
            ("QUALITY_CHECK_PASSED", 8),
            ("SNAPSHOT_COMMITTED", 8),
        ]
        assert backend.assets.list_events(ORDERS, 5, None, EventRange(from_version=0)).items == []
        backend.assets.record_event(snap(9), SourceType.PUSH, 1_750_000_000_030)  # recorded after the upgrade
        versions = backend.assets.list_events(ORDERS, 5, None, EventRange(from_version=0)).items
        assert [r.event.snapshot_id for r in versions] == [9]


def test_a_version_range_on_a_table_without_gsi2_is_a_400_naming_the_index_and_the_fix() -> None:
    """A stack on an ``ExistingTableStreamArn`` table whose GSI2 was never added: a version range names the missing
    index and docs/upgrade.md (how to add it), a 4xx rather than the Query's error; a time range still lists."""
    with mock_aws():
        backend = dynamodb_backend("lakehook-event-ranges-no-gsi2")
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.update_table(
            TableName="lakehook-event-ranges-no-gsi2", GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "GSI2"}}]
        )
        backend.assets.record_event(snap(1), SourceType.PUSH, 1000)
        with pytest.raises(ValidationError) as refused:
            backend.assets.list_events(ORDERS, 5, None, EventRange(from_version=0))
        assert refused.value.field == "fromVersion"
        assert "GSI2" in str(refused.value) and "docs/upgrade.md" in str(refused.value)
        timed = backend.assets.list_events(ORDERS, 5, None, EventRange(start=0)).items
        assert [r.event.snapshot_id for r in timed] == [1]
