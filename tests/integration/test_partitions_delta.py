"""Delta: the partitions each version touched, against what the ``deltalake`` reader says each version holds.

Tables are written by delta-rs (``write_deltalake(partition_by=…)``, overwrites with a predicate, deletes); the
reference is ``DeltaTable(path, version=v).get_add_actions()``: the files a version added or removed, and their
partitions. Polled through DynamoDB (moto), so ``latestPartitions`` is checked as the store keeps it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import AssetEvent
from lakehook.domain.partitions import format_partition_key
from tests.hypothesis_profiles import examples
from tests.pollers import Lake

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("day", pa.int32())])
# partition values with the characters Hive escapes, a space, non-ASCII text and null
REGIONS = st.sampled_from(["eu", "us/west", "a=b", "50%", "zürich", "x y", None])
DAYS = st.sampled_from([1, 2, None])


def register(location: str) -> AssetRegistration:
    """The table as an asset; each location its own key (hypothesis runs its examples on one DynamoDB table)."""
    key = f"delta://lake/ods/orders_{abs(hash(location)) % 10**8}"
    return AssetRegistration.model_validate(
        {"assetKey": key, "format": "delta", "source": {"catalog": "lake", "location": location}}
    )


def batch(values: list[tuple[str | None, int | None]], start: int) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": start + i, "region": r, "day": d} for i, (r, d) in enumerate(values)], schema=SCHEMA
    )


def files(path: str, version: int) -> dict[str, str]:
    """The live files of a version and their partition key, as delta-rs reads them."""
    if version < 0:
        return {}
    actions = pa.table(DeltaTable(path, version=version).get_add_actions(flatten=True)).to_pylist()
    out = {}
    for action in actions:
        fields = [(c, action[f"partition.{c}"]) for c in ("region", "day")]
        out[action["path"]] = format_partition_key([(c, None if v is None else str(v)) for c, v in fields])
    return out


def touched_by(path: str, version: int) -> set[str]:
    """The partitions of the files a version added or removed (its data change)."""
    before, after = files(path, version - 1), files(path, version)
    changed = set(before) ^ set(after)
    return {before.get(f) or after[f] for f in changed}


class Poller:
    """The lake's poller (tests/pollers.py) reading one Delta table."""

    def __init__(self, table: Any, location: str) -> None:
        self.lake = Lake(table)
        self.store = self.lake.store
        self.asset = register(location)

    def __call__(self) -> list[AssetEvent]:
        """Poll, and every snapshot event recorded so far, oldest first."""
        self.lake.poll(self.asset)
        return self.lake.events(self.asset.asset_key)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.tuples(REGIONS, DAYS), min_size=1, max_size=6)),
        st.tuples(st.just("overwrite"), REGIONS.filter(lambda r: r is not None)),
        st.tuples(st.just("delete"), DAYS.filter(lambda d: d is not None)),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
def test_each_version_names_the_partitions_delta_rs_says_it_changed(table: Any, ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        location = str(Path(scratch, "orders"))
        write_deltalake(location, batch([("eu", 1), ("us/west", 2)], 0), partition_by=["region", "day"])
        poller = Poller(table, location)
        poller()  # a first look takes the newest version; the next poll reads every version after it
        for n, (kind, arg) in enumerate(ops, start=1):
            if kind == "append":
                write_deltalake(location, batch(arg, 100 * n), mode="append", partition_by=["region", "day"])
            elif kind == "overwrite":  # replaces one partition's rows (replaceWhere)
                escaped = arg.replace("'", "''")
                data = batch([(arg, 1)], 100 * n)
                write_deltalake(location, data, mode="overwrite", predicate=f"region = '{escaped}'")
            else:
                DeltaTable(location).delete(f"day = {arg}")
        events, store = poller(), poller.store
        latest = DeltaTable(location).version()
        by_version = {e.snapshot_id: e for e in events if e.snapshot_id is not None}
        for version in range(latest + 1):
            event = by_version[version]
            expected = touched_by(location, version)
            if not expected:  # a delete that matched nothing changes no data
                assert event.partitions is None or event.partitions.keys == ()
                continue
            assert event.partitions is not None, f"version {version}"
            assert set(event.partitions.keys) == expected, f"version {version}"
            assert event.partitions.count == len(expected) and not event.partitions.truncated
        state = store.get_state(register(location).asset_key)
        assert state is not None
        newest_data = max(v for v in range(latest + 1) if touched_by(location, v))
        assert state.latest_partitions is not None and state.latest_partitions.snapshot_id == newest_data
        assert set(state.latest_partitions.keys) == touched_by(location, newest_data)


def test_an_unpartitioned_table_records_no_partitions(table: Any, tmp_path: Path) -> None:
    location = str(tmp_path / "plain")
    write_deltalake(location, pa.Table.from_pylist([{"id": 1}]))
    poller = Poller(table, location)
    poller()
    write_deltalake(location, pa.Table.from_pylist([{"id": 2}]), mode="append")
    events, store = poller(), poller.store
    assert [e.partitions for e in events] == [None, None]
    state = store.get_state(register(location).asset_key)
    assert state is not None and state.latest_partitions is None and state.latest_snapshot_id == 1


def test_a_commit_touching_more_partitions_than_the_limit_is_one_bounded_event(table: Any, tmp_path: Path) -> None:
    from lakehook.domain.limits import MAX_TOUCHED_PARTITIONS

    location = str(tmp_path / "wide")
    count = MAX_TOUCHED_PARTITIONS + 500
    write_deltalake(location, batch([("eu", 1)], 0), partition_by=["region", "day"])
    poller = Poller(table, location)
    poller()
    wide = pa.Table.from_pylist([{"id": i, "region": f"r{i:05d}", "day": 1} for i in range(count)], schema=SCHEMA)
    write_deltalake(location, wide, mode="append", partition_by=["region", "day"])
    events = poller()
    touched = events[-1].partitions
    assert touched is not None and touched.truncated and touched.count == count
    assert touched.keys == tuple(sorted(touched_by(location, 1)))[:MAX_TOUCHED_PARTITIONS]
    # one state item, far below DynamoDB's 400 KB: its stored latestPartitions is the bounded value
    item = table.get_item(Key={"PK": f"ASSET#{poller.asset.asset_key}", "SK": "STATE"})["Item"]
    assert (
        len(item["latestPartitions"]["keys"]) == MAX_TOUCHED_PARTITIONS
        and int(item["latestPartitions"]["count"]) == count
    )
