"""The demo's lakehouse on the local moto server: Paimon tables in an S3 warehouse, Iceberg tables in Glue,
a Delta table in the same bucket.

Real tables, written and read with pypaimon, pyiceberg and delta-rs (``deltalake``). Readers travel to the
snapshot a trigger pinned, never to "latest": that is what makes a run re-readable from its manifest.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

import boto3
import pyarrow as pa

REGION = "us-east-1"
WAREHOUSE_BUCKET = "lakehook-demo-lake"
CREDENTIALS_SECRET = "lakehook/lakehook-local/demo-lake"  # what registrations reference instead of keys
KEY_ID, KEY_SECRET = "local", "local"

ORDERS_SCHEMA = pa.schema([("order_id", pa.int64()), ("order_date", pa.string()), ("amount_cents", pa.int64())])
PAYMENTS_SCHEMA = pa.schema([("order_id", pa.int64()), ("paid_cents", pa.int64())])
EVENTS_SCHEMA = pa.schema(
    [("order_id", pa.int64()), ("order_date", pa.string()), ("event", pa.string()), ("amount_cents", pa.int64())]
)
DAILY_SCHEMA = pa.schema(
    [("order_date", pa.string()), ("week", pa.string()), ("gmv_cents", pa.int64()), ("orders", pa.int64())]
)
CALENDAR_SCHEMA = pa.schema([("order_date", pa.string()), ("week", pa.string())])
DASHBOARD_SCHEMA = pa.schema(
    [("order_date", pa.string()), ("gmv", pa.string()), ("orders", pa.int64()), ("source_snapshot", pa.int64())]
)


@dataclass(frozen=True)
class Committed:
    """What a commit produced: the fields a SNAPSHOT_COMMITTED event carries."""

    snapshot_id: int
    schema_id: int
    commit_time: int
    sequence_number: int | None = None
    total_records: int | None = None

    def event(self, asset_key: str) -> dict[str, Any]:
        event: dict[str, Any] = {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": asset_key,
            "snapshotId": self.snapshot_id,
            "schemaId": self.schema_id,
            "commitKind": "APPEND" if self.sequence_number is None else "OVERWRITE",
            "commitTime": self.commit_time,
        }
        if self.sequence_number is not None:
            event["sequenceNumber"] = self.sequence_number
        if self.total_records is not None:
            event["totalRecordCount"] = self.total_records
        return event


class Lake:
    """Both catalogs on one moto endpoint; one lock, since the demo's writers share this process."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.lock = threading.RLock()
        self._paimon: Any = None
        self._iceberg: Any = None

    # --- setup -------------------------------------------------------------------------------

    def create_storage(self) -> None:
        """The warehouse bucket and the secret that registrations reference for its keys."""
        boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION).create_bucket(Bucket=WAREHOUSE_BUCKET)
        boto3.client("secretsmanager", endpoint_url=self.endpoint, region_name=REGION).create_secret(
            Name=CREDENTIALS_SECRET, SecretString=json.dumps({"id": KEY_ID, "secret": KEY_SECRET})
        )

    def paimon_options(self, by_reference: bool = False) -> dict[str, str]:
        key_id, key_secret = (KEY_ID, KEY_SECRET) if not by_reference else _references()
        return {
            "warehouse": f"s3://{WAREHOUSE_BUCKET}/paimon",
            "fs.s3.endpoint": self.endpoint,
            "fs.s3.region": REGION,
            "fs.s3.accessKeyId": key_id,
            "fs.s3.accessKeySecret": key_secret,
            "fs.s3.path-style-access": "true",
        }

    def iceberg_properties(self, by_reference: bool = False) -> dict[str, str]:
        key_id, key_secret = (KEY_ID, KEY_SECRET) if not by_reference else _references()
        return {
            "type": "glue",
            "glue.endpoint": self.endpoint,
            "glue.region": REGION,
            "glue.access-key-id": key_id,
            "glue.secret-access-key": key_secret,
            "s3.endpoint": self.endpoint,
            "s3.region": REGION,
            "s3.access-key-id": key_id,
            "s3.secret-access-key": key_secret,
            "warehouse": f"s3://{WAREHOUSE_BUCKET}/iceberg",
        }

    def delta_location(self, name: str) -> str:
        return f"s3://{WAREHOUSE_BUCKET}/delta/{name.replace('.', '/')}"

    def delta_options(self, by_reference: bool = False) -> dict[str, str]:
        """Storage options as delta-rs names them (and lakehook's Delta reader reads them)."""
        key_id, key_secret = (KEY_ID, KEY_SECRET) if not by_reference else _references()
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": key_id,
            "AWS_SECRET_ACCESS_KEY": key_secret,
            "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",  # one writer: no locking provider needed
        }

    @property
    def paimon(self) -> Any:
        if self._paimon is None:
            from pypaimon import CatalogFactory

            self._paimon = CatalogFactory.create(self.paimon_options())
        return self._paimon

    @property
    def iceberg(self) -> Any:
        if self._iceberg is None:
            from pyiceberg.catalog import load_catalog

            self._iceberg = load_catalog("glue", **self.iceberg_properties())
        return self._iceberg

    def create_paimon_table(self, name: str, schema: pa.Schema) -> None:
        from pypaimon import Schema

        with self.lock:
            self.paimon.create_database(name.split(".")[0], True)
            self.paimon.create_table(name, Schema.from_pyarrow_schema(schema), True)

    def create_iceberg_table(self, name: str, schema: pa.Schema) -> None:
        with self.lock:
            namespace = name.split(".")[0]
            if (namespace,) not in self.iceberg.list_namespaces():
                self.iceberg.create_namespace(namespace)
            self.iceberg.create_table(name, schema=schema)

    # --- Paimon ------------------------------------------------------------------------------

    def paimon_append(self, name: str, rows: list[dict[str, Any]], schema: pa.Schema) -> Committed:
        """One batch commit: one new Paimon snapshot."""
        with self.lock:
            table = self.paimon.get_table(name)
            builder = table.new_batch_write_builder()
            write, commit = builder.new_write(), builder.new_commit()
            try:
                write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
                commit.commit(write.prepare_commit())
            finally:
                write.close()
                commit.close()
            snapshot = self.paimon.get_table(name).snapshot_manager().get_latest_snapshot()
            return Committed(snapshot.id, snapshot.schema_id, snapshot.time_millis, None, snapshot.total_record_count)

    def paimon_read(self, name: str, snapshot_id: int) -> pa.Table:
        """The table as of ``snapshot_id`` (time travel), whatever was committed since."""
        with self.lock:
            table = self.paimon.get_table(name).copy({"scan.snapshot-id": str(snapshot_id)})
            builder = table.new_read_builder()
            splits = builder.new_scan().plan().splits()
            return builder.new_read().to_arrow(splits)

    # --- Iceberg -----------------------------------------------------------------------------

    def iceberg_overwrite(self, name: str, data: pa.Table) -> Committed:
        """Replace the table's content in one commit; answers the snapshot it made."""
        with self.lock:
            table = self.iceberg.load_table(name)
            with warnings.catch_warnings():  # the first overwrite of an empty table has nothing to delete
                warnings.filterwarnings("ignore", "Delete operation did not match any records")
                table.overwrite(data)
            table.refresh()
            snapshot = table.current_snapshot()
            assert snapshot is not None
            return Committed(
                snapshot.snapshot_id,
                snapshot.schema_id or 0,
                snapshot.timestamp_ms,
                snapshot.sequence_number,
                data.num_rows,
            )

    def iceberg_read(self, name: str, snapshot_id: int) -> pa.Table:
        with self.lock:
            return self.iceberg.load_table(name).scan(snapshot_id=snapshot_id).to_arrow()

    # --- Delta -------------------------------------------------------------------------------

    def delta_write(self, name: str, rows: list[dict[str, Any]], schema: pa.Schema) -> Committed:
        """One append: one new Delta version (the first one creates the table)."""
        from deltalake import DeltaTable, write_deltalake

        with self.lock:
            location, options = self.delta_location(name), self.delta_options()
            write_deltalake(location, pa.Table.from_pylist(rows, schema=schema), mode="append", storage_options=options)
            table = DeltaTable(location, storage_options=options)
            return Committed(table.version(), 0, int(time.time() * 1000), None, None)

    def delta_read(self, name: str, version: int) -> pa.Table:
        """The table as of ``version`` (time travel)."""
        from deltalake import DeltaTable

        with self.lock:
            table = DeltaTable(self.delta_location(name), version=version, storage_options=self.delta_options())
            return pa.table(table.to_pyarrow_table())


def _references() -> tuple[str, str]:
    return f"secretsmanager:{CREDENTIALS_SECRET}#id", f"secretsmanager:{CREDENTIALS_SECRET}#secret"
