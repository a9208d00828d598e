"""A rule per day over real Paimon tables (pypaimon, a local filesystem warehouse), polled into DynamoDB (moto), its
stream through the resolver's FilterCriteria.

``ods.orders`` and ``ods.payments`` are partitioned by ``dt`` (a string, as Paimon writes a string partition's
directory) and take appends, overwrites of one partition and a compaction (a ``COMPACT`` snapshot through pypaimon's
own commit path); ``dim.shops`` is not partitioned. Each day runs once orders and payments touched it, pinning the
newest commit of each that did and the newest of shops; an overwrite of one day runs that day only; a compaction,
or a commit of shops alone, runs nothing. The generated test compares every run with
:class:`~tests.integration.partition_rules.Model` over the files pypaimon's own scan plans per snapshot.
"""

from __future__ import annotations

import tempfile
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.container import Container
from tests.hypothesis_profiles import examples
from tests.integration.partition_rules import Model, Rig, by_partition, fresh_rig
from tests.integration.test_paimon_source import register
from tests.integration.test_partitions_paimon import overwrite, touched
from tests.lakehouse import create_paimon_table, paimon_commit, paimon_compact_commit, rows

pytestmark = pytest.mark.integration

ARROW = pa.schema([("id", pa.int64()), ("dt", pa.string())])
START = date(2026, 12, 1)
ORDERS, PAYMENTS, SHOPS = "paimon://lake/ods/orders", "paimon://lake/ods/payments", "paimon://lake/dim/shops"
MEMBERS = [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}]


def day(n: int) -> str:
    return (START + timedelta(n)).isoformat()


class Lake:
    """The tables, their assets and pollers."""

    def __init__(self, rig: Rig, root: Path) -> None:
        from pypaimon import CatalogFactory, Schema

        self.warehouse = {"warehouse": f"file://{root}/warehouse"}
        catalog = CatalogFactory.create(self.warehouse)
        catalog.create_database("ods", True)
        self.tables: dict[str, Any] = {}
        for key, name in ((ORDERS, "ods.orders"), (PAYMENTS, "ods.payments")):
            catalog.create_table(name, Schema.from_pyarrow_schema(ARROW, partition_keys=["dt"]), False)
            self.tables[key] = catalog.get_table(name)
        self.tables[SHOPS] = create_paimon_table(self.warehouse, "dim.shops")
        self.assets = {key: register(self.warehouse, name) for key, name in self.names().items()}
        self.rig = rig
        rig.poll(*self.assets.values())  # tables without snapshots: every later snapshot is read
        self.ids = 0

    @staticmethod
    def names() -> dict[str, str]:
        return {ORDERS: "ods.orders", PAYMENTS: "ods.payments", SHOPS: "dim.shops"}

    def frame(self, days: list[int]) -> pa.Table:
        self.ids += len(days)
        return pa.Table.from_pylist([{"id": self.ids + i, "dt": day(d)} for i, d in enumerate(days)], schema=ARROW)

    def append(self, key: str, *days: int) -> int:
        paimon_commit(self.tables[key], self.frame(list(days)))
        return self.poll(key)

    def overwrite(self, key: str, d: int) -> int:
        """Replace day ``d`` of the table with one new row: an OVERWRITE snapshot of that partition."""
        overwrite(self.tables[key], self.frame([d]), {"dt": day(d)})
        return self.poll(key)

    def compact(self, key: str) -> int:
        paimon_compact_commit(self.tables[key])
        return self.poll(key)

    def shops(self) -> int:
        paimon_commit(self.tables[SHOPS], rows(self.ids))
        self.ids += 1
        return self.poll(SHOPS)

    def poll(self, key: str) -> int:
        """Poll the table and run the resolver over what it wrote; the table's newest snapshot id."""
        self.rig.poll(self.assets[key])
        self.rig.settle()
        snapshot = self.tables[key].snapshot_manager().get_latest_snapshot()
        return int(snapshot.id)


@pytest.fixture
def lake(container: Container, ddb_client: Any, tmp_path: Path) -> Lake:
    return Lake(Rig(container, ddb_client), tmp_path)


def test_each_day_runs_once_both_tables_touched_it_an_overwrite_reruns_that_day_and_a_compaction_nothing(
    lake: Lake,
) -> None:
    rig = lake.rig
    shops = lake.shops()
    rig.put("daily", [*MEMBERS, {"assetKey": SHOPS}])
    orders = lake.append(ORDERS, 0, 1)  # orders: 12-01 and 12-02
    payments = lake.append(PAYMENTS, 0)  # payments: 12-01
    assert rig.runs("daily") == [(f"dt={day(0)}", {ORDERS: orders, PAYMENTS: payments, SHOPS: shops})]
    (waiting,) = [p for p in rig.explain("daily")["groups"][0]["partitions"] if p["partition"] == f"dt={day(1)}"]
    assert waiting["status"] == "WAITING_FOR_PARTITION"
    assert waiting["reason"].startswith(f"dt={day(1)}: waiting for {PAYMENTS}")

    shops = lake.shops()  # the unpartitioned member alone runs no partition
    assert len(rig.runs("daily")) == 1
    late = lake.append(PAYMENTS, 1, 2)  # payments: 12-02 (ready now, with the newest shops) and 12-03
    assert rig.runs("daily")[1:] == [(f"dt={day(1)}", {ORDERS: orders, PAYMENTS: late, SHOPS: shops})]

    replaced = lake.overwrite(ORDERS, 0)  # orders replaces 12-01: only 12-01 runs again
    assert rig.runs("daily")[2:] == [(f"dt={day(0)}", {ORDERS: replaced, PAYMENTS: payments, SHOPS: shops})]

    compacted = lake.compact(PAYMENTS)  # a COMPACT snapshot: no data changed, nothing runs
    assert lake.tables[PAYMENTS].snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    assert compacted == late + 1 and len(rig.runs("daily")) == 3

    newest = lake.append(ORDERS, 2)  # orders touches 12-03, which payments touched before the compaction
    assert rig.runs("daily")[3:] == [(f"dt={day(2)}", {ORDERS: newest, PAYMENTS: late, SHOPS: shops})]


operations = st.lists(
    st.tuples(
        st.sampled_from([ORDERS, PAYMENTS]),
        st.one_of(
            st.tuples(st.just("append"), st.lists(st.integers(0, 2), min_size=1, max_size=3)),
            st.tuples(st.just("overwrite"), st.integers(0, 2)),
            st.tuples(st.just("compact"), st.none()),
        ),
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
def test_generated_commits_run_each_day_as_the_model_over_pypaimon_s_own_scan_says(
    ops: list[tuple[str, tuple[str, Any]]], mode: str
) -> None:
    with fresh_rig() as rig, tempfile.TemporaryDirectory() as scratch:
        lake = Lake(rig, Path(scratch))
        rig.put("daily", MEMBERS, mode=mode)
        model = Model((ORDERS, PAYMENTS), mode)
        start = [(ORDERS, ("append", [0, 1, 2])), (PAYMENTS, ("append", [0])), (PAYMENTS, ("append", [1]))]
        for key, (kind, arg) in [*start, *ops]:  # a start that leaves days run and waiting: every operation matters
            table = lake.tables[key]
            if kind == "append":
                snapshot_id = lake.append(key, *arg)
            elif kind == "overwrite":
                snapshot_id = lake.overwrite(key, arg)
            else:
                snapshot_id = lake.compact(key)
            kind_written = table.snapshot_manager().get_latest_snapshot().commit_kind
            model.commit(key, snapshot_id, snapshot_id, touched(table, snapshot_id), data=kind_written != "COMPACT")
            model.settle()
            assert by_partition(rig.runs("daily")) == by_partition(model.runs), (key, kind, arg)
