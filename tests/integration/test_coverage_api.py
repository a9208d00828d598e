"""GET /assets/coverage through the API resolver, on the DynamoDB coverage store (moto).

The route is not registered in ``api/app.py`` yet; these tests add its router to the built app.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.usecases.coverage import RecordCoverage
from tests.conftest import ADMIN_TOKEN
from tests.support import FakeLambdaContext, RequestCounter, api_event

ASSET = "s3://spool/orders"


def get(app: Any, query: dict[str, str], token: str | None = ADMIN_TOKEN) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = app.resolve(api_event("GET", "/assets/coverage", headers=headers, query=query), FakeLambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


def cover(table: Any, start: str, end: str) -> None:
    event = AssetEvent.model_validate(
        {"eventType": "INTERVAL_COVERED", "assetKey": ASSET, "interval": {"start": start, "end": end}}
    )
    RecordCoverage(DynamoDBCoverageStore(table)).record(event)


def test_the_contract_example_reports_covered_and_the_exact_gaps(app: Any, table: Any) -> None:
    cover(table, "2025-06-01T00:00:00Z", "2025-06-14T03:10:00Z")
    cover(table, "2025-06-14T03:25:00Z", "2025-07-01T00:00:00Z")
    status, body = get(app, {"assetKey": ASSET, "start": "2025-06-01T00:00:00Z", "end": "2025-07-01T00:00:00Z"})
    assert status == 200
    assert body["covered"] is False
    assert body["missing"] == [{"start": "2025-06-14T03:10:00Z", "end": "2025-06-14T03:25:00Z"}]
    # epoch milliseconds are accepted on input; the answer speaks ISO 8601
    status, body = get(app, {"assetKey": ASSET, "start": "1749870000000", "end": "2025-06-14T03:30:00Z"})
    assert status == 200
    assert body == {
        "assetKey": ASSET,
        "start": "2025-06-14T03:00:00Z",
        "end": "2025-06-14T03:30:00Z",
        "covered": False,
        "missing": [{"start": "2025-06-14T03:10:00Z", "end": "2025-06-14T03:25:00Z"}],
        "coveredRatio": 0.5,  # 15 of 30 minutes
        "coveredMs": 900_000,
        "totalMs": 1_800_000,
    }


def test_a_fully_covered_range(app: Any, table: Any) -> None:
    cover(table, "2025-06-01T10:00:00Z", "2025-06-01T11:00:00Z")
    status, body = get(app, {"assetKey": ASSET, "start": "1748772000000", "end": "2025-06-01T10:30:00Z"})
    assert (status, body["covered"], body["missing"], body["start"]) == (200, True, [], "2025-06-01T10:00:00Z")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"assetKey": ASSET, "start": "yesterday", "end": "2025-06-01T00:00:00Z"}, "start"),
        ({"assetKey": ASSET, "start": "2025-06-01T00:00:00Z", "end": "2025-06-01T00:00:00"}, "end"),  # no zone
        ({"assetKey": ASSET, "start": "2025-06-02T00:00:00Z", "end": "2025-06-01T00:00:00Z"}, "end"),  # reversed
        ({"assetKey": ASSET, "start": "2020-01-01T00:00:00Z", "end": "2025-01-01T00:00:00Z"}, "end"),  # too long
        ({"assetKey": "not a key", "start": "2025-06-01T00:00:00Z", "end": "2025-06-02T00:00:00Z"}, "assetKey"),
        ({"assetKey": ASSET, "end": "2025-06-02T00:00:00Z"}, "start"),  # missing
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(app: Any, query: dict[str, str], field: str) -> None:
    status, body = get(app, query)
    assert status == 400
    assert body["field"] == field, body


def test_coverage_is_a_management_route(app: Any) -> None:
    status, _ = get(app, {"assetKey": ASSET, "start": "0", "end": "1"}, token=None)
    assert status == 401


def test_pushed_intervals_reach_the_coverage_answer_through_the_ingest_path(
    app: Any, container: Container, counter: RequestCounter
) -> None:
    pushed = [
        {"eventType": "INTERVAL_COVERED", "assetKey": ASSET, "interval": {"start": start, "end": end}}
        for start, end in (
            ("2025-06-14T03:25:00Z", "2025-06-14T04:00:00Z"),  # out of order
            ("2025-06-14T03:00:00Z", "2025-06-14T03:10:00Z"),
            ("2025-06-14T03:00:00Z", "2025-06-14T03:10:00Z"),  # a duplicate
        )
    ]
    results = container.ingest.ingest_raw(pushed, SourceType.PUSH)
    assert [r.status for r in results] == [IngestStatus.ACCEPTED, IngestStatus.ACCEPTED, IngestStatus.DUPLICATE]
    status, body = get(app, {"assetKey": ASSET, "start": "2025-06-14T03:00:00Z", "end": "2025-06-14T04:00:00Z"})
    assert (status, body["missing"]) == (200, [{"start": "2025-06-14T03:10:00Z", "end": "2025-06-14T03:25:00Z"}])
    state = container.asset_store.get_state(ASSET)
    assert state is not None and state.version == 2  # touched once per novel interval: the resolver wakes
    # other event types keep their budget: the record, settled, and the state at once (two writes, one request)
    with counter.measure() as calls:
        container.ingest.ingest_raw(
            [{"eventType": "WATERMARK_ADVANCED", "assetKey": ASSET, "watermark": 5}], SourceType.PUSH
        )
    assert dict(calls) == {"TransactWriteItems": 1}


def test_a_partition_s_coverage_is_kept_and_answered_on_a_stack_as_deployed(
    app: Any, container: Container, counter: RequestCounter
) -> None:
    assert container.settings.coverage_per_partition  # the default, as the template's CoveragePerPartition
    eu, us = "region=eu", "region=us"
    pushed = [
        {"eventType": "INTERVAL_COVERED", "assetKey": ASSET, "partitionKey": key, "interval": {"start": s, "end": e}}
        for key, s, e in (
            (eu, "2025-06-14T03:00:00Z", "2025-06-14T03:30:00Z"),
            (us, "2025-06-14T03:30:00Z", "2025-06-14T04:00:00Z"),
        )
    ]
    with counter.measure() as calls:
        results = container.ingest.ingest_raw(pushed[:1], SourceType.PUSH)
    assert [r.status for r in results] == [IngestStatus.ACCEPTED]
    # the event (put, state update, settled) and two coverage adds: the asset's day and the partition's day
    assert dict(calls) == {"PutItem": 3, "UpdateItem": 2, "GetItem": 2}, dict(calls)
    container.ingest.ingest_raw(pushed[1:], SourceType.PUSH)
    hour = {"assetKey": ASSET, "start": "2025-06-14T03:00:00Z", "end": "2025-06-14T04:00:00Z"}
    status, whole = get(app, hour)
    assert (status, whole["covered"], whole["coveredRatio"]) == (200, True, 1.0)  # every partition's together
    status, body = get(app, {**hour, "partitionKey": eu})
    assert status == 200
    assert body["partitionKey"] == eu
    assert body["missing"] == [{"start": "2025-06-14T03:30:00Z", "end": "2025-06-14T04:00:00Z"}]
    assert (body["coveredRatio"], body["coveredMs"], body["totalMs"]) == (0.5, 1_800_000, 3_600_000)
    status, body = get(app, {**hour, "partitionKey": us})
    assert body["missing"] == [{"start": "2025-06-14T03:00:00Z", "end": "2025-06-14T03:30:00Z"}]
    # a redelivery of a recorded event adds nothing, to either
    again = container.ingest.ingest_raw(pushed[:1], SourceType.PUSH)
    assert [r.status for r in again] == [IngestStatus.DUPLICATE]
    assert get(app, {**hour, "partitionKey": eu})[1]["missing"] == [
        {"start": "2025-06-14T03:30:00Z", "end": "2025-06-14T04:00:00Z"}
    ]


def test_where_coverage_is_not_kept_per_partition_a_partition_s_coverage_is_refused_not_answered_empty(
    table: Any, counter: RequestCounter
) -> None:
    from lakehook import container as container_module
    from lakehook.settings import Settings
    from tests.conftest import BUCKET, TABLE

    settings = Settings(
        table_name=TABLE, bucket_name=BUCKET, admin_token=ADMIN_TOKEN, region="us-east-1", coverage_per_partition=False
    )
    wired = Container(settings)
    wired.overrides["table"] = table
    container_module.use(wired)
    try:
        event = {
            "eventType": "INTERVAL_COVERED",
            "assetKey": ASSET,
            "partitionKey": "region=eu",
            "interval": {"start": "2025-06-14T03:00:00Z", "end": "2025-06-14T03:30:00Z"},
        }
        with counter.measure() as calls:
            wired.ingest.ingest_raw([event], SourceType.PUSH)
        assert dict(calls) == {"PutItem": 2, "UpdateItem": 2, "GetItem": 1}, dict(calls)  # the asset's day only
        app = build_app()
        hour = {"assetKey": ASSET, "start": "2025-06-14T03:00:00Z", "end": "2025-06-14T03:30:00Z"}
        assert get(app, hour)[1]["covered"] is True
        status, body = get(app, {**hour, "partitionKey": "region=eu"})
        assert status == 400
        assert body["field"] == "partitionKey"
        assert "CoveragePerPartition" in body["message"]
    finally:
        container_module.use(None)
