"""Paimon: the partitions each snapshot touched, against the files pypaimon's own reader plans per snapshot.

Tables are written by pypaimon in a local filesystem warehouse, partitioned by a date and a string (values
with the characters Paimon escapes, and null); they take appends, overwrites of one partition and of the table.
The reference is pypaimon's scan as of each snapshot (``scan.snapshot-id``): the data files a snapshot added or
removed against the one before, each named by the directory Paimon wrote it into. Polled through DynamoDB
(moto), so ``latestPartitions`` is checked as the store keeps it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.events import AssetEvent
from lakehook.domain.partitions import HIVE_DEFAULT_PARTITION, path_partition_key
from tests.hypothesis_profiles import examples
from tests.lakehouse import paimon_commit
from tests.pollers import Lake
from tests.pollers import paimon_asset as register

pytestmark = pytest.mark.integration

ARROW = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("region", pa.string())])
START = date(2026, 12, 1)
REGIONS = st.sampled_from(["eu", "us/west", "a=b", "50%", "zürich", None])
DAYS = st.integers(min_value=0, max_value=2)


def create(warehouse: dict[str, str], partition_keys: list[str]) -> Any:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create(warehouse)
    catalog.create_database("ods", True)
    catalog.create_table("ods.orders", Schema.from_pyarrow_schema(ARROW, partition_keys=partition_keys), False)
    return catalog.get_table("ods.orders")


def data(rows: list[tuple[int, str | None]], start: int) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": start + i, "dt": START + timedelta(d), "region": r} for i, (d, r) in enumerate(rows)], schema=ARROW
    )


def overwrite(table: Any, frame: pa.Table, partition: dict[str, str] | None) -> None:
    builder = table.new_batch_write_builder().overwrite(partition)
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(frame)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def live_files(table: Any, snapshot_id: int) -> dict[str, str]:
    """The data files pypaimon's scan plans as of a snapshot, each with the partition of its directory."""
    if snapshot_id < 1:
        return {}
    as_of = table.copy({"scan.snapshot-id": str(snapshot_id)})
    splits = as_of.new_read_builder().new_scan().plan().splits()
    root = Path(table.table_path.removeprefix("file://"))
    out = {}
    for split in splits:
        for file in split.files:
            (found,) = root.glob(f"**/{file.file_name}")
            directory = found.parent.parent.relative_to(root).as_posix()  # <partition dirs>/bucket-N/<file>
            key = path_partition_key(directory.replace("__DEFAULT_PARTITION__", HIVE_DEFAULT_PARTITION))
            assert key is not None
            out[file.file_name] = key
    return out


def touched(table: Any, snapshot_id: int) -> set[str]:
    before, after = live_files(table, snapshot_id - 1), live_files(table, snapshot_id)
    return {before.get(f) or after[f] for f in set(before) ^ set(after)}


def by_snapshot(lake: Lake, key: str) -> dict[int, AssetEvent]:
    return {e.snapshot_id: e for e in lake.events(key) if e.snapshot_id is not None}


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.tuples(DAYS, REGIONS), min_size=1, max_size=5)),
        st.tuples(st.just("overwrite"), st.tuples(DAYS, REGIONS.filter(lambda r: r is not None))),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations)
def test_each_snapshot_names_the_partitions_pypaimon_says_it_changed(table: Any, ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        warehouse = {"warehouse": f"file://{scratch}/warehouse"}
        orders = create(warehouse, ["dt", "region"])
        lake = Lake(table)
        asset = register(warehouse, "ods.orders", catalog=f"c{abs(hash(scratch)) % 10**8}")
        lake.poll(asset)  # a table without snapshots: every later snapshot is read
        paimon_commit(orders, data([(0, "eu"), (1, "us/west")], 0))
        for n, (kind, arg) in enumerate(ops, start=1):
            if kind == "append":
                paimon_commit(orders, data(arg, 100 * n))
            else:  # replaces one partition's rows
                day, region = arg
                partition = {"dt": (START + timedelta(day)).isoformat(), "region": region}
                overwrite(orders, data([(day, region)], 100 * n), partition)
        lake.poll(asset)
        events = by_snapshot(lake, asset.asset_key)
        assert sorted(events) == list(range(1, len(ops) + 2))
        for snapshot_id, event in events.items():
            assert event.partitions is not None, snapshot_id
            assert set(event.partitions.keys) == touched(orders, snapshot_id), snapshot_id
        state = lake.store.get_state(asset.asset_key)
        assert state is not None and state.latest_partitions is not None
        assert set(state.latest_partitions.keys) == touched(orders, max(events))


def test_a_dynamic_overwrite_names_only_the_partition_it_replaced(table: Any, tmp_path: Path) -> None:
    warehouse = {"warehouse": f"file://{tmp_path}/warehouse"}
    orders = create(warehouse, ["dt", "region"])
    lake = Lake(table)
    asset = register(warehouse, "ods.orders")
    lake.poll(asset)
    paimon_commit(orders, data([(0, "eu"), (1, None)], 0))
    overwrite(orders, data([(0, "eu")], 10), None)  # Paimon's default: overwrite the partitions written to
    lake.poll(asset)
    events = by_snapshot(lake, asset.asset_key)
    # Paimon's default partition.legacy-name writes a DATE partition as its day number, and so names it here
    day = (START - date(1970, 1, 1)).days
    assert events[1].partitions is not None and events[1].partitions.keys == (
        f"dt={day}/region=eu",
        f"dt={day + 1}/region={HIVE_DEFAULT_PARTITION}",
    )
    assert events[2].partitions is not None and events[2].commit_kind == "OVERWRITE"
    assert set(events[2].partitions.keys) == touched(orders, 2) == {f"dt={day}/region=eu"}


def test_reading_partitions_needs_none_of_the_packages_the_layer_leaves_out(tmp_path: Path) -> None:
    """The lakehouse layer ships no polars, pandas or numpy: the manifests are read without them."""
    warehouse = {"warehouse": f"file://{tmp_path}/warehouse"}
    orders = create(warehouse, ["dt", "region"])
    paimon_commit(orders, data([(0, "eu")], 0))
    paimon_commit(orders, data([(1, "us")], 1))
    code = (
        "import sys, json, importlib.abc\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in {'polars', 'pandas', 'numpy', 'rich', 'sqlalchemy'}:\n"
        "            raise ImportError(name + ' is not in the lakehouse layer')\n"
        "sys.meta_path.insert(0, Missing())\n"
        "from lakehook.adapters.lakehouse.factory import snapshot_sources\n"
        "from tests.fakes.memory import InMemorySecretStore\n"
        "from lakehook.domain.assets import AssetFormat, AssetSource\n"
        "from lakehook.domain.snapshots import SnapshotCursor\n"
        f"src = AssetSource(catalog='lake', properties={warehouse!r}, table='ods.orders')\n"
        "paimon = snapshot_sources(InMemorySecretStore())(AssetFormat.PAIMON)\n"
        "batch = paimon.snapshots_since(src, SnapshotCursor(snapshot_id=1), paimon.pointer(src), limit=10)\n"
        "print(json.dumps([list(s.partitions.keys) for s in batch.snapshots]))\n"
    )
    root = Path(__file__).resolve().parents[2]  # this checkout's package, not whichever one is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src" / "shared"), str(root)])}
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert answer.returncode == 0, answer.stderr[-2000:]
    day = (START - date(1970, 1, 1)).days + 1
    assert json.loads(answer.stdout.strip().splitlines()[-1]) == [[f"dt={day}/region=us"]]
