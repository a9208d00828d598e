"""Delta: the partitions each version touched, against what the ``deltalake`` reader says each version holds.

Tables are written by delta-rs (``write_deltalake(partition_by=…)``, overwrites with a predicate, deletes, UPDATEs;
column mapping with ``configuration={"delta.columnMapping.mode": …}``, checkpoints with ``create_checkpoint`` and
log cleanup with ``cleanup_metadata``); the reference is ``DeltaTable(path, version=v).get_add_actions()``: the
files a version added or removed, and their partitions under the names that version's metadata gives its partition
columns. Polled through DynamoDB (moto), so ``latestPartitions`` is checked as the store keeps it.
"""

from __future__ import annotations

import json
import tempfile
import time
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


def partition_columns(path: str, version: int) -> list[str]:
    """The partition columns of a version as delta-rs reads its metadata (logical names, in order)."""
    return list(DeltaTable(path, version=version).metadata().partition_columns)


def files(path: str, version: int) -> dict[str, tuple[str | None, ...]]:
    """The live files of a version and their partition values (in partition column order), as delta-rs reads them."""
    if version < 0:
        return {}
    table = DeltaTable(path, version=version)
    columns = table.metadata().partition_columns
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    return {
        a["path"]: tuple(None if a[f"partition.{c}"] is None else str(a[f"partition.{c}"]) for c in columns)
        for a in actions
    }


def touched_by(path: str, version: int) -> set[str]:
    """The partitions of the files a version added or removed (its data change), named as that version's metadata
    names its partition columns."""
    before, after = files(path, version - 1), files(path, version)
    columns = partition_columns(path, version)
    changed = set(before) ^ set(after)
    return {format_partition_key(list(zip(columns, before.get(f) or after[f], strict=True))) for f in changed}


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


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
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


# --- column mapping and renames ---------------------------------------------------------------------------------


def latest_metadata(location: str) -> dict[str, Any]:
    """The table's newest ``metaData`` action, as its log holds it."""
    log = Path(location, "_delta_log")
    for version in range(DeltaTable(location).version(), -1, -1):
        for line in (log / f"{version:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                return dict(action["metaData"])
    raise AssertionError(f"{location}: no metaData in the log")


def rename_column(location: str, old: str, new: str) -> None:
    """``ALTER TABLE … RENAME COLUMN old TO new`` as Delta commits it on a column-mapped table: one commit whose
    ``metaData`` is the table's with the column's logical name changed, its physical name and id kept, and
    ``partitionColumns`` naming it anew (the protocol's Column Mapping and Change Metadata sections).

    delta-rs (1.6.6) writes column-mapped tables but has no rename, so this one commit is written as that JSON;
    every other commit of these tables is delta-rs's own, and delta-rs reads and writes the table after it."""
    meta = latest_metadata(location)
    schema = json.loads(meta["schemaString"])
    for field in schema["fields"]:
        if field["name"] == old:
            field["name"] = new
    meta["schemaString"] = json.dumps(schema)
    meta["partitionColumns"] = [new if c == old else c for c in meta["partitionColumns"]]
    info = {
        "timestamp": int(time.time() * 1000),
        "operation": "RENAME COLUMN",
        "operationParameters": {"oldColumnPath": old, "newColumnPath": new},
    }
    version = DeltaTable(location).version() + 1
    with open(Path(location, "_delta_log", f"{version:020d}.json"), "x") as commit:  # as a writer commits: never over
        commit.write(f"{json.dumps({'commitInfo': info})}\n{json.dumps({'metaData': meta})}\n")


class Writer:
    """Writes one table with delta-rs under its current column names (a rename changes them)."""

    def __init__(self, location: str, partition_by: list[str], configuration: dict[str, str]) -> None:
        self.location = location
        self.names = {"region": "region", "day": "day"}
        self.written = 0
        write_deltalake(
            location, self.rows([("eu", 1), (None, 2)]), partition_by=partition_by, configuration=configuration
        )
        self.expected = {0: touched_by(location, 0)}

    def rows(self, values: list[tuple[str | None, int | None]]) -> pa.Table:
        schema = pa.schema([("id", pa.int64()), (self.names["region"], pa.string()), (self.names["day"], pa.int32())])
        start, self.written = self.written, self.written + len(values)
        return pa.Table.from_pylist(
            [{"id": start + i, self.names["region"]: r, self.names["day"]: d} for i, (r, d) in enumerate(values)],
            schema=schema,
        )

    def apply(self, kind: str, arg: Any) -> None:
        """One operation, and what delta-rs says the version it made touched (none when it made no version)."""
        day = self.names["day"].replace('"', '""')
        before = DeltaTable(self.location).version()
        if kind == "append":
            write_deltalake(self.location, self.rows(arg), mode="append")
        elif kind == "update":  # rewrites each file it matches: a remove and an add of the same partition
            DeltaTable(self.location).update({"id": "id + 1000"}, predicate=None if arg is None else f'"{day}" = {arg}')
        elif kind == "delete":
            DeltaTable(self.location).delete(f'"{day}" = {arg}')
        else:
            which, new = arg
            if new in self.names.values():
                return
            rename_column(self.location, self.names[which], new)
            self.names[which] = new
        version = DeltaTable(self.location).version()
        if version > before:  # (an UPDATE that matches no row commits nothing)
            self.expected[version] = touched_by(self.location, version)


def assert_recorded(events: list[AssetEvent], expected: dict[int, set[str]]) -> None:
    """Each recorded version names exactly the partitions delta-rs says it touched, each once."""
    for event in events:
        version = event.snapshot_id
        assert version is not None and version in expected
        if not expected[version]:  # no data change (a rename, an UPDATE or DELETE that matched nothing)
            assert event.partitions is None or event.partitions.keys == (), f"version {version}"
            continue
        assert event.partitions is not None, f"version {version}"
        assert set(event.partitions.keys) == expected[version], f"version {version}"
        assert event.partitions.count == len(expected[version]) == len(event.partitions.keys), f"version {version}"


NEW_NAMES = st.sampled_from(["area", "zone", "Region Name", "a=b", "día"])  # a space, a character Hive escapes
mapped_operations = st.lists(
    st.tuples(
        st.one_of(
            st.tuples(st.just("append"), st.lists(st.tuples(REGIONS, DAYS), min_size=1, max_size=4)),
            st.tuples(st.just("update"), DAYS.filter(lambda d: d is not None)),
            st.tuples(st.just("delete"), DAYS.filter(lambda d: d is not None)),
            st.tuples(st.just("rename"), st.tuples(st.sampled_from(["region", "day"]), NEW_NAMES)),
        ),
        st.booleans(),  # poll after it
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.sampled_from(["name", "id"]), st.sampled_from([["region", "day"], ["day", "region"]]), mapped_operations)
def test_a_column_mapped_table_names_partitions_by_their_logical_names_at_each_version(
    table: Any, mode: str, partition_by: list[str], ops: list[tuple[tuple[str, Any], bool]]
) -> None:
    """Under column mapping ``partitionValues`` is keyed by physical names; keys use the logical names the
    version's own metadata gives the columns, so a rename renames the keys from its version on."""
    with tempfile.TemporaryDirectory() as scratch:
        location = str(Path(scratch, "orders"))
        writer = Writer(location, partition_by, {"delta.columnMapping.mode": mode})
        poller = Poller(table, location)
        poller()
        for (kind, arg), poll_after in ops:
            writer.apply(kind, arg)
            if poll_after:
                poller()
        events = poller()
        assert [e.snapshot_id for e in events] == list(range(DeltaTable(location).version() + 1))
        assert_recorded(events, writer.expected)
        state = poller.store.get_state(poller.asset.asset_key)
        newest_data = max((v for v, touched in writer.expected.items() if touched), default=None)
        assert state is not None and state.latest_partitions is not None
        assert state.latest_partitions.snapshot_id == newest_data
        assert set(state.latest_partitions.keys) == writer.expected[newest_data]


# --- after a checkpoint and log cleanup ---------------------------------------------------------------------------

write_operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.tuples(REGIONS, DAYS), min_size=1, max_size=4)),
        st.tuples(st.just("update"), st.none() | DAYS.filter(lambda d: d is not None)),
        st.tuples(st.just("delete"), DAYS.filter(lambda d: d is not None)),
    ),
    max_size=3,
)


@settings(
    max_examples=examples(10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.sampled_from(["cold", "first look", "gap", "checkpoint alone", "warm"]),
    st.sampled_from([None, "name"]),
    st.sampled_from([["region", "day"], ["day", "region"]]),
    write_operations,
    write_operations,
)
def test_after_a_checkpoint_and_log_cleanup_partitions_keep_the_columns_order_and_count_once(
    table: Any,
    poller_is: str,
    mode: str | None,
    partition_by: list[str],
    before: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
) -> None:
    """Once ``cleanup_metadata`` has removed the commit holding the table's ``metaData``, the partition columns (and
    their physical names) come from the checkpoint: for a poller that knew the metadata version but has not read it
    (``cold``: a new process), one that first looks at the table then, one resumed past a gap at the checkpoint's
    version (its commit kept, or the checkpoint ``alone``), and a ``warm`` one. An UPDATE of every row (a remove and
    an add of each partition, their ``partitionValues`` maps in delta-rs's own order) names each partition once."""
    with tempfile.TemporaryDirectory() as scratch:
        location = str(Path(scratch, "orders"))
        configuration = {"delta.logRetentionDuration": "interval 0 seconds"}
        if mode is not None:
            configuration["delta.columnMapping.mode"] = mode
        writer = Writer(location, partition_by, configuration)
        poller = Poller(table, location) if poller_is != "first look" else None
        if poller is not None:
            poller()  # version 0: the cursor's metadata version is 0
        for kind, arg in before:
            writer.apply(kind, arg)
        if poller is not None and poller_is in ("cold", "warm"):
            poller()  # read up to the checkpoint's version
        checkpointed = DeltaTable(location)
        checkpointed.create_checkpoint()
        checkpointed.cleanup_metadata()  # log retention 0: every commit before the checkpoint goes, version 0's too
        version = checkpointed.version()
        alone = version if poller_is == "checkpoint alone" and version > 0 else None  # not read before cleanup
        assert not Path(location, "_delta_log", f"{0:020d}.json").exists() or version == 0
        for kind, arg in [*after, ("append", [("eu", 1), ("us/west", 2), (None, None)]), ("update", None)]:
            writer.apply(kind, arg)
        if alone is not None:  # the protocol's cleanup need only keep a checkpoint of the oldest version it keeps
            # (delta-rs cannot write to such a log, so it goes after the writes: one poll reads them)
            Path(location, "_delta_log", f"{alone:020d}.json").unlink()
        if poller is None or poller_is == "cold":
            poller = Poller(table, location)  # a new poller: it has read nothing of the table
        events = poller()
        if alone is None:
            writer.apply("update", None)  # and the next poll, from where this one stopped
            events = poller()
        newest = max(writer.expected)
        assert [e.snapshot_id for e in events][-2:] == [newest - 1, newest]
        assert all(e.partitions is None for e in events if e.snapshot_id == alone)  # what it changed is not known
        assert_recorded([e for e in events if e.snapshot_id != alone], writer.expected)
