"""One poller harness for the lakehouse tests: the poll path wired through the container, and real tables of
every format behind one interface.

- :class:`Lake`: the poller as the poll worker builds it (``container.py``'s polling section): the container's
  snapshot sources, watermarks, ingest path and poll statuses on the DynamoDB table (moto); ``poll`` one asset,
  ``poll_all`` as the worker does (statuses kept), ``compensate``; ``events`` / ``snapshot_ids`` / ``state`` read
  what was recorded; ``crashing_after`` is a poller killed after some records; ``with_sources`` swaps the sources.
- :class:`LakeTable`: one registered table of a format, written the way its writers write it: ``commit`` one
  commit (Hudi, which no Python library writes, reveals the next commit of one of Hudi's sample tables),
  ``compact`` one compaction (no data changed), ``maintain`` one more such commit, ``expire`` the oldest history
  as its maintenance does, ``commit_wider`` a commit with a column the table did not have (its schema evolved
  first), ``corrupt`` its newest metadata, and ``committed`` every snapshot id in commit order; ``registration`` is
  the same table under another key, ``missing`` one that does not exist beside it. A format that cannot do one
  says so by ``pytest.skip`` naming what it lacks. :func:`make_table` makes one of a format on a local path;
  ``iceberg_asset`` / ``paimon_asset`` / ``delta_asset`` / ``hudi_asset`` are the registrations.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.container import Container
from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.source_health import Health, source_health
from lakehook.domain.state import AssetState
from lakehook.ports import Recording, SecretStore
from lakehook.ports.lakehouse import SnapshotSources
from lakehook.settings import Settings
from lakehook.usecases.poll import Compensate, CompensateAsset, PollAsset, PollAssets
from tests.fakes.memory import InMemorySecretStore
from tests.lakehouse import (
    create_iceberg_table,
    create_paimon_table,
    iceberg_rewrite,
    paimon_commit,
    paimon_compact_commit,
    rows,
)
from tests.wiring import ingest_events

# --- the poller -----------------------------------------------------------------------------------------------


class Lake:
    """The poll path on the DynamoDB table (moto) and real tables, built through the container.

    ``secrets`` is what the sources resolve credentials from (Secrets Manager on moto for S3 warehouses; by
    default a fake). The sources are the lakehouse factory's with its default URL policy, so a moto server on
    127.0.0.1 may be a warehouse's endpoint (the deployed policy refuses loopback). ``container``: poll into a
    container a test already uses (the API's, the resolver's) instead of one of the lake's own.
    """

    def __init__(
        self,
        table: Any,
        secrets: SecretStore | None = None,
        sources: SnapshotSources | None = None,
        container: Container | None = None,
    ) -> None:
        secrets = secrets or InMemorySecretStore()
        sources = sources or snapshot_sources(secrets)
        self.container = container or Container.of(
            Settings(table_name=table.name, region="us-east-1"), table=table, secret_store=secrets
        )
        self.table = table
        self.store = self.container.asset_store
        self.watermarks = self.container.watermark_store
        self.statuses = self.container.poll_status_store
        self.ingest = self.container.ingest
        self.with_sources(sources)

    def with_sources(self, sources: SnapshotSources) -> None:
        """Poll (and compensate) through ``sources`` from now on; the records and offsets stay."""
        self.sources = sources
        confirm = self.container.confirm_runs
        self.poll = PollAsset(sources, self.watermarks, self.ingest, confirm=confirm)
        self.poll_all = PollAssets(self.poll, self.statuses)
        self.compensate = Compensate(CompensateAsset(sources, self.store, self.ingest, confirm=confirm))

    def crashing_after(self, recorded: int) -> PollAsset:
        """A poller of the same lake killed (RuntimeError) when it would record event ``recorded + 1``."""
        return PollAsset(self.sources, self.watermarks, ingest_events(_DyingStore(self.table, recorded)))

    def events(self, key: str, event_type: EventType = EventType.SNAPSHOT_COMMITTED) -> list[AssetEvent]:
        """The asset's recorded events of one type, by snapshot id (then tag)."""
        page = self.store.list_events(key, limit=500)
        return sorted(
            (r.event for r in page.items if r.event.event_type is event_type),
            key=lambda e: (e.snapshot_id or 0, e.tag or ""),
        )

    def health(self, key: str) -> Health | None:
        """The source health the asset's poll status says (None: never polled)."""
        found = source_health(self.statuses.get(key))
        return found.state if found is not None else None

    def snapshot_ids(self, key: str) -> set[int]:
        return {e.snapshot_id for e in self.events(key) if e.snapshot_id is not None}

    def state(self, key: str) -> AssetState:
        state = self.store.get_state(key)
        assert state is not None, f"no state for {key}"
        return state


def lake_with_keys(table: Any, secret: str) -> Lake:
    """A lake whose sources resolve credentials from Secrets Manager (the test's moto), where ``secret`` holds moto's
    keys as ``{"id", "secret"}``: the registrations name them by reference, as registrations must."""
    import boto3

    from lakehook.adapters.secrets import SecretsManagerSecretStore

    secrets = SecretsManagerSecretStore(boto3.client("secretsmanager", region_name="us-east-1"))
    secrets.put_secret(secret, json.dumps({"id": "testing", "secret": "testing"}))
    return Lake(table, secrets)


class _DyingStore(DynamoDBAssetStore):
    """The asset store of a poller that is killed part way through a batch."""

    def __init__(self, table: Any, survives: int) -> None:
        super().__init__(table)
        self.survives = survives
        self.recorded = 0

    def record_event(self, event: AssetEvent, *args: Any, **kwargs: Any) -> Recording:
        if self.recorded == self.survives:
            raise RuntimeError("poller killed")
        self.recorded += 1
        return super().record_event(event, *args, **kwargs)

    def record_and_advance(self, event: AssetEvent, *args: Any, **kwargs: Any) -> Recording | None:
        """Dies as ``record_event`` does (the record and the advance at once are both or neither)."""
        if self.recorded == self.survives:
            raise RuntimeError("poller killed")
        recording = super().record_and_advance(event, *args, **kwargs)
        self.recorded += recording is not None  # None: record_event comes next, and counts it
        return recording


# --- registrations ----------------------------------------------------------------------------------------------


def iceberg_asset(
    properties: dict[str, str], name: str, key_catalog: str = "lake", catalog: str = "lake"
) -> AssetRegistration:
    return AssetRegistration.model_validate(
        {
            "assetKey": f"iceberg://{key_catalog}/{name.replace('.', '/')}",
            "format": "iceberg",
            "source": {"catalog": catalog, "properties": properties, "table": name},
        }
    )


def paimon_asset(options: dict[str, str], name: str, catalog: str = "lake") -> AssetRegistration:
    return AssetRegistration.model_validate(
        {
            "assetKey": f"paimon://{catalog}/{name.replace('.', '/')}",
            "format": "paimon",
            "source": {"catalog": catalog, "properties": options, "table": name},
        }
    )


def _path_asset(fmt: str, location: str, name: str, options: dict[str, str] | None, catalog: str) -> AssetRegistration:
    return AssetRegistration.model_validate(
        {
            "assetKey": f"{fmt}://{catalog}/{name.replace('.', '/')}",
            "format": fmt,
            "source": {"catalog": catalog, "location": location, "properties": options or {}},
        }
    )


def delta_asset(
    location: str, name: str, options: dict[str, str] | None = None, catalog: str = "lake"
) -> AssetRegistration:
    return _path_asset("delta", location, name, options, catalog)


def hudi_asset(
    location: str, name: str, options: dict[str, str] | None = None, catalog: str = "lake"
) -> AssetRegistration:
    return _path_asset("hudi", location, name, options, catalog)


# --- tables of every format -------------------------------------------------------------------------------------


class LakeTable(ABC):
    """One real, registered table: ``commit`` writes one commit as its writers do; ``committed`` is every
    snapshot id (Iceberg snapshot id, Paimon snapshot, Delta version, Hudi instant) in commit order."""

    asset: AssetRegistration
    name: str
    compaction_kinds: ClassVar[frozenset[str]]  # the commit kinds lakehook records for the format's compactions
    compaction_delta: ClassVar[int | None] = 0  # a compaction's record delta (Hudi's commit metadata has none)
    missing_named: ClassVar[str]  # what a poll of a table that does not exist names in its error
    counts_missed: ClassVar[bool] = True  # whether the format can tell how many expired commits a gap skipped
    expiry_kind: ClassVar[str | None] = None  # the kind of the newest commit after an expiry that commits itself

    @property
    def key(self) -> str:
        return self.asset.asset_key

    @abstractmethod
    def commit(self, *ids: int, properties: dict[str, str] | None = None) -> int:
        """Commit rows ``ids`` (one data commit; ``properties`` in its commit metadata); answer its snapshot id."""

    @abstractmethod
    def committed(self) -> list[int]:
        """Every snapshot of the table, oldest first."""

    @abstractmethod
    def compact(self) -> int:
        """One compaction of the data written so far (the format's own table service; no data changed); answer
        its snapshot id."""

    def maintain(self) -> int:
        """One more maintenance commit that changes no data (another compaction, unless the format says otherwise);
        answer its snapshot id."""
        return self.compact()

    @abstractmethod
    def commit_wider(self, row_id: int, note: str) -> int:
        """Commit one row with a ``note`` column (the schema gains it first, if it has not yet); its snapshot id."""

    @abstractmethod
    def schema_id(self) -> int:
        """The id of the table's current schema, as lakehook records it (what the format's metadata says)."""

    @abstractmethod
    def expire(self, keep: int) -> list[int]:
        """Expire the table's history as its maintenance does, keeping the newest ``keep`` commits (Delta keeps
        the one version its checkpoint stands for); answer the snapshot ids removed. ``committed`` then lists the
        retained ones."""

    @abstractmethod
    def corrupt(self) -> None:
        """Make the newest commit's metadata unreadable (a truncated file, as a crashed writer or a bad copy leaves)."""

    @abstractmethod
    def registration(self, catalog: str, name: str | None = None) -> AssetRegistration:
        """The table (or ``name`` beside it, in the same catalog or warehouse) registered under ``catalog``."""

    def empty_pointer(self) -> str:
        """What a poll of the table before its first commit takes as its pointer (no snapshot: nothing)."""
        return ""

    def missing(self) -> AssetRegistration:
        """A registration of ``ods.missing`` beside the table: a table that does not exist."""
        return self.registration("lake", "ods.missing")

    def push_event(self, key: str | None = None) -> AssetEvent:
        """What the writer pushes after its last commit (to ``key``, the table's own by default)."""
        last = self.committed()[-1]
        return AssetEvent.model_validate(
            {"eventType": "SNAPSHOT_COMMITTED", "assetKey": key or self.key, "snapshotId": last}
        )


def wider_rows(row_id: int, note: str) -> pa.Table:
    """One row of the evolved schema: ``rows``' columns and a ``note``."""
    schema = pa.schema([("id", pa.int64()), ("amount", pa.int64()), ("note", pa.string())])
    return pa.Table.from_pylist([{"id": row_id, "amount": row_id * 10, "note": note}], schema=schema)


class IcebergTable(LakeTable):
    """An Iceberg table in a SQL catalog on sqlite (pyiceberg appends)."""

    compaction_kinds = frozenset({"REPLACE"})
    missing_named = "ods.missing"

    def __init__(self, root: Path, name: str) -> None:
        from pyiceberg.catalog import load_catalog

        self.properties = {
            "type": "sql",
            "uri": f"sqlite:///{root}/catalog.db",
            "warehouse": f"file://{root}/warehouse",
        }
        self.name = name
        self.catalog = load_catalog("lake", **self.properties)
        self.table = create_iceberg_table(self.catalog, name)
        self.asset = iceberg_asset(self.properties, name)

    def registration(self, catalog: str, name: str | None = None) -> AssetRegistration:
        return iceberg_asset(self.properties, name or self.name, key_catalog=catalog)

    def commit(self, *ids: int, properties: dict[str, str] | None = None) -> int:
        self.table.append(rows(*ids), snapshot_properties=properties or {})
        return int(self.table.current_snapshot().snapshot_id)

    def committed(self) -> list[int]:
        self.table.refresh()
        chain, current = [], self.table.metadata.current_snapshot_id
        by_id = {s.snapshot_id: s for s in self.table.snapshots()}
        while current in by_id:  # the main branch's ancestry
            chain.append(current)
            current = by_id[current].parent_snapshot_id
        return chain[::-1]

    def compact(self) -> int:
        """A real rewrite: every data file read and written back as one, operation ``replace``."""
        iceberg_rewrite(self.table)
        self.table = self.catalog.load_table(self.name)
        return int(self.table.current_snapshot().snapshot_id)

    def commit_wider(self, row_id: int, note: str) -> int:
        from pyiceberg.types import StringType

        if "note" not in self.table.schema().column_names:
            with self.table.update_schema() as update:
                update.add_column("note", StringType())
        self.table.append(wider_rows(row_id, note).cast(self.table.schema().as_arrow()))
        return int(self.table.current_snapshot().snapshot_id)

    def schema_id(self) -> int:
        return int(self.table.schema().schema_id)

    def expire(self, keep: int) -> list[int]:
        gone = self.committed()[:-keep]
        self.table.maintenance.expire_snapshots().by_ids(gone).commit()
        return gone

    def empty_pointer(self) -> str:
        """A table without snapshots has metadata all the same: its location is the pointer."""
        return str(self.table.metadata_location)

    def corrupt(self) -> None:
        Path(self.table.metadata_location.removeprefix("file://")).write_text("{not json")

    def push_event(self, key: str | None = None) -> AssetEvent:
        """The event lakehook's writer client builds for the current snapshot (Iceberg orders by sequence)."""
        from lakehook.client.push import snapshot_event_from_iceberg

        return AssetEvent.model_validate(snapshot_event_from_iceberg(self.table, asset_key=key or self.key))


class PaimonTable(LakeTable):
    """A Paimon append table in a file-system warehouse (pypaimon batch commits)."""

    compaction_kinds = frozenset({"COMPACT"})
    missing_named = "ods.missing"

    def __init__(self, root: Path, name: str) -> None:
        self.options = {"warehouse": str(root / "warehouse")}
        self.name = name
        self.table = create_paimon_table(self.options, name)
        self.asset = paimon_asset(self.options, name)
        self.snapshots = 0
        self.earliest = 1

    def registration(self, catalog: str, name: str | None = None) -> AssetRegistration:
        return paimon_asset(self.options, name or self.name, catalog=catalog)

    def commit(self, *ids: int, properties: dict[str, str] | None = None) -> int:
        paimon_commit(self.table, rows(*ids), properties)
        self.snapshots += 1
        return self.snapshots

    def committed(self) -> list[int]:
        return list(range(self.earliest, self.snapshots + 1))

    def _snapshot_dir(self) -> Path:
        database, table = self.name.split(".")
        return Path(self.options["warehouse"], f"{database}.db", table, "snapshot")

    def expire(self, keep: int) -> list[int]:
        """What Paimon's ExpireSnapshots leaves behind (pypaimon 2.1 has none): the expired snapshot files deleted,
        oldest first, and the EARLIEST hint naming the oldest kept."""
        gone = self.committed()[:-keep]
        for snapshot_id in gone:
            (self._snapshot_dir() / f"snapshot-{snapshot_id}").unlink()
        self.earliest = self.snapshots - keep + 1
        (self._snapshot_dir() / "EARLIEST").write_text(str(self.earliest))
        return gone

    def compact(self) -> int:
        """A COMPACT snapshot through pypaimon's commit path (pypaimon 2.1 cannot merge files; see
        tests/lakehouse.paimon_compact_commit)."""
        paimon_compact_commit(self.table)
        self.snapshots += 1
        return self.snapshots

    def commit_wider(self, row_id: int, note: str) -> int:
        from pypaimon import CatalogFactory
        from pypaimon.schema.data_types import AtomicType
        from pypaimon.schema.schema_change import SchemaChange

        catalog = CatalogFactory.create(self.options)
        if "note" not in self.table.field_names:
            catalog.alter_table(self.name, [SchemaChange.add_column("note", AtomicType("STRING"))])
            self.table = catalog.get_table(self.name)
        paimon_commit(self.table, wider_rows(row_id, note))
        self.snapshots += 1
        return self.snapshots

    def schema_id(self) -> int:
        return int(self.table.table_schema.id)

    def corrupt(self) -> None:
        """The newest snapshot file truncated (an unreadable LATEST is no breakage: it is a hint, and the directory
        is listed; see test_paimon_hints.py)."""
        (self._snapshot_dir() / f"snapshot-{self.snapshots}").write_text('{"id": 1, "truncated')


class DeltaLakeTable(LakeTable):
    """A Delta table on a local path (delta-rs appends)."""

    compaction_kinds = frozenset({"OPTIMIZE"})
    missing_named = "missing"
    expiry_kind = "VACUUM END"

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.location = str(root / name)
        self.asset = delta_asset(self.location, name)
        self.versions = 0
        self.earliest = 0
        self.metadata_version = 0  # Delta's schema id: the version whose commit wrote the table's metadata

    def registration(self, catalog: str, name: str | None = None) -> AssetRegistration:
        return delta_asset(str(self.root / (name or self.name)), name or self.name, catalog=catalog)

    def commit(self, *ids: int, properties: dict[str, str] | None = None) -> int:
        from deltalake import CommitProperties, write_deltalake

        committed = CommitProperties(custom_metadata=properties) if properties else None
        write_deltalake(self.location, rows(*ids), mode="append", commit_properties=committed)
        return self._next_version()

    def _next_version(self) -> int:
        self.versions += 1
        return self.versions - 1

    def committed(self) -> list[int]:
        return list(range(self.earliest, self.versions))

    def expire(self, keep: int) -> list[int]:
        """Log retention 0, then an overwrite and a VACUUM (the older files leave the table, then the disk), a
        checkpoint and the log's cleanup: every commit file before the checkpoint goes, so the version it stands
        for is all that is left to read (``keep`` is Delta's to decide: one)."""
        from deltalake import DeltaTable, write_deltalake

        DeltaTable(self.location).alter.set_table_properties({"delta.logRetentionDuration": "interval 0 seconds"})
        write_deltalake(self.location, rows(0), mode="overwrite")
        DeltaTable(self.location).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        table = DeltaTable(self.location)
        table.create_checkpoint()
        table.cleanup_metadata()
        from lakehook.adapters.lakehouse.delta import commit_file

        retained = sorted(p.name for p in Path(self.location, "_delta_log").glob("*.json"))
        assert retained == [commit_file(table.version())], retained  # the checkpoint's version alone is left
        gone = list(range(self.earliest, table.version()))
        self.earliest, self.versions = table.version(), table.version() + 1
        return gone

    def compact(self) -> int:
        """A real OPTIMIZE: the table's files rewritten as one, its actions ``dataChange=false``."""
        from deltalake import DeltaTable

        DeltaTable(self.location).optimize.compact()
        return self._next_version()

    def maintain(self) -> int:
        """A VACUUM (its START and END commits): the files a compaction or an overwrite left behind deleted."""
        from deltalake import DeltaTable

        DeltaTable(self.location).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        self.versions = DeltaTable(self.location).version() + 1
        return self.versions - 1

    def commit_wider(self, row_id: int, note: str) -> int:
        """A write that merges its wider schema into the table's (new metadata in the same commit)."""
        from deltalake import DeltaTable, write_deltalake

        evolves = "note" not in DeltaTable(self.location).schema().to_arrow().names
        write_deltalake(self.location, wider_rows(row_id, note), mode="append", schema_mode="merge")
        version = self._next_version()
        if evolves:
            self.metadata_version = version
        return version

    def schema_id(self) -> int:
        return self.metadata_version

    def corrupt(self) -> None:
        from lakehook.adapters.lakehouse.delta import commit_file

        Path(self.location, "_delta_log", commit_file(self.versions - 1)).write_text('{"commitInfo": {"trunc')


class HudiTable(LakeTable):
    """One of Hudi's sample tables, revealed commit by commit (``commit`` ignores the rows: the commits are
    the ones Hudi wrote; see tests/hudi_tables.py). Its ``compact`` reveals up to the next table service the
    sample's writer ran (a compaction, then a clustering)."""

    compaction_kinds = frozenset({"COMPACT", "CLUSTER"})
    compaction_delta = None
    counts_missed = False  # the archived timeline is not read: how many went is unknown
    missing_named = "hoodie.properties"
    TABLE_SERVICES = (".compaction.requested", ".clustering.requested")

    def __init__(self, root: Path, name: str, sample: str | None = None) -> None:
        from tests.hudi_tables import V9_MOR, StagedHudiTable

        self.root = root
        self.name = name
        self.staged = StagedHudiTable.of(sample or V9_MOR, root)
        self.asset = hudi_asset(self.staged.location, name)
        self.shown: list[int] = []

    def registration(self, catalog: str, name: str | None = None) -> AssetRegistration:
        location = self.staged.location if name is None else str(self.root / name)
        return hudi_asset(location, name or self.name, catalog=catalog)

    def commit(self, *ids: int, properties: dict[str, str] | None = None) -> int:
        assert not properties, "a Hudi sample table's commits are the ones Hudi wrote"
        (instant,) = self.staged.reveal()
        self.shown.append(instant)
        return instant

    def committed(self) -> list[int]:
        return list(self.shown)

    def compact(self) -> int:
        while self.staged.pending:
            upcoming = self.staged.pending[0]
            service = any((self.staged.held / f"{upcoming}{end}").exists() for end in self.TABLE_SERVICES)
            instant = self.commit()
            if service:
                return instant
        raise AssertionError("the sample table has no table service left to reveal")

    def expire(self, keep: int) -> list[int]:
        """Hudi's archiver moves the oldest instants off the active timeline."""
        from tests.hudi_tables import timeline_dir

        gone, self.shown = self.shown[:-keep], self.shown[-keep:]
        for instant in gone:
            for path in timeline_dir(self.staged.root).glob(f"{instant}*"):
                path.unlink()
        return gone

    def commit_wider(self, row_id: int, note: str) -> int:
        pytest.skip("hudi: no Python library writes Hudi tables, and the sample tables' schemas never change")

    def schema_id(self) -> int:
        pytest.skip("hudi: the sample tables' schemas never change")

    def corrupt(self) -> None:
        from tests.hudi_tables import timeline_dir

        newest = sorted(timeline_dir(self.staged.root).glob(f"{self.shown[-1]}_*.*"))[-1]
        newest.write_text('{"partitionToWriteStats": {"trunc')


TABLES: dict[AssetFormat, type[LakeTable]] = {
    AssetFormat.ICEBERG: IcebergTable,
    AssetFormat.PAIMON: PaimonTable,
    AssetFormat.DELTA: DeltaLakeTable,
    AssetFormat.HUDI: HudiTable,
}
FORMATS = tuple(TABLES)


def make_table(fmt: AssetFormat, root: Path, name: str = "ods.orders", unpartitioned: bool = False) -> LakeTable:
    """A new, registered (not yet polled) table of ``fmt`` under ``root``. The Iceberg, Paimon and Delta tables are
    unpartitioned; Hudi's is its v9 MOR sample, partitioned by region (``unpartitioned``: its v8 unpartitioned one)."""
    root.mkdir(parents=True, exist_ok=True)
    if fmt is AssetFormat.HUDI and unpartitioned:
        from tests.hudi_tables import V8_COW

        return HudiTable(root, name, sample=V8_COW)
    return TABLES[fmt](root, name)
