"""DynamoDBCoverageStore on moto: exact gaps, request budget, concurrent writers, item sizes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.domain.coverage import DAY_MS, Span, merge, missing
from lakehook.domain.errors import ConflictError
from lakehook.domain.time import parse_instant_ms
from tests.conftest import TABLE
from tests.support import RequestCounter

ASSET = "s3://spool/orders"
FIVE_MIN = 300_000
ITEM_LIMIT = 400 * 1024
JUNE = parse_instant_ms("2025-06-01T00:00:00Z")


def at(text: str) -> int:
    return parse_instant_ms(text)


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """DynamoDB's item size: attribute names plus values (strings UTF-8, numbers ~1 byte per 2 digits + 1)."""
    size = 0
    for name, typed in item.items():
        size += len(name.encode())
        ((kind, value),) = typed.items()
        if kind == "S":
            size += len(value.encode())
        elif kind == "N":
            digits = Decimal(value).as_tuple().digits
            size += (len(digits) + 1) // 2 + 1
        elif kind == "B":
            size += len(value)
        else:
            raise AssertionError(f"unexpected attribute type {kind}")
    return size


def coverage_items(client: Any, asset: str = ASSET) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": TABLE,
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :sk)",
        "ExpressionAttributeValues": {":pk": {"S": keys.asset_pk(asset)}, ":sk": {"S": keys.COVERAGE_PREFIX}},
    }
    while True:
        answer = client.query(**kwargs)
        items += answer["Items"]
        if "LastEvaluatedKey" not in answer:
            return items
        kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def test_gaps_are_exact_across_days_and_out_of_order(table: Any) -> None:
    store = DynamoDBCoverageStore(table)
    # GIVEN slices arriving out of order, one crossing midnight, one re-processed hour superseding slices
    store.add(ASSET, Span(at("2025-06-14T03:25:00Z"), at("2025-06-15T00:10:00Z")), 1)
    store.add(ASSET, Span(at("2025-06-14T03:00:00Z"), at("2025-06-14T03:05:00Z")), 1)
    store.add(ASSET, Span(at("2025-06-14T03:05:00Z"), at("2025-06-14T03:10:00Z")), 1)  # adjacent: unites
    store.add(ASSET, Span(at("2025-06-14T02:00:00Z"), at("2025-06-14T03:00:00Z")), 1)
    store.add(ASSET, Span(at("2025-06-14T02:00:00Z"), at("2025-06-14T02:05:00Z")), 1)  # already covered
    # THEN the merged spans unite at midnight and the only gap is 03:10-03:25
    spans = store.spans(ASSET, at("2025-06-14T00:00:00Z"), at("2025-06-16T00:00:00Z"))
    assert spans == [
        Span(at("2025-06-14T02:00:00Z"), at("2025-06-14T03:10:00Z")),
        Span(at("2025-06-14T03:25:00Z"), at("2025-06-15T00:10:00Z")),
    ]
    assert missing(spans, at("2025-06-14T02:00:00Z"), at("2025-06-15T00:10:00Z")) == [
        Span(at("2025-06-14T03:10:00Z"), at("2025-06-14T03:25:00Z"))
    ]
    # and a query is clipped to what was asked
    assert store.spans(ASSET, at("2025-06-14T03:07:00Z"), at("2025-06-14T03:30:00Z")) == [
        Span(at("2025-06-14T03:07:00Z"), at("2025-06-14T03:10:00Z")),
        Span(at("2025-06-14T03:25:00Z"), at("2025-06-14T03:30:00Z")),
    ]


def test_partitions_and_assets_are_kept_apart(table: Any) -> None:
    store = DynamoDBCoverageStore(table)
    store.add(ASSET, Span(JUNE, JUNE + FIVE_MIN), 1, partition_key="region=eu")
    store.add("s3://spool/other", Span(JUNE, JUNE + DAY_MS), 1)
    assert store.spans(ASSET, JUNE, JUNE + DAY_MS, partition_key="region=eu") == [Span(JUNE, JUNE + FIVE_MIN)]
    assert store.spans(ASSET, JUNE, JUNE + DAY_MS, partition_key="region=us") == []
    assert store.spans(ASSET, JUNE, JUNE + DAY_MS) == []


def test_an_add_costs_one_read_and_one_write_and_a_repeat_writes_nothing(table: Any, counter: RequestCounter) -> None:
    store = DynamoDBCoverageStore(table)
    store.add_many(ASSET, [Span(t, t + FIVE_MIN) for t in range(JUNE, JUNE + 30 * DAY_MS, 2 * FIVE_MIN)], 1)
    new = Span(JUNE + 15 * DAY_MS + FIVE_MIN, JUNE + 15 * DAY_MS + 2 * FIVE_MIN)
    with counter.measure() as calls:
        assert store.add(ASSET, new, 2) is True
    assert dict(calls) == {"GetItem": 1, "PutItem": 1}
    with counter.measure() as calls:
        assert store.add(ASSET, new, 3) is False
    assert dict(calls) == {"GetItem": 1}  # no write, so no stream record
    with counter.measure() as calls:
        spans = store.spans(ASSET, JUNE, JUNE + 30 * DAY_MS)
    assert dict(calls) == {"Query": 1}
    assert len(spans) == 30 * 144 - 1  # 144 fragments a day, and the new slice joined two of them


def test_a_writer_that_loses_the_race_retries_on_the_winners_item_without_rereading(
    table: Any, counter: RequestCounter
) -> None:
    # GIVEN two writers on separate clients, and the second one writes between the first one's read and write
    rival = DynamoDBCoverageStore(boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE))
    store = DynamoDBCoverageStore(table)
    raced: list[bool] = []

    def race(**_: Any) -> None:
        if not raced:
            raced.append(True)
            rival.add(ASSET, Span(JUNE + 3 * FIVE_MIN, JUNE + 4 * FIVE_MIN), 1)

    store.add(ASSET, Span(JUNE, JUNE + FIVE_MIN), 1)  # creates the day (version 1)
    table.meta.client.meta.events.register("before-call.dynamodb.PutItem", race)
    with counter.measure() as calls:
        assert store.add(ASSET, Span(JUNE + 6 * FIVE_MIN, JUNE + 7 * FIVE_MIN), 2) is True
    # THEN both intervals are there; the loser's one retry used the item its failed write returned
    assert store.spans(ASSET, JUNE, JUNE + DAY_MS) == [
        Span(JUNE, JUNE + FIVE_MIN),
        Span(JUNE + 3 * FIVE_MIN, JUNE + 4 * FIVE_MIN),
        Span(JUNE + 6 * FIVE_MIN, JUNE + 7 * FIVE_MIN),
    ]
    assert store.conflicts == 1
    assert dict(calls) == {"GetItem": 1, "PutItem": 2}


@contextmanager
def atomic_requests(client: Any) -> Iterator[None]:
    """Make each moto request atomic, as each DynamoDB request is (moto's backend takes no lock).

    Requests still interleave freely between one another, so a read-modify-write can lose.
    """
    lock = threading.Lock()

    def acquire(**_: Any) -> None:
        lock.acquire()

    def release(**_: Any) -> None:
        lock.release()

    events = client.meta.events
    events.register_first("before-call.dynamodb.*", acquire)
    events.register_last("after-call.dynamodb.*", release)
    events.register_last("after-call-error.dynamodb.*", release)
    try:
        yield
    finally:
        events.unregister("before-call.dynamodb.*", acquire)
        events.unregister("after-call.dynamodb.*", release)
        events.unregister("after-call-error.dynamodb.*", release)


def test_concurrent_writers_never_lose_an_interval(table: Any) -> None:
    # GIVEN 8 writers adding 5-minute slices with gaps around one midnight, each round released together
    store = DynamoDBCoverageStore(table, max_attempts=200)
    writers, rounds = 8, 25
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []
    added: list[Span] = []

    def writer(index: int) -> None:
        for n in range(rounds):
            slot = (n * writers + index) * 2  # every other slot: each add is a real change
            start = JUNE + DAY_MS + (slot - 100) * FIVE_MIN
            span = Span(start, start + FIVE_MIN)
            barrier.wait()
            try:
                store.add(ASSET, span, n)
                added.append(span)
            except BaseException as exc:  # reported below
                errors.append(exc)

    with atomic_requests(table.meta.client):
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    # THEN every interval is there, exactly once, and the writers really did collide
    assert store.spans(ASSET, JUNE, JUNE + 3 * DAY_MS) == merge(added)
    assert len(merge(added)) == writers * rounds
    assert store.conflicts > 0


def test_a_segment_that_keeps_moving_gives_up_with_a_conflict(table: Any) -> None:
    rival = DynamoDBCoverageStore(boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE))
    store = DynamoDBCoverageStore(table, max_attempts=3, backoff_seconds=0)
    rounds = iter(range(1, 100))

    def always_race(**_: Any) -> None:
        n = next(rounds)
        rival.add(ASSET, Span(JUNE + 2 * n * FIVE_MIN, JUNE + (2 * n + 1) * FIVE_MIN), 1)

    table.meta.client.meta.events.register("before-call.dynamodb.PutItem", always_race)
    with pytest.raises(ConflictError, match="kept changing"):
        store.add(ASSET, Span(JUNE, JUNE + 1), 1)


def test_a_year_of_fragmented_five_minute_intervals_stays_far_below_the_item_limit(table: Any, ddb_client: Any) -> None:
    # GIVEN a year of 5-minute slices with every other slice missing (the most fragments 5-minute slices make)
    store = DynamoDBCoverageStore(table)
    year = [Span(t, t + FIVE_MIN) for t in range(JUNE, JUNE + 365 * DAY_MS, 2 * FIVE_MIN)]
    assert store.add_many(ASSET, year, 1)
    # THEN it is 365 day items, the largest well under DynamoDB's 400 KB
    items = coverage_items(ddb_client)
    sizes = [item_size(i) for i in items]
    assert len(items) == 365
    assert max(sizes) < 2 * 1024  # measured: about 1 KB a day
    assert max(sizes) < ITEM_LIMIT // 100
    # and the year reads back exactly
    spans = store.spans(ASSET, JUNE, JUNE + 365 * DAY_MS)
    assert spans == year


def test_the_finest_storable_day_fits_and_a_finer_one_is_refused(table: Any, ddb_client: Any) -> None:
    from lakehook.domain.coverage import CoverageTooFragmentedError

    store = DynamoDBCoverageStore(table)
    seconds = [Span(t, t + 1000) for t in range(JUNE, JUNE + DAY_MS, 2000)]  # 43,200 one-second fragments
    store.add_many(ASSET, seconds, 1)
    (item,) = coverage_items(ddb_client)
    assert item_size(item) < ITEM_LIMIT
    finer = [Span(t, t + 1) for t in range(JUNE + DAY_MS, JUNE + DAY_MS + 300_000, 2)]  # 150,000 fragments
    with pytest.raises(CoverageTooFragmentedError):
        store.add_many(ASSET, finer, 1)
    assert len(coverage_items(ddb_client)) == 1  # nothing of the refused day was written
