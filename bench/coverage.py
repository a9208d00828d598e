"""Coverage: time and DynamoDB requests to answer a month of 5-minute intervals and to add one interval to it.

On in-process moto with the table from template.yaml. A month is 8,640 5-minute intervals (30 days x 288) in
two shapes: contiguous (they merge into one span a day) and fragmented (each interval 4 minutes long, so none
touches the next: 8,640 separate spans and 8,640 gaps, the most a month of 5-minute intervals can make). The
month is loaded with `add_many` (one write per day); recording single events is measured on a further day,
one `INTERVAL_COVERED` event at a time through `RecordCoverage`, then on the day after with each event naming one
of four partitions (`partitionKey`), kept per partition as a deployed stack does (`CoveragePerPartition`).
Request counts are exact; times are medians on this machine and include moto's own work per request, so they
bound what lakehook adds rather than predict DynamoDB latency.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

FIVE_MIN = 300_000
DAY_MS = 86_400_000
MONTH_START = 1_748_736_000_000  # 2025-06-01T00:00:00Z
DAYS = 30
ASSET = "s3://bench-spool/orders"
TABLE = "lakehook-bench"
REPEATS = 25


def _median_ms(action: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def _detail(calls: dict[str, int], per: int = 1) -> str:
    return ", ".join(f"{name} {count / per:g}" for name, count in sorted(calls.items())) or "none"


def _slices(start: int, days: int, length: int) -> list[tuple[int, int]]:
    return [(s, s + length) for s in range(start, start + days * DAY_MS, FIVE_MIN)]


def _month(store: Any, recorder: Any, per_partition: Any, counter: Any, shape: str) -> list[dict[str, Any]]:
    from lakehook.domain.coverage import Span, missing
    from lakehook.domain.events import AssetEvent

    asset = f"{ASSET}-{shape}"
    length = FIVE_MIN if shape == "contiguous" else FIVE_MIN - 60_000
    end = MONTH_START + DAYS * DAY_MS
    month = _slices(MONTH_START, DAYS, length)
    assert len(month) == 8_640
    rows: list[dict[str, Any]] = []

    with counter.measure() as calls:
        began = time.perf_counter()
        store.add_many(asset, [Span(*s) for s in month], 1)
        load_s = time.perf_counter() - began
    rows.append(
        {
            "case": f"{shape}: load the month's 8,640 intervals at once (add_many)",
            "requests": sum(calls.values()),
            "ms": round(load_s * 1000, 1),
            "detail": _detail(calls),
        }
    )

    with counter.measure() as calls:
        spans = store.spans(asset, MONTH_START, end)
    gaps = missing(spans, MONTH_START, end)
    query_ms = _median_ms(lambda: missing(store.spans(asset, MONTH_START, end), MONTH_START, end))
    rows.append(
        {
            "case": f"{shape}: answer covered + missing for the month",
            "requests": sum(calls.values()),
            "ms": round(query_ms, 2),
            "detail": f"{_detail(calls)}; {len(spans)} merged spans, {len(gaps)} gaps",
        }
    )

    fresh = _fresh_intervals(shape, length, end)
    with counter.measure() as calls:
        store.add(asset, Span(*next(fresh)), 1)
    add_ms = _median_ms(lambda: store.add(asset, Span(*next(fresh)), 1))
    rows.append(
        {
            "case": f"{shape}: add one new interval to the month",
            "requests": sum(calls.values()),
            "ms": round(add_ms, 2),
            "detail": f"{_detail(calls)} (a conditional write on the day's version)",
        }
    )

    with counter.measure() as calls:
        store.add(asset, Span(*month[100]), 1)
    repeat_ms = _median_ms(lambda: store.add(asset, Span(*month[100]), 1))
    rows.append(
        {
            "case": f"{shape}: add an interval already covered (a redelivery)",
            "requests": sum(calls.values()),
            "ms": round(repeat_ms, 2),
            "detail": f"{_detail(calls)}; nothing written",
        }
    )

    day = _slices(end + DAY_MS, 1, length)
    events = [
        AssetEvent.model_validate(
            {"eventType": "INTERVAL_COVERED", "assetKey": asset, "interval": {"start": s, "end": e}}
        )
        for s, e in day
    ]
    with counter.measure() as calls:
        began = time.perf_counter()
        for event in events:
            recorder.record(event)
        per_event_ms = (time.perf_counter() - began) * 1000 / len(events)
    rows.append(
        {
            "case": f"{shape}: record a day of events one at a time (RecordCoverage)",
            "requests": round(sum(calls.values()) / len(events), 2),
            "ms": round(per_event_ms, 2),
            "detail": f"per event: {_detail(calls, len(events))}; {len(events)} events",
        }
    )

    partitioned = [
        AssetEvent.model_validate(
            {
                "eventType": "INTERVAL_COVERED",
                "assetKey": asset,
                "partitionKey": f"region=r{i % 4}",
                "interval": {"start": s + DAY_MS, "end": e + DAY_MS},
            }
        )
        for i, (s, e) in enumerate(day)
    ]
    with counter.measure() as calls:
        began = time.perf_counter()
        for event in partitioned:
            per_partition.record(event)
        per_event_ms = (time.perf_counter() - began) * 1000 / len(partitioned)
    rows.append(
        {
            "case": f"{shape}: record a day of events naming one of 4 partitions, kept per partition (the default)",
            "requests": round(sum(calls.values()) / len(partitioned), 2),
            "ms": round(per_event_ms, 2),
            "detail": f"per event: {_detail(calls, len(partitioned))}; {len(partitioned)} events",
        }
    )

    sizes = _segment_sizes(store, asset)
    rows.append(
        {
            "case": f"{shape}: stored day segments",
            "requests": "",
            "ms": "",
            "detail": f"{len(sizes)} items; encoded spans at most {max(sizes)} bytes an item, "
            f"{sum(sizes)} bytes in all",
        }
    )
    return rows


def _fresh_intervals(shape: str, length: int, end: int) -> Iterator[tuple[int, int]]:
    """New intervals that each change the month: fill a gap (fragmented) or extend past its end."""
    n = 0
    while True:
        n += 1
        if shape == "fragmented":
            slot = MONTH_START + (n % DAYS) * DAY_MS + (n % 280) * FIVE_MIN
            yield slot + length, slot + length + 1_000
        else:
            yield end + 2 * n * FIVE_MIN, end + (2 * n + 1) * FIVE_MIN


def _segment_sizes(store: Any, asset: str) -> list[int]:
    from lakehook.adapters.dynamodb import keys

    table = store._table  # the bench measures the stored items
    answer = table.query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :sk)",
        ExpressionAttributeValues={":pk": keys.asset_pk(asset), ":sk": keys.COVERAGE_PREFIX},
    )
    return [len(bytes(i["spans"])) for i in answer["Items"]]


def _domain() -> list[dict[str, Any]]:
    from lakehook.domain.coverage import merge, missing

    intervals = _slices(MONTH_START, DAYS, FIVE_MIN - 60_000)[::-1]  # out of order
    merge_ms = _median_ms(lambda: merge(intervals), 10)
    merged = merge(intervals)
    gaps_ms = _median_ms(lambda: missing(merged, MONTH_START, MONTH_START + DAYS * DAY_MS), 10)
    return [
        {
            "case": "pure: merge 8,640 out-of-order intervals / compute their 8,640 gaps",
            "requests": 0,
            "ms": f"{merge_ms:.2f} / {gaps_ms:.2f}",
            "detail": "lakehook.domain.coverage, no I/O",
        }
    ]


def run() -> list[dict[str, Any]]:
    import boto3
    from moto import mock_aws
    from tests.support import RequestCounter, create_table

    from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
    from lakehook.usecases.coverage import RecordCoverage

    rows = _domain()
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        counter = RequestCounter().attach(table.meta.client)
        store = DynamoDBCoverageStore(table)
        recorder = RecordCoverage(store, clock=lambda: 1)
        per_partition = RecordCoverage(store, clock=lambda: 1, per_partition=True)
        for shape in ("contiguous", "fragmented"):
            rows += _month(store, recorder, per_partition, counter, shape)
    return rows


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
