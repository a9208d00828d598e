"""The watermark store (seed 001): one contract, held by DynamoDBWatermarkStore on moto and the in-memory fake."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore
from lakehook.api.answers import WatermarkAnswer
from lakehook.domain.errors import ConflictError
from lakehook.ports import WatermarkStore
from tests.fakes.memory import InMemoryWatermarkStore

ORDERS = "paimon://lake/ods_db/ods_order_latest"
SPOOL = "s3://spool/orders#daily"  # '#' is legal in a generic key and must not bleed into the namespace


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> WatermarkStore:
    if request.param == "dynamodb":
        return DynamoDBWatermarkStore(request.getfixturevalue("table"))
    return InMemoryWatermarkStore()


def test_absent_until_written(store: WatermarkStore) -> None:
    assert store.get("poller", ORDERS, "offset") is None
    assert store.list("poller", ORDERS) == []


@pytest.mark.parametrize(
    "value",
    [{"snapshotId": 1001, "files": ["a", "b"]}, 2**62, -1, 1.25, "2025-06-01T10:00:00Z", None, True, [], {"n": None}],
)
def test_any_json_value_round_trips_exactly(store: WatermarkStore, value: Any) -> None:
    written = store.put("poller", ORDERS, "offset", value, now_ms=1000)
    read = store.get("poller", ORDERS, "offset")
    assert read is not None and read.value == value and type(read.value) is type(value)
    assert written == read
    assert (read.namespace, read.asset_key, read.key, read.version, read.updated_at) == (
        "poller",
        ORDERS,
        "offset",
        1,
        1000,
    )


def test_every_write_bumps_the_version(store: WatermarkStore) -> None:
    assert [store.put("ns", ORDERS, "k", i, now_ms=i).version for i in range(1, 4)] == [1, 2, 3]
    read = store.get("ns", ORDERS, "k")
    assert read is not None and (read.value, read.updated_at) == (3, 3)


def test_create_only_with_expected_version_zero(store: WatermarkStore) -> None:
    assert store.put("ns", ORDERS, "k", "first", now_ms=1, expected_version=0).version == 1
    with pytest.raises(ConflictError, match="not at version 0"):
        store.put("ns", ORDERS, "k", "second", now_ms=2, expected_version=0)
    read = store.get("ns", ORDERS, "k")
    assert read is not None and read.value == "first"


def test_compare_and_set_wins_once_per_version(store: WatermarkStore) -> None:
    store.put("ns", ORDERS, "k", 10, now_ms=1)
    assert store.put("ns", ORDERS, "k", 11, now_ms=2, expected_version=1).version == 2
    with pytest.raises(ConflictError):  # a second writer that also read version 1 loses
        store.put("ns", ORDERS, "k", 99, now_ms=3, expected_version=1)
    with pytest.raises(ConflictError):  # so does one from the future
        store.put("ns", ORDERS, "k", 99, now_ms=3, expected_version=7)
    read = store.get("ns", ORDERS, "k")
    assert read is not None and (read.value, read.version) == (11, 2)


def test_compare_and_set_on_an_absent_key_conflicts(store: WatermarkStore) -> None:
    with pytest.raises(ConflictError):
        store.put("ns", ORDERS, "k", 1, now_ms=1, expected_version=1)
    assert store.get("ns", ORDERS, "k") is None


def test_delete_unconditionally_or_at_a_version(store: WatermarkStore) -> None:
    store.put("ns", ORDERS, "a", 1, now_ms=1)
    store.put("ns", ORDERS, "b", 1, now_ms=1)
    store.put("ns", ORDERS, "b", 2, now_ms=2)
    assert store.delete("ns", ORDERS, "a") is True
    assert store.delete("ns", ORDERS, "a") is False
    with pytest.raises(ConflictError):
        store.delete("ns", ORDERS, "b", expected_version=1)
    assert store.get("ns", ORDERS, "b") is not None
    assert store.delete("ns", ORDERS, "b", expected_version=2) is True
    with pytest.raises(ConflictError):
        store.delete("ns", ORDERS, "b", expected_version=2)  # gone: the version no longer matches
    assert store.list("ns", ORDERS) == []


def test_a_deleted_key_starts_again_at_version_one(store: WatermarkStore) -> None:
    store.put("ns", ORDERS, "k", 1, now_ms=1)
    store.put("ns", ORDERS, "k", 2, now_ms=2)
    store.delete("ns", ORDERS, "k")
    assert store.put("ns", ORDERS, "k", 3, now_ms=3, expected_version=0).version == 1


def test_namespaces_assets_and_keys_are_separate(store: WatermarkStore) -> None:
    store.put("poller", ORDERS, "offset", 1, now_ms=1)
    store.put("poller", ORDERS, "lastScan", "t", now_ms=1)
    store.put("watcher", ORDERS, "offset", 2, now_ms=1)
    store.put("poller", SPOOL, "offset", 3, now_ms=1)
    store.put("poller", "s3://spool/orders", "offset", 4, now_ms=1)
    assert sorted((r.key, r.value) for r in store.list("poller", ORDERS)) == [("lastScan", "t"), ("offset", 1)]
    assert [(r.key, r.value) for r in store.list("watcher", ORDERS)] == [("offset", 2)]
    assert [r.value for r in store.list("poller", SPOOL)] == [3]
    assert [r.value for r in store.list("poller", "s3://spool/orders")] == [4]
    offset = store.get("watcher", ORDERS, "offset")
    assert offset is not None and offset.value == 2


def test_listing_reads_every_page(table: Any) -> None:
    store = DynamoDBWatermarkStore(table)
    filler = "x" * 60_000  # about 60 KB each: 25 of them pass DynamoDB's 1 MB page
    for i in range(25):
        store.put("big", ORDERS, f"k{i:02d}", filler, now_ms=i)
    listed = store.list("big", ORDERS)
    assert sorted(r.key for r in listed) == [f"k{i:02d}" for i in range(25)]


def test_records_answer_iso_timestamps(store: WatermarkStore) -> None:
    record = store.put("ns", ORDERS, "k", {"o": 1}, now_ms=1748772300250)
    assert WatermarkAnswer.from_domain(record).dump() == {
        "namespace": "ns",
        "assetKey": ORDERS,
        "key": "k",
        "value": {"o": 1},
        "version": 1,
        "updatedAt": "2025-06-01T10:05:00.250Z",
    }
