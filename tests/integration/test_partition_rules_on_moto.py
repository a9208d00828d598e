"""A rule per day over two real Delta tables (delta-rs writes them, ``partition_by=["dt"]``), polled into DynamoDB
(moto), its stream through the resolver's FilterCriteria: each day runs once both tables touched it, an overwrite
replacing a day runs it again, explain names the day and what it waits for; and what one commit costs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.handlers import handle_stream_batch
from tests.integration.test_resolver_on_moto import Stream, call
from tests.pollers import Lake
from tests.support import RequestCounter

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


class Table:
    """One Delta table of the lake and its poller."""

    def __init__(self, container: Container, root: Path, name: str) -> None:
        self.location = str(root / name)
        self.key = f"delta://lake/ods/{name}"
        self.asset = AssetRegistration.model_validate(
            {"assetKey": self.key, "format": "delta", "source": {"catalog": "lake", "location": self.location}}
        )
        self.poll = Lake(container.table, container=container).poll
        self.rows = 0

    def write(self, *days: str, mode: str = "append", predicate: str | None = None) -> None:
        data = pa.Table.from_pylist([{"id": self.rows + i, "dt": d} for i, d in enumerate(days)], schema=SCHEMA)
        self.rows += len(days)
        write_deltalake(self.location, data, mode=mode, partition_by=["dt"], predicate=predicate)  # type: ignore[arg-type]
        self.poll(self.asset)


def put_daily(app: Any, orders: Table, payments: Table, rule_id: str = "daily") -> None:
    status, body = call(
        app,
        "PUT",
        f"/rules/{rule_id}",
        {
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": orders.key, "partition": {}}, {"assetKey": payments.key, "partition": {}}],
                }
            ],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        },
    )
    assert status == 201, body


def runs(app: Any, rule_id: str = "daily") -> list[tuple[str, list[int]]]:
    status, body = call(app, "GET", "/triggers", query={"ruleId": rule_id})
    assert status == 200, body
    return [(t["partition"], [i["snapshotId"] for i in t["inputs"]]) for t in reversed(body["items"])]


@pytest.fixture
def lake(container: Container, tmp_path: Path) -> tuple[Table, Table]:
    return Table(container, tmp_path, "orders"), Table(container, tmp_path, "payments")


@pytest.fixture
def app(container: Container) -> Any:
    from lakehook.api.app import build_app

    return build_app()


def test_each_day_runs_once_both_tables_touched_it_and_an_overwrite_runs_it_again(
    app: Any, container: Container, ddb_client: Any, lake: tuple[Table, Table]
) -> None:
    orders, payments = lake
    orders.write("2026-11-30")  # version 0 creates the table; the poller's first look starts here
    payments.write("2026-12-02")
    put_daily(app, orders, payments)  # LATEST: the newest commits' days become facts (12-02 of payments)
    stream = Stream(ddb_client)
    stream.records()
    orders.write("2026-12-01", "2026-12-02")  # version 1
    payments.write("2026-12-01")  # version 1
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert sorted(runs(app)) == [("dt=2026-12-01", [1, 1]), ("dt=2026-12-02", [1, 0])]
    orders.write("2026-12-03")  # version 2
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    status, explained = call(app, "GET", "/rules/daily/explain")
    assert status == 200, explained
    lines = {p["partition"]: p for p in explained["groups"][0]["partitions"]}
    assert lines["dt=2026-12-03"]["status"] == "WAITING_FOR_PARTITION"
    assert lines["dt=2026-12-03"]["reason"].startswith(f"dt=2026-12-03: waiting for {payments.key}")
    assert explained["groups"][0]["pendingPartitions"] == 2  # 12-03, and 11-30 that orders' version 0 touched

    # payments replaces 2026-12-01 (replaceWhere) and writes 2026-12-02; orders overwrites 2026-12-01 too
    payments.write("2026-12-01", mode="overwrite", predicate="dt = '2026-12-01'")  # version 2
    payments.write("2026-12-03")  # version 3
    orders.write("2026-12-01", mode="overwrite", predicate="dt = '2026-12-01'")  # version 3
    batch = stream.batch()
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert runs(app)[2:] == [("dt=2026-12-03", [2, 3]), ("dt=2026-12-01", [3, 2])]

    # the same records again (a redelivered batch) run nothing twice
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert len(runs(app)) == 4


@pytest.mark.parametrize("touched", [1, 25])
def test_what_one_commit_touching_n_partitions_costs(
    app: Any,
    container: Container,
    ddb_client: Any,
    counter: RequestCounter,
    lake: tuple[Table, Table],
    touched: int,
) -> None:
    """The request counts docs/partitions.md states: one commit of orders touching N days, which payments touched
    before, with one partitioned rule. (N stays small: moto copies the whole table for every transaction.)"""
    orders, payments = lake
    days = [f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}" for i in range(touched)]
    orders.write("2020-01-01")
    payments.write("2019-12-31")  # no day both touched: nothing runs when the rule is written
    put_daily(app, orders, payments)
    stream = Stream(ddb_client)
    stream.records()
    payments.write(*days)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    orders.write(*days)
    batch = stream.batch()
    with counter.measure() as calls:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert len(container.trigger_store.list_for_rule("daily", limit=1000).items) == touched
    pages = math.ceil(2 * touched / 100)  # the facts of both members, 100 keys per BatchGetItem
    cursors = math.ceil(touched / 100)
    assert dict(calls) == {
        "Query": 2,  # the asset's rules (reverse index), the group's pending partitions
        "BatchGetItem": 1 + pages + cursors,  # states and cursors, the facts, the partitions' cursors
        "UpdateItem": touched,  # one conditional write per new fact
        "TransactWriteItems": touched,  # one claim per partition that runs
        "DeleteItem": touched,  # the days payments left pending, cleared under the marks they were read with
    }
