"""The writer helpers on real tables: the event a commit produces is the one the poller would record."""

from __future__ import annotations

from pathlib import Path

from lakehook.adapters.lakehouse import iceberg as iceberg_adapter
from lakehook.adapters.lakehouse import paimon as paimon_adapter
from lakehook.client import event_id, snapshot_event_from_iceberg, snapshot_event_from_paimon
from lakehook.domain.events import AssetEvent
from tests.lakehouse import create_iceberg_table, create_paimon_table, paimon_commit, rows


def test_iceberg_commit_event_carries_the_sequence_number(tmp_path: Path) -> None:
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("glue", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w")
    table = create_iceberg_table(catalog, "ods_db.orders")
    table.append(rows(1, 2))
    first = table.current_snapshot()
    table.append(rows(3))

    event = snapshot_event_from_iceberg(table)
    latest = table.current_snapshot()
    assert event["assetKey"] == "iceberg://glue/ods_db/orders"
    assert event["snapshotId"] == latest.snapshot_id and event["sequenceNumber"] == 2
    assert event["parentSnapshotId"] == first.snapshot_id
    assert event["totalRecordCount"] == 3 and event["commitKind"] == "APPEND"
    # the server accepts it as is, and the poller's reading of the snapshot agrees
    parsed = AssetEvent.model_validate(event)
    assert parsed.snapshot_order == 2 and parsed.event_id == event_id(event)
    polled = iceberg_adapter.snapshot_info(latest)
    assert (polled.sequence_number, polled.schema_id, polled.commit_time) == (2, event["schemaId"], event["commitTime"])

    older = snapshot_event_from_iceberg(table, first.snapshot_id, catalog="lake")
    assert older["sequenceNumber"] == 1 and older["assetKey"] == "iceberg://lake/ods_db/orders"


def test_paimon_commit_event_is_the_latest_snapshot(tmp_path: Path) -> None:
    table = create_paimon_table({"warehouse": str(tmp_path / "warehouse")}, "ods_db.payments")
    paimon_commit(table, rows(1))
    paimon_commit(table, rows(2, 3))

    event = snapshot_event_from_paimon(table)
    assert event["assetKey"] == "paimon://lake/ods_db/payments"
    assert event["snapshotId"] == 2 and event["parentSnapshotId"] == 1
    assert event["totalRecordCount"] == 3 and event["deltaRecordCount"] == 2
    assert "sequenceNumber" not in event
    polled = paimon_adapter.snapshot_info(table.snapshot_manager().get_latest_snapshot())
    assert (polled.commit_time, polled.commit_kind, polled.schema_id) == (
        event["commitTime"],
        event["commitKind"],
        event["schemaId"],
    )
    assert AssetEvent.model_validate(event).event_id == event_id(event)


def test_iceberg_commit_event_counts_rows_as_the_poller_does(tmp_path: Path) -> None:
    """A delete's event carries the rows it removed (not the rows of the rewritten file), and a commit that
    matched nothing says it changed no data: the same reading as the poller's, so push and poll agree."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("lake", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w")
    table = create_iceberg_table(catalog, "ods_db.orders")
    table.append(rows(1, 2, 3))
    table.delete("id = 2")  # copy-on-write: the 3-row file is replaced by a 2-row one
    deleted = table.current_snapshot()
    assert deleted.summary is not None and deleted.summary["deleted-records"] == "3"
    event = snapshot_event_from_iceberg(table)
    assert (event["totalRecordCount"], event["deltaRecordCount"]) == (2, -1) and "dataChanged" not in event
    assert table.scan().to_arrow().num_rows == 2

    table.overwrite(rows(9).slice(0, 0), overwrite_filter="id = 99")  # matches nothing; pyiceberg still commits
    noop = table.current_snapshot()
    assert noop.snapshot_id != deleted.snapshot_id and noop.parent_snapshot_id == deleted.snapshot_id
    event = snapshot_event_from_iceberg(table)
    assert (event["totalRecordCount"], event["deltaRecordCount"], event["dataChanged"]) == (2, 0, False)
    parsed = AssetEvent.model_validate(event)
    assert parsed.data_changed is False
    for snapshot in (deleted, noop):
        polled = iceberg_adapter.snapshot_info(snapshot)
        pushed = snapshot_event_from_iceberg(table, snapshot.snapshot_id)
        assert (polled.total_record_count, polled.delta_record_count) == (
            pushed["totalRecordCount"],
            pushed["deltaRecordCount"],
        )
        assert polled.data_changed is pushed.get("dataChanged", True)
