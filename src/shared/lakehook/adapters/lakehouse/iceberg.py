"""IcebergSnapshotSource: Iceberg snapshots through pyiceberg's ``load_catalog`` (any catalog type).

The pointer is the table's current metadata location, read around ``load_table`` (which would
read ``metadata.json``): Glue ``GetTable`` ``Parameters.metadata_location``; the SQL catalog's
``iceberg_tables`` row. Other catalog types (REST, Hive, ...) fall back to ``load_table``; the
metadata it loaded is kept for the ``snapshots_since`` that follows, so a changed table still
costs one load (for REST that is the load response; Hive also reads ``metadata.json``, so there
an unchanged table costs that read too).

The partitions a snapshot touched (docs/partitions.md) are read from the manifests it wrote: its manifest list
and those manifests, per new snapshot, only when the table has a partitioned spec (an unpartitioned table costs
nothing more and records none).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.manifest import ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import Compressor
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot

from lakehook.adapters.lakehouse.catalog_cache import CatalogCache
from lakehook.adapters.lakehouse.credentials import CredentialResolver, ResolvedProperties, properties_fingerprint
from lakehook.domain.assets import AssetSource
from lakehook.domain.confirmation import trigger_key_in
from lakehook.domain.errors import LakehookError
from lakehook.domain.partitions import TouchedPartitions, format_partition_key
from lakehook.domain.snapshots import (
    RefKind,
    SnapshotCursor,
    SnapshotGap,
    SnapshotInfo,
    TagInfo,
    mark_schema_changes,
)
from lakehook.ports.lakehouse import (
    CorruptMetadataError,
    SnapshotBatch,
    SnapshotSource,
    SourceAccessError,
    TableNotFoundError,
)
from lakehook.wire.iceberg_counts import counts_from_summary

WATERMARK_SUMMARY_KEYS = ("lakehook.watermark", "watermark")  # writers may stamp one into the snapshot summary
_GLUE_NOT_FOUND = {"EntityNotFoundException"}
_RECENT_LOADS = 64


@dataclass
class _Catalog:
    """A built catalog, what kind of pointer read it allows, and its FileIO per location root."""

    key: str
    catalog: Catalog
    properties: ResolvedProperties
    ios: dict[str, FileIO] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return {"SqlCatalog": "sql", "GlueCatalog": "glue"}.get(type(self.catalog).__name__, "other")

    def io_for(self, location: str) -> FileIO:
        root = location.split("/", 3)[:3]  # scheme://bucket: one FileIO (and S3 connection pool) each
        key = "/".join(root)
        io = self.ios.get(key)
        if io is None:
            io = self.ios[key] = load_file_io(properties=self.catalog.properties, location=location)
        return io


class IcebergSnapshotSource(SnapshotSource):
    """Reads Iceberg snapshots on the table's main branch, plus its tags and other branches."""

    def __init__(self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0) -> None:
        self._resolver = resolver
        self._catalogs: CatalogCache[_Catalog] = CatalogCache(cache_ttl_seconds)
        self._recent: OrderedDict[tuple[str, str], TableMetadata] = OrderedDict()
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        entry = self._catalog(source)
        namespace, name = _identifier(source)
        with self._translated(entry, source):
            if entry.kind == "sql":
                return _sql_pointer(entry.catalog, namespace, name, source.table_name)
            if entry.kind == "glue":
                return _glue_pointer(entry.catalog, namespace, name, source.table_name)
            table = entry.catalog.load_table((namespace, name))
            self._remember(entry.key, table.metadata_location, table.metadata)
            return str(table.metadata_location)

    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        entry = self._catalog(source)
        metadata = self._recall(entry.key, pointer)
        if metadata is None:
            with self._translated(entry, source):
                metadata = read_metadata(entry.io_for(pointer), pointer, source.table_name)
        try:
            batch = batch_from_metadata(metadata, pointer, cursor, limit=limit, known_tags=known_tags)
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptMetadataError(f"iceberg table {source.table_name}: unreadable snapshots in {pointer}") from exc
        if not batch.snapshots or all(spec.is_unpartitioned() for spec in metadata.specs().values()):
            return batch  # an unpartitioned table records no partitions, and reads no manifest for them
        with self._translated(entry, source):
            io = entry.io_for(pointer)
            by_id = {s.snapshot_id: s for s in metadata.snapshots}
            infos = [
                info.model_copy(update={"partitions": touched_partitions(metadata, by_id[info.snapshot_id], io)})
                for info in batch.snapshots
            ]
        return replace(batch, snapshots=infos)

    # --- catalogs ---------------------------------------------------------------------------

    def _catalog(self, source: AssetSource) -> _Catalog:
        key = properties_fingerprint(source.catalog, source.properties)
        return self._catalogs.get(key, lambda: self._build(key, source))

    def _build(self, key: str, source: AssetSource) -> _Catalog:
        resolved = self._resolver.resolve(source.properties)
        properties = dict(resolved.values)
        if _is_sql(properties):
            properties.setdefault("init_catalog_tables", "false")  # a poller never creates tables in a catalog
        try:
            catalog = load_catalog(source.catalog, **properties)
        except Exception as exc:  # any library or driver error while building: the catalog is unusable
            message = resolved.scrub(f"{type(exc).__name__}: {exc}")
            raise SourceAccessError(f"iceberg catalog {source.catalog!r} could not be built: {message}") from exc
        # A REST catalog's server may have set uri, s3.endpoint ... (its config overrides): checked before use.
        self._resolver.check_catalog_config(resolved, catalog.properties)
        return _Catalog(key, catalog, resolved)

    @contextmanager
    def _translated(self, entry: _Catalog, source: AssetSource) -> Iterator[None]:
        """Library errors become ours; an access error also drops the cached catalog (credentials may rotate)."""
        try:
            yield
        except LakehookError as exc:
            if isinstance(exc, SourceAccessError):
                self._catalogs.evict(entry.key)
            raise
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            raise TableNotFoundError(f"iceberg table {source.table_name} does not exist in {source.catalog!r}") from exc
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _GLUE_NOT_FOUND:
                raise TableNotFoundError(
                    f"iceberg table {source.table_name} does not exist in {source.catalog!r}"
                ) from exc
            self._catalogs.evict(entry.key)
            raise SourceAccessError(f"iceberg catalog {source.catalog!r}: {code or 'error'}") from exc
        except Exception as exc:
            self._catalogs.evict(entry.key)
            message = entry.properties.scrub(f"{type(exc).__name__}: {exc}")
            raise SourceAccessError(f"iceberg catalog {source.catalog!r}: {message}") from exc

    def _remember(self, key: str, location: str, metadata: TableMetadata) -> None:
        with self._lock:
            self._recent[(key, location)] = metadata
            while len(self._recent) > _RECENT_LOADS:
                self._recent.popitem(last=False)

    def _recall(self, key: str, location: str) -> TableMetadata | None:
        with self._lock:
            return self._recent.pop((key, location), None)


# --- pointer reads ------------------------------------------------------------------------------


def _identifier(source: AssetSource) -> tuple[str, str]:
    namespace, name = source.table_name.split(".", 1)
    return namespace, name


def _is_sql(properties: dict[str, str]) -> bool:
    kind = properties.get("type", "").lower()
    uri = properties.get("uri", "")
    return kind == "sql" or (not kind and uri.split(":", 1)[0].split("+", 1)[0] in {"sqlite", "postgresql", "mysql"})


def _sql_pointer(catalog: Any, namespace: str, name: str, table: str) -> str:
    """One SELECT of the table's ``iceberg_tables`` row (what ``load_table`` does before reading the file)."""
    from pyiceberg.catalog.sql import IcebergTables
    from sqlalchemy import select

    statement = select(IcebergTables.metadata_location).where(
        IcebergTables.catalog_name == catalog.name,
        IcebergTables.table_namespace == namespace,
        IcebergTables.table_name == name,
    )
    with catalog.engine.connect() as connection:
        row = connection.execute(statement).first()
    if row is None or not row[0]:
        raise TableNotFoundError(f"iceberg table {table} does not exist in {catalog.name!r}")
    return str(row[0])


def _glue_pointer(catalog: Any, namespace: str, name: str, table: str) -> str:
    """One Glue ``GetTable``: the current metadata location is a table parameter."""
    glue_table = catalog.glue.get_table(DatabaseName=namespace, Name=name)["Table"]  # errors: see _translated
    parameters = glue_table.get("Parameters") or {}
    if str(parameters.get("table_type", "")).upper() != "ICEBERG":
        raise TableNotFoundError(f"glue table {table} is not an Iceberg table")
    location = parameters.get("metadata_location")
    if not location:
        raise CorruptMetadataError(f"glue table {table} has no metadata_location")
    return str(location)


def read_metadata(io: FileIO, location: str, table: str) -> TableMetadata:
    """One read of the ``metadata.json`` the pointer names (gzipped when named ``*.gz.metadata.json``)."""
    try:
        with (
            io.new_input(location).open() as stream,
            Compressor.get_compressor(location).stream_decompressor(stream) as plain,
        ):
            document = json.loads(plain.read())
        return TableMetadataUtil.parse_obj(java_compatible(document))
    except FileNotFoundError as exc:
        raise CorruptMetadataError(f"iceberg table {table}: the catalog points at a missing file {location}") from exc
    except OSError as exc:
        raise SourceAccessError(f"iceberg table {table}: {location} could not be read: {exc}") from exc
    except (IcebergValidationError, ValueError, TypeError, KeyError) as exc:  # JSON or schema errors
        raise CorruptMetadataError(f"iceberg table {table}: {location} is not valid table metadata") from exc


def java_compatible(document: Any) -> Any:
    """Table metadata as Java's ``TableMetadataParser`` reads it, where pyiceberg's model is stricter.

    Format v1 kept one ``schema``; later v1 writers add the ``schemas`` list with ``current-schema-id``, and
    some write only the list. Java then takes the listed schema the id names and needs no ``schema``;
    pyiceberg's v1 model requires it. Such a document gets the named schema as its ``schema``; one Java
    rejects too (no ``current-schema-id``, or an id not in the list) is left for pyiceberg to reject.
    """
    if not isinstance(document, dict) or document.get("format-version") != 1 or "schema" in document:
        return document
    schemas, current = document.get("schemas"), document.get("current-schema-id")
    if not isinstance(schemas, list) or not isinstance(current, int) or isinstance(current, bool):
        return document
    named = next((s for s in schemas if isinstance(s, dict) and s.get("schema-id") == current), None)
    return document if named is None else {**document, "schema": named}


# --- snapshots from metadata --------------------------------------------------------------------


def batch_from_metadata(
    metadata: TableMetadata,
    pointer: str,
    cursor: SnapshotCursor | None,
    *,
    limit: int,
    known_tags: frozenset[str] = frozenset(),
) -> SnapshotBatch:
    """The main branch's snapshots after the cursor, in commit order, with refs as tags.

    Commit order on the main branch is ancestry (parent links), not snapshot ids, which Iceberg
    draws at random. A cursor that is retained but off the main ancestry (a rollback, a
    replaced branch) resumes after its position in commit order; one that expired resumes at
    the oldest retained ancestor, and the batch names the gap.
    """
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    chain = _main_ancestry(metadata, by_id)
    versioned = metadata.format_version >= 2
    gap: SnapshotGap | None = None
    if cursor is None:
        new = chain[-limit:] if limit > 0 else []
        remaining = 0
    else:
        positions = {s.snapshot_id: i for i, s in enumerate(chain)}
        if cursor.snapshot_id in positions:
            after = chain[positions[cursor.snapshot_id] + 1 :]
        elif cursor.snapshot_id in by_id:
            mark = _order(by_id[cursor.snapshot_id])
            after = [s for s in chain if _order(s) > mark]
        else:
            after = _after_expired(chain, cursor, versioned)
            gap = _gap(after, cursor, versioned)
        new, remaining = after[:limit], max(0, len(after) - limit)
    previous = _previous_schema(new, by_id, cursor)
    located = metadata_locations(metadata, pointer)
    infos = mark_schema_changes([snapshot_info(s, versioned, located.get(s.snapshot_id)) for s in new], previous)
    tags = _refs(metadata, by_id if versioned else {})
    return SnapshotBatch(
        pointer=pointer,
        snapshots=infos,
        tags=[t for t in tags if t.event_tag not in known_tags],
        tag_names=frozenset(t.event_tag for t in tags),
        latest_snapshot_id=metadata.current_snapshot_id,
        oldest_retained_snapshot_id=chain[0].snapshot_id if chain else None,
        gap=gap,
        complete=remaining == 0,
    )


def metadata_locations(metadata: TableMetadata, pointer: str) -> dict[int, str]:
    """The ``metadata.json`` each snapshot's own commit wrote, where known.

    A commit that adds a snapshot stamps the new metadata's ``last-updated-ms`` with the snapshot's
    timestamp, and the metadata log lists earlier files by that stamp; the current snapshot's file is the
    pointer until a later commit (even one that only sets a property) moves it into the log. The answer
    is therefore the same whenever the table is read, which the replay pre-flight relies on.
    """
    written = {entry.timestamp_ms: entry.metadata_file for entry in metadata.metadata_log}
    found = {s.snapshot_id: written[s.timestamp_ms] for s in metadata.snapshots if s.timestamp_ms in written}
    current = metadata.current_snapshot_id
    if current is not None and current not in found:
        found[current] = pointer
    return found


def snapshot_info(snapshot: Snapshot, versioned: bool = True, metadata_location: str | None = None) -> SnapshotInfo:
    """A pyiceberg snapshot as lakehook reads it: operation as commit kind; live rows, their net change and
    whether it changed data from the summary, as Java's writer defines them (:mod:`lakehook.wire.iceberg_counts`)."""
    summary = snapshot.summary
    operation = summary.operation.value if summary is not None else None
    properties = summary_properties(summary)
    counts = counts_from_summary(operation, properties)
    watermark = next((w for k in WATERMARK_SUMMARY_KEYS if (w := _summary_int(summary, k)) is not None), None)
    return SnapshotInfo(
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=snapshot.parent_snapshot_id,
        # format v1 has no sequence numbers (they read as 0): leave them out rather than mislead
        sequence_number=snapshot.sequence_number if versioned else None,
        commit_time=snapshot.timestamp_ms,
        commit_kind=operation.upper() if operation is not None else None,
        schema_id=snapshot.schema_id,
        watermark=watermark if watermark is not None and watermark >= 0 else None,
        total_record_count=counts.total_rows,
        delta_record_count=counts.delta_rows,
        data_changed=counts.data_changed,
        metadata_location=metadata_location,
        trigger_key=trigger_key_in(properties),
    )


def summary_properties(summary: Any) -> dict[str, str]:
    """A pyiceberg snapshot summary's properties as strings (``operation`` aside); empty without a summary."""
    if summary is None:
        return {}
    return {str(k): str(v) for k, v in summary.additional_properties.items()}


def touched_partitions(metadata: TableMetadata, snapshot: Snapshot, io: FileIO) -> TouchedPartitions | None:
    """The partitions of the data and delete files the snapshot added or removed, as Hive-style keys.

    Read from the manifests the snapshot wrote (``added_snapshot_id``): its entries ``ADDED`` or ``DELETED`` by
    it (``EXISTING`` ones were carried over). Each partition tuple is written field by field with the spec's
    transform's human string, as pyiceberg's ``PartitionSpec.partition_to_path`` writes it (``day`` →
    ``2026-12-01``, ``hour`` → ``2026-12-01-10``, ``bucket`` / ``truncate`` → their value), in the spec's field
    order; a null value is Hive's default partition. Files of an unpartitioned spec name no partition."""
    specs = metadata.specs()
    if all(spec.is_unpartitioned() for spec in specs.values()):
        return None
    schema = next((s for s in metadata.schemas if s.schema_id == snapshot.schema_id), None) or metadata.schema()
    keys: set[str] = set()
    for manifest in snapshot.manifests(io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        spec = specs.get(manifest.partition_spec_id)
        if spec is None or spec.is_unpartitioned():
            continue
        keys.update(_written_keys(metadata, schema, spec, manifest, snapshot.snapshot_id, io))
    return TouchedPartitions.read(keys)


def _written_keys(
    metadata: TableMetadata, schema: Schema, spec: PartitionSpec, manifest: ManifestFile, snapshot_id: int, io: FileIO
) -> Iterator[str]:
    """The partition keys of a manifest's entries the snapshot ADDED or DELETED (not those it carried over)."""
    try:
        types = [f.field_type for f in spec.partition_type(schema).fields]
    except ValueError:  # a source column no longer in the schema: fall back to the current one
        types = [f.field_type for f in spec.partition_type(metadata.schema()).fields]
    for found in manifest.fetch_manifest_entry(io, discard_deleted=False):
        if found.status == ManifestEntryStatus.EXISTING or found.snapshot_id not in (None, snapshot_id):
            continue
        yield partition_key(spec, types, found.data_file.partition)


def partition_key(spec: PartitionSpec, types: list[Any], partition: Any) -> str:
    """One partition tuple as its canonical key (see :func:`touched_partitions`)."""
    fields = []
    for position, part in enumerate(spec.fields):
        value = partition[position]
        text = None if value is None else part.transform.to_human_string(types[position], value)
        fields.append((part.name, text))
    return format_partition_key(fields)


def _main_ancestry(metadata: TableMetadata, by_id: dict[int, Snapshot]) -> list[Snapshot]:
    """The current snapshot and its retained ancestors, oldest first."""
    chain: list[Snapshot] = []
    seen: set[int] = set()
    current = metadata.current_snapshot_id
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        chain.append(by_id[current])
        current = by_id[current].parent_snapshot_id
    chain.reverse()
    return chain


def _order(snapshot: Snapshot) -> tuple[int, int]:
    return snapshot.sequence_number or 0, snapshot.timestamp_ms


def _after_expired(chain: list[Snapshot], cursor: SnapshotCursor, versioned: bool) -> list[Snapshot]:
    """Retained ancestors newer than an expired cursor: by sequence number when known, else all of them."""
    if versioned and cursor.sequence_number is not None:
        return [s for s in chain if (s.sequence_number or 0) > cursor.sequence_number]
    return list(chain)


def _gap(after: list[Snapshot], cursor: SnapshotCursor, versioned: bool) -> SnapshotGap | None:
    if not after or after[0].parent_snapshot_id == cursor.snapshot_id:
        return None  # the cursor expired, but its successor is here: nothing was missed
    if cursor == SnapshotCursor.beginning() and after[0].parent_snapshot_id is None:
        return None  # the table was empty when last read, and its first snapshot is here
    first = after[0]
    missed: int | None = None
    if versioned and cursor.sequence_number is not None and first.sequence_number is not None:
        missed = first.sequence_number - cursor.sequence_number - 1
        if missed < 1:
            return None
    return SnapshotGap(after_snapshot_id=cursor.snapshot_id, resumed_at_snapshot_id=first.snapshot_id, missed=missed)


def _previous_schema(new: list[Snapshot], by_id: dict[int, Snapshot], cursor: SnapshotCursor | None) -> int | None:
    if not new:
        return None
    parent_id = new[0].parent_snapshot_id
    parent = by_id.get(parent_id) if parent_id is not None else None
    if parent is not None:
        return parent.schema_id
    return cursor.schema_id if cursor is not None else None


def _refs(metadata: TableMetadata, by_id: dict[int, Snapshot]) -> list[TagInfo]:
    """Tags and branches; with the tagged snapshot's sequence number (format v2), its place in history."""
    tags = []
    for name, ref in sorted(metadata.refs.items()):
        if name == MAIN_BRANCH:
            continue
        kind = RefKind.TAG if ref.snapshot_ref_type == SnapshotRefType.TAG else RefKind.BRANCH
        tagged = by_id.get(ref.snapshot_id)
        sequence = tagged.sequence_number if tagged is not None else None
        tags.append(TagInfo(name=name, snapshot_id=ref.snapshot_id, kind=kind, sequence_number=sequence or None))
    return tags


def _summary_int(summary: Any, key: str) -> int | None:
    if summary is None:
        return None
    value = summary[key]
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
