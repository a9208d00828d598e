"""PaimonSnapshotSource: Paimon snapshots through pypaimon's catalog and FileIO (local and S3 warehouses).

Reads the snapshot directory the way Paimon lays it out (``snapshot/LATEST`` hint,
``snapshot/EARLIEST`` hint, ``snapshot/snapshot-<id>`` JSON, ``tag/tag-<name>``), with the
catalog's own FileIO, so any warehouse pypaimon can open works (``fs.s3.endpoint`` etc. for S3).
``LATEST`` and ``EARLIEST`` are hints, read as Paimon's Java ``HintFileUtils`` reads them: ``LATEST``
is the latest id only when ``snapshot-<hint+1>`` does not exist (a writer whose hint write failed
leaves it behind), else, or when it is missing or unreadable, the snapshot directory is listed;
``EARLIEST`` is trusted only when it names a retained snapshot, else the directory is listed. The
pointer is that latest id: the hint read and one read of the next snapshot's file (on S3 a missing
object is one HEAD). New snapshots cost one read each; pypaimon's ``SnapshotManager`` probes
existence before each read, so it is not used on this path.
A filesystem warehouse (the default metastore) needs only pypaimon's FileIO and yields the table
path without I/O; other metastores (jdbc, rest) go through ``CatalogFactory`` and are asked for
the table (one more call per poll, and an import of polars and pandas).
The partitions a snapshot touched (docs/partitions.md) are its delta manifest list's entries: the schema file
(read once per table and schema id while the poller is warm), then the list and its manifests per new snapshot
of a partitioned table; an unpartitioned table reads no manifest and records none.
"""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pypaimon.catalog.catalog_exception import DatabaseNotExistException, TableNotExistException
from pypaimon.common.file_io import FileIO
from pypaimon.common.identifier import Identifier
from pypaimon.common.json_util import JSON
from pypaimon.common.options import Options
from pypaimon.snapshot.snapshot import Snapshot

from lakehook.adapters.lakehouse.catalog_cache import CatalogCache
from lakehook.adapters.lakehouse.credentials import CredentialResolver, ResolvedProperties, properties_fingerprint
from lakehook.domain.assets import AssetSource
from lakehook.domain.confirmation import trigger_key_in
from lakehook.domain.errors import LakehookError
from lakehook.domain.partitions import TouchedPartitions, format_partition_key, unescape_path_name
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap, SnapshotInfo, TagInfo, mark_schema_changes
from lakehook.ports.lakehouse import (
    CorruptMetadataError,
    SnapshotBatch,
    SnapshotSource,
    SourceAccessError,
    TableNotFoundError,
)

PAIMON_DEFAULT_PARTITION = "__DEFAULT_PARTITION__"  # Paimon's partition.default-name
TAG_PREFIX = "tag-"
SNAPSHOT_PREFIX = "snapshot-"
LATEST = "LATEST"
EARLIEST = "EARLIEST"


_KNOWN_SCHEMAS = 256
FILESYSTEM = "filesystem"
DB_SUFFIX = ".db"  # Paimon's warehouse layout: <warehouse>/<database>.db/<table>


@dataclass(frozen=True)
class _Catalog:
    """A filesystem warehouse (its FileIO) or, for other metastores, a pypaimon catalog to ask for tables."""

    key: str
    properties: ResolvedProperties
    warehouse: str | None = None
    file_io: Any = None
    catalog: Any = None

    def table_path(self, database: str, table: str) -> str:
        assert self.warehouse is not None
        return f"{self.warehouse.rstrip('/')}/{database}{DB_SUFFIX}/{table}"


@dataclass(frozen=True)
class _Table:
    """Where a table's files are, the FileIO that reads them, and the snapshot files this poll parsed."""

    name: str
    path: str
    file_io: Any
    parsed: dict[int, Snapshot] = field(default_factory=dict, compare=False)

    @property
    def snapshot_dir(self) -> str:
        return f"{self.path}/snapshot"

    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/{SNAPSHOT_PREFIX}{snapshot_id}"

    @property
    def tag_dir(self) -> str:
        return f"{self.path}/tag"


class PaimonSnapshotSource(SnapshotSource):
    """Reads Paimon snapshots and tags of a table's main branch."""

    def __init__(
        self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0, read_concurrency: int = 8
    ) -> None:
        self._resolver = resolver
        self._catalogs: CatalogCache[_Catalog] = CatalogCache(cache_ttl_seconds)
        self._read_concurrency = read_concurrency
        self._schemas: OrderedDict[tuple[str, int], Any] = OrderedDict()  # TableSchema by (table path, schema id)
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        entry, table = self._table(source)
        try:
            latest = _latest(table)
            if latest is None:
                if not _exists(table, f"{table.path}/schema"):
                    raise TableNotFoundError(f"paimon table {source.table_name} does not exist in {source.catalog!r}")
                return ""  # the table exists and has no snapshot yet
        except SourceAccessError:
            self._catalogs.evict(entry.key)
            raise
        return str(latest)

    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        entry, table = self._table(source)
        try:
            return self._batch(table, cursor, pointer, limit, known_tags)
        except SourceAccessError:
            self._catalogs.evict(entry.key)
            raise

    # --- reading ----------------------------------------------------------------------------

    def _batch(
        self, table: _Table, cursor: SnapshotCursor | None, pointer: str, limit: int, known_tags: frozenset[str]
    ) -> SnapshotBatch:
        latest = int(pointer) if pointer else None
        gap: SnapshotGap | None = None
        complete = True
        snapshots: list[SnapshotInfo] = []
        if latest is not None and cursor is None:
            snapshots = _newest(table, latest, limit)
        elif latest is not None and cursor is not None and cursor.snapshot_id < latest and limit > 0:
            snapshots, gap = self._after(table, cursor.snapshot_id, latest, limit)
            complete = bool(snapshots) and snapshots[-1].snapshot_id >= latest
        snapshots = [self._with_partitions(table, info) for info in snapshots]
        previous = cursor.schema_id if cursor is not None else None
        all_tags = _tag_names(table)
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(snapshots, previous),
            tags=_new_tags(table, all_tags, known_tags),
            tag_names=frozenset(all_tags),
            latest_snapshot_id=latest,
            oldest_retained_snapshot_id=snapshots[0].snapshot_id if gap is not None and snapshots else None,
            gap=gap,
            complete=complete,
        )

    def _after(
        self, table: _Table, last_read: int, latest: int, limit: int
    ) -> tuple[list[SnapshotInfo], SnapshotGap | None]:
        """Up to ``limit`` snapshots after ``last_read`` (to ``latest``), in order, and the gap when the next ones
        expired: then the batch resumes at the oldest retained snapshot."""
        start = last_read + 1
        gap: SnapshotGap | None = None
        first = _snapshot(table, start)
        if first is None:  # expired (or never written): resume at the oldest retained snapshot
            start, first = _oldest_retained(table, start, latest)
            if first is not None and start > last_read + 1:
                gap = SnapshotGap(
                    after_snapshot_id=last_read, resumed_at_snapshot_id=start, missed=start - last_read - 1
                )
        if first is None:
            return [], gap
        snapshots = [first]
        rest = range(start + 1, min(latest, start + limit - 1) + 1)
        for snapshot in self._read_many(table, rest):
            if snapshot is None:  # a hole: expiration is racing this read; the next poll resumes here
                break
            snapshots.append(snapshot)
        return snapshots, gap

    def _with_partitions(self, table: _Table, info: SnapshotInfo) -> SnapshotInfo:
        """The snapshot with the partitions its delta manifests name (none for an unpartitioned table)."""
        snapshot = table.parsed.get(info.snapshot_id)
        if snapshot is None:
            return info
        schema = self._schema(table, snapshot.schema_id)
        if schema is None or not schema.partition_keys:  # unpartitioned: no partitions to name
            return info
        try:
            return info.model_copy(update={"partitions": touched_partitions(table, snapshot, schema)})
        except LakehookError:
            raise
        except FileNotFoundError as exc:  # a manifest expired with its snapshot while this poll read it
            what = f"paimon table {table.name}: a manifest of snapshot {info.snapshot_id}"
            raise CorruptMetadataError(f"{what} is missing") from exc
        except Exception as exc:
            what = f"paimon table {table.name}: the manifests of snapshot {info.snapshot_id}"
            raise SourceAccessError(f"{what} could not be read: {exc}") from exc

    def _schema(self, table: _Table, schema_id: int) -> Any:
        """The table's schema ``schema-<id>`` (pypaimon's ``TableSchema``), remembered per table and id: a schema
        file never changes, so a warm poller reads it once. None when it is gone."""
        key = (table.path, schema_id)
        with self._lock:
            known = self._schemas.get(key)
        if known is not None:
            return known
        from pypaimon.schema.table_schema import TableSchema

        text = _read(table, f"{table.path}/schema/schema-{schema_id}")
        if text is None:
            return None
        try:
            schema = TableSchema.from_json(text)
        except Exception as exc:
            raise CorruptMetadataError(f"paimon table {table.name}: schema-{schema_id} is not a valid schema") from exc
        with self._lock:
            self._schemas[key] = schema
            while len(self._schemas) > _KNOWN_SCHEMAS:
                self._schemas.popitem(last=False)
        return schema

    def _read_many(self, table: _Table, ids: range) -> list[SnapshotInfo | None]:
        """Snapshot files by id, in order; read concurrently (one read each), since each is a round trip."""
        if len(ids) <= 1 or self._read_concurrency <= 1:
            return [_snapshot(table, sid) for sid in ids]
        with ThreadPoolExecutor(max_workers=min(self._read_concurrency, len(ids))) as pool:
            return list(pool.map(lambda sid: _snapshot(table, sid), ids))

    # --- catalogs ---------------------------------------------------------------------------

    def _table(self, source: AssetSource) -> tuple[_Catalog, _Table]:
        key = properties_fingerprint(source.catalog, source.properties)
        entry = self._catalogs.get(key, lambda: self._build(key, source))
        database, name = source.table_name.split(".", 1)
        if entry.file_io is not None:
            return entry, _Table(source.table_name, entry.table_path(database, name), entry.file_io)
        try:
            loaded = entry.catalog.get_table(Identifier.from_string(source.table_name))
        except (TableNotExistException, DatabaseNotExistException) as exc:
            raise TableNotFoundError(f"paimon table {source.table_name} does not exist in {source.catalog!r}") from exc
        except Exception as exc:
            self._catalogs.evict(key)
            message = entry.properties.scrub(f"{type(exc).__name__}: {exc}")
            raise SourceAccessError(f"paimon catalog {source.catalog!r}: {message}") from exc
        return entry, _Table(source.table_name, loaded.table_path, loaded.file_io)

    def _build(self, key: str, source: AssetSource) -> _Catalog:
        """A filesystem warehouse needs only its FileIO (pypaimon's catalog module imports polars and pandas)."""
        resolved = self._resolver.resolve(source.properties)
        options = dict(resolved.values)
        try:
            if options.get("metastore", FILESYSTEM) == FILESYSTEM:
                warehouse = options.get("warehouse")
                if not warehouse:
                    raise ValueError("a filesystem catalog needs the 'warehouse' option")
                return _Catalog(key, resolved, warehouse=warehouse, file_io=FileIO.get(warehouse, Options(options)))
            from pypaimon.catalog.catalog_factory import CatalogFactory

            return _Catalog(key, resolved, catalog=CatalogFactory.create(options))
        except Exception as exc:  # any library error while building: the catalog is unusable
            message = resolved.scrub(f"{type(exc).__name__}: {exc}")
            raise SourceAccessError(f"paimon catalog {source.catalog!r} could not be built: {message}") from exc


# --- file reads (each one storage read) ---------------------------------------------------------


def _read(table: _Table, path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return str(table.file_io.read_file_utf8(path))
    except FileNotFoundError:
        return None
    except LakehookError:
        raise
    except Exception as exc:
        if "not exist" in str(exc).lower() or "nosuchkey" in str(exc).lower():
            return None
        raise SourceAccessError(f"paimon table {table.name}: {path} could not be read: {exc}") from exc


def _exists(table: _Table, path: str) -> bool:
    try:
        return bool(table.file_io.exists(path))
    except Exception as exc:
        raise SourceAccessError(f"paimon table {table.name}: {path} could not be checked: {exc}") from exc


def _snapshot(table: _Table, snapshot_id: int) -> SnapshotInfo | None:
    text = _read(table, table.snapshot_path(snapshot_id))
    if text is None:
        return None
    try:
        parsed = JSON.from_json(text, Snapshot)
        info = snapshot_info(parsed)
        table.parsed[snapshot_id] = parsed
        return info
    except Exception as exc:  # JSON, missing fields, wrong types: the file is not a snapshot
        raise CorruptMetadataError(
            f"paimon table {table.name}: snapshot-{snapshot_id} is not a valid snapshot"
        ) from exc


def _newest(table: _Table, latest: int, limit: int) -> list[SnapshotInfo]:
    """Up to ``limit`` snapshots ending at ``latest``, oldest first (a first poll)."""
    snapshots: list[SnapshotInfo] = []
    snapshot_id = latest
    while snapshot_id >= 1 and len(snapshots) < limit:
        snapshot = _snapshot(table, snapshot_id)
        if snapshot is None:
            break
        snapshots.append(snapshot)
        snapshot_id -= 1
    snapshots.reverse()
    return snapshots


def _hint(table: _Table, name: str) -> int | None:
    """A hint file's snapshot id; None when it is missing, empty or unparsable (Java's ``readHint``)."""
    text = _read(table, f"{table.snapshot_dir}/{name}")
    value = text.strip() if text is not None else ""
    return int(value) if value.isascii() and value.isdigit() else None


def _latest(table: _Table) -> int | None:
    """The latest snapshot id as ``HintFileUtils.findLatest`` finds it; None when there is no snapshot.

    The ``LATEST`` hint is trusted only when no ``snapshot-<hint+1>`` exists; else the directory is listed.
    """
    hint = _hint(table, LATEST)
    if hint is not None and hint > 0 and _read(table, table.snapshot_path(hint + 1)) is None:
        return hint
    return max(_snapshot_ids(table), default=None)


def _oldest_retained(table: _Table, start: int, latest: int) -> tuple[int, SnapshotInfo | None]:
    """The oldest retained snapshot from ``start`` on, once ``start`` itself is gone, and its id.

    The ``EARLIEST`` hint when it names a retained snapshot after ``start`` (``findEarliest``); a stale
    hint (one naming an expired snapshot) or none: the smallest listed id. A file that vanishes between
    the listing and its read (expiration racing) is skipped. ``(start, None)`` when nothing is left.
    """
    hint = _hint(table, EARLIEST)
    if hint is not None and start < hint <= latest and (snapshot := _snapshot(table, hint)) is not None:
        return hint, snapshot
    for snapshot_id in sorted(i for i in _snapshot_ids(table) if start < i <= latest):
        if (snapshot := _snapshot(table, snapshot_id)) is not None:
            return snapshot_id, snapshot
    return start, None


def _snapshot_ids(table: _Table) -> list[int]:
    """The ids of the snapshot files one listing of the snapshot directory shows."""
    return [int(n[len(SNAPSHOT_PREFIX) :]) for n in _list(table, table.snapshot_dir) if _is_snapshot_name(n)]


def _is_snapshot_name(name: str) -> bool:
    return name.startswith(SNAPSHOT_PREFIX) and name[len(SNAPSHOT_PREFIX) :].isdigit()


def _list(table: _Table, directory: str) -> list[str]:
    try:
        statuses = table.file_io.list_status(directory) or []
    except FileNotFoundError:
        return []
    except Exception as exc:
        raise SourceAccessError(f"paimon table {table.name}: {directory} could not be listed: {exc}") from exc
    names = []
    for status in statuses:
        name = getattr(status, "base_name", None) or str(getattr(status, "path", "")).rsplit("/", 1)[-1]
        if name:
            names.append(name)
    return names


def _tag_names(table: _Table) -> list[str]:
    """Tag names from one listing of the tag directory."""
    return sorted(n[len(TAG_PREFIX) :] for n in _list(table, table.tag_dir) if n.startswith(TAG_PREFIX))


def _new_tags(table: _Table, names: list[str], known: frozenset[str]) -> list[TagInfo]:
    """The tags of ``names`` not ``known`` yet, each read (one vanished meanwhile is left out)."""
    read = [_tag(table, name) for name in names if name not in known]
    return [tag for tag in read if tag is not None]


def _tag(table: _Table, name: str) -> TagInfo | None:
    """A tag and its snapshot (a tag file is the tagged snapshot's JSON); None if it vanished meanwhile."""
    text = _read(table, f"{table.tag_dir}/{TAG_PREFIX}{name}")
    if text is None:
        return None
    try:
        snapshot_id = int(json.loads(text)["id"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptMetadataError(f"paimon table {table.name}: tag {name!r} is not a valid tag file") from exc
    return TagInfo(name=name, snapshot_id=snapshot_id)


def touched_partitions(table: _Table, snapshot: Snapshot, schema: Any) -> TouchedPartitions:
    """The partitions of the files the snapshot added or deleted: the entries of its delta manifest list.

    The manifests are Avro (read with fastavro, as pypaimon reads them); each entry's ``_PARTITION`` is a binary
    row, read with pypaimon's deserializer, and named as Paimon names its directory (pypaimon's
    ``FileStorePathFactory``: Java's partition value strings, with ``partition.legacy-name`` a DATE as its day
    number, ``partition.default-name`` for null), then written as a canonical key. pypaimon's manifest managers
    are not used: they need its table object, whose module imports pandas, which the lakehouse layer leaves out.
    """
    from pypaimon.table.row.generic_row import GenericRowDeserializer
    from pypaimon.utils.file_store_path_factory import FileStorePathFactory

    names = list(schema.partition_keys)
    by_name = {f.name: f for f in schema.fields}
    fields = [by_name[name] for name in names]
    options = schema.options or {}
    default = str(options.get("partition.default-name", PAIMON_DEFAULT_PARTITION))
    factory = FileStorePathFactory(
        root=table.path,
        partition_keys=names,
        default_part_value=default,
        format_identifier="parquet",
        data_file_prefix="data-",
        changelog_file_prefix="changelog-",
        legacy_partition_name=str(options.get("partition.legacy-name", "true")).lower() == "true",
        file_suffix_include_compression=False,
        file_compression="none",
        partition_types=[f.type for f in fields],
    )
    rows: set[tuple[Any, ...]] = set()
    for manifest in _avro(table, snapshot.delta_manifest_list):
        for entry in _avro(table, str(manifest["_FILE_NAME"])):
            rows.add(tuple(GenericRowDeserializer.from_bytes(entry["_PARTITION"], fields).values))
    keys = set()
    for values in rows:
        path = factory.relative_bucket_path(values, 0, canonical_partition=True)
        segments = [part for part in path.split("/") if "=" in part][: len(names)]
        named = []
        for segment in segments:
            name, _, value = segment.partition("=")
            text = unescape_path_name(value)
            named.append((unescape_path_name(name), None if text == default else text))
        keys.add(format_partition_key(named))
    return TouchedPartitions.read(keys)


def _avro(table: _Table, name: str) -> list[dict[str, Any]]:
    """The records of one Avro file under ``manifest/`` (one read)."""
    import fastavro

    with table.file_io.new_input_stream(f"{table.path}/manifest/{name}") as stream:
        data = stream.read()
    return [record for record in fastavro.reader(io.BytesIO(data)) if isinstance(record, dict)]


def snapshot_info(snapshot: Snapshot) -> SnapshotInfo:
    """A pypaimon snapshot as lakehook reads it. Paimon ids are consecutive: the parent is ``id - 1``."""
    watermark = snapshot.watermark
    return SnapshotInfo(
        snapshot_id=snapshot.id,
        parent_snapshot_id=snapshot.id - 1 if snapshot.id > 1 else None,
        commit_time=snapshot.time_millis,
        commit_kind=snapshot.commit_kind,
        schema_id=snapshot.schema_id,
        # Java writes Long.MIN_VALUE when a commit carries no watermark
        watermark=watermark if watermark is not None and watermark >= 0 else None,
        total_record_count=snapshot.total_record_count,
        delta_record_count=snapshot.delta_record_count,
        changelog_record_count=snapshot.changelog_record_count,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        trigger_key=trigger_key_in(getattr(snapshot, "properties", None)),
    )
