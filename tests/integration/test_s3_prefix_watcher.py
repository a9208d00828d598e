"""The shipped S3 prefix watcher (lakehook.client.s3_watcher) on the watcher SDK: boto3 against moto, the API over
HTTP on the in-memory fakes. New objects are announced once, as a newer version of the prefix's asset, across
restarts and pages, without relisting what was seen; a sensor waiting on the prefix sees them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook import container
from lakehook.client import LakehookClient, PushClient, S3PrefixWatcher, WatermarkClient, s3_watcher
from tests.api_server import ApiServer, api_on_fakes, register_producer

TOKEN = "s3-watcher-admin"
BUCKET = "landing"
ASSET = "s3://landing/orders"


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with api_on_fakes(TOKEN) as server:
        yield server


class Listing:
    """The S3 client, counting the keys each turn lists (so a test can tell a rescan from an incremental listing)."""

    def __init__(self, s3: Any) -> None:
        self.s3 = s3
        self.listed: list[str] = []

    def list_objects_v2(self, **options: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.s3.list_objects_v2(**options)
        self.listed += [o["Key"] for o in page.get("Contents", [])]
        return page


def watcher(api: ApiServer, s3: Any) -> S3PrefixWatcher:
    secret = register_producer("landing-watcher", {"assetKeyPrefixes": [ASSET], "watermarkNamespaces": ["watchers"]})
    return S3PrefixWatcher(
        WatermarkClient(api.base_url, "landing-watcher", secret),
        PushClient(api.base_url, "landing-watcher", secret),
        Listing(s3),
        BUCKET,
        "orders/",
    )


def put(s3: Any, *keys: str) -> None:
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")


def test_new_objects_are_announced_once_as_newer_versions(api: ApiServer, s3: Any) -> None:
    first = watcher(api, s3)
    assert first.turn() is None  # nothing under the prefix yet
    put(s3, "orders/dt=2026-12-06/a.parquet", "orders/dt=2026-12-06/b.parquet", "other/z.parquet")
    event = first.turn()
    assert event is not None and (event["assetKey"], event["snapshotId"]) == (ASSET, 2)
    assert abs(event["watermark"] - datetime.now(UTC).timestamp() * 1000) < 60_000
    assert first.turn() is None  # nothing new
    restarted = S3PrefixWatcher(first.client, first.push, Listing(s3), BUCKET, "orders/")
    put(s3, "orders/dt=2026-12-07/c.parquet")
    assert restarted.turn()["snapshotId"] == 3  # type: ignore[index]
    assert restarted.s3.listed == ["orders/dt=2026-12-07/c.parquet"]  # only what came after the last key seen
    state = container.current().asset_store.get_state(ASSET)
    assert state is not None and state.latest_snapshot_id == 3


def test_a_listing_of_several_pages_is_announced_in_one_event(
    api: ApiServer, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_watcher, "PAGE_SIZE", 2)
    put(s3, *(f"orders/{i:03}.json" for i in range(5)))
    watching = watcher(api, s3)
    assert watching.turn()["snapshotId"] == 5  # type: ignore[index]
    assert watching.low_watermark["lastKey"] == "orders/004.json"


def test_a_sensor_waiting_on_the_prefix_sees_the_new_objects(api: ApiServer, s3: Any) -> None:
    sensor = LakehookClient(api.base_url, token=TOKEN)
    group = {"members": [{"assetKey": ASSET, "condition": {"minSnapshotId": 2}}]}
    watching = watcher(api, s3)
    put(s3, "orders/1.json")
    watching.turn()
    assert sensor.evaluate(group=group).verdict == "BLOCKED_BY_SNAPSHOT"
    put(s3, "orders/2.json")
    watching.turn()
    ready = sensor.evaluate(group=group)
    assert ready.ready and [p["snapshotId"] for p in ready.pins] == [2]


def test_two_copies_announce_a_batch_once(api: ApiServer, s3: Any) -> None:
    one = watcher(api, s3)
    two = S3PrefixWatcher(one.client, one.push, Listing(s3), BUCKET, "orders/")
    put(s3, "orders/1.json")
    assert two.refresh() is None  # the second copy read the state before the first announced
    announced: list[int] = []
    assert one.turn() is not None
    assert two.advance(two.get_high_watermark(), lambda: announced.append(1)) is False  # it lost the compare-and-set
    assert two.refresh()["objects"] == 1  # and re-reads the winner's state: nothing left to announce
    assert two.turn() is None
