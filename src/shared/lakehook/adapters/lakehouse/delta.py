"""DeltaSnapshotSource: Delta Lake table versions, read from the table's ``_delta_log/`` directly.

Each version is one commit file ``_delta_log/<version:020>.json`` (newline-delimited actions). lakehook
reads its ``commitInfo`` (operation, timestamp, operation metrics, custom commit properties), whether it
carries a ``metaData`` action, and whether it changed data: a version changes data only when it adds or
removes a file with ``dataChange: true`` (the actions decide, not the operation's name: a property or schema
change, an UPDATE or DELETE that matched no row, an ``OPTIMIZE`` rewrite do not). Nothing else of the table is
read, but for the ``metaData`` a checkpoint holds once the commit that wrote it is gone (below), so no Delta
library is needed (delta-rs is ~135 MB unzipped; see docs/packaging.md).

- An unchanged table is known by GET-class requests only (:meth:`DeltaSnapshotSource.unchanged_since`): a HEAD
  of the next version's commit file (absent) and a read of ``_last_checkpoint`` (no later checkpoint), and while
  the table has no checkpoint a HEAD of the version read (still there); only when one says otherwise, or the
  poller has no complete offset, is the pointer read.
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
  ``dataChange: true``, one key per distinct partition, keyed by the :class:`PartitionLayout` of the
  ``metaData`` in force at that version (docs/partitions.md): the logical names of ``partitionColumns`` in that
  order, each value looked up under the column's physical name when column mapping is on (``partitionValues``
  is keyed by physical names then). So after a rename a version's keys use the name its own metadata gives the
  column, as a reader of that version sees it. The layout is the batch's own ``metaData``; else the one the
  previous batch ended with, when the batch starts right after it (a warm poller reads nothing); else that of
  the commit ``schemaId`` names (one read, remembered per table and metadata version); else, once log cleanup
  removed that commit or when the metadata version is not known, the ``metaData`` of the newest checkpoint at
  or before the first version read (``_last_checkpoint``, or the listing a gap made; a Parquet checkpoint's
  footer and ``metaData`` column read by ranges through pyarrow; remembered per table and checkpoint). An
  unpartitioned table (no partition columns) records none; a version known only from a checkpoint records
  none either (the versions after it take that checkpoint's layout).
"""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.table_files import TableFiles, TableFilesCache
from lakehook.domain.assets import AssetSource
from lakehook.domain.confirmation import trigger_key_in, trigger_key_in_text
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
_KNOWN_LAYOUTS = 256  # partition layouts (and batch ends) a warm poller remembers, newest kept
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
# a Parquet checkpoint's first read: its last 64 KiB (the footer, and usually the metaData column chunk after the
# add and remove columns); Arrow's own first read of a footer is this size too
CHECKPOINT_TAIL_BYTES = 64 * 1024
CheckpointFiles = dict[int, tuple[str, ...]]  # checkpoint version → its files (a multi-part one's parts in order)
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
    (version → one of its files; a multi-part checkpoint counts only with all its parts), with every file of each
    (``parts``: a multi-part checkpoint's parts in order, else the one file)."""

    commits: frozenset[int]
    checkpoints: dict[int, str]
    parts: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, names: list[str]) -> LogListing:
        commits = {v for n in names if (v := commit_version(n)) is not None}
        parts: dict[tuple[int, int], dict[int, str]] = {}
        for name in sorted(names):
            found = checkpoint_part(name)
            if found is not None:
                version, part, count = found
                parts.setdefault((version, count), {}).setdefault(part, name)
        complete = {v: tuple(seen[p] for p in sorted(seen)) for (v, n), seen in sorted(parts.items()) if len(seen) == n}
        return cls(frozenset(commits), {v: files[0] for v, files in complete.items()}, complete)

    @property
    def versions(self) -> set[int]:
        return set(self.commits) | set(self.checkpoints)


@dataclass(frozen=True)
class PartitionLayout:
    """A table's partition columns as one ``metaData`` action defines them: ``columns`` their logical (display)
    names in ``partitionColumns`` order, ``stored`` the name each one's value is kept under in an ``add`` /
    ``remove`` action's ``partitionValues``: with column mapping (``delta.columnMapping.mode`` ``name`` or ``id``)
    the column's physical name (``delta.columnMapping.physicalName`` in its schema field's metadata), else its
    name. A rename changes a column's logical name, never its physical one."""

    columns: tuple[str, ...]
    stored: tuple[str, ...]

    @classmethod
    def of(cls, meta: Any) -> PartitionLayout:
        """The layout of a ``metaData`` action (as a commit file's JSON has it); none listed: unpartitioned."""
        if not isinstance(meta, dict):
            return cls((), ())
        listed = meta.get("partitionColumns")
        columns = tuple(str(c) for c in listed) if isinstance(listed, list) else ()
        return cls(columns, _stored_names(meta, columns))


def _stored_names(meta: dict[str, Any], columns: tuple[str, ...]) -> tuple[str, ...]:
    """The ``partitionValues`` key of each partition column: its physical name under column mapping.

    A column whose schema field has no physical name (or a schema that does not parse) keeps its logical name."""
    configuration = meta.get("configuration")
    mode = configuration.get(COLUMN_MAPPING_MODE) if isinstance(configuration, dict) else None
    if not columns or str(mode or "none").lower() not in ("name", "id"):
        return columns
    try:
        schema = json.loads(str(meta.get("schemaString") or ""))
    except ValueError:
        return columns
    physical = _physical_names(schema.get("fields") if isinstance(schema, dict) else None)
    folded = {k.casefold(): v for k, v in physical.items()}  # Delta's column names are case-insensitive
    return tuple(physical.get(c) or folded.get(c.casefold()) or c for c in columns)


def _physical_names(fields: Any) -> dict[str, str]:
    """A schema's physical name of each top-level field that has one (the first, for a name given twice)."""
    physical: dict[str, str] = {}
    for field_ in fields if isinstance(fields, list) else []:
        metadata = field_.get("metadata") if isinstance(field_, dict) else None
        name = metadata.get(PHYSICAL_NAME) if isinstance(metadata, dict) else None
        if isinstance(name, str) and name and isinstance(field_.get("name"), str):
            physical.setdefault(field_["name"], name)
    return physical


@dataclass(frozen=True)
class DeltaCommit:
    """One version as lakehook reads it: whether it wrote the table's metadata, and whether it is known only
    from a checkpoint (``checkpoint``: that checkpoint's files; which commit wrote its metadata is not known)."""

    info: SnapshotInfo
    writes_metadata: bool
    from_checkpoint: bool = False
    layout: PartitionLayout | None = None  # the metaData action's partition columns, when the commit writes one
    touched: tuple[tuple[tuple[str, str | None], ...], ...] = ()  # partitionValues of its data-changing files
    checkpoint: tuple[str, ...] = ()


class DeltaSnapshotSource(SnapshotSource):
    """Reads the versions of a Delta table at a local path or under ``s3://…`` (no tags: Delta has none)."""

    def __init__(
        self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0, read_concurrency: int = 8
    ) -> None:
        self._files = TableFilesCache(resolver, cache_ttl_seconds)
        self._read_concurrency = read_concurrency
        # partition layouts a warm poller has read, by (table, "commit" | "checkpoint", version): the metaData of
        # a commit, or that a checkpoint holds (None: the checkpoint could not be read; it does not change)
        self._layouts: OrderedDict[tuple[str, str, int], PartitionLayout | None] = OrderedDict()
        # by table: the newest version a batch read and the layout in force after it (the next batch's start)
        self._tails: OrderedDict[str, tuple[int, PartitionLayout]] = OrderedDict()
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        key, files = self._files.files(source)
        try:
            return str(_latest_version(files))
        except SourceAccessError:
            self._files.evict(key)
            raise

    def unchanged_since(self, source: AssetSource, cursor: SnapshotCursor) -> bool:
        """Whether no version after the cursor's exists (:func:`_no_version_after`). Nothing is cached: the answer is
        about now."""
        if _is_beginning(cursor):
            return False
        key, files = self._files.files(source)
        try:
            return _no_version_after(files, cursor.snapshot_id)
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
        if limit <= 0:
            read = _Read([], None, {})
        elif cursor is None:  # a first look: the newest ``limit`` versions
            read = _Read(self._newest(files, latest, limit), None, {})
        else:
            read = self._after(files, -1 if _is_beginning(cursor) else cursor.snapshot_id, latest, limit)
        commits, gap = read.commits, read.gap
        schema = _inherited_metadata_version(files, cursor, read)
        layout = self._layout_before(files, commits, schema, read.listed)
        infos, after = _with_partitions(commits, _with_schema_ids(commits, schema), layout)
        if commits and after is not None:
            self._remember_tail(files.location, commits[-1].info.snapshot_id, after)
        previous = cursor.schema_id if cursor is not None else None
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(infos, previous),
            latest_snapshot_id=latest,
            oldest_retained_snapshot_id=infos[0].snapshot_id if gap is not None and infos else None,
            gap=gap,
            complete=limit > 0 and (not commits or commits[-1].info.snapshot_id >= latest),
        )

    def _after(self, files: TableFiles, last_read: int, latest: int, limit: int) -> _Read:
        """Up to ``limit`` versions after ``last_read`` (to ``latest``), in order; when the next one was cleaned up
        (or never written), from the oldest retained version on, with the gap."""
        start = last_read + 1
        if start > latest:
            return _Read([], None, {})
        first = _commit(files, start)
        resumed = _Read([], None, {})
        if first is None:  # cleaned up (or never written): resume at the oldest retained version
            start, first, resumed = _resume_at_oldest(files, last_read, latest)
        if first is None:
            return resumed
        commits = [first]
        rest = range(start + 1, min(latest, start + limit - 1) + 1)
        for commit in self._read_many(files, rest):
            if commit is None:  # a hole: log cleanup is racing this read; the next poll resumes here
                break
            commits.append(commit)
        return resumed._replace(commits=commits)

    def _layout_before(
        self, files: TableFiles, commits: list[DeltaCommit], metadata_version: int | None, listed: CheckpointFiles
    ) -> PartitionLayout | None:
        """The partition layout the first new commit inherits (None when not known: then ``partitionValues`` order).

        In order: the layout the previous batch ended with, when this batch starts right after it (a warm poller
        reads nothing); the ``metaData`` of the commit ``schemaId`` names (one read, remembered); once log cleanup
        has removed that commit, or when the metadata version is not known, the ``metaData`` of the newest
        checkpoint at or before the first commit (and not older than the metadata version): the table's metadata
        as of that checkpoint (remembered per checkpoint, and as the metadata version's)."""
        self._remember_commit_layouts(files, commits)
        if not commits or commits[0].layout is not None:
            return None
        first = commits[0].info.snapshot_id
        if commits[0].from_checkpoint:
            return self._checkpoint_layout(files, Checkpoint(first, commits[0].checkpoint))
        with self._lock:
            tail = self._tails.get(files.location)
        if tail is not None and tail[0] == first - 1:
            return tail[1]
        if metadata_version is not None:
            key = (files.location, "commit", metadata_version)
            with self._lock:
                if key in self._layouts:
                    return self._layouts[key]
            written = _commit(files, metadata_version)
            if written is not None:  # a commit that wrote no metaData is no metadata version: not known
                if written.layout is not None:
                    self._remember_layout(key, written.layout)
                return written.layout
        return self._layout_of_checkpoint_before(files, first, metadata_version, listed)

    def _remember_commit_layouts(self, files: TableFiles, commits: list[DeltaCommit]) -> None:
        """The layouts the batch's commits wrote, remembered by their versions."""
        for commit in commits:
            if commit.layout is not None:
                self._remember_layout((files.location, "commit", commit.info.snapshot_id), commit.layout)

    def _layout_of_checkpoint_before(
        self, files: TableFiles, first: int, metadata_version: int | None, listed: CheckpointFiles
    ) -> PartitionLayout | None:
        """The layout of the newest checkpoint at or before ``first`` (and not older than the metadata version),
        remembered as the metadata version's once the checkpoint's is settled; None without such a checkpoint."""
        found = self._checkpoint_at_or_before(files, first, metadata_version or 0, listed)
        if found is None:
            return None
        layout = self._checkpoint_layout(files, found)
        with self._lock:
            settled = (files.location, "checkpoint", found.version) in self._layouts
        if metadata_version is not None and settled:  # the metadata version's layout, or that it cannot be read
            self._remember_layout((files.location, "commit", metadata_version), layout)
        return layout

    def _checkpoint_at_or_before(
        self, files: TableFiles, version: int, at_least: int, listed: CheckpointFiles
    ) -> Checkpoint | None:
        """The newest complete checkpoint from ``at_least`` to ``version``: among those a listing this batch made
        found, else the one ``_last_checkpoint`` names, else by listing the log from ``at_least``."""
        fits = [v for v in listed if at_least <= v <= version]
        if fits:
            return Checkpoint(max(fits), listed[max(fits)])
        hint = _last_checkpoint_hint(files)
        if hint is not None and at_least <= hint.version <= version:
            return hint
        listing = _listing(files, at_least)
        fits = [v for v in listing.parts if v <= version]
        return Checkpoint(max(fits), listing.parts[max(fits)]) if fits else None

    def _checkpoint_layout(self, files: TableFiles, checkpoint: Checkpoint) -> PartitionLayout | None:
        """The layout of the ``metaData`` a checkpoint holds, its files read once per table and checkpoint while
        warm. Files named by ``_last_checkpoint`` that are not there are looked up by listing the log from the
        checkpoint's version; a checkpoint that is there but holds no readable ``metaData`` is None (remembered)."""
        key = (files.location, "checkpoint", checkpoint.version)
        with self._lock:
            if key in self._layouts:
                return self._layouts[key]
        meta = checkpoint.metadata
        try:
            if meta is None:
                meta = checkpoint_metadata(files, checkpoint.files)
            if meta is None:
                parts = _listing(files, checkpoint.version).parts.get(checkpoint.version)
                if not parts or parts == checkpoint.files:
                    return None  # gone (a cleanup racing this read): not remembered
                meta = checkpoint_metadata(files, parts)
                if meta is None:
                    return None
        except UnreadableCheckpointError:
            meta = None
        layout = None if meta is None else PartitionLayout.of(meta)
        self._remember_layout(key, layout)
        return layout

    def _remember_layout(self, key: tuple[str, str, int], layout: PartitionLayout | None) -> None:
        with self._lock:
            self._layouts[key] = layout
            while len(self._layouts) > _KNOWN_LAYOUTS:
                self._layouts.popitem(last=False)

    def _remember_tail(self, location: str, version: int, layout: PartitionLayout) -> None:
        with self._lock:
            self._tails[location] = (version, layout)
            self._tails.move_to_end(location)
            while len(self._tails) > _KNOWN_LAYOUTS:
                self._tails.popitem(last=False)

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
            checkpoint = _listing(files, latest).parts.get(latest)
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


def _no_version_after(files: TableFiles, version: int) -> bool:
    """True when the table still holds ``version`` and nothing after it, by GET-class requests only: the successor's
    commit file is absent (a HEAD; versions are written in order, each commit file by put-if-absent, so the
    successor is the first to appear), and ``_last_checkpoint`` names no later version (a GET: log cleanup removes a
    commit file only before a newer checkpoint, which ``_last_checkpoint`` then names, so a cleaned-up successor is
    not taken for none). A table without ``_last_checkpoint`` has had no cleanup; its own commit file must still be
    there (a HEAD), so a table deleted or recreated is read by the pointer, which says so."""
    if files.modified_ms(f"{LOG_DIR}/{commit_file(version + 1)}") is not None:
        return False
    checkpointed = _last_checkpoint(files)
    if checkpointed is not None:
        return checkpointed <= version
    return files.modified_ms(f"{LOG_DIR}/{commit_file(version)}") is not None


def _last_checkpoint(files: TableFiles) -> int | None:
    """The version ``_last_checkpoint`` names; None when it is absent, empty, not JSON or names no version."""
    hint = _last_checkpoint_hint(files)
    return None if hint is None else hint.version


class Checkpoint(NamedTuple):
    """A checkpoint: its version, its files in ``_delta_log/`` (a multi-part one's parts in order) and, when
    ``_last_checkpoint`` carries it (a v2 checkpoint's ``nonFileActions``), the ``metaData`` action it holds."""

    version: int
    files: tuple[str, ...]
    metadata: dict[str, Any] | None = None


def _last_checkpoint_hint(files: TableFiles) -> Checkpoint | None:
    """The checkpoint ``_last_checkpoint`` names (None when it is absent, empty, not JSON or names no version): its
    files by the protocol's names (``parts``: multi-part; ``v2Checkpoint.path``: a v2 one; else the classic name)."""
    data = files.read(f"{LOG_DIR}/{LAST_CHECKPOINT}")
    if not data:
        return None
    try:
        hint = json.loads(data)
        version = hint["version"]
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        return None
    return _hinted_checkpoint(version, hint)


def _hinted_checkpoint(version: int, hint: dict[str, Any]) -> Checkpoint:
    """The files of the checkpoint a ``_last_checkpoint`` hint names at ``version``, and for a v2 one the
    ``metaData`` among its non-file actions."""
    stem = f"{version:020d}.checkpoint"
    parts = hint.get("parts")
    v2 = hint.get("v2Checkpoint")
    metadata: dict[str, Any] | None = None
    if isinstance(v2, dict) and isinstance(v2.get("path"), str) and "/" not in v2["path"]:
        names: tuple[str, ...] = (v2["path"],)
        actions = v2.get("nonFileActions")
        found = (a["metaData"] for a in actions or () if isinstance(a, dict) and isinstance(a.get("metaData"), dict))
        metadata = next(found, None) if isinstance(actions, list) else None
    elif isinstance(parts, int) and not isinstance(parts, bool) and 1 < parts < 100_000:
        names = tuple(f"{stem}.{i:010d}.{parts:010d}.parquet" for i in range(1, parts + 1))
    else:
        names = (f"{stem}.parquet",)
    return Checkpoint(version, names, metadata)


def _listing(files: TableFiles, at_least: int) -> LogListing:
    """The log's entries from version ``at_least`` on (one listing from there)."""
    names = files.list(LOG_DIR, start_after=f"{at_least - 1:020d}" if at_least > 0 else None)
    return LogListing.of(names)


class UnreadableCheckpointError(Exception):
    """A checkpoint whose files are there but hold no ``metaData`` lakehook can read (not Parquet or JSON lines, no
    ``metaData`` column, or no Parquet reader installed)."""


class _GoneError(Exception):
    """A checkpoint file removed while it was being read (log cleanup racing the read)."""


def checkpoint_metadata(files: TableFiles, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The ``metaData`` action a checkpoint holds: its files read in order until one has it (a multi-part
    checkpoint puts it in one of its parts). None when a file is not there; UnreadableCheckpointError when none
    holds it.

    A JSON (v2) checkpoint is read whole (one request). A Parquet one is read by ranges, through Arrow: its last
    64 KiB (one request: the footer, and often the ``metaData`` column chunk already), then, for each row group
    whose statistics do not say ``metaData`` is null in every row, that column's chunks (one request for them
    together). The ``add`` and ``remove`` columns, nearly all of a checkpoint's bytes, are never read."""
    for name in names:
        path = f"{LOG_DIR}/{name}"
        if name.endswith(".json"):
            data = files.read(path)
            if data is None:
                return None
            found = _json_metadata(data)
        else:
            tail = files.read_tail(path, CHECKPOINT_TAIL_BYTES)
            if tail is None:
                return None
            try:
                found = _parquet_metadata(files, path, *tail)
            except _GoneError:
                return None
        if found is not None:
            return found
    raise UnreadableCheckpointError(f"no metaData action in {', '.join(names)[:200]}")


def _json_metadata(data: bytes) -> dict[str, Any] | None:
    try:
        for line in data.decode("utf-8").splitlines():
            if '"metaData"' in line:
                action = json.loads(line)
                if isinstance(action, dict) and isinstance(action.get("metaData"), dict):
                    return dict(action["metaData"])
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise UnreadableCheckpointError("a JSON checkpoint that is not JSON lines") from exc
    return None


def _parquet_metadata(files: TableFiles, path: str, tail: bytes, size: int) -> dict[str, Any] | None:
    """The first non-null ``metaData`` row of a Parquet checkpoint, as a commit file's JSON has it."""
    try:
        import pyarrow.parquet as pq  # the lakehouse layer's; imported only when a checkpoint must be read
    except ImportError as exc:
        raise UnreadableCheckpointError("no Parquet reader (pyarrow) is installed") from exc
    source = _RangedFile(files, path, tail, size)
    try:
        rows = _metadata_rows(pq.ParquetFile(source, pre_buffer=True), path)
    except UnreadableCheckpointError:
        raise
    except Exception as exc:  # Arrow's errors (ArrowInvalid, OSError …) for a file that is not a checkpoint
        raise _read_failure(source, path, exc) from exc
    row = next((r for r in rows if isinstance(r, dict)), None)
    return None if row is None else _as_commit_metadata(row)


def _metadata_rows(parquet: Any, path: str) -> list[Any]:
    """The ``metaData`` column's rows of the row groups that may hold one (UnreadableCheckpointError without it)."""
    meta = parquet.metadata
    leaf = next((i for i in range(meta.num_columns) if meta.schema.column(i).path == "metaData.id"), None)
    if leaf is None:
        raise UnreadableCheckpointError(f"{path} has no metaData column")
    groups = [g for g in range(meta.num_row_groups) if _may_hold(meta.row_group(g), leaf)]
    return parquet.read_row_groups(groups, columns=["metaData"]).column("metaData").to_pylist() if groups else []


def _read_failure(source: _RangedFile, path: str, exc: Exception) -> Exception:
    """What a failed read of a Parquet checkpoint means: the storage failed under Arrow (its SourceAccessError, the
    file is not corrupt), the file went away while read (log cleanup), or it is not a Parquet checkpoint."""
    if isinstance(source.error, SourceAccessError):
        return source.error
    if source.error is not None:
        return _GoneError(path)
    return UnreadableCheckpointError(f"{path} is not a Parquet checkpoint: {exc}")


def _as_commit_metadata(row: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's ``metaData`` row as a commit file's JSON has it (its maps as objects, not lists of pairs)."""
    configuration = row.get("configuration")
    options = (row.get("format") or {}).get("options") if isinstance(row.get("format"), dict) else None
    return {
        **row,
        "configuration": dict(configuration) if isinstance(configuration, list) else configuration or {},
        "format": {**row["format"], "options": dict(options)} if isinstance(options, list) else row.get("format"),
    }


def _may_hold(row_group: Any, leaf: int) -> bool:
    """Whether a row group may hold a ``metaData`` row: not when its statistics count a null ``metaData.id`` in
    every row (a row of another action)."""
    statistics = row_group.column(leaf).statistics
    if statistics is None or not statistics.has_null_count:
        return True
    return bool(statistics.null_count < row_group.num_rows)


class _RangedFile(io.RawIOBase):
    """A file Arrow reads by ranges: the tail already read, other bytes one ranged read each (Arrow coalesces the
    chunks of the columns it reads into one range when they lie together)."""

    def __init__(self, files: TableFiles, path: str, tail: bytes, size: int) -> None:
        super().__init__()
        self._files, self._path, self._size = files, path, size
        self._tail, self._tail_start = tail, size - len(tail)
        self._position = 0
        self.error: SourceAccessError | _GoneError | None = None  # what failed under Arrow

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        length = max(0, min(len(view), self._size - self._position))
        data = self._bytes(self._position, length)
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def _bytes(self, start: int, length: int) -> bytes:
        end = start + length
        if start >= self._tail_start:
            return self._tail[start - self._tail_start : end - self._tail_start]
        try:
            head = self._files.read_range(self._path, start, min(end, self._tail_start) - start)
        except SourceAccessError as exc:
            self.error = exc
            raise
        if head is None:  # removed since its tail was read
            self.error = _GoneError(self._path)
            raise self.error
        return head + (self._tail[: end - self._tail_start] if end > self._tail_start else b"")


class _Read(NamedTuple):
    """The versions a batch read after its cursor, the gap before them when versions were missed, and the
    checkpoints a listing this batch made found (``listed``)."""

    commits: list[DeltaCommit]
    gap: SnapshotGap | None
    listed: CheckpointFiles


def _resume_at_oldest(files: TableFiles, last_read: int, latest: int) -> tuple[int, DeltaCommit | None, _Read]:
    """Where a batch resumes when the version after ``last_read`` is gone: the oldest retained version (up to
    ``latest``), read from its commit file, else from its checkpoint; with the gap when versions were missed and
    the checkpoints the listing found. Nothing retained: the version after ``last_read``, not read."""
    start = last_read + 1
    listing = _listing(files, start)
    oldest = min((v for v in listing.versions if v >= start), default=None)
    if oldest is None or oldest > latest:
        return start, None, _Read([], None, listing.parts)
    first = _commit(files, oldest) if oldest in listing.commits else None
    if first is None and oldest in listing.checkpoints:
        first = _checkpointed(files, oldest, listing.parts[oldest])
    missed = oldest - start
    gap = SnapshotGap(after_snapshot_id=last_read, resumed_at_snapshot_id=oldest, missed=missed) if missed else None
    return oldest, first, _Read([], gap, listing.parts)


def _inherited_metadata_version(files: TableFiles, cursor: SnapshotCursor | None, read: _Read) -> int | None:
    """The metadata version the first new commit inherits: the cursor's, unless commits were missed; on a first
    look, found by reading back (bounded). A cursor that does not know it stays unknown (no re-reads)."""
    if cursor is not None:
        return cursor.schema_id if read.gap is None else None
    first = read.commits[0] if read.commits else None
    if first is None or first.writes_metadata or first.from_checkpoint:
        return None
    return _metadata_version_before(files, first.info.snapshot_id)


def _checkpointed(files: TableFiles, version: int, checkpoint: tuple[str, ...]) -> DeltaCommit:
    """A version known only from its checkpoint: its time is the checkpoint file's, nothing else is recorded."""
    modified = files.modified_ms(f"{LOG_DIR}/{checkpoint[0]}")
    info = SnapshotInfo(
        snapshot_id=version,
        parent_snapshot_id=version - 1 if version > 0 else None,
        commit_time=max(0, modified or 0),
    )
    return DeltaCommit(info, writes_metadata=False, from_checkpoint=True, checkpoint=checkpoint)


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
    commits: list[DeltaCommit], infos: list[SnapshotInfo], layout: PartitionLayout | None
) -> tuple[list[SnapshotInfo], PartitionLayout | None]:
    """Each version's touched partitions, keyed by the partition layout in force at it; and the layout in force
    after the last one. ``layout`` is the first version's (for a version known only from its checkpoint, that
    checkpoint's: the version records no partitions, the versions after it take its layout)."""
    out: list[SnapshotInfo] = []
    for i, (commit, info) in enumerate(zip(commits, infos, strict=True)):
        if commit.layout is not None:
            layout = commit.layout
        if commit.from_checkpoint:
            layout = layout if i == 0 else None  # only a batch's first version is read from its checkpoint
            out.append(info)
            continue
        out.append(info.model_copy(update={"partitions": touched_partitions(commit.touched, layout)}))
    return out, layout


def touched_partitions(
    touched: tuple[tuple[tuple[str, str | None], ...], ...], layout: PartitionLayout | None
) -> TouchedPartitions | None:
    """The partitions of a commit's data-changing ``add`` / ``remove`` actions; None for an unpartitioned table.

    Each is keyed by the layout's logical column names in ``partitionColumns`` order, its values looked up under
    the names ``partitionValues`` stores them by (physical names under column mapping). A value is the protocol's
    partition value serialization as written; a null (JSON null, or the empty string the protocol also reads as
    null) is Hive's default partition. Without the layout (no ``metaData`` or checkpoint that holds it could be
    read) the names are those ``partitionValues`` has, in the order the commit's actions first name them, so an
    UPDATE's ``remove`` and ``add`` of one partition are one key however each action's map orders its names.
    One partition is one key: ``count`` is the number of distinct partitions."""
    if layout is not None and not layout.columns:
        return None
    if layout is None and not any(touched):
        return None
    if layout is not None:
        order = tuple(zip(layout.columns, layout.stored, strict=True))
    else:
        order = tuple((name, name) for name in dict.fromkeys(name for values in touched for name, _ in values))
    keys: set[str] = set()
    for values in touched:
        if layout is None and not values:
            continue  # a file without partition values, and no partition columns known: nothing to name
        named = dict(values)
        try:
            keys.add(format_partition_key([(name, named.get(stored)) for name, stored in order]))
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
    layout: PartitionLayout | None = None
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
                layout = PartitionLayout.of(action["metaData"])
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
    return DeltaCommit(info, writes_metadata, layout=layout, touched=tuple(touched))


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
        # delta-rs custom metadata is a commitInfo field; Spark's userMetadata is one text
        trigger_key=trigger_key_in(commit_info) or trigger_key_in_text(commit_info.get("userMetadata")),
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
