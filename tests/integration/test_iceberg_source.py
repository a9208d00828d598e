"""Polling real Iceberg tables (pyiceberg commits; SQL catalog on sqlite, Glue + S3 on a moto server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from pyiceberg.catalog import Catalog, load_catalog

from lakehook.client.push import snapshot_event_from_iceberg
from lakehook.domain.events import AssetEvent, EventResult, EventType, IngestStatus, SourceType
from lakehook.usecases.poll import PollOutcome
from tests.lakehouse import (
    CountingFileIO,
    CountingMotoServer,
    SqlStatements,
    create_iceberg_table,
    rows,
    service_total,
)
from tests.pollers import Lake, lake_with_keys
from tests.pollers import iceberg_asset as register

pytestmark = pytest.mark.integration


def commit_ids(table: Any) -> list[int]:
    """The main branch's snapshots in commit order (ancestry), oldest first."""
    table.refresh()
    chain, current = [], table.metadata.current_snapshot_id
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    while current in by_id:
        chain.append(current)
        current = by_id[current].parent_snapshot_id
    return chain[::-1]


def push(lake: Lake, asset_key: str, table: Any) -> EventResult:
    """What a writer job pushes after committing: the event the writer client builds for the new snapshot."""
    event = AssetEvent.model_validate(snapshot_event_from_iceberg(table, asset_key=asset_key))
    return lake.ingest.ingest(event, SourceType.PUSH)


@pytest.fixture
def sql_properties(tmp_path: Path) -> dict[str, str]:
    return {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/warehouse",
        "py-io-impl": "tests.lakehouse.CountingFileIO",
    }


@pytest.fixture
def writer(sql_properties: dict[str, str]) -> Catalog:
    """The writing side: the same catalog, as a Spark or Flink job would open it."""
    return load_catalog("lake", **sql_properties)


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


# --- a SQL catalog on sqlite ------------------------------------------------------------------------


def test_new_snapshots_become_events_in_commit_order(
    sql_properties: dict[str, str], writer: Catalog, lake: Lake
) -> None:
    orders = create_iceberg_table(writer, "ods.orders")
    asset = register(sql_properties, "ods.orders")
    assert lake.poll(asset).results == ()  # a table without snapshots
    orders.append(rows(1, 2))
    orders.append(rows(3))
    orders.delete("id = 1")
    result = lake.poll(asset)
    assert list(result.snapshot_ids) == commit_ids(orders)
    events = {e.snapshot_id: e for e in lake.events(asset.asset_key)}
    first, second, third = (events[sid] for sid in commit_ids(orders))
    assert (first.parent_snapshot_id, first.sequence_number, first.commit_kind) == (None, 1, "APPEND")
    assert (second.parent_snapshot_id, second.sequence_number) == (first.snapshot_id, 2)
    assert (second.total_record_count, second.delta_record_count) == (3, 1)
    assert third.commit_kind in {"DELETE", "OVERWRITE"} and third.total_record_count == 2
    assert third.commit_time == orders.current_snapshot().timestamp_ms
    assert {e.schema_id for e in events.values()} == {0} and {e.schema_changed for e in events.values()} == {False}
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_unchanged_costs_one_catalog_row_and_no_metadata_read(
    sql_properties: dict[str, str], writer: Catalog, lake: Lake
) -> None:
    orders = create_iceberg_table(writer, "ods.orders")
    asset = register(sql_properties, "ods.orders")
    orders.append(rows(1))
    lake.poll(asset)
    counter = SqlStatements()
    CountingFileIO.reset()
    with counter.listening() as statements:
        assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert statements == ["SELECT"] and CountingFileIO.metadata_reads() == 0
    orders.append(rows(2))
    CountingFileIO.reset()
    with counter.listening() as statements:
        assert len(lake.poll(asset).snapshot_ids) == 1
    assert statements == ["SELECT"] and CountingFileIO.metadata_reads() == 1
    assert sum(CountingFileIO.reads.values()) == 1  # nothing but that metadata.json


def test_tags_and_branches_become_tag_created(sql_properties: dict[str, str], writer: Catalog, lake: Lake) -> None:
    orders = create_iceberg_table(writer, "ods.orders")
    asset = register(sql_properties, "ods.orders")
    orders.append(rows(1))
    orders.append(rows(2))
    lake.poll(asset)
    first, second = commit_ids(orders)
    orders.manage_snapshots().create_tag(first, "eod-2025-06-01").create_branch(second, "audit").commit()
    result = lake.poll(asset)  # the refs changed the metadata location: the pointer moved
    tags = {e.tag: e.snapshot_id for e in lake.events(asset.asset_key, EventType.TAG_CREATED)}
    assert tags == {"eod-2025-06-01": first, "branch:audit": second}
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED] * 2
    orders.append(rows(3))
    assert [r.status for r in lake.poll(asset).results] == [IngestStatus.ACCEPTED]  # tags are not re-sent
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.tags == {"eod-2025-06-01", "branch:audit"}


def test_an_unreachable_catalog_fails_its_asset_only(
    sql_properties: dict[str, str], writer: Catalog, lake: Lake, tmp_path: Path
) -> None:
    """Iceberg's own breakage beside tests/integration/test_pollers.py's (a missing table, corrupt metadata): a
    catalog that cannot be reached is a SourceAccessError with a backoff, and the table beside it advances."""
    healthy = create_iceberg_table(writer, "ods.orders")
    healthy.append(rows(1))
    down = {**sql_properties, "uri": f"sqlite:///{tmp_path}/no/such/dir/catalog.db"}
    assets = [register(down, "ods.orders", key_catalog="down"), register(sql_properties, "ods.orders")]
    results = lake.poll_all(assets)
    assert [(r.outcome, r.error_kind) for r in results] == [
        (PollOutcome.FAILED, "SourceAccessError"),
        (PollOutcome.ADVANCED, None),
    ]
    status = lake.statuses.get(assets[0].asset_key)
    assert status is not None and status.consecutive_failures == 1 and status.next_attempt_at is not None
    assert lake.snapshot_ids(assets[-1].asset_key) == {healthy.current_snapshot().snapshot_id}


def test_state_follows_commit_order_even_when_snapshot_ids_decrease(
    sql_properties: dict[str, str], writer: Catalog, lake: Lake
) -> None:
    orders = create_iceberg_table(writer, "ods.orders")
    asset = register(sql_properties, "ods.orders")
    lake.poll(asset)
    orders.append(rows(0))
    for i in range(20):  # commit until a newer snapshot has a smaller id than an older one
        orders.append(rows(i))
        ids = commit_ids(orders)
        if ids[-1] < max(ids[:-1]):
            break
    lake.poll(asset)
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == orders.current_snapshot().snapshot_id


# --- Glue and S3 on a moto server -------------------------------------------------------------------


@pytest.fixture
def glue(server: CountingMotoServer, aws: None, request: pytest.FixtureRequest) -> dict[str, str]:
    """Plain properties for the writer; the poller's registration holds references instead."""
    bucket = f"iceberg-{request.node.name.lower().replace('_', '-')[:40]}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return {
        "type": "glue",
        "glue.endpoint": server.endpoint,
        "glue.region": "us-east-1",
        "glue.access-key-id": "testing",
        "glue.secret-access-key": "testing",
        "s3.endpoint": server.endpoint,
        "s3.region": "us-east-1",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
        "warehouse": f"s3://{bucket}/iceberg",
    }


@pytest.fixture
def glue_lake(table: Any) -> Lake:
    return lake_with_keys(table, "lakehook/iceberg")


def by_reference(properties: dict[str, str]) -> dict[str, str]:
    refs = {"id": "secretsmanager:lakehook/iceberg#id", "secret": "secretsmanager:lakehook/iceberg#secret"}
    return {
        **properties,
        "glue.access-key-id": refs["id"],
        "glue.secret-access-key": refs["secret"],
        "s3.access-key-id": refs["id"],
        "s3.secret-access-key": refs["secret"],
    }


def test_glue_unchanged_costs_one_get_table_and_no_s3_read(
    server: CountingMotoServer, glue: dict[str, str], glue_lake: Lake
) -> None:
    writer = load_catalog("glue", **glue)
    orders = create_iceberg_table(writer, "ods.orders")
    asset = register(by_reference(glue), "ods.orders", catalog="glue")
    orders.append(rows(1))
    glue_lake.poll(asset)

    with server.measure() as unchanged:
        assert glue_lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(unchanged) == {("glue", "GetTable"): 1}

    orders.append(rows(2))
    server.reset()
    with server.measure() as changed:
        result = glue_lake.poll(asset)
    assert result.snapshot_ids == (orders.current_snapshot().snapshot_id,)
    assert changed[("glue", "GetTable")] == 1 and service_total(changed, "glue") == 1
    metadata_gets = [p for p in server.paths if p.startswith("GetObject ") and p.endswith(".metadata.json")]
    assert len(metadata_gets) == 1 and server.paths[metadata_gets[0]] == 1
    assert service_total(changed, "s3") == 2  # that one object: pyarrow's HEAD, then the GET


def test_glue_push_and_poll_are_one_event_and_missing_or_foreign_tables_are_reported(
    server: CountingMotoServer, glue: dict[str, str], glue_lake: Lake
) -> None:
    writer = load_catalog("glue", **glue)
    orders = create_iceberg_table(writer, "ods.orders")
    orders.append(rows(1))
    boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1").create_table(
        DatabaseName="ods", TableInput={"Name": "hive_table", "Parameters": {"table_type": "HIVE"}}
    )
    asset, missing, foreign = (
        register(by_reference(glue), n, catalog="glue") for n in ("ods.orders", "ods.nowhere", "ods.hive_table")
    )
    push(glue_lake, asset.asset_key, orders)
    results = glue_lake.poll_all([missing, foreign, asset])
    assert [r.error_kind for r in results] == ["TableNotFoundError", "TableNotFoundError", None]
    assert [r.status for r in results[2].results] == [IngestStatus.DUPLICATE]
    assert glue_lake.snapshot_ids(asset.asset_key) == {orders.current_snapshot().snapshot_id}
