"""HudiSnapshotSource: the completed commits on a Hudi table's timeline, read from ``.hoodie/`` directly.

A Hudi table's versions are the completed instants of its active timeline that a query can read at:
``commit``, ``deltacommit`` and ``replacecommit``. ``clean``, ``rollback``, ``indexing`` … instants are
table services that produce no readable version and are not snapshots.

- Where the timeline is: ``hoodie.properties`` says, as hudi-rs's ``TimelineBuilder`` reads it. Timeline
  layout 1 (table versions 6 and 7, Hudi 0.x) keeps ``.hoodie/<instant>.<action>`` with JSON commit metadata;
  layout 2 (``hoodie.timeline.layout.version`` 2, the default from table version 8, Hudi 1.x) keeps
  ``.hoodie/<hoodie.timeline.path>/<instant>_<completion>.<action>`` (default ``timeline``) with Avro commit
  metadata (read with fastavro, which the lakehouse layer already carries) and the archived LSM timeline in
  its ``history/``. Hudi's 0.x→1.x upgrade (``SevenToEightUpgradeHandler``) first creates the new timeline
  directory, then rewrites each instant into it and deletes the old file, and rewrites ``hoodie.properties``
  last. So a layout-1 listing that shows the new directory is a table being (or just) upgraded: the
  properties are read again, both directories are listed and merged (the rewritten copy wins), and once
  the properties say layout 2 only the new directory is listed. A layout-2 timeline that lists empty
  reads the properties again too (a downgrade moves it back).
- Order is the timeline's: the completion time (1.x; the instant time on 0.x, which records none), the
  event's ``sequenceNumber``. The version (snapshot id) is the instant time, ``yyyyMMddHHmmssSSS`` as a
  number. Polls read the versions completed after the cursor's commit, so a commit of a concurrent 1.x
  writer that completes after a later instant was read is still found (on 0.x it is not).
- Instant times carry no zone: Hudi writes them in UTC when ``hoodie.table.timeline.timezone`` is ``UTC``,
  else (``LOCAL``, Hudi's default) in the writer's local zone, which the asset source's ``timeZone`` names
  (default UTC). Commit times (epoch ms) read them in that zone.
- A version dated after the poller's clock (a writer whose clock is ahead, or a wrong ``timeZone``) is held
  back until the clock reaches it: taking it would move the cursor past every commit the correct clocks
  write until then, and they would never be read. More than a few minutes ahead, it is named in the batch's
  warnings (kept in the poll status). A cursor itself dated after the clock (a poller whose clock was
  ahead took such an instant) reads the active timeline again: what was taken comes back DUPLICATE.
- A version whose time cannot be a date (month 13, hour 25) is not read either: as a number it sorts above the
  commits after it, and taking it would hide them all. It is named in the batch's ``blockers`` (the source is
  BLOCKED while the timeline holds it). A cursor on such an instant (taken before lakehook refused them) reads the
  active timeline again, as one in the future does. Hudi's reserved instants before any date (``00000000000000``
  and its bootstrap instants) are dated the epoch, as ever.
- The commit kind is the metadata's ``operationType`` (``INSERT``, ``UPSERT``, ``DELETE``,
  ``INSERT_OVERWRITE``, ``COMPACT``, ``CLUSTER`` …); without one, a ``replacecommit`` whose plan was
  a clustering is ``CLUSTER`` and a ``commit`` planned as a compaction is ``COMPACT``, else the action.
- Record counts, for commits that change data: ``numInserts - numDeletes`` over the write stats, less, for
  a commit that replaces file groups (``partitionToReplaceFileIds``: ``INSERT_OVERWRITE``,
  ``INSERT_OVERWRITE_TABLE``, ``DELETE_PARTITION``), the rows those file groups held. They are counted from
  the write stats of the active timeline before it (a base file's ``numWrites`` is its rows; a log file adds
  ``numInserts - numDeletes``); a replaced file group written before the oldest active instant makes the
  delta unknown. ``INSERT_OVERWRITE_TABLE`` also gives the total: the rows it wrote (``numWrites``).
- ``schemaId`` is the instant time of the commit that introduced the writer schema (``extraMetadata.schema``)
  the commit carries, so it only grows and a schema change gives a new id.
- The pointer is the newest completed instant in order (and the held ones): one listing of the timeline
  directory, whose length Hudi's archival bounds (older instants move to the archived timeline).
- The ``hudi`` (hudi-rs) binding is not used here: it is ~136 MB unzipped and needs pyarrow, which does
  not fit beside the other formats (see docs/packaging.md); the tests check this reader against it.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.table_files import TableFiles, TableFilesCache
from lakehook.domain.assets import AssetSource
from lakehook.domain.confirmation import trigger_key_in
from lakehook.domain.partitions import PartitionKeyError, TouchedPartitions, path_partition_key
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap, SnapshotInfo, mark_schema_changes
from lakehook.domain.time import ms_to_iso, now_ms
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
FUTURE_WARNING_MS = 5 * 60_000  # a held instant further ahead than this is named in the poll status
_COMPLETED = re.compile(r"^(?P<instant>\d{14,17})(?:_(?P<completion>\d{14,17}))?\.(?P<action>[a-z]+)$")
_AVRO_MAGIC = b"Obj\x01"
_RECENT = 64
_BASE_FILE = re.compile(r"\.(parquet|orc|hfile|lance)$")


@dataclass(frozen=True)
class Instant:
    """A completed instant on the timeline: instant time, completion time (1.x), action, its file, and its plan."""

    instant: int
    action: str
    file: str
    completion: int | None = None
    planned_as: str | None = None  # "compaction" / "clustering" when the requested file says so
    directory: str = HOODIE  # the timeline directory its file is in

    @property
    def completed(self) -> int:
        """When it completed: the completion time (1.x), else the instant time (0.x records no completion)."""
        return self.completion or self.instant


@dataclass(frozen=True)
class Layout:
    """What ``hoodie.properties`` says about the timeline: where it is, and the zone of its instant times."""

    table_version: int
    layout_two: bool
    timeline_path: str = "timeline"
    utc: bool | None = None  # hoodie.table.timeline.timezone: True UTC, False LOCAL, None unset (Hudi: LOCAL)
    partition_fields: tuple[str, ...] = ()  # hoodie.table.partition.fields, in order (a custom key generator's
    # "field:TYPE" entries name the field before the colon)
    url_encoded: bool = False  # hoodie.datasource.write.partitionpath.urlencode: paths escaped as Hive escapes

    @property
    def directory(self) -> str:
        """The active timeline's directory: ``.hoodie`` (layout 1) or ``.hoodie/<hoodie.timeline.path>``."""
        return f"{HOODIE}/{self.timeline_path}" if self.layout_two else HOODIE

    @property
    def upgraded_directory(self) -> str:
        """Where a 0.x→1.x upgrade moves the timeline (``.hoodie/timeline``)."""
        return f"{HOODIE}/{self.timeline_path}"

    def zone(self, source: AssetSource) -> tzinfo:
        """The zone instant times are written in: UTC when the table says so, else the writer's (``timeZone``)."""
        if self.utc or not source.time_zone:
            return UTC
        return ZoneInfo(source.time_zone)

    @classmethod
    def of(cls, properties: dict[str, str]) -> Layout:
        """As hudi-rs's ``TimelineBuilder``: layout version as written, else 2 from table version 8 on."""
        version = _optional_int(properties.get("hoodie.table.version")) or 0
        written = _optional_int(properties.get("hoodie.timeline.layout.version"))
        layout = written if written is not None else (2 if version >= 8 else 1)
        zone = properties.get("hoodie.table.timeline.timezone", "").strip().upper()
        path = properties.get("hoodie.timeline.path", "").strip().strip("/") or "timeline"
        fields = properties.get("hoodie.table.partition.fields", "")
        return cls(
            table_version=version,
            layout_two=layout >= 2 and version >= 8,
            timeline_path=path,
            utc=True if zone == "UTC" else False if zone == "LOCAL" else None,
            partition_fields=tuple(f.split(":", 1)[0].strip() for f in fields.split(",") if f.split(":", 1)[0].strip()),
            url_encoded=properties.get("hoodie.datasource.write.partitionpath.urlencode", "").lower() == "true",
        )


@dataclass(frozen=True)
class _Timeline:
    """A table's completed versions in timeline order, and those held back for being dated in the future."""

    layout: Layout
    zone: tzinfo
    ordered: tuple[Instant, ...]  # by (completed, instant)
    held: tuple[Instant, ...] = ()
    warnings: tuple[str, ...] = ()
    now: int = 0  # the clock the split was made by
    blockers: tuple[str, ...] = ()  # the versions held because their time cannot be a date


def _archived_gap(cursor: SnapshotCursor, timeline: _Timeline) -> SnapshotGap | None:
    """The gap when the cursor's instant was archived (neither active nor held, older than the oldest active one):
    what came between it and the oldest active instant is unknown. None otherwise, and from the beginning."""
    instants = timeline.ordered
    known = {i.instant for i in (*instants, *timeline.held)}
    oldest = min((i.instant for i in instants), default=None)
    beginning = cursor.snapshot_id == 0
    if not beginning and oldest is not None and cursor.snapshot_id not in known and cursor.snapshot_id < oldest:
        return SnapshotGap(after_snapshot_id=cursor.snapshot_id, resumed_at_snapshot_id=oldest, missed=None)
    return None


class HudiSnapshotSource(SnapshotSource):
    """Reads the completed commits of a Hudi table (0.x and 1.x timelines) at a local path or under ``s3://…``."""

    def __init__(
        self,
        resolver: CredentialResolver,
        cache_ttl_seconds: float = 900.0,
        read_concurrency: int = 8,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._files = TableFilesCache(resolver, cache_ttl_seconds)
        self._read_concurrency = read_concurrency
        self._clock = clock
        self._layouts: dict[str, Layout] = {}  # table location → what hoodie.properties said last
        self._recent: OrderedDict[tuple[str, str], _Timeline] = OrderedDict()
        self._schemas: OrderedDict[tuple[str, int], str | None] = OrderedDict()  # (location, instant) → schema
        self._lock = threading.Lock()

    # --- the port ---------------------------------------------------------------------------

    def pointer(self, source: AssetSource) -> str:
        key, files = self._files.files(source)
        try:
            timeline = self._timeline(files, source)
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
                timeline = self._timeline(files, source)
            return self._batch(files, timeline, cursor, pointer, limit)
        except SourceAccessError:
            self._files.evict(key)
            raise

    # --- the timeline -------------------------------------------------------------------------

    def _layout(self, files: TableFiles, fresh: bool = False) -> Layout:
        layout = None if fresh else self._layouts.get(files.location)
        if layout is None:
            data = files.read(PROPERTIES)
            if data is None:
                raise TableNotFoundError(f"hudi table {files.location} does not exist (no {PROPERTIES})")
            layout = self._layouts[files.location] = Layout.of(parse_properties(data))
        return layout

    def _timeline(self, files: TableFiles, source: AssetSource) -> _Timeline:
        layout = self._layout(files)
        if layout.layout_two:
            instants = _completed_versions(files.list(layout.directory), layout.directory)
            if not instants:  # a new table, or one downgraded back to layout 1: ask the properties again
                again = self._layout(files, fresh=True)
                if not again.layout_two:
                    return self._timeline(files, source)
        else:
            names, folders = files.entries(HOODIE)
            instants = _completed_versions(names, HOODIE)
            if layout.timeline_path in folders:  # an upgrade to 1.x has begun (or just finished)
                layout = self._layout(files, fresh=True)
                moved = _completed_versions(files.list(layout.upgraded_directory), layout.upgraded_directory)
                if not layout.layout_two:  # still a 0.x timeline, in instant order, until the properties say 1.x
                    moved = tuple(replace(i, completion=None) for i in moved)
                instants = _merged(instants, moved)
        return self._split(layout, layout.zone(source), instants)

    def _split(self, layout: Layout, zone: tzinfo, instants: Iterable[Instant]) -> _Timeline:
        """The versions in timeline order, holding back those dated after the clock (see the module doc)."""
        now = self._clock()
        ordered: list[Instant] = []
        held: list[Instant] = []
        warnings: list[str] = []
        blockers: list[str] = []
        for instant in sorted(instants, key=_order):
            at = dated_millis(instant.completed, zone)
            if at is None:
                held.append(instant)
                blockers.append(
                    f"instant {instant.instant} ({instant.action}, {instant.file}) has a time that cannot be a date: "
                    f"it is not read, so that it does not hide the commits after it; a writer wrote a wrong instant "
                    f"time (remove or roll back that instant with Hudi's tools)"
                )
                continue
            if at <= now:
                ordered.append(instant)
                continue
            held.append(instant)
            if at - now > FUTURE_WARNING_MS:
                warnings.append(
                    f"instant {instant.instant} ({instant.action}) is dated {ms_to_iso(at)}, "
                    f"{_duration(at - now)} ahead of the poller's clock: it is held until then so that it does "
                    f"not hide the commits written before; a writer's clock is ahead, or its instant times "
                    f"are not in {getattr(zone, 'key', 'UTC')} (the asset source's timeZone, and "
                    f"hoodie.table.timeline.timezone)"
                )
        return _Timeline(layout, zone, tuple(ordered), tuple(held), tuple(warnings), now, tuple(blockers))

    def _batch(
        self, files: TableFiles, timeline: _Timeline, cursor: SnapshotCursor | None, pointer: str, limit: int
    ) -> SnapshotBatch:
        instants = timeline.ordered
        gap: SnapshotGap | None = None
        if limit <= 0:
            new: tuple[Instant, ...] = ()
            after: tuple[Instant, ...] = ()
        elif cursor is None:
            new = after = instants[-limit:]
        elif _dated_after(cursor, timeline):
            # a cursor in the future (taken by a poller whose clock was ahead, or before future-dated
            # instants were held): every commit before it may be unread; read the active timeline again
            # (what was taken comes back DUPLICATE)
            after = instants
            new = after[:limit]
        else:
            after = _after(instants, cursor)
            new = after[:limit]
            gap = _archived_gap(cursor, timeline)
        metadata = self._read_many(files, new)
        schema_text, schema_id = self._previous_schema(files, timeline, cursor, new)
        previous_id = schema_id
        infos: list[SnapshotInfo] = []
        for instant, meta in zip(new, metadata, strict=True):
            text = _schema_text(meta)
            if text is not None and text != schema_text:
                schema_text, schema_id = text, instant.instant
            replaced = self._replaced_rows(files, timeline, instant, meta)
            info = instant_snapshot(instant, meta, timeline.zone, replaced)
            partitions = touched_partitions(meta, timeline.layout)
            infos.append(info.model_copy(update={"schema_id": schema_id, "partitions": partitions}))
            self._remember_schema(files.location, instant.instant, schema_text)  # the schema in force after it
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes(infos, previous_id),
            latest_snapshot_id=instants[-1].instant if instants else None,
            oldest_retained_snapshot_id=gap.resumed_at_snapshot_id if gap is not None else None,
            gap=gap,
            complete=limit > 0 and len(new) == len(after),
            warnings=timeline.warnings,
            blockers=timeline.blockers,
        )

    def _replaced_rows(self, files: TableFiles, timeline: _Timeline, instant: Instant, meta: dict[str, Any]) -> int:
        """The rows of the file groups the commit replaces (0 when it replaces none), -1 when not known."""
        replaced = _replaced_file_ids(meta)
        if not replaced:
            return 0
        before = tuple(i for i in timeline.ordered if _order(i) < _order(instant))
        rows = file_group_rows(self._read_many(files, before))
        counts = [rows.get(file_id) for file_id in replaced]
        return -1 if any(c is None for c in counts) else sum(c or 0 for c in counts)

    def _previous_schema(
        self, files: TableFiles, timeline: _Timeline, cursor: SnapshotCursor | None, new: tuple[Instant, ...]
    ) -> tuple[str | None, int | None]:
        """The schema in force before the first new commit, and its id.

        With a cursor: the schema of the commit before (cached in a warm poller, else one read) and the
        cursor's schema id. On a first look: read back while the schema stays the same (the active timeline
        bounds it), so the id is the commit that introduced it, or the oldest active one carrying it.
        """
        first = _order(new[0]) if new else (0, 0)
        before = [i for i in timeline.ordered if _order(i) < first]
        if not before:
            return None, None
        text = self._schema_of(files, before[-1])
        if cursor is not None:
            return text, cursor.schema_id if cursor.snapshot_id == before[-1].instant else None
        schema_id = before[-1].instant if text is not None else None
        for older in reversed(before[:-1]):
            if text is None or self._schema_of(files, older) != text:
                break
            schema_id = older.instant
        return text, schema_id

    def _schema_of(self, files: TableFiles, instant: Instant) -> str | None:
        with self._lock:
            if (files.location, instant.instant) in self._schemas:
                return self._schemas[(files.location, instant.instant)]
        text = _schema_text(_metadata(files, instant))
        self._remember_schema(files.location, instant.instant, text)
        return text

    def _remember_schema(self, location: str, instant: int, text: str | None) -> None:
        with self._lock:
            self._schemas[(location, instant)] = text
            while len(self._schemas) > _RECENT:
                self._schemas.popitem(last=False)

    def _read_many(self, files: TableFiles, instants: tuple[Instant, ...]) -> list[dict[str, Any]]:
        if len(instants) <= 1 or self._read_concurrency <= 1:
            return [_metadata(files, i) for i in instants]
        with ThreadPoolExecutor(max_workers=min(self._read_concurrency, len(instants))) as pool:
            return list(pool.map(lambda i: _metadata(files, i), instants))


def _order(instant: Instant) -> tuple[int, int]:
    """The timeline's order: completion time (1.x; the instant time on 0.x), then instant time."""
    return (instant.completed, instant.instant)


def _duration(ms: int) -> str:
    hours, rest = divmod(ms // 60_000, 60)
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if days else f"{hours}h {rest}m" if hours else f"{rest}m"


def _pointer_of(timeline: _Timeline) -> str:
    """When the newest version in order completed ("" when the table has none yet), and what is held back.

    It moves with every completed commit, also one whose instant is older than an already completed one
    (1.x concurrent writers), one written while a future-dated instant is held, and when the clock
    reaches a held one."""
    newest = str(timeline.ordered[-1].completed) if timeline.ordered else ""
    if not timeline.held:
        return newest
    return f"{newest}+{len(timeline.held)}@{max(i.completed for i in timeline.held)}"


def _after(instants: tuple[Instant, ...], cursor: SnapshotCursor) -> tuple[Instant, ...]:
    """The versions after the cursor's commit, in timeline order.

    A cursor's ``sequenceNumber`` is its commit's completion time; a cursor taken on a 0.x timeline (whose
    ``sequenceNumber`` is its instant time) or without one (a targeted fill) compares instant times, so a
    cursor taken before an upgrade resumes right after its commit, whatever completion time the upgrade gave
    the commits before it.
    """
    done = cursor.sequence_number
    if done is None or done == cursor.snapshot_id != 0:
        return tuple(sorted((i for i in instants if i.instant > cursor.snapshot_id), key=_order))
    return tuple(sorted((i for i in instants if i.completed > done), key=_order))


def _dated_after(cursor: SnapshotCursor, timeline: _Timeline) -> bool:
    """Whether the cursor's commit is dated after the clock, or cannot be dated (by its order: completion, or 0.x
    instant time)."""
    order = cursor.sequence_number or cursor.snapshot_id
    if order <= 0:
        return False
    at = dated_millis(order, timeline.zone)
    return at is None or at > timeline.now


def _merged(old: tuple[Instant, ...], moved: tuple[Instant, ...]) -> tuple[Instant, ...]:
    """A timeline mid-upgrade: one instant per instant time, the rewritten (1.x) copy where there are both."""
    by_instant = {i.instant: i for i in old}
    by_instant.update({i.instant: i for i in moved})
    return tuple(sorted(by_instant.values(), key=lambda i: i.instant))


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


def _completed_versions(names: list[str], directory: str = HOODIE) -> tuple[Instant, ...]:
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
                directory=directory,
            )
        )
    return tuple(sorted(found, key=lambda i: i.instant))


def _metadata(files: TableFiles, instant: Instant) -> dict[str, Any]:
    """An instant's commit metadata: JSON (0.x) or an Avro container file (1.x); empty when the file is empty."""
    data = files.read(f"{instant.directory}/{instant.file}")
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


def _write_stats(meta: dict[str, Any]) -> list[dict[str, Any]]:
    stats = meta.get("partitionToWriteStats")
    if not isinstance(stats, dict):
        return []
    return [s for p in stats.values() if isinstance(p, list) for s in p if isinstance(s, dict)]


def _replaced_file_ids(meta: dict[str, Any]) -> list[str]:
    """The file groups a replacecommit replaces (``partitionToReplaceFileIds``)."""
    replaced = meta.get("partitionToReplaceFileIds")
    if not isinstance(replaced, dict):
        return []
    return [f for ids in replaced.values() if isinstance(ids, list) for f in ids if isinstance(f, str)]


def touched_partitions(meta: dict[str, Any], layout: Layout) -> TouchedPartitions | None:
    """The partitions a commit wrote (``partitionToWriteStats``) or replaced (``partitionToReplaceFileIds``).

    A partition path is Hive-style (``city=sf``) or bare values (``sf``, named by the table's partition fields);
    the empty path is an unpartitioned table's, which records none. Hudi writes a null value as
    ``__HIVE_DEFAULT_PARTITION__`` (before 0.12: ``default``, which reads as the value ``default``)."""
    paths: set[str] = set()
    for name in ("partitionToWriteStats", "partitionToReplaceFileIds"):
        written = meta.get(name)
        if isinstance(written, dict):
            paths.update(str(p) for p in written)
    if not layout.partition_fields and all(not p.strip("/") for p in paths):
        return None
    keys: set[str] = set()
    for path in paths:
        try:
            key = path_partition_key(path, layout.partition_fields, escaped=layout.url_encoded)
        except PartitionKeyError:
            continue
        if key is not None:
            keys.add(key)
    if not keys and not layout.partition_fields:
        return None
    return TouchedPartitions.read(keys)


def file_group_rows(metadata: Iterable[dict[str, Any]]) -> dict[str, int | None]:
    """The rows each file group holds after these commits (in timeline order), from their write stats.

    A base file holds the rows written to it (``numWrites``); a log file adds ``numInserts - numDeletes``
    to its file group's base (unknown when the base was written before these commits); a replaced file
    group holds none.
    """
    rows: dict[str, int | None] = {}
    for meta in metadata:
        for stat in _write_stats(meta):
            file_id = stat.get("fileId")
            if not isinstance(file_id, str):
                continue
            path = str(stat.get("path") or "")
            name = path.rsplit("/", 1)[-1]
            if _BASE_FILE.search(name) and not name.startswith("."):
                rows[file_id] = _int(stat.get("numWrites"))
            else:
                base = rows.get(file_id)
                rows[file_id] = (
                    None if base is None else base + _int(stat.get("numInserts")) - _int(stat.get("numDeletes"))
                )
        for file_id in _replaced_file_ids(meta):
            rows[file_id] = 0
    return rows


def instant_snapshot(
    instant: Instant, meta: dict[str, Any], zone: tzinfo = UTC, replaced_rows: int = 0
) -> SnapshotInfo:
    """A completed instant and its commit metadata as lakehook reads it (schema id left to the caller).

    ``replaced_rows`` are the rows of the file groups it replaces (-1: not known, so neither is its delta).
    """
    kind = _commit_kind(instant, meta)
    stats = _write_stats(meta)
    inserts = sum(_int(s.get("numInserts")) for s in stats)
    deletes = sum(_int(s.get("numDeletes")) for s in stats)
    counted = bool(stats) or bool(_replaced_file_ids(meta))
    delta: int | None = None
    total: int | None = None
    if counted and changes_data(kind) and replaced_rows >= 0:
        delta = inserts - deletes - replaced_rows
    if kind == "INSERT_OVERWRITE_TABLE" and stats:
        total = sum(_int(s.get("numWrites")) for s in stats)  # every file group replaced: what it wrote is all
    extra = meta.get("extraMetadata")
    extra = extra if isinstance(extra, dict) else {}
    return SnapshotInfo(
        snapshot_id=instant.instant,
        sequence_number=instant.completed,
        commit_time=max(instant_millis(instant.completed, zone), 0),
        commit_kind=kind,
        watermark=_watermark(extra),
        total_record_count=total,
        delta_record_count=delta,
        trigger_key=trigger_key_in(extra),
    )


# the commit kind of an instant whose metadata names no operation type, by what its requested file planned
_PLANNED_KINDS = {"clustering": "CLUSTER", "compaction": "COMPACT", "logcompaction": "LOG_COMPACT"}


def _commit_kind(instant: Instant, meta: dict[str, Any]) -> str:
    """The instant's commit kind: its metadata's ``operationType`` (unless ``UNKNOWN``), else what it was planned
    as, else its action."""
    operation = meta.get("operationType")
    if isinstance(operation, str) and operation and operation.upper() != "UNKNOWN":
        return operation.upper()
    return _PLANNED_KINDS.get(instant.planned_as or "") or instant.action.upper()


def _watermark(extra: dict[str, Any]) -> int | None:
    """The first watermark the commit's extra metadata names (by ``WATERMARK_KEYS``' order), if not negative."""
    watermark = next((w for k in WATERMARK_KEYS if (w := _optional_int(extra.get(k))) is not None), None)
    return watermark if watermark is not None and watermark >= 0 else None


def instant_millis(instant: int, zone: tzinfo = UTC) -> int:
    """An instant time (``yyyyMMddHHmmss[SSS]``) as epoch milliseconds, read in ``zone`` (UTC by default); 0 when
    it cannot be a date."""
    found = dated_millis(instant, zone)
    return 0 if found is None else found


def dated_millis(instant: int, zone: tzinfo = UTC) -> int | None:
    """An instant time as epoch milliseconds, None when it cannot be a date (month 13); Hudi's reserved instants
    before any date (fewer than 14 digits as a number: ``00000000000000``, ``00000000000001`` …) are 0."""
    text = str(instant)
    if len(text) < 14:
        return 0
    try:
        moment = datetime.strptime(text[:14], "%Y%m%d%H%M%S").replace(tzinfo=zone)
    except ValueError:
        return None
    millis = int(text[14:17].ljust(3, "0")) if len(text) > 14 else 0
    return int(moment.timestamp()) * 1000 + millis


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _optional_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
