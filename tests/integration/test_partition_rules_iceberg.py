"""A rule per day over two real Iceberg tables (pyiceberg, a sqlite SQL catalog), polled into DynamoDB (moto), its
stream through the resolver's FilterCriteria.

``ods.orders`` is partitioned by ``identity(dt)`` (a date) and takes pyiceberg appends, overwrites of one day and a
rewrite (a ``replace`` snapshot); ``ods.clicks`` by ``hour(ts)``, its member cut to ``grain: day``, and takes files
pyiceberg adds (pyiceberg writes only identity partitions itself without pyiceberg-core, and computes an added
file's hour from its statistics). Each day runs once both touched it, pinning the newest commit of each that did; an
overwrite of one day runs that day only; a rewrite runs nothing. The generated test compares every run with
:class:`~tests.integration.partition_rules.Model` over what pyiceberg's ``inspect.files`` says each snapshot
changed.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.transforms import HourTransform, IdentityTransform
from pyiceberg.types import DateType, LongType, NestedField, TimestamptzType

from lakehook.container import Container
from lakehook.domain.partitions import parse_partition_key
from tests.hypothesis_profiles import examples
from tests.integration.partition_rules import Model, Rig, by_partition, fresh_rig
from tests.integration.test_iceberg_source import register
from tests.integration.test_partitions_iceberg import touched
from tests.lakehouse import iceberg_rewrite

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "ts", TimestamptzType(), required=False),
    NestedField(3, "dt", DateType(), required=False),
)
ARROW = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("dt", pa.date32())])
BY_DAY = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="dt"))
BY_HOUR = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=HourTransform(), name="ts_hour"))
START = datetime(2026, 12, 1, tzinfo=UTC)
ORDERS, CLICKS = "iceberg://lake/ods/orders", "iceberg://lake/ods/clicks"
MEMBERS = [
    {"assetKey": ORDERS, "partition": {}},
    {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "ts_hour", "grain": "day"}}}},
]


def day(n: int) -> str:
    return (START + timedelta(days=n)).date().isoformat()


def rows(days: list[int], start: int, hour: int = 3) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"id": start + i, "ts": START + timedelta(days=d, hours=hour), "dt": (START + timedelta(d)).date()}
            for i, d in enumerate(days)
        ],
        schema=ARROW,
    )


class Lake:
    """The two tables, their assets, and the snapshots each library call committed."""

    def __init__(self, rig: Rig, root: Path) -> None:
        properties = {"type": "sql", "uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}/warehouse"}
        writer = load_catalog("lake", **properties)
        writer.create_namespace("ods")
        self.root, self.rig = root, rig
        self.orders = writer.create_table("ods.orders", schema=SCHEMA, partition_spec=BY_DAY)
        self.clicks = writer.create_table("ods.clicks", schema=SCHEMA, partition_spec=BY_HOUR)
        self.assets = {ORDERS: register(properties, "ods.orders"), CLICKS: register(properties, "ods.clicks")}
        rig.poll(*self.assets.values())  # tables without snapshots: every later snapshot is read
        self.files = 0

    def append(self, *days: int) -> None:
        self.orders.append(rows(list(days), 100 * self.files))
        self.files += 1

    def overwrite(self, d: int) -> None:
        """Replace day ``d``'s orders with one new row (pyiceberg: a delete and an append, one snapshot each)."""
        self.orders.overwrite(rows([d], 100 * self.files), overwrite_filter=EqualTo("dt", day(d)))
        self.files += 1

    def click(self, d: int, hour: int) -> None:
        """One file of clicks in one hour, added as a writer that wrote it itself would (``add_files``)."""
        file = self.root / f"clicks-{self.files}.parquet"
        pq.write_table(rows([d], 100 * self.files, hour), file)
        self.clicks.add_files([str(file)])
        self.files += 1

    def poll(self) -> None:
        self.rig.poll(*self.assets.values())
        self.rig.settle()

    def newest(self, table: Any) -> int:
        table.refresh()
        return int(table.current_snapshot().snapshot_id)


@pytest.fixture
def lake(container: Container, ddb_client: Any, tmp_path: Path) -> Lake:
    return Lake(Rig(container, ddb_client), tmp_path)


def test_each_day_runs_once_both_tables_touched_it_an_overwrite_reruns_that_day_and_a_rewrite_nothing(
    lake: Lake,
) -> None:
    rig = lake.rig
    rig.put("daily", MEMBERS)
    lake.append(0, 1)  # orders: 12-01 and 12-02
    lake.click(0, 3)  # clicks: 12-01 03h
    lake.poll()
    first_orders, first_clicks = lake.newest(lake.orders), lake.newest(lake.clicks)
    assert rig.runs("daily") == [(f"dt={day(0)}", {ORDERS: first_orders, CLICKS: first_clicks})]
    (waiting,) = [p for p in rig.explain("daily")["groups"][0]["partitions"] if p["partition"] == f"dt={day(1)}"]
    assert waiting["status"] == "WAITING_FOR_PARTITION" and waiting["reason"].startswith(
        f"dt={day(1)}: waiting for {CLICKS}"
    )

    lake.click(1, 22)  # clicks: 12-02 22h — 12-02 has both now
    lake.poll()
    second_clicks = lake.newest(lake.clicks)
    assert rig.runs("daily")[1:] == [(f"dt={day(1)}", {ORDERS: first_orders, CLICKS: second_clicks})]

    lake.overwrite(0)  # orders replaces 12-01: only 12-01 runs again, with the new orders snapshot
    lake.poll()
    overwritten = lake.newest(lake.orders)
    assert rig.runs("daily")[2:] == [(f"dt={day(0)}", {ORDERS: overwritten, CLICKS: first_clicks})]

    iceberg_rewrite(lake.orders)  # a compaction of both days (operation replace): no data changed, nothing runs
    lake.poll()
    assert lake.orders.current_snapshot().summary.operation is Operation.REPLACE
    assert len(rig.runs("daily")) == 3

    lake.click(1, 5)  # clicks touches 12-02 again: 12-02 runs with the orders it ran with (the rewrite is no data)
    lake.poll()
    assert rig.runs("daily")[3:] == [(f"dt={day(1)}", {ORDERS: first_orders, CLICKS: lake.newest(lake.clicks)})]


def group_keys(asset_key: str, key: str) -> set[str]:
    """A table's partition key as the group's ``dt``: orders' own, clicks' hour cut to its day."""
    fields = dict(parse_partition_key(key))
    value = fields["dt"] if asset_key == ORDERS else fields["ts_hour"]
    assert value is not None
    return {f"dt={value[:10]}"}


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.integers(0, 2), min_size=1, max_size=3)),
        st.tuples(st.just("overwrite"), st.integers(0, 2)),
        st.tuples(st.just("click"), st.tuples(st.integers(0, 2), st.integers(0, 23))),
        st.tuples(st.just("rewrite"), st.none()),
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.slow
@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations, st.sampled_from(["ANY_UPDATED", "ALL_UPDATED"]))
def test_generated_commits_run_each_day_as_the_model_over_pyiceberg_s_own_files_says(
    ops: list[tuple[str, Any]], mode: str
) -> None:
    with fresh_rig() as rig, tempfile.TemporaryDirectory() as scratch:
        lake = Lake(rig, Path(scratch))
        rig.put("daily", MEMBERS, mode=mode)
        model = Model((ORDERS, CLICKS), mode)
        seen = {ORDERS: 0, CLICKS: 0}  # how many snapshots of each the model has been told of
        # a start that leaves one day ready, one run and one waiting, so that every operation can matter
        for kind, arg in [("append", [0, 1, 2]), ("click", (0, 3)), ("click", (1, 4)), *ops]:
            if kind == "append":
                lake.append(*arg)
            elif kind == "overwrite":
                lake.overwrite(arg)
            elif kind == "click":
                lake.click(*arg)
            elif lake.orders.current_snapshot() is not None:
                iceberg_rewrite(lake.orders)
            lake.poll()
            for key, table in ((ORDERS, lake.orders), (CLICKS, lake.clicks)):
                table.refresh()
                for snapshot in sorted(table.snapshots(), key=lambda s: s.sequence_number)[seen[key] :]:
                    keys = touched(table, snapshot.snapshot_id)
                    model.commit(
                        key,
                        snapshot.sequence_number,
                        snapshot.snapshot_id,
                        {g for k in keys for g in group_keys(key, k)},
                        data=snapshot.summary.operation is not Operation.REPLACE,
                    )
                    seen[key] += 1
            model.settle()
            assert by_partition(rig.runs("daily")) == by_partition(model.runs), (kind, arg)
