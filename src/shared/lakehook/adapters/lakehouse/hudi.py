"""HudiSnapshotSource: the completed commits on a Hudi table's timeline, read from ``.hoodie/`` directly.

A Hudi table's versions are the completed instants of its active timeline that a query can read at:
``commit``, ``deltacommit`` and ``replacecommit``. Table 0.x (timeline layout 1) keeps them as
``.hoodie/<instant>.<action>`` with JSON commit metadata; 1.x (table version 8+, layout 2) as
``.hoodie/timeline/<instant>_<completion>.<action>`` with Avro commit metadata (read with fastavro,
which the lakehouse layer already carries). ``clean``, ``rollback``, ``indexing`` … instants are table
services that produce no readable version and are not snapshots.

- The version (snapshot id, and its order) is the instant time, ``yyyyMMddHHmmssSSS`` as a number; its
  ``sequenceNumber`` is the completion time (1.x; the instant time on 0.x), and polls read versions in
  completion order after the cursor's, so a commit of a concurrent writer that completes after a later
  instant was read is still found (on 0.x, which records no completion time, it is not).
- The commit kind is the metadata's ``operationType`` (``INSERT``, ``UPSERT``, ``DELETE``,
  ``INSERT_OVERWRITE``, ``COMPACT``, ``CLUSTER`` …); without one, a ``replacecommit`` whose plan was
  a clustering is ``CLUSTER`` and a ``commit`` planned as a compaction is ``COMPACT``, else the action.
- Record counts: ``numInserts - numDeletes`` over the write stats, for commits that change data.
- ``schemaId`` is the instant time of the commit that introduced the writer schema (``extraMetadata.schema``)
  the commit carries, so it only grows and a schema change gives a new id.
- The pointer is the newest completed instant: one listing of the timeline directory, whose length
  Hudi's archival bounds (older instants move to the archived timeline), not the table's history.
- The ``hudi`` (hudi-rs) binding is not used here: it is ~136 MB unzipped and needs pyarrow, which does
  not fit beside the other formats (see docs/packaging.md); the tests check this reader against it.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.table_files import TableFiles, TableFilesCache
from lakehook.domain.assets import AssetSource
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap, SnapshotInfo, mark_schema_changes
from lakehook.domain.versions import changes_data
from lakehook.ports.lakehouse import (
    CorruptMetadataError,
    SnapshotBatch,
    SnapshotSource,
    SourceAccessError,
    TableNotFoundError,
)

HOODIE = ".hoodie"
PROPERTIES = f"{HOODIE}/hoodie.properties"
VERSION_ACTIONS = ("commit", "deltacommit", "replacecommit")
WATERMARK_KEYS = ("lakehook.watermark", "watermark")  # a writer may stamp one into extraMetadata
_COMPLETED = re.compile(r"^(?P<instant>\d{14,17})(?:_(?P<completion>\d{14,17}))?\.(?P<action>[a-z]+)$")
_AVRO_MAGIC = b"Obj\x01"
_RECENT = 64


@dataclass(frozen=True)
class Instant:
    """A completed instant on the timeline: instant time, completion time (1.x), action, its file, and its plan."""

    instant: int
    action: str
    file: str
    completion: int | None = None
    planned_as: str | None = None  # "compaction" / "clustering" when the requested file says so

    @property
    def completed(self) -> int:
        """When it completed: the completion time (1.x), else the instant time (0.x records no completion)."""
        return self.completion or self.instant


@dataclass(frozen=True)
class _Timeline:
    """Where a table's active timeline lives (``.hoodie`` or ``.hoodie/timeline``) and its completed versions."""

    directory: str
    instants: tuple[Instant, ...]


class HudiSnapshotSource(SnapshotSource):
    """Reads the completed commits of a Hudi table (0.x and 1.x timelines) at a local path or under ``s3://…``."""

    def __init__(
        self, resolver: CredentialResolver, cache_ttl_seconds: float = 900.0, read_concurrency: int = 8
    ) -> None:
        self._files = TableFilesCache(resolver, cache_ttl_seconds)
        self._read_concurrency = read_concurrency
        self._layouts: dict[str, str] = {}  # table location → timeline directory (read once from hoodie.properties)
        self._recent: OrderedDict[tuple[str, str], _Timeline] = OrderedDict()
        self._schemas: OrderedDict[tuple[str, int], str | None] = OrderedDict()  # (location, instant) → schema
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        key, files = self._files.files(source)
        try:
            timeline = self._timeline(files)
        except SourceAccessError:
            self._files.evict(key)
            raise
        pointer = _pointer_of(timeline)
        with self._lock:
            self._recent[(files.location, pointer)] = timeline
            while len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return pointer

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
            with self._lock:
                timeline = self._recent.pop((files.location, pointer), None)
            if timeline is None or _pointer_of(timeline) != pointer:
                timeline = self._timeline(files)
            return self._batch(files, timeline, cursor, pointer, limit)
        except SourceAccessError:
            self._files.evict(key)
            raise

    # --- the timeline -------------------------------------------------------------------------

    def _timeline(self, files: TableFiles) -> _Timeline:
        directory = self._layouts.get(files.location)
        if directory is None:
            directory = self._layouts[files.location] = _timeline_directory(files)
        return _Timeline(directory, _completed_versions(files.list(directory)))

    def _batch(
        self, files: TableFiles, timeline: _Timeline, cursor: SnapshotCursor | None, pointer: str, limit: int
    ) -> SnapshotBatch:
        instants = timeline.instants
        gap: SnapshotGap | None = None
        if limit <= 0:
            new: tuple[Instant, ...] = ()
            after: tuple[Instant, ...] = ()
        elif cursor is None:
            new = after = tuple(sorted(instants, key=lambda i: (i.completed, i.instant)))[-limit:]
        else:
            after = _after(instants, cursor)
            new = after[:limit]
            known = {i.instant for i in instants}
            beginning = cursor.snapshot_id == 0
            if (
                not beginning
                and instants
                and cursor.snapshot_id not in known
                and cursor.snapshot_id < instants[0].instant
            ):
                # the cursor's instant was archived: what came between it and the oldest active one is unknown
                gap = SnapshotGap(
                    after_snapshot_id=cursor.snapshot_id, resumed_at_snapshot_id=instants[0].instant, missed=None
                )
        metadata = self._read_many(files, timeline.directory, new)
        schema_text, schema_id = self._previous_schema(files, timeline, cursor, new)
        previous_id = schema_id
        infos: list[SnapshotInfo] = []
        for instant, meta in zip(new, metadata, strict=True):
            text = _schema_text(meta)
            if text is not None and text != schema_text:
                schema_text, schema_id = text, instant.instant
            infos.append(instant_snapshot(instant, meta).model_copy(update={"schema_id": schema_id}))
            self._remember_schema(files.location, instant.instant, schema_text)  # the schema in force after it
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(infos, previous_id),
            latest_snapshot_id=instants[-1].instant if instants else None,
            oldest_retained_snapshot_id=instants[0].instant if gap is not None and instants else None,
            gap=gap,
            complete=limit > 0 and len(new) == len(after),
        )

    def _previous_schema(
        self, files: TableFiles, timeline: _Timeline, cursor: SnapshotCursor | None, new: tuple[Instant, ...]
    ) -> tuple[str | None, int | None]:
        """The schema in force before the first new commit, and its id.

        With a cursor: the schema of the commit before (cached in a warm poller, else one read) and the
        cursor's schema id. On a first look: read back while the schema stays the same (the active timeline
        bounds it), so the id is the commit that introduced it, or the oldest active one carrying it.
        """
        first = new[0].completed if new else 0
        before = sorted((i for i in timeline.instants if i.completed < first), key=lambda i: (i.completed, i.instant))
        if not before:
            return None, None
        text = self._schema_of(files, timeline.directory, before[-1])
        if cursor is not None:
            return text, cursor.schema_id if cursor.snapshot_id == before[-1].instant else None
        schema_id = before[-1].instant if text is not None else None
        for older in reversed(before[:-1]):
            if text is None or self._schema_of(files, timeline.directory, older) != text:
                break
            schema_id = older.instant
        return text, schema_id

    def _schema_of(self, files: TableFiles, directory: str, instant: Instant) -> str | None:
        with self._lock:
            if (files.location, instant.instant) in self._schemas:
                return self._schemas[(files.location, instant.instant)]
        text = _schema_text(_metadata(files, directory, instant))
        self._remember_schema(files.location, instant.instant, text)
        return text

    def _remember_schema(self, location: str, instant: int, text: str | None) -> None:
        with self._lock:
            self._schemas[(location, instant)] = text
            while len(self._schemas) > _RECENT:
                self._schemas.popitem(last=False)

    def _read_many(self, files: TableFiles, directory: str, instants: tuple[Instant, ...]) -> list[dict[str, Any]]:
        if len(instants) <= 1 or self._read_concurrency <= 1:
            return [_metadata(files, directory, i) for i in instants]
        with ThreadPoolExecutor(max_workers=min(self._read_concurrency, len(instants))) as pool:
            return list(pool.map(lambda i: _metadata(files, directory, i), instants))


def _pointer_of(timeline: _Timeline) -> str:
    """When the newest version completed ("" when the table has none yet): moves with every completed commit,
    also one whose instant is older than an already completed one (1.x concurrent writers)."""
    return str(max(i.completed for i in timeline.instants)) if timeline.instants else ""


def _after(instants: tuple[Instant, ...], cursor: SnapshotCursor) -> tuple[Instant, ...]:
    """The versions completed after the cursor's, in completion order.

    The cursor's ``sequenceNumber`` is the completion time of its commit (the instant time on a 0.x timeline,
    which records none); a cursor without one (a targeted fill) compares instant times.
    """
    if cursor.sequence_number is None:
        return tuple(i for i in instants if i.instant > cursor.snapshot_id)
    done = cursor.sequence_number
    return tuple(sorted((i for i in instants if i.completed > done), key=lambda i: (i.completed, i.instant)))


def _timeline_directory(files: TableFiles) -> str:
    """``hoodie.properties`` says where the timeline is: ``.hoodie/timeline`` from table version 8 on."""
    data = files.read(PROPERTIES)
    if data is None:
        raise TableNotFoundError(f"hudi table {files.location} does not exist (no {PROPERTIES})")
    properties = parse_properties(data)
    layout = properties.get("hoodie.timeline.layout.version", "1")
    path = properties.get("hoodie.timeline.path")
    if path or (layout == "2" and int(properties.get("hoodie.table.version", "0") or 0) >= 8):
        return f"{HOODIE}/{path or 'timeline'}"
    return HOODIE


def parse_properties(data: bytes) -> dict[str, str]:
    """A Java properties file (``key=value`` lines, ``#`` comments, ``\\:`` escapes) as Hudi writes it."""
    properties: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name, _, value = line.partition("=")
        properties[name.strip()] = value.strip().replace("\\:", ":").replace("\\=", "=")
    return properties


def _completed_versions(names: list[str]) -> tuple[Instant, ...]:
    """The completed commit / deltacommit / replacecommit instants of a timeline listing, by instant time."""
    planned = {}
    for name in names:
        stem, _, rest = name.partition(".")
        if rest in ("compaction.requested", "clustering.requested", "logcompaction.requested") and stem.isdigit():
            planned[int(stem)] = rest.split(".", 1)[0]
    found = []
    for name in names:
        match = _COMPLETED.fullmatch(name)
        if match is None or match.group("action") not in VERSION_ACTIONS:
            continue
        instant = int(match.group("instant"))
        completion = match.group("completion")
        found.append(
            Instant(
                instant=instant,
                action=match.group("action"),
                file=name,
                completion=int(completion) if completion else None,
                planned_as=planned.get(instant),
            )
        )
    return tuple(sorted(found, key=lambda i: i.instant))


def _metadata(files: TableFiles, directory: str, instant: Instant) -> dict[str, Any]:
    """An instant's commit metadata: JSON (0.x) or an Avro container file (1.x); empty when the file is empty."""
    data = files.read(f"{directory}/{instant.file}")
    if data is None:
        raise SourceAccessError(f"hudi table {files.location}: {instant.file} vanished (archived while read)")
    return parse_metadata(data, f"hudi table {files.location}: {instant.file}")


def parse_metadata(data: bytes, what: str = "commit metadata") -> dict[str, Any]:
    if not data.strip():
        return {}
    try:
        if data.startswith(_AVRO_MAGIC):
            import fastavro

            record = next(iter(fastavro.reader(io.BytesIO(data))), None)
            return dict(record) if isinstance(record, dict) else {}
        value = json.loads(data)
    except Exception as exc:  # JSON, Avro or encoding errors alike: the file is not commit metadata
        raise CorruptMetadataError(f"{what} is not Hudi commit metadata") from exc
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"{what} is not Hudi commit metadata")
    return value


def _schema_text(meta: dict[str, Any]) -> str | None:
    extra = meta.get("extraMetadata")
    schema = extra.get("schema") if isinstance(extra, dict) else None
    if not isinstance(schema, str) or not schema.strip():
        return None
    try:
        return json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return schema


def instant_snapshot(instant: Instant, meta: dict[str, Any]) -> SnapshotInfo:
    """A completed instant and its commit metadata as lakehook reads it (schema id left to the caller)."""
    operation = meta.get("operationType")
    if isinstance(operation, str) and operation and operation.upper() != "UNKNOWN":
        kind = operation.upper()
    elif instant.planned_as == "clustering":
        kind = "CLUSTER"
    elif instant.planned_as == "compaction":
        kind = "COMPACT"
    elif instant.planned_as == "logcompaction":
        kind = "LOG_COMPACT"
    else:
        kind = instant.action.upper()
    inserts = deletes = 0
    counted = False
    stats = meta.get("partitionToWriteStats")
    if isinstance(stats, dict):
        for partition in stats.values():
            for stat in partition if isinstance(partition, list) else []:
                if isinstance(stat, dict):
                    counted = True
                    inserts += _int(stat.get("numInserts"))
                    deletes += _int(stat.get("numDeletes"))
    extra = meta.get("extraMetadata")
    extra = extra if isinstance(extra, dict) else {}
    watermark = next((w for k in WATERMARK_KEYS if (w := _optional_int(extra.get(k))) is not None), None)
    return SnapshotInfo(
        snapshot_id=instant.instant,
        sequence_number=instant.completed,
        commit_time=instant_millis(instant.completed),
        commit_kind=kind,
        watermark=watermark if watermark is not None and watermark >= 0 else None,
        delta_record_count=inserts - deletes if counted and changes_data(kind) else None,
    )


def instant_millis(instant: int) -> int:
    """An instant time (``yyyyMMddHHmmss[SSS]``) as epoch milliseconds, read as UTC."""
    text = str(instant)
    try:
        moment = datetime.strptime(text[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return 0
    millis = int(text[14:17].ljust(3, "0")) if len(text) > 14 else 0
    return int(moment.timestamp() * 1000) + millis


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _optional_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
