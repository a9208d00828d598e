"""Iceberg: the partitions each snapshot touched, against what pyiceberg says each snapshot holds.

Tables are written by pyiceberg on a sqlite SQL catalog, partitioned by ``day(ts)`` and ``identity(region)``
(and ``bucket`` / ``truncate`` / ``hour`` in one more test); they take appends, overwrites that replace one
partition, and deletes. The reference is ``table.inspect.files(snapshot_id=…)``: the files a snapshot added or
removed against its parent, each named by its ``partition`` with ``PartitionSpec.partition_to_path``'s human
strings. Polled through DynamoDB (moto), so ``latestPartitions`` is checked as the store keeps it.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform, HourTransform, IdentityTransform, TruncateTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, LongType, NestedField, StringType, TimestamptzType

from lakehook.adapters.lakehouse.iceberg import partition_key
from lakehook.domain.events import AssetEvent
from lakehook.domain.partitions import format_partition_key
from tests.hypothesis_profiles import examples
from tests.pollers import Lake
from tests.pollers import iceberg_asset as register

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
    NestedField(4, "dt", DateType(), required=False),
)
ARROW = pa.schema(
    [("id", pa.int64()), ("region", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("dt", pa.date32())]
)
# pyiceberg computes only identity partitions itself when it writes (the other transforms need pyiceberg-core,
# which lakehook does not ship): appends, overwrites and deletes go through a date and a string identity; the
# other transforms get files pyiceberg adds (add_files), whose partitions pyiceberg computes from their statistics.
DT_REGION = PartitionSpec(
    PartitionField(source_id=4, field_id=1000, transform=IdentityTransform(), name="dt"),
    PartitionField(source_id=2, field_id=1001, transform=IdentityTransform(), name="region"),
)
START = datetime(2026, 12, 1, tzinfo=UTC)
REGIONS = st.sampled_from(["eu", "us/west", "a=b", "50%", "zürich", None])
DAYS = st.integers(min_value=0, max_value=2)


def catalog(root: Path) -> tuple[Any, dict[str, str]]:
    properties = {"type": "sql", "uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}/warehouse"}
    writer = load_catalog("lake", **properties)
    writer.create_namespace("ods")
    return writer, properties


def at(day: int) -> datetime:
    return START + timedelta(days=day, hours=3)


def data(rows: list[tuple[str | None, int]], start: int) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": start + i,
                "region": r,
                "ts": START + timedelta(days=d, hours=3),
                "dt": (START + timedelta(d)).date(),
            }
            for i, (r, d) in enumerate(rows)
        ],
        schema=ARROW,
    )


def reference_key(table: Any, partition: dict[str, Any]) -> str:
    """A file's partition as pyiceberg names its directory (``PartitionSpec.partition_to_path``: quote_plus of the
    transforms' human strings), read back and written as lakehook's canonical key."""
    spec, schema = table.spec(), table.schema()
    epoch = date(1970, 1, 1)
    # inspect.files shows a date-typed partition as a date; the partition tuple holds days since the epoch
    values = [(v - epoch).days if isinstance(v, date) else v for v in (partition[f.name] for f in spec.fields)]
    path = spec.partition_to_path(Record(*values), schema)
    fields = []
    for segment in path.split("/"):
        name, value = (unquote_plus(p) for p in segment.split("=", 1))
        fields.append((name, None if value == "null" else value))  # to_human_string(None) is "null"
    return format_partition_key(fields)


def live_files(table: Any, snapshot_id: int | None) -> dict[str, str]:
    """The snapshot's live data files and their partition key, as pyiceberg's inspect.files reads them."""
    if snapshot_id is None:
        return {}
    files = table.inspect.files(snapshot_id=snapshot_id).to_pylist()
    return {f["file_path"]: reference_key(table, f["partition"]) for f in files}


def touched(table: Any, snapshot_id: int) -> set[str]:
    snapshot = table.snapshot_by_id(snapshot_id)
    before, after = live_files(table, snapshot.parent_snapshot_id), live_files(table, snapshot_id)
    return {before.get(f) or after[f] for f in set(before) ^ set(after)}


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.tuples(REGIONS, DAYS), min_size=1, max_size=5)),
        st.tuples(st.just("overwrite"), REGIONS.filter(lambda r: r is not None)),
        st.tuples(st.just("delete"), REGIONS.filter(lambda r: r is not None)),
    ),
    min_size=1,
    max_size=4,
)


def by_snapshot(lake: Lake, key: str) -> dict[int, AssetEvent]:
    return {e.snapshot_id: e for e in lake.events(key) if e.snapshot_id is not None}


@settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations)
def test_each_snapshot_names_the_partitions_pyiceberg_says_it_changed(table: Any, ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        writer, properties = catalog(Path(scratch))
        orders = writer.create_table("ods.orders", schema=SCHEMA, partition_spec=DT_REGION)
        lake = Lake(table)
        asset = register(properties, "ods.orders", key_catalog=f"c{abs(hash(scratch)) % 10**8}")
        lake.poll(asset)  # a table without snapshots: every later snapshot is read
        orders.append(data([("eu", 0), ("us/west", 1)], 0))
        for n, (kind, arg) in enumerate(ops, start=1):
            if kind == "append":
                orders.append(data(arg, 100 * n))
            elif kind == "overwrite":  # replaces the region's rows with new ones
                orders.overwrite(data([(arg, 2)], 100 * n), overwrite_filter=EqualTo("region", arg))
            else:
                orders.delete(EqualTo("region", arg))
        lake.poll(asset)
        orders.refresh()
        events = by_snapshot(lake, asset.asset_key)
        for snapshot in orders.snapshots():
            expected = touched(orders, snapshot.snapshot_id)
            event = events[snapshot.snapshot_id]
            assert event.partitions is not None, snapshot
            assert set(event.partitions.keys) == expected, snapshot
        state = lake.store.get_state(asset.asset_key)
        assert state is not None and state.latest_data is not None
        newest = state.latest_data.snapshot_id
        assert state.latest_partitions is not None and state.latest_partitions.snapshot_id == newest
        assert set(state.latest_partitions.keys) == touched(orders, newest)


def test_day_hour_and_truncate_are_named_as_pyiceberg_names_them(table: Any, tmp_path: Path) -> None:
    writer, properties = catalog(tmp_path)
    spec = PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=3, field_id=1001, transform=HourTransform(), name="ts_hour"),
        PartitionField(source_id=2, field_id=1002, transform=TruncateTransform(2), name="region_trunc"),
    )
    orders = writer.create_table("ods.orders", schema=SCHEMA, partition_spec=spec)
    lake = Lake(table)
    asset = register(properties, "ods.orders")
    lake.poll(asset)
    # one file per partition, each added by pyiceberg (which computes its partition from the file statistics)
    for n, rows in enumerate(([("europe", 0)], [("europe", 1)], [("usa", 2)])):
        file = tmp_path / f"part-{n}.parquet"
        pq.write_table(data(rows, 7), file)
        orders.add_files([str(file)])
    lake.poll(asset)
    orders.refresh()
    events = by_snapshot(lake, asset.asset_key)
    assert len(events) == 3
    for snapshot in orders.snapshots():
        event = events[snapshot.snapshot_id]
        assert event.partitions is not None and set(event.partitions.keys) == touched(orders, snapshot.snapshot_id)
    keys = {k for e in events.values() for k in (e.partitions.keys if e.partitions else ())}
    assert keys == {
        "ts_day=2026-12-01/ts_hour=2026-12-01-03/region_trunc=eu",
        "ts_day=2026-12-02/ts_hour=2026-12-02-03/region_trunc=eu",
        "ts_day=2026-12-03/ts_hour=2026-12-03-03/region_trunc=us",
    }


def test_a_bucket_partition_is_its_bucket_number() -> None:
    # add_files cannot infer a bucket from file statistics and pyiceberg writes one only with pyiceberg-core:
    # the bucket's human string, on a partition tuple as a manifest holds it
    spec = PartitionSpec(
        PartitionField(source_id=1, field_id=1000, transform=BucketTransform(16), name="id_bucket"),
        PartitionField(source_id=2, field_id=1001, transform=IdentityTransform(), name="region"),
    )
    types = [f.field_type for f in spec.partition_type(SCHEMA).fields]
    assert partition_key(spec, types, Record(5, "a/b")) == "id_bucket=5/region=a%2Fb"
    assert partition_key(spec, types, Record(None, None)) == (
        "id_bucket=__HIVE_DEFAULT_PARTITION__/region=__HIVE_DEFAULT_PARTITION__"
    )
    assert spec.partition_to_path(Record(5, "a/b"), SCHEMA) == "id_bucket=5/region=a%2Fb"
