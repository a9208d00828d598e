"""DeltaSnapshotSource: Delta Lake table versions, read from the table's ``_delta_log/`` directly.

Each version is one commit file ``_delta_log/<version:020>.json`` (newline-delimited actions). lakehook
reads its ``commitInfo`` (operation, timestamp, operation metrics, custom commit properties) and whether
it carries a ``metaData`` action; nothing else of the table is read, so no Delta library is needed
(delta-rs is ~135 MB unzipped; see docs/packaging.md).

- The pointer is the newest version: one read of ``_last_checkpoint`` and one listing of the log after
  that checkpoint (``StartAfter``), so its cost is bounded by the checkpoint interval, not history.
- New versions cost one read each (read concurrently). A version whose commit file was cleaned up (log
  retention after a checkpoint) is gone: reading resumes at the oldest retained commit and the batch
  names the gap.
- ``schemaId`` is the version of the commit that last wrote the table's metadata (the ``metaData``
  action: schema, partitioning, properties), so it only grows; when that commit is older than the
  retained log it is unknown (None).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.table_files import TableFiles, TableFilesCache
from lakehook.domain.assets import AssetSource
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
SCHEMA_LOOKBACK = 100  # commit files read backwards to find the metadata version on a first read
# operationMetrics names of rows a commit added / removed (delta-rs snake_case, Spark camelCase)
_ADDED = ("num_added_rows", "numOutputRows", "num_target_rows_inserted", "numTargetRowsInserted")
_DELETED = ("num_deleted_rows", "numDeletedRows", "num_target_rows_deleted", "numTargetRowsDeleted")


def commit_file(version: int) -> str:
    return f"{version:020d}.json"


def commit_version(name: str) -> int | None:
    """The version of a commit file's name (``00000000000000000042.json`` → 42), else None."""
    stem, dot, ext = name.partition(".")
    return int(stem) if dot and ext == "json" and len(stem) == 20 and stem.isdigit() else None


@dataclass(frozen=True)
class DeltaCommit:
    """One commit as lakehook reads it, and whether it wrote the table's metadata."""

    info: SnapshotInfo
    writes_metadata: bool


class DeltaSnapshotSource(SnapshotSource):
    """Reads the versions of a Delta table at a local path or under ``s3://…`` (no tags: Delta has none)."""

    def __init__(
        self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0, read_concurrency: int = 8
    ) -> None:
        self._files = TableFilesCache(resolver, cache_ttl_seconds)
        self._read_concurrency = read_concurrency

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
                if first is None:  # cleaned up (or never written): resume at the oldest retained commit
                    oldest = _oldest_retained(files, start)
                    if oldest is not None and oldest <= latest:
                        start, first = oldest, _commit(files, oldest)
                        gap = SnapshotGap(
                            after_snapshot_id=last_read, resumed_at_snapshot_id=oldest, missed=oldest - last_read - 1
                        )
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
        if cursor is None and commits and not commits[0].writes_metadata:
            schema = _metadata_version_before(files, commits[0].info.snapshot_id)
        infos = _with_schema_ids(commits, schema)
        previous = cursor.schema_id if cursor is not None else None
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(infos, previous),
            latest_snapshot_id=latest,
            oldest_retained_snapshot_id=infos[0].snapshot_id if gap is not None and infos else None,
            gap=gap,
            complete=limit > 0 and (not commits or commits[-1].info.snapshot_id >= latest),
        )

    def _newest(self, files: TableFiles, latest: int, limit: int) -> list[DeltaCommit]:
        versions = range(max(0, latest - limit + 1), latest + 1)
        found = self._read_many(files, versions)
        commits: list[DeltaCommit] = []
        for commit in reversed(found):  # newest first, stopping at the first cleaned-up version
            if commit is None:
                break
            commits.append(commit)
        commits.reverse()
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
    """The newest version: ``_last_checkpoint``, then the commit files listed after that checkpoint."""
    checkpoint = _last_checkpoint(files)
    names = files.list(LOG_DIR, start_after=f"{checkpoint:020d}" if checkpoint is not None else None)
    versions = [v for n in names if (v := commit_version(n)) is not None]
    if versions:
        return max(versions)
    if checkpoint is not None:
        return checkpoint  # its commit file was cleaned up; the checkpoint itself is that version
    raise TableNotFoundError(f"delta table {files.location} does not exist (no commit in {LOG_DIR}/)")


def _last_checkpoint(files: TableFiles) -> int | None:
    data = files.read(f"{LOG_DIR}/{LAST_CHECKPOINT}")
    if data is None:
        return None
    try:
        version = json.loads(data)["version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptMetadataError(f"delta table {files.location}: {LAST_CHECKPOINT} is not valid JSON") from exc
    if not isinstance(version, int) or version < 0:
        raise CorruptMetadataError(f"delta table {files.location}: {LAST_CHECKPOINT} names version {version!r}")
    return version


def _oldest_retained(files: TableFiles, at_least: int) -> int | None:
    """The oldest commit file at or after ``at_least`` (one listing from there on)."""
    names = files.list(LOG_DIR, start_after=f"{at_least - 1:020d}" if at_least > 0 else None)
    versions = [v for n in names if (v := commit_version(n)) is not None and v >= at_least]
    return min(versions) if versions else None


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
        infos.append(commit.info.model_copy(update={"schema_id": schema}))
    return infos


def parse_commit(version: int, data: bytes, location: str = "") -> DeltaCommit:
    """A commit file's ``commitInfo`` as a SnapshotInfo (schema id left to the caller)."""
    commit_info: dict[str, Any] = {}
    writes_metadata = False
    newest_add = 0
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
            elif isinstance(action.get("add"), dict):
                newest_add = max(newest_add, _int(action["add"].get("modificationTime")) or 0)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptMetadataError(f"delta table {location}: {commit_file(version)} is not a Delta commit") from exc
    return DeltaCommit(commit_snapshot(version, commit_info, newest_add), writes_metadata)


def commit_snapshot(version: int, commit_info: dict[str, Any], fallback_time: int = 0) -> SnapshotInfo:
    """A commit's ``commitInfo`` as lakehook reads it: operation as commit kind, metrics as record counts."""
    operation = commit_info.get("operation")
    metrics = commit_info.get("operationMetrics")
    metrics = metrics if isinstance(metrics, dict) else {}
    parameters = commit_info.get("operationParameters")
    mode = str(parameters.get("mode", "")).lower() if isinstance(parameters, dict) else ""
    added = _first_int(metrics, _ADDED)
    deleted = _first_int(metrics, _DELETED)
    overwrite = mode == "overwrite"
    delta = None if overwrite or (added is None and deleted is None) else (added or 0) - (deleted or 0)
    watermark = next((w for k in WATERMARK_KEYS if (w := _int(commit_info.get(k))) is not None), None)
    commit_time = _int(commit_info.get("inCommitTimestamp")) or _int(commit_info.get("timestamp")) or fallback_time
    user = commit_info.get("userName") or commit_info.get("userId")
    return SnapshotInfo(
        snapshot_id=version,
        parent_snapshot_id=version - 1 if version > 0 else None,
        commit_time=max(0, commit_time),
        commit_kind=str(operation).upper() if operation else None,
        watermark=watermark if watermark is not None and watermark >= 0 else None,
        # an overwrite leaves exactly the rows it wrote
        total_record_count=added if overwrite and added is not None and added >= 0 else None,
        delta_record_count=delta,
        commit_user=str(user) if user else None,
    )


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
