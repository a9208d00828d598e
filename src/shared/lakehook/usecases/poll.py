"""Poll and compensate: read table snapshots and feed them through the same ingest path as a push.

- :class:`PollAsset` polls one table: the format's cheap unchanged check when it has one (Delta: the next
  version's commit file is absent, ``SnapshotSource.unchanged_since``), else a pointer read; only if the table
  moved, the new snapshots since the stored offset, each ingested (a push and a poll of one snapshot are one
  event), then the offset advances by compare-and-set. A poller killed mid-batch re-reads from the old offset
  (already ingested events come back DUPLICATE); two pollers racing ingest each event once, and
  the loser's offset write fails harmlessly.
- :class:`PollAssets` polls a batch, each asset isolated: one broken table gets a poll error and
  exponential backoff in the PollStatusStore and never stops the others. The poll status is
  written only when it changes (an error, a recovery, new snapshots, a gap): an unchanged
  healthy table costs its offset read and its pointer read, and writes nothing.
- :class:`CompensateAsset` / :class:`Compensate` compare a table's actual latest snapshot with the
  asset state and backfill what the state is missing (a lost push, a poller outage). A snapshot younger than
  the compensation's ``grace`` is left to the poll: the poll has not had its turn at it yet, so compensation
  finding it first would be a race, not a miss (and would label it COMPENSATION and count it as missed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from lakehook.domain.assets import AssetRegistration, AssetSource
from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.events import AssetEvent, EventResult, IngestStatus, SourceType
from lakehook.domain.partitions import Chunks
from lakehook.domain.snapshots import (
    OFFSET_KEY,
    POLLER_NAMESPACE,
    BackoffPolicy,
    PollOffset,
    PollRead,
    PollStatus,
    SnapshotCursor,
    SnapshotGap,
    SnapshotInfo,
    UnrecordedPartitions,
    snapshot_event,
    tag_event,
)
from lakehook.domain.time import now_ms
from lakehook.event_metrics import count_results
from lakehook.observability import logger
from lakehook.ports import AssetStore, WatermarkStore
from lakehook.ports.lakehouse import PollStatusStore, SnapshotBatch, SnapshotSource, SnapshotSources
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.poll_hangs import HangWatch

T = TypeVar("T")
R = TypeVar("R")
# what the poll hands the commits it ingested, so outlet commits carrying a trigger key confirm their runs
# (lakehook.usecases.confirmation.ConfirmRuns)
ConfirmCommits = Callable[[str, Sequence[SnapshotInfo]], object]


class MetricName:
    """Metrics of polling and compensation (the compensation names are the RFC's, seed 000 section 6.1)."""

    POLL = "lakehouse_asset_poll_total"
    POLL_FAILED = "lakehouse_asset_poll_failed_total"
    POLL_SNAPSHOT_GAP = "lakehouse_asset_poll_snapshot_gap_total"
    POLL_PARTITION_KEYS_UNRECORDED = "lakehouse_asset_poll_partition_keys_unrecorded_total"
    COMPENSATION_SCAN = "lakehouse_asset_compensation_scan_total"
    COMPENSATION_MISSED = "lakehouse_asset_compensation_missed_events"


class MetricSink(Protocol):
    """Where counts go: Powertools ``Metrics`` fits (``add_metric(name, unit, value)``)."""

    def add_metric(self, name: str, unit: str, value: float) -> Any: ...


class PollOutcome(StrEnum):
    UNCHANGED = "UNCHANGED"  # the pointer is the one the offset finished: nothing else was read
    ADVANCED = "ADVANCED"  # new snapshots or tags were ingested (or none were new) and the offset moved
    RACED = "RACED"  # ingested, but another poller moved the offset first: its offset stands
    BACKING_OFF = "BACKING_OFF"  # skipped: inside the backoff window of earlier failures
    FAILED = "FAILED"  # the table could not be read; recorded in the poll status


NOVEL = (IngestStatus.ACCEPTED, IngestStatus.STALE)


@dataclass(frozen=True)
class PollResult:
    """What one poll of one asset did."""

    asset_key: str
    outcome: PollOutcome
    pointer: str | None = None
    snapshot_ids: tuple[int, ...] = ()
    results: tuple[EventResult, ...] = ()
    gap: SnapshotGap | None = None
    complete: bool = True
    error: str | None = None
    error_kind: str | None = None
    next_attempt_at: int | None = None
    recovered: bool = False  # the table was held back after failing, and read fine this time
    warnings: tuple[str, ...] | None = None  # what the read found wrong without failing; None: not read
    unrecorded: tuple[UnrecordedPartitions, ...] = ()  # snapshots recorded without some keys they touched
    first_commit_ms: int | None = None  # when the first new snapshot was committed (a lost notice shows by it)
    read: PollRead | None = None  # what the read found that the source health is derived from; None: not read

    @property
    def may_change_status(self) -> bool:
        """Whether the poll status may change: a recovery, new snapshots, a gap, or a read of the table (whose warnings
        or blockers may come or go); an unchanged healthy poll writes nothing."""
        return self.recovered or bool(self.snapshot_ids) or self.gap is not None or self.read is not None

    @property
    def accepted(self) -> int:
        return sum(1 for r in self.results if r.status is IngestStatus.ACCEPTED)

    @property
    def duplicates(self) -> int:
        return sum(1 for r in self.results if r.status is IngestStatus.DUPLICATE)


def _source_of(asset: AssetRegistration) -> AssetSource:
    if asset.source is None:
        raise ValidationError(f"asset {asset.asset_key} has no source to poll", field="source")
    return asset.source


def _confirmed_unchanged(source: SnapshotSource, config: AssetSource, offset: PollOffset) -> bool:
    """Whether the format's cheap check (cheaper than the pointer) confirms that nothing was committed after a
    complete offset of a table that is not failing; the pointer is read otherwise."""
    if offset.pointer is None or offset.cursor is None or offset.retry_at is not None:
        return False
    return source.unchanged_since(config, offset.cursor)


def _events(asset_key: str, batch: SnapshotBatch) -> list[tuple[AssetEvent, Chunks]]:
    """Snapshots in commit order, then the new tags (which may name those snapshots); each with the keys its
    snapshot touched past its event's (recorded as part items by ingest)."""
    snapshots = [(snapshot_event(asset_key, s), s.more_partitions) for s in batch.snapshots]
    return snapshots + [(tag_event(asset_key, t), ()) for t in batch.tags]


def _log_batch(key: str, batch: SnapshotBatch) -> None:
    """The batch's warnings and its gap (the offset's successors expired before they were polled) in the log."""
    for warning in batch.warnings:
        logger.warning("poll warning", extra={"asset_key": key, "reason": warning})
    if batch.gap is not None:
        logger.warning(
            "snapshot gap",
            extra={
                "asset_key": key,
                "after_snapshot_id": batch.gap.after_snapshot_id,
                "snapshot_id": batch.gap.resumed_at_snapshot_id,
                "missed": batch.gap.missed,
                "reason": "the offset's successors expired before they were polled",
            },
        )


def _advanced_result(
    key: str,
    pointer: str,
    batch: SnapshotBatch,
    offset: PollOffset,
    results: tuple[EventResult, ...],
    unrecorded: tuple[UnrecordedPartitions, ...],
    stored: bool,
) -> PollResult:
    """The result of a poll that read a batch: ADVANCED, or RACED when another poller stored its offset first."""
    return PollResult(
        key,
        PollOutcome.ADVANCED if stored else PollOutcome.RACED,  # RACED: the winner's offset covers them or more
        pointer=pointer,
        snapshot_ids=tuple(s.snapshot_id for s in batch.snapshots),
        results=results,
        gap=batch.gap,
        complete=batch.complete,
        recovered=offset.retry_at is not None,
        warnings=batch.warnings + _unrecorded_warnings(unrecorded),
        unrecorded=unrecorded,
        first_commit_ms=batch.snapshots[0].commit_time if batch.snapshots else None,
        read=PollRead(
            blockers=batch.blockers + _unrecorded_warnings(unrecorded),
            behind_head=None if batch.complete else batch.latest_snapshot_id,
        ),
    )


class PollAsset:
    """Poll one registered table once (raises the SnapshotSource's errors; PollAssets isolates them).

    ``batch_limit`` bounds the snapshots one poll ingests; the rest follow on the next poll. A
    first poll (no offset yet) ingests the newest ``first_poll_snapshots`` and all tags: history
    before registration is not replayed.
    """

    def __init__(
        self,
        sources: SnapshotSources,
        watermarks: WatermarkStore,
        ingest: IngestEvents,
        *,
        batch_limit: int = 500,
        first_poll_snapshots: int = 1,
        clock: Callable[[], int] = now_ms,
        confirm: ConfirmCommits | None = None,
    ) -> None:
        self._sources = sources
        self._watermarks = watermarks
        self._ingest = ingest
        self._confirm = confirm
        self._batch_limit = batch_limit
        self._first_poll_snapshots = first_poll_snapshots
        self._clock = clock

    def __call__(self, asset: AssetRegistration, now_ms: int | None = None) -> PollResult:
        key = asset.asset_key
        source_config = _source_of(asset)
        source = self._sources(asset.format)
        record = self._watermarks.get(POLLER_NAMESPACE, key, OFFSET_KEY)
        offset = PollOffset.from_value(record.value) if record else PollOffset()
        if not offset.due(self._clock() if now_ms is None else now_ms):
            return PollResult(key, PollOutcome.BACKING_OFF, next_attempt_at=offset.retry_at)
        if _confirmed_unchanged(source, source_config, offset):
            return PollResult(key, PollOutcome.UNCHANGED, pointer=offset.pointer)
        pointer = source.pointer(source_config)
        if offset.unchanged(pointer):
            if offset.retry_at is None:
                return PollResult(key, PollOutcome.UNCHANGED, pointer=pointer)
            self._store_offset(key, offset.model_copy(update={"retry_at": None}), record.version if record else 0)
            return PollResult(key, PollOutcome.UNCHANGED, pointer=pointer, recovered=True)
        limit = self._batch_limit if offset.cursor is not None else self._first_poll_snapshots
        batch = source.snapshots_since(
            source_config, offset.cursor, pointer, limit=limit, known_tags=frozenset(offset.tags)
        )
        _log_batch(key, batch)
        unrecorded = _unrecorded(key, batch, self._clock() if now_ms is None else now_ms)
        results = tuple(
            self._ingest.ingest(event, SourceType.POLL, more_partitions=more) for event, more in _events(key, batch)
        )
        if self._confirm is not None:  # after the ingest: the outlet's new state is in before its run is confirmed
            self._confirm(key, batch.snapshots)
        advanced = offset.advanced(batch.snapshots, pointer, batch.tag_names, batch.complete)
        stored = self._store_offset(key, advanced, record.version if record else 0)
        return _advanced_result(key, pointer, batch, offset, results, unrecorded, stored)

    def hold(self, asset_key: str, retry_at: int) -> None:
        """Hold a failing table back until ``retry_at`` (kept on its offset; a raced write is left to the winner)."""
        record = self._watermarks.get(POLLER_NAMESPACE, asset_key, OFFSET_KEY)
        offset = PollOffset.from_value(record.value) if record else PollOffset()
        self._store_offset(asset_key, offset.model_copy(update={"retry_at": retry_at}), record.version if record else 0)

    def _store_offset(self, asset_key: str, offset: PollOffset, expected_version: int) -> bool:
        """Compare-and-set the offset; False when another poller wrote it first (every event stays durable)."""
        try:
            self._watermarks.put(
                POLLER_NAMESPACE,
                asset_key,
                OFFSET_KEY,
                offset.to_value(),
                self._clock(),
                expected_version=expected_version,
            )
        except ConflictError:
            return False
        return True


class PollAssets:
    """Poll a batch of assets, each isolated, with per-asset status and exponential backoff. ``hang_after_ms``: a
    table's poll still running that long after it started is marked as hanging in its poll status
    (:mod:`lakehook.usecases.poll_hangs`; None: not watched)."""

    def __init__(
        self,
        poll: PollAsset,
        statuses: PollStatusStore,
        *,
        backoff: BackoffPolicy | None = None,
        max_workers: int = 4,
        clock: Callable[[], int] = now_ms,
        metrics: MetricSink | None = None,
        hang_after_ms: int | None = None,
    ) -> None:
        self._poll = poll
        self._statuses = statuses
        self._backoff = backoff or BackoffPolicy()
        self._max_workers = max_workers
        self._clock = clock
        self._metrics = metrics
        self._hang_after_ms = hang_after_ms

    def __call__(self, assets: Sequence[AssetRegistration]) -> list[PollResult]:
        results = _each(assets, self._one, self._max_workers)
        if self._metrics is not None:
            _publish_poll(self._metrics, results)
        return results

    def _one(self, asset: AssetRegistration) -> PollResult:
        now = self._clock()
        outcome: PollResult | Exception
        with HangWatch(self._hang_after_ms, lambda: self._mark_hung(asset, now)) as watch:
            try:
                outcome = self._poll(asset, now)
            except Exception as exc:  # one broken table never stops the others
                outcome = exc
        if isinstance(outcome, Exception):
            return self._failed(asset, now, outcome)
        if outcome.outcome is PollOutcome.BACKING_OFF:
            return outcome
        # A read of the table that moved nothing reads the status only; a poll marked as hanging clears the mark.
        if watch.fired or outcome.may_change_status:
            self._record_success(asset.asset_key, outcome, now, force=watch.fired)
        return outcome

    def _mark_hung(self, asset: AssetRegistration, started_at: int) -> None:
        """The poll that started at ``started_at`` is still running: the status says so, and the table is held on its
        offset until then (already due), so that the next poll to finish, if this one never does, clears the mark."""
        key = asset.asset_key
        status = self._status(key) or PollStatus(asset_key=key)
        logger.warning(
            "poll hangs",
            extra={"asset_key": key, "status": "HUNG", "reason": "the poll has not finished", "started_at": started_at},
        )
        self._save(status.hanging(started_at))
        if asset.source is not None:
            self._hold(key, started_at)

    def _failed(self, asset: AssetRegistration, now: int, exc: Exception) -> PollResult:
        """A poll that raised: its status (failures, backoff) saved, the table held until its next attempt."""
        key = asset.asset_key
        status = self._status(key) or PollStatus(asset_key=key)
        failed = status.failed(now, type(exc).__name__, str(exc), self._backoff)
        logger.warning(
            "poll failed",
            extra={
                "asset_key": key,
                "status": "FAILED",
                "reason": str(exc),
                "error_kind": type(exc).__name__,
                "consecutive_failures": failed.consecutive_failures,
                "next_attempt_at": failed.next_attempt_at,
            },
        )
        self._save(failed)
        if asset.source is not None and failed.next_attempt_at is not None:
            self._hold(key, failed.next_attempt_at)
        return PollResult(
            key,
            PollOutcome.FAILED,
            error=str(exc),
            error_kind=type(exc).__name__,
            next_attempt_at=failed.next_attempt_at,
        )

    def _record_success(self, key: str, result: PollResult, now: int, force: bool = False) -> None:
        status = self._status(key) or PollStatus(asset_key=key)
        warnings = result.warnings if result.warnings is not None else status.warnings
        read = result.read
        changed = warnings != status.warnings or (read is not None and read.blockers != status.blockers)
        changed = changed or force or status.hung_since is not None
        if result.recovered or result.snapshot_ids or result.gap is not None or changed:
            last = result.snapshot_ids[-1] if result.snapshot_ids else None
            unrecorded = result.unrecorded[-1] if result.unrecorded else None
            self._save(status.succeeded(now, last, result.gap, warnings, unrecorded, read))

    def _status(self, asset_key: str) -> PollStatus | None:
        try:
            return self._statuses.get(asset_key)
        except Exception:  # an unreadable status only costs its history: the next write starts it afresh
            logger.exception("poll status unreadable", extra={"asset_key": asset_key})
            return None

    def _hold(self, asset_key: str, retry_at: int) -> None:
        try:
            self._poll.hold(asset_key, retry_at)
        except Exception:  # a lost hold only means the table is tried again at the next tick
            logger.exception("poll hold not saved", extra={"asset_key": asset_key})

    def _save(self, status: PollStatus) -> None:
        try:
            self._statuses.put(status)
        except Exception:  # a lost status write only delays backoff bookkeeping; the poll itself stands
            logger.exception("poll status not saved", extra={"asset_key": status.asset_key})


def _publish_poll(metrics: MetricSink, results: Sequence[PollResult]) -> None:
    polled = [r for r in results if r.outcome is not PollOutcome.BACKING_OFF]
    metrics.add_metric(MetricName.POLL, "Count", len(polled))
    metrics.add_metric(MetricName.POLL_FAILED, "Count", sum(r.outcome is PollOutcome.FAILED for r in results))
    count_results([e for r in results for e in r.results], metrics, log_each=False)  # the polled snapshots and tags
    gaps = [r.gap for r in results if r.gap is not None]
    if gaps:
        metrics.add_metric(MetricName.POLL_SNAPSHOT_GAP, "Count", sum(g.missed or 1 for g in gaps))
    unrecorded = sum(u.count for r in results for u in r.unrecorded)
    if unrecorded:
        metrics.add_metric(MetricName.POLL_PARTITION_KEYS_UNRECORDED, "Count", unrecorded)


def _unrecorded(asset_key: str, batch: SnapshotBatch, now_ms: int) -> tuple[UnrecordedPartitions, ...]:
    """The batch's snapshots with partition keys that could not be recorded (each logged): they are recorded all
    the same, with their other partitions, and polling goes on."""
    found = tuple(u for s in batch.snapshots if (u := UnrecordedPartitions.of(s, now_ms)) is not None)
    for unrecorded in found:
        logger.warning(
            "partition keys not recorded",
            extra={
                "asset_key": asset_key,
                "snapshot_id": unrecorded.snapshot_id,
                "count": unrecorded.count,
                "reason": unrecorded.describe(),
            },
        )
    return found


def _unrecorded_warnings(found: Sequence[UnrecordedPartitions]) -> tuple[str, ...]:
    """One poll status warning for the newest such snapshot of a poll, saying how many more there were."""
    if not found:
        return ()
    more = len(found) - 1
    also = f" (and {more} earlier snapshot{'s' if more > 1 else ''} of this poll)" if more else ""
    return (found[-1].describe() + also,)


# --- compensation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompensationResult:
    """One asset's compensation scan: how far the state was behind the table, and what was backfilled."""

    asset_key: str
    scanned: bool
    state_snapshot_id: int | None = None
    latest_snapshot_id: int | None = None
    results: tuple[EventResult, ...] = ()
    gap: SnapshotGap | None = None
    error: str | None = None
    error_kind: str | None = None

    @property
    def missed_events(self) -> int:
        """Events the store had not recorded before this scan (the ones a push or a poll lost)."""
        return sum(1 for r in self.results if r.status in NOVEL)


@dataclass(frozen=True)
class CompensationReport:
    results: list[CompensationResult] = field(default_factory=list)

    @property
    def scan_total(self) -> int:
        return sum(1 for r in self.results if r.scanned)

    @property
    def missed_events(self) -> int:
        return sum(r.missed_events for r in self.results)


class CompensateAsset:
    """Backfill one table's snapshots and tags newer than its asset state, through the ingest path.

    The cursor is the state's latest snapshot (not the poller's offset), so a snapshot the state
    never saw is found even when the offset moved past it. With no state at all, the newest
    ``first_scan_snapshots`` are taken, as a first poll does.

    A scheduled scan takes only the snapshots committed at least ``grace_ms`` ago (and the tags on them):
    a younger one is the poll's to find (a push's, if one comes), and the next scan takes it if neither did.
    So what compensation records, labelled COMPENSATION and counted as missed, is what push and poll both
    missed. A fill (:meth:`fill`) reads everything it is asked for: a rule waits on that gap.
    """

    def __init__(
        self,
        sources: SnapshotSources,
        store: AssetStore,
        ingest: IngestEvents,
        *,
        limit: int = 1000,
        first_scan_snapshots: int = 1,
        grace_ms: int = 0,
        clock: Callable[[], int] = now_ms,
        confirm: ConfirmCommits | None = None,
    ) -> None:
        self._sources = sources
        self._store = store
        self._ingest = ingest
        self._confirm = confirm
        self._limit = limit
        self._first_scan_snapshots = first_scan_snapshots
        self._grace_ms = grace_ms
        self._clock = clock

    def fill(self, asset: AssetRegistration, after: dict[str, int]) -> CompensationResult:
        """Read the table from ``after`` (the snapshot before a gap an EACH_VERSION rule waits on) on, whatever
        the state or the poller's offset say, and ingest what it holds: a missing snapshot that still exists is
        recorded (STALE for the state, logged for the rule); one that expired never comes and its gap settles."""
        order = after["order"] if asset.asset_key.startswith("iceberg://") else None
        return self(asset, SnapshotCursor(snapshot_id=after["snapshotId"], sequence_number=order))

    def __call__(self, asset: AssetRegistration, after: SnapshotCursor | None = None) -> CompensationResult:
        key = asset.asset_key
        source_config = _source_of(asset)
        source = self._sources(asset.format)
        state = self._store.get_state(key)
        cursor = after
        if cursor is None and state is not None and state.latest_snapshot_id is not None:
            cursor = SnapshotCursor(
                snapshot_id=state.latest_snapshot_id,
                schema_id=state.latest_schema_id,
                sequence_number=state.latest_sequence_number,
            )
        known = frozenset(state.tags) if state is not None else frozenset()
        if after is None and cursor is not None and source.unchanged_since(source_config, cursor):
            return CompensationResult(key, True, cursor.snapshot_id, cursor.snapshot_id)  # the state is the table's
        pointer = source.pointer(source_config)
        limit = self._limit if cursor is not None else self._first_scan_snapshots
        batch = source.snapshots_since(source_config, cursor, pointer, limit=limit, known_tags=known)
        if after is None:
            batch = settled(batch, self._clock() - self._grace_ms)
        results = tuple(
            self._ingest.ingest(event, SourceType.COMPENSATION, more_partitions=more)
            for event, more in _events(key, batch)
        )
        if self._confirm is not None:
            self._confirm(key, batch.snapshots)
        result = CompensationResult(
            key,
            True,
            state_snapshot_id=cursor.snapshot_id if cursor else None,
            latest_snapshot_id=batch.latest_snapshot_id,
            results=results,
            gap=batch.gap,
        )
        if result.missed_events:
            logger.warning(
                "compensation backfilled",
                extra={
                    "asset_key": key,
                    "snapshot_id": batch.latest_snapshot_id,
                    "missed": result.missed_events,
                    "reason": "the asset state was behind the table",
                },
            )
        return result


def settled(batch: SnapshotBatch, committed_by_ms: int) -> SnapshotBatch:
    """The batch up to its first snapshot committed after ``committed_by_ms`` (that one and the later ones are
    left for the next read), with only the tags that name none of those left."""
    young = next((i for i, s in enumerate(batch.snapshots) if s.commit_time > committed_by_ms), None)
    if young is None:
        return batch
    left = {s.snapshot_id for s in batch.snapshots[young:]}
    tags = [t for t in batch.tags if t.snapshot_id not in left]
    return replace(batch, snapshots=batch.snapshots[:young], tags=tags)


class Compensate:
    """The scheduled compensator's use case: scan a batch of assets, each isolated, and count."""

    def __init__(self, compensate: CompensateAsset, *, max_workers: int = 4, metrics: MetricSink | None = None) -> None:
        self._compensate = compensate
        self._max_workers = max_workers
        self._metrics = metrics

    def __call__(self, assets: Sequence[AssetRegistration]) -> CompensationReport:
        report = CompensationReport(_each(assets, self._one, self._max_workers))
        if self._metrics is not None:
            self._metrics.add_metric(MetricName.COMPENSATION_SCAN, "Count", report.scan_total)
            self._metrics.add_metric(MetricName.COMPENSATION_MISSED, "Count", report.missed_events)
            count_results([e for r in report.results for e in r.results], self._metrics, log_each=False)
        return report

    def fill(self, asset: AssetRegistration, after: dict[str, int]) -> CompensationResult:
        """:meth:`CompensateAsset.fill`, its events counted as the scan's are."""
        result = self._compensate.fill(asset, after)
        if self._metrics is not None:
            count_results(result.results, self._metrics, log_each=False)
        return result

    def _one(self, asset: AssetRegistration) -> CompensationResult:
        try:
            return self._compensate(asset)
        except Exception as exc:  # one broken table never stops the scan of the others
            logger.warning(
                "compensation failed",
                extra={"asset_key": asset.asset_key, "reason": str(exc), "error_kind": type(exc).__name__},
            )
            return CompensationResult(asset.asset_key, False, error=str(exc), error_kind=type(exc).__name__)


def _each(items: Sequence[T], work: Callable[[T], R], max_workers: int) -> list[R]:
    """``work`` on every item, in order; in a thread pool when more than one worker is allowed."""
    if max_workers <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        return list(pool.map(work, items))
