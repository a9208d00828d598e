"""A partition key lakehook cannot record is reported, and the table keeps polling (issue 33).

Real tables of each format the tests can write (Iceberg by pyiceberg on a sqlite catalog, Paimon by pypaimon, Delta
by delta-rs), partitioned by three string fields: one commit touches a short partition and one whose key is longer
than ``MAX_PARTITION_KEY_LENGTH`` (each value short enough for a directory name, the key too long together). The
poll records that snapshot with its other partition, counts and names the long key (the event's ``partitions``,
the poll status, the metric), and the next poll reads the next commit. Polled through the container on DynamoDB
(moto), as the poll worker polls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.limits import MAX_PARTITION_KEY_LENGTH
from lakehook.domain.partitions import format_partition_key, partitions_json
from lakehook.usecases.poll import MetricName, PollAssets, PollOutcome
from tests.pollers import Lake, delta_asset, iceberg_asset, paimon_asset

pytestmark = pytest.mark.integration

FIELDS = ("a", "b", "c")
ARROW = pa.schema([("id", pa.int64()), *((name, pa.string()) for name in FIELDS)])
# three values of 200 characters: each directory name (a=<200>) fits a file system's 255 bytes, the key does not fit
# lakehook's limit: 3 * (2 + 200) + 2 = 608 characters
LONG = ("x" * 200, "y" * 200, "z" * 200)
SHORT = ("eu", "1", "one")
LATER = ("us", "2", "two")
LONG_KEY = format_partition_key(list(zip(FIELDS, LONG, strict=True)))


class Metrics:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def add_metric(self, name: str, unit: str, value: float) -> None:
        self.values[name] = self.values.get(name, 0) + value


def data(*rows: tuple[str, str, str], start: int = 0) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": start + i, **dict(zip(FIELDS, row, strict=True))} for i, row in enumerate(rows)], schema=ARROW
    )


def key(row: tuple[str, str, str]) -> str:
    return format_partition_key(list(zip(FIELDS, row, strict=True)))


class IcebergWriter:
    def __init__(self, root: Path) -> None:
        from pyiceberg.catalog import load_catalog
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.schema import Schema
        from pyiceberg.transforms import IdentityTransform
        from pyiceberg.types import LongType, NestedField, StringType

        properties = {"type": "sql", "uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}/warehouse"}
        catalog = load_catalog("lake", **properties)
        catalog.create_namespace("ods")
        schema = Schema(
            NestedField(1, "id", LongType(), required=False),
            *(NestedField(2 + i, name, StringType(), required=False) for i, name in enumerate(FIELDS)),
        )
        spec = PartitionSpec(
            *(
                PartitionField(source_id=2 + i, field_id=1000 + i, transform=IdentityTransform(), name=name)
                for i, name in enumerate(FIELDS)
            )
        )
        self.table = catalog.create_table("ods.orders", schema=schema, partition_spec=spec)
        self.asset = iceberg_asset(properties, "ods.orders")

    def commit(self, frame: pa.Table) -> int:
        self.table.append(frame)
        return int(self.table.current_snapshot().snapshot_id)


class PaimonWriter:
    def __init__(self, root: Path) -> None:
        from pypaimon import CatalogFactory, Schema

        options = {"warehouse": f"file://{root}/warehouse"}
        catalog = CatalogFactory.create(options)
        catalog.create_database("ods", True)
        catalog.create_table("ods.orders", Schema.from_pyarrow_schema(ARROW, partition_keys=list(FIELDS)), False)
        self.table = catalog.get_table("ods.orders")
        self.asset = paimon_asset(options, "ods.orders")
        self.snapshots = 0

    def commit(self, frame: pa.Table) -> int:
        from tests.lakehouse import paimon_commit

        paimon_commit(self.table, frame)
        self.snapshots += 1
        return self.snapshots


class DeltaWriter:
    def __init__(self, root: Path) -> None:
        from deltalake import write_deltalake

        self.location = str(root / "orders")
        write_deltalake(self.location, data(SHORT), partition_by=list(FIELDS))  # version 0
        self.asset = delta_asset(self.location, "ods.orders")
        self.version = 0

    def commit(self, frame: pa.Table) -> int:
        from deltalake import write_deltalake

        write_deltalake(self.location, frame, mode="append", partition_by=list(FIELDS))
        self.version += 1
        return self.version


WRITERS = {"iceberg": IcebergWriter, "paimon": PaimonWriter, "delta": DeltaWriter}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_key_longer_than_the_limit_is_reported_and_the_table_keeps_polling(
    table: Any, tmp_path: Path, fmt: str
) -> None:
    assert len(LONG_KEY) > MAX_PARTITION_KEY_LENGTH
    writer = WRITERS[fmt](tmp_path)
    asset: AssetRegistration = writer.asset
    lake, metrics = Lake(table), Metrics()
    lake.container.asset_registry.put_asset(asset, 1_750_000_000_000)
    poll = PollAssets(lake.poll, lake.statuses, metrics=metrics)
    (first,) = poll([asset])  # the table as it is: nothing of the long key yet
    assert first.outcome is PollOutcome.ADVANCED

    wide = writer.commit(data(SHORT, LONG, start=10))
    (result,) = poll([asset])
    assert result.outcome is PollOutcome.ADVANCED, result.error
    assert result.snapshot_ids[-1] == wide
    (event,) = [e for e in lake.events(asset.asset_key) if e.snapshot_id == wide]
    touched = event.partitions
    assert touched is not None
    # the event: the key it could record, the count of those it could not, and the start of each of those
    assert touched.keys == (key(SHORT),) and touched.count == 1 and not touched.truncated
    assert touched.unrecorded == 1
    (named,) = touched.unrecorded_keys
    assert named.startswith(LONG_KEY[:40]) and f"{len(LONG_KEY)} characters" in named
    # the poll status names it, and keeps it after later polls
    status = lake.statuses.get(asset.asset_key)
    assert status is not None and status.consecutive_failures == 0 and status.last_error is None
    assert any(LONG_KEY[:40] in w and str(wide) in w for w in status.warnings), status.warnings
    answer = lake.container.read_asset_state(asset.asset_key)  # GET /assets/state
    found = answer["pollStatus"]["lastUnrecordedPartitions"]
    assert found["snapshotId"] == wide and found["count"] == 1 and found["keys"] == [named]
    assert answer["latestPartitions"]["unrecorded"] == 1 and answer["latestPartitions"]["unrecordedKeys"] == [named]
    assert metrics.values[MetricName.POLL_PARTITION_KEYS_UNRECORDED] == 1
    # the state's newest data commit is this snapshot, with its recordable partition
    state = lake.state(asset.asset_key)
    assert state.latest_partitions is not None and state.latest_partitions.keys == (key(SHORT),)
    assert state.latest_partitions.unrecorded == 1

    later = writer.commit(data(LATER, start=20))
    (next_poll,) = poll([asset])
    assert next_poll.outcome is PollOutcome.ADVANCED and next_poll.snapshot_ids == (later,)
    (event,) = [e for e in lake.events(asset.asset_key) if e.snapshot_id == later]
    assert event.partitions is not None and event.partitions.keys == (key(LATER),)
    assert event.partitions.unrecorded == 0 and "unrecorded" not in partitions_json(event.partitions)
    status = lake.statuses.get(asset.asset_key)
    assert status is not None and status.last_snapshot_id == later
    answer = lake.container.read_asset_state(asset.asset_key)
    assert answer["pollStatus"]["lastUnrecordedPartitions"]["snapshotId"] == wide  # history, as lastGap is
    assert not answer["pollStatus"].get("warnings")  # the warning was the read's that found it
    assert lake.state(asset.asset_key).latest_snapshot_id == later
    assert metrics.values[MetricName.POLL_PARTITION_KEYS_UNRECORDED] == 1
