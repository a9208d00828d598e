"""``GET /assets/events`` with a range (docs/api.md): received time ``[start, end)`` or snapshot order
``[fromVersion, toVersion]``, paged with ``nextToken``, through the API's Lambda handler on in-process moto; an unknown
query parameter or a bad value is a 400 naming it; each page is one Query."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.container import Container
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.time import ms_to_iso
from tests.hypothesis_profiles import examples
from tests.integration.test_api import ORDERS, Api
from tests.support import RequestCounter

T0 = 1_750_000_000_000
_ASSETS = itertools.count()


def snap(asset: str, sid: int) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid})


def pages(api: Api, query: dict[str, str]) -> tuple[list[dict[str, Any]], int]:
    """Every item of the listing, following nextToken, and how many pages it took."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    for count in itertools.count(1):
        answer = api.call("GET", "/assets/events", query={**query, **({"nextToken": token} if token else {})})
        assert answer.status == 200, answer.body
        items += answer.body["items"]
        token = answer.body["nextToken"]
        if token is None:
            return items, count
    raise AssertionError("unreachable")


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    received=st.lists(st.integers(0, 30), min_size=0, max_size=15),
    bounds=st.tuples(st.integers(0, 32), st.integers(0, 32)),
    by_version=st.booleans(),
    limit=st.integers(1, 6),
)
def test_paging_through_a_range_answers_exactly_its_events_once_each_in_order(
    api: Api, container: Container, received: list[int], bounds: tuple[int, int], by_version: bool, limit: int
) -> None:
    asset = f"paimon://lake/ods_db/ranged_{next(_ASSETS)}"
    for sid, offset in enumerate(received):  # snapshot sid received at T0 + offset (several at one time)
        container.asset_store.record_event(snap(asset, sid), SourceType.PUSH, T0 + offset)
    low, high = sorted(bounds)
    query = {"assetKey": asset, "limit": str(limit)}
    if by_version:
        query.update(fromVersion=str(low), toVersion=str(high))
        inside = [sid for sid in range(len(received)) if low <= sid <= high]
        expected = sorted(inside, reverse=True)
    else:
        high += 1
        query.update(start=ms_to_iso(T0 + low), end=str(T0 + high))  # ISO 8601 or epoch milliseconds
        inside = [sid for sid, offset in enumerate(received) if low <= offset < high]
        by_time = {sid: (received[sid], snap(asset, sid).event_id) for sid in inside}
        expected = sorted(inside, key=lambda sid: by_time[sid], reverse=True)
    items, _ = pages(api, query)
    assert [item["snapshotId"] for item in items] == expected


def test_each_page_of_a_range_is_one_query(api: Api, container: Container, counter: RequestCounter) -> None:
    for sid in range(12):
        container.asset_store.record_event(snap(ORDERS, sid), SourceType.PUSH, T0 + sid)
    for query in (
        {"start": ms_to_iso(T0 + 2), "end": ms_to_iso(T0 + 10)},
        {"fromVersion": "2", "toVersion": "9"},
    ):
        counter.reset()
        items, count = pages(api, {"assetKey": ORDERS, "limit": "3", **query})
        assert [i["snapshotId"] for i in items] == list(range(9, 1, -1))
        assert count in (3, 4) and counter.calls["Query"] == count  # 8 events, 3 a page: one Query each


def test_an_end_at_the_epoch_is_a_400_naming_end(api: Api) -> None:
    """``end`` at 1970-01-01T00:00:00Z leaves nothing to list: a 400 naming it (its key range, reversed, would be
    DynamoDB's ValidationException: a 500)."""
    for end in ("0", "1970-01-01T00:00:00Z"):
        answer = api.call("GET", "/assets/events", query={"assetKey": ORDERS, "end": end})
        assert answer.status == 400 and answer.body["field"] == "end", answer.body
