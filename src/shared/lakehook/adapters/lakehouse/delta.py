"""DeltaSnapshotSource: Delta Lake table versions, read from the table's ``_delta_log/`` directly.

Each version is one commit file ``_delta_log/<version:020>.json`` (newline-delimited actions). lakehook
reads its ``commitInfo`` (operation, timestamp, operation metrics, custom commit properties), whether it
carries a ``metaData`` action, and whether it changed data: a version changes data only when it adds or
removes a file with ``dataChange: true`` (the actions decide, not the operation's name: a property or schema
change, an UPDATE or DELETE that matched no row, an ``OPTIMIZE`` rewrite do not). Nothing else of the table is
read, so no Delta library is needed (delta-rs is ~135 MB unzipped; see docs/packaging.md).

- The pointer is the newest version: one read of ``_last_checkpoint`` and one listing of the log after
  that checkpoint (``StartAfter``), so its cost is bounded by the checkpoint interval, not history. A
  ``_last_checkpoint`` that is empty, not JSON or names no version is only a hint, as in delta-rs: the
  whole log is listed instead. A version is a commit file or a complete checkpoint (classic
  ``<v>.checkpoint.parquet``, multi-part ``<v>.checkpoint.<i>.<n>.parquet``, v2 ``<v>.checkpoint.<id>.json``
  or ``.parquet``), so a log that log cleanup left with a checkpoint alone is still that version.
- New versions cost one read each (read concurrently). A version whose commit file was cleaned up (log
  retention after a checkpoint) is gone: reading resumes at the oldest retained commit or checkpoint and
  the batch names the gap. A version known only from its checkpoint has no commit kind, its commit time is
  the checkpoint file's, and it counts as a data change (what it changed is not recorded).
- ``schemaId`` is the version of the commit that last wrote the table's metadata (the ``metaData``
  action: schema, partitioning, properties), so it only grows; when that commit is older than the
  retained log it is unknown (None).
- The partitions a version touched are the ``partitionValues`` of its ``add`` / ``remove`` actions with
  ``dataChange: true``, keyed in the order of the table's ``metaData.partitionColumns`` (docs/partitions.md):
  the batch's own ``metaData``, else that of the commit ``schemaId`` names (one read, remembered per table and
  metadata version). An unpartitioned table (no partition columns) records none; a version known only from a
  checkpoint records none either.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.table_files import TableFiles, TableFilesCache
from lakehook.domain.assets import AssetSource
from lakehook.domain.partitions import PartitionKeyError, TouchedPartitions, format_partition_key
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap, SnapshotInfo, mark_schema_changes
from lakehook.ports.lakehouse import (
    CorruptMetadataError,
    SnapshotBatch,
    SnapshotSource,
    SourceAccessError,
    TableNotFoundError,
)

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
WATERMARK_KEYS = ("lakehook.watermark", "watermark")  # a writer may stamp one into the commit's properties
_KNOWN_COLUMNS = 256
SCHEMA_LOOKBACK = 100  # commit files read backwards to find the metadata version on a first read
# operationMetrics names (delta-rs snake_case, Spark camelCase) of rows a commit wrote / removed. A MERGE's
# numOutputRows counts every row it rewrote (inserted + updated + copied), so a MERGE counts only the rows it
# inserted and deleted (Spark's DeltaOperationMetrics.MERGE; delta-rs MergeMetrics); an UPDATE changes none.
_WRITTEN = ("num_added_rows", "numOutputRows")
_DELETED = ("num_deleted_rows", "numDeletedRows")
_MERGE_INSERTED = ("num_target_rows_inserted", "numTargetRowsInserted")
_MERGE_DELETED = ("num_target_rows_deleted", "numTargetRowsDeleted")
_UPDATED = ("num_updated_rows", "numUpdatedRows")
# operations that replace the whole table's content (Spark names; delta-rs writes WRITE with mode Overwrite)
_REPLACING = frozenset({"REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"})


def commit_file(version: int) -> str:
    return f"{version:020d}.json"


def commit_version(name: str) -> int | None:
    """The version of a commit file's name (``00000000000000000042.json`` → 42), else None."""
    stem, dot, ext = name.partition(".")
    return int(stem) if dot and ext == "json" and len(stem) == 20 and stem.isdigit() else None


def checkpoint_part(name: str) -> tuple[int, int, int] | None:
    """A checkpoint file's (version, part, parts), else None.

    Classic ``<v>.checkpoint.parquet`` and v2 ``<v>.checkpoint.<uuid>.json|parquet`` are one part of one;
    multi-part ``<v>.checkpoint.<i>.<n>.parquet`` is part i of n (the Delta protocol's checkpoint names)."""
    stem, _, rest = name.partition(".")
    if len(stem) != 20 or not stem.isdigit() or not rest.startswith("checkpoint."):
        return None
    version, fields = int(stem), rest.split(".")[1:]
    if fields == ["parquet"]:
        return version, 1, 1
    if len(fields) == 3 and fields[2] == "parquet" and fields[0].isdigit() and fields[1].isdigit():
        part, parts = int(fields[0]), int(fields[1])
        return (version, part, parts) if 1 <= part <= parts else None
    if len(fields) == 2 and fields[1] in ("json", "parquet") and fields[0] and not fields[0].isdigit():
        return version, 1, 1
    return None


@dataclass(frozen=True)
class LogListing:
    """What a listing of ``_delta_log/`` holds: the commit files' versions and the complete checkpoints
    (version → one of its files; a multi-part checkpoint counts only with all its parts)."""

    commits: frozenset[int]
    checkpoints: dict[int, str]

    @classmethod
    def of(cls, names: list[str]) -> LogListing:
        commits = {v for n in names if (v := commit_version(n)) is not None}
        parts: dict[tuple[int, int], set[int]] = {}
        first: dict[tuple[int, int], str] = {}
        for name in names:
            found = checkpoint_part(name)
            if found is not None:
                version, part, count = found
                parts.setdefault((version, count), set()).add(part)
                first.setdefault((version, count), name)
        checkpoints = {v: first[(v, n)] for (v, n), seen in sorted(parts.items()) if len(seen) == n}
        return cls(frozenset(commits), checkpoints)

    @property
    def versions(self) -> set[int]:
        return set(self.commits) | set(self.checkpoints)


@dataclass(frozen=True)
class DeltaCommit:
    """One version as lakehook reads it: whether it wrote the table's metadata, and whether it is known only
    from a checkpoint (then which metadata it holds is not known either)."""

    info: SnapshotInfo
    writes_metadata: bool
    from_checkpoint: bool = False
    partition_columns: tuple[str, ...] | None = None  # the metaData action's, when the commit writes one
    touched: tuple[tuple[tuple[str, str | None], ...], ...] = ()  # partitionValues of its data-changing files


class DeltaSnapshotSource(SnapshotSource):
    """Reads the versions of a Delta table at a local path or under ``s3://…`` (no tags: Delta has none)."""

    def __init__(
        self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0, read_concurrency: int = 8
    ) -> None:
        self._files = TableFilesCache(resolver, cache_ttl_seconds)
        self._read_concurrency = read_concurrency
        # partition columns by (table, metadata version): a warm poller reads a table's metaData commit once
        self._columns: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        key, files = self._files.files(source)
        try:
            return str(_latest_version(files))
        except SourceAccessError:
            self._files.evict(key)
            raise

    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        key, files = self._files.files(source)
        try:
            latest = int(pointer)
        except ValueError as exc:
            raise CorruptMetadataError(f"delta table {files.location}: pointer {pointer[:40]!r} is no version") from exc
        try:
            return self._batch(files, cursor, latest, pointer, limit)
        except SourceAccessError:
            self._files.evict(key)
            raise

    # --- reading ----------------------------------------------------------------------------

    def _batch(
        self, files: TableFiles, cursor: SnapshotCursor | None, latest: int, pointer: str, limit: int
    ) -> SnapshotBatch:
        gap: SnapshotGap | None = None
        commits: list[DeltaCommit] = []
        if limit <= 0:
            pass
        elif cursor is None:  # a first look: the newest ``limit`` versions
            commits = self._newest(files, latest, limit)
        else:
            last_read = -1 if _is_beginning(cursor) else cursor.snapshot_id
            start = last_read + 1
            if start <= latest:
                first = _commit(files, start)
                if first is None:  # cleaned up (or never written): resume at the oldest retained version
                    listing = _listing(files, start)
                    oldest = min((v for v in listing.versions if v >= start), default=None)
                    if oldest is not None and oldest <= latest:
                        first = _commit(files, oldest) if oldest in listing.commits else None
                        if first is None and oldest in listing.checkpoints:
                            first = _checkpointed(files, oldest, listing.checkpoints[oldest])
                        if oldest > start:
                            gap = SnapshotGap(
                                after_snapshot_id=last_read, resumed_at_snapshot_id=oldest, missed=oldest - start
                            )
                        start = oldest
                if first is not None:
                    commits.append(first)
                    rest = range(start + 1, min(latest, start + limit - 1) + 1)
                    for commit in self._read_many(files, rest):
                        if commit is None:  # a hole: log cleanup is racing this read; the next poll resumes here
                            break
                        commits.append(commit)
        # the metadata version the first new commit inherits: the cursor's, unless commits were missed; on a
        # first look, found by reading back (bounded). A cursor that does not know it stays unknown (no re-reads).
        schema = cursor.schema_id if cursor is not None and gap is None else None
        if cursor is None and commits and not commits[0].writes_metadata and not commits[0].from_checkpoint:
            schema = _metadata_version_before(files, commits[0].info.snapshot_id)
        infos = _with_partitions(commits, _with_schema_ids(commits, schema), self._columns_at(files, schema, commits))
        previous = cursor.schema_id if cursor is not None else None
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(infos, previous),
            latest_snapshot_id=latest,
            oldest_retained_snapshot_id=infos[0].snapshot_id if gap is not None and infos else None,
            gap=gap,
            complete=limit > 0 and (not commits or commits[-1].info.snapshot_id >= latest),
        )

    def _columns_at(
        self, files: TableFiles, metadata_version: int | None, commits: list[DeltaCommit]
    ) -> tuple[str, ...] | None:
        """The partition columns the first new commit inherits: the ``metaData`` of the commit ``schemaId`` names
        (one read, unless the batch starts with its own), None when not known (then ``partitionValues`` order)."""
        for commit in commits:
            if commit.partition_columns is not None:
                self._remember_columns(files.location, commit.info.snapshot_id, commit.partition_columns)
        if not commits or commits[0].partition_columns is not None or metadata_version is None:
            return None
        with self._lock:
            known = self._columns.get((files.location, metadata_version))
        if known is not None:
            return known
        written = _commit(files, metadata_version)
        if written is None or written.partition_columns is None:
            return None
        self._remember_columns(files.location, metadata_version, written.partition_columns)
        return written.partition_columns

    def _remember_columns(self, location: str, version: int, columns: tuple[str, ...]) -> None:
        with self._lock:
            self._columns[(location, version)] = columns
            while len(self._columns) > _KNOWN_COLUMNS:
                self._columns.popitem(last=False)

    def _newest(self, files: TableFiles, latest: int, limit: int) -> list[DeltaCommit]:
        versions = range(max(0, latest - limit + 1), latest + 1)
        found = self._read_many(files, versions)
        commits: list[DeltaCommit] = []
        for commit in reversed(found):  # newest first, stopping at the first cleaned-up version
            if commit is None:
                break
            commits.append(commit)
        commits.reverse()
        if not commits:  # the newest version has no commit file: a checkpoint alone holds it
            checkpoint = _listing(files, latest).checkpoints.get(latest)
            if checkpoint is not None:
                commits.append(_checkpointed(files, latest, checkpoint))
        return commits

    def _read_many(self, files: TableFiles, versions: range) -> list[DeltaCommit | None]:
        """Commit files by version, in order; read concurrently (one request each), since each is a round trip."""
        if len(versions) <= 1 or self._read_concurrency <= 1:
            return [_commit(files, v) for v in versions]
        with ThreadPoolExecutor(max_workers=min(self._read_concurrency, len(versions))) as pool:
            return list(pool.map(lambda v: _commit(files, v), versions))


def _is_beginning(cursor: SnapshotCursor) -> bool:
    """``SnapshotCursor.beginning()``: before the first version (Delta versions start at 0, so 0 alone is not it)."""
    return cursor.snapshot_id == 0 and cursor.sequence_number == 0


# --- the log ------------------------------------------------------------------------------------


def _latest_version(files: TableFiles) -> int:
    """The newest version: ``_last_checkpoint``, then the commit files and checkpoints listed after it.

    The hint only saves listing: when it is unreadable, or nothing is listed from it on, the whole log is listed
    (as delta-rs does)."""
    hint = _last_checkpoint(files)
    listing = _listing(files, hint) if hint is not None else None
    if listing is None or not listing.versions:
        listing = _listing(files, 0)
    if listing.versions:
        return max(listing.versions)
    raise TableNotFoundError(f"delta table {files.location} does not exist (no commit or checkpoint in {LOG_DIR}/)")


def _last_checkpoint(files: TableFiles) -> int | None:
    """The version ``_last_checkpoint`` names; None when it is absent, empty, not JSON or names no version."""
    data = files.read(f"{LOG_DIR}/{LAST_CHECKPOINT}")
    if not data:
        return None
    try:
        version = json.loads(data)["version"]
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
        return None
    return version if isinstance(version, int) and not isinstance(version, bool) and version >= 0 else None


def _listing(files: TableFiles, at_least: int) -> LogListing:
    """The log's entries from version ``at_least`` on (one listing from there)."""
    names = files.list(LOG_DIR, start_after=f"{at_least - 1:020d}" if at_least > 0 else None)
    return LogListing.of(names)


def _checkpointed(files: TableFiles, version: int, checkpoint: str) -> DeltaCommit:
    """A version known only from its checkpoint: its time is the checkpoint file's, nothing else is recorded."""
    modified = files.modified_ms(f"{LOG_DIR}/{checkpoint}")
    info = SnapshotInfo(
        snapshot_id=version,
        parent_snapshot_id=version - 1 if version > 0 else None,
        commit_time=max(0, modified or 0),
    )
    return DeltaCommit(info, writes_metadata=False, from_checkpoint=True)


def _commit(files: TableFiles, version: int) -> DeltaCommit | None:
    data = files.read(f"{LOG_DIR}/{commit_file(version)}")
    return None if data is None else parse_commit(version, data, files.location)


def _metadata_version_before(files: TableFiles, version: int) -> int | None:
    """The version of the newest commit before ``version`` that wrote metadata (reads backwards, bounded)."""
    for older in range(version - 1, max(-1, version - 1 - SCHEMA_LOOKBACK), -1):
        commit = _commit(files, older)
        if commit is None:
            return None  # cleaned up: older metadata is only in a checkpoint, which has no version for it
        if commit.writes_metadata:
            return older
    return None


def _with_schema_ids(commits: list[DeltaCommit], schema: int | None) -> list[SnapshotInfo]:
    infos: list[SnapshotInfo] = []
    for commit in commits:
        if commit.writes_metadata:
            schema = commit.info.snapshot_id
        elif commit.from_checkpoint:
            schema = None  # which commit last wrote the metadata a checkpoint holds is not recorded
        infos.append(commit.info.model_copy(update={"schema_id": schema}))
    return infos


def _with_partitions(
    commits: list[DeltaCommit], infos: list[SnapshotInfo], columns: tuple[str, ...] | None
) -> list[SnapshotInfo]:
    """Each version's touched partitions, keyed in the order of the partition columns in force at it."""
    out: list[SnapshotInfo] = []
    for commit, info in zip(commits, infos, strict=True):
        if commit.partition_columns is not None:
            columns = commit.partition_columns
        if commit.from_checkpoint:
            columns = None  # which metadata a checkpoint-only version holds is not read
            out.append(info)
            continue
        out.append(info.model_copy(update={"partitions": touched_partitions(commit.touched, columns)}))
    return out


def touched_partitions(
    touched: tuple[tuple[tuple[str, str | None], ...], ...], columns: tuple[str, ...] | None
) -> TouchedPartitions | None:
    """The partitions of a commit's data-changing ``add`` / ``remove`` actions; None for an unpartitioned table.

    A value is the protocol's partition value serialization as written; a null (JSON null, or the empty string
    the protocol also reads as null) is Hive's default partition. Without the table's ``partitionColumns`` (its
    ``metaData`` is older than the retained log) the order is the ``partitionValues`` map's as written."""
    if columns == () or (columns is None and not any(touched)):
        return None
    keys: set[str] = set()
    for values in touched:
        named = dict(values)
        order = columns if columns is not None else tuple(name for name, _ in values)
        try:
            keys.add(format_partition_key([(name, named.get(name)) for name in order]))
        except PartitionKeyError:
            continue  # a file without partition values in a partitioned table: nothing to name
    return TouchedPartitions.read(keys)


def _partition_values(action: dict[str, Any]) -> tuple[tuple[str, str | None], ...]:
    values = action.get("partitionValues")
    if not isinstance(values, dict):
        return ()
    return tuple((str(k), None if v is None else str(v)) for k, v in values.items())


def parse_commit(version: int, data: bytes, location: str = "") -> DeltaCommit:
    """A commit file's ``commitInfo`` as a SnapshotInfo (schema id and partitions left to the caller).

    It changed data when one of its ``add`` / ``remove`` actions says ``dataChange: true`` (a writer that leaves
    the flag out is taken to have changed data); those actions' ``partitionValues`` are the partitions it touched."""
    commit_info: dict[str, Any] = {}
    writes_metadata = False
    data_changed = False
    newest_add = 0
    columns: tuple[str, ...] | None = None
    touched: list[tuple[tuple[str, str | None], ...]] = []
    try:
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if not isinstance(action, dict):
                raise ValueError("an action is not an object")
            if isinstance(action.get("commitInfo"), dict):
                commit_info = action["commitInfo"]
            elif "metaData" in action:
                writes_metadata = True
                meta = action["metaData"]
                listed = meta.get("partitionColumns") if isinstance(meta, dict) else None
                columns = tuple(str(c) for c in listed) if isinstance(listed, list) else ()
            elif isinstance(action.get("add"), dict) or isinstance(action.get("remove"), dict):
                file = action["add"] if isinstance(action.get("add"), dict) else action["remove"]
                if "add" in action:
                    newest_add = max(newest_add, _int(file.get("modificationTime")) or 0)
                if file.get("dataChange") is not False:
                    data_changed = True
                    touched.append(_partition_values(file))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptMetadataError(f"delta table {location}: {commit_file(version)} is not a Delta commit") from exc
    info = commit_snapshot(version, commit_info, newest_add, data_changed)
    return DeltaCommit(info, writes_metadata, partition_columns=columns, touched=tuple(touched))


def commit_snapshot(
    version: int, commit_info: dict[str, Any], fallback_time: int = 0, data_changed: bool = True
) -> SnapshotInfo:
    """A commit's ``commitInfo`` as lakehook reads it: operation as commit kind, metrics as record counts.

    ``data_changed`` is what the commit's actions say (True when not known); a commit that changed no data
    changed no row count either."""
    operation = str(commit_info.get("operation") or "").upper()
    metrics = commit_info.get("operationMetrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    total, delta = _row_counts(operation, metrics, commit_info.get("operationParameters"))
    if not data_changed:
        total, delta = None, 0
    watermark = next((w for k in WATERMARK_KEYS if (w := _int(commit_info.get(k))) is not None), None)
    commit_time = _int(commit_info.get("inCommitTimestamp")) or _int(commit_info.get("timestamp")) or fallback_time
    user = commit_info.get("userName") or commit_info.get("userId")
    return SnapshotInfo(
        snapshot_id=version,
        parent_snapshot_id=version - 1 if version > 0 else None,
        commit_time=max(0, commit_time),
        commit_kind=operation or None,
        watermark=watermark if watermark is not None and watermark >= 0 else None,
        total_record_count=total,
        delta_record_count=delta,
        commit_user=str(user) if user else None,
        data_changed=data_changed,
    )


def _row_counts(operation: str, metrics: dict[str, Any], parameters: Any) -> tuple[int | None, int | None]:
    """(rows the table holds after the commit, rows it added minus rows it removed), each None when unknown.

    An overwrite of the whole table (mode Overwrite without a predicate, Spark's ``outputMode`` Complete, a
    REPLACE TABLE AS SELECT) leaves exactly the rows it wrote; one with a predicate (replaceWhere) replaces
    only part of it, so it is written minus deleted, like an append or a DELETE. A MERGE adds the rows it
    inserted and removes those it deleted; an UPDATE changes rows, not their number."""
    parameters = parameters if isinstance(parameters, dict) else {}
    mode = str(parameters.get("mode", "")).lower()
    predicate = parameters.get("predicate") not in (None, "", "[]")
    complete = str(parameters.get("outputMode", "")).lower() == "complete"
    if (mode == "overwrite" and not predicate) or complete or operation in _REPLACING:
        written = _first_int(metrics, _WRITTEN)
        return (written if written is not None and written >= 0 else None), None
    if operation == "MERGE":
        added, deleted = _first_int(metrics, _MERGE_INSERTED), _first_int(metrics, _MERGE_DELETED)
    elif operation == "UPDATE":
        return None, (0 if _first_int(metrics, _UPDATED) is not None else None)
    else:
        added, deleted = _first_int(metrics, _WRITTEN), _first_int(metrics, _DELETED)
    return None, (None if added is None and deleted is None else (added or 0) - (deleted or 0))


def _first_int(metrics: dict[str, Any], names: tuple[str, ...]) -> int | None:
    return next((v for n in names if (v := _int(metrics.get(n))) is not None), None)


def _int(value: Any) -> int | None:
    """Metrics are numbers (delta-rs) or numeric strings (Spark)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None
