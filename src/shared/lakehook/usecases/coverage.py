"""Coverage of ``[start, end)``: record INTERVAL_COVERED events, answer coverage queries and windows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakehook.domain.coverage import (
    DAY_MS,
    CoverageAnswer,
    Span,
    WindowShape,
    check_query,
    covered_windows,
    newest_covered_window,
)
from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.time import now_ms
from lakehook.ports.coverage import CoverageStore

if TYPE_CHECKING:  # the rules' side (coverage_of_groups); recording an event, on the ingest path, needs none of it
    from lakehook.domain.rules import Group
    from lakehook.domain.triggers import GroupCursor

MAX_QUERY_DAYS = 400


@dataclass(frozen=True)
class CoverageChange:
    """What recording one event did: whether the asset's coverage (and its partition's) grew."""

    asset_key: str
    span: Span
    changed: bool
    partition_key: str | None = None
    partition_changed: bool | None = None


class RecordCoverage:
    """Unite an ``INTERVAL_COVERED`` event's interval into its asset's coverage (the ingest path calls it).

    Idempotent, so it runs again for a duplicate whose record is not settled yet (a redelivery finishes an add
    a crash cut short); a copy of a settled event stops before it.
    The interval joins the asset's coverage; with ``per_partition`` (the default, as a deployed stack's
    ``CoveragePerPartition``) it is also kept under (asset, partition key); without, the key is a label only
    (seed 004: a micro-batch's key).
    """

    def __init__(self, store: CoverageStore, clock: Callable[[], int] = now_ms, per_partition: bool = True) -> None:
        self._store = store
        self._clock = clock
        self._per_partition = per_partition

    def record(self, event: AssetEvent) -> CoverageChange | None:
        """None for events of other types; else what changed."""
        if event.event_type is not EventType.INTERVAL_COVERED or event.interval is None:
            return None
        span = Span(event.interval.start, event.interval.end)
        now = self._clock()
        changed = self._store.add(event.asset_key, span, now)
        partition_changed = None
        if self._per_partition and event.partition_key:
            partition_changed = self._store.add(event.asset_key, span, now, event.partition_key)
        return CoverageChange(event.asset_key, span, changed, event.partition_key, partition_changed)


class QueryCoverage:
    """Answer ``covered`` and the exact ``missing`` gaps, and the windows a coverage condition fires on."""

    def __init__(self, store: CoverageStore, max_query_days: int = MAX_QUERY_DAYS, per_partition: bool = True) -> None:
        self._store = store
        self._max_query_ms = max_query_days * DAY_MS
        self._per_partition = per_partition

    def query(self, asset_key: str, start: int, end: int, partition_key: str | None = None) -> CoverageAnswer:
        """Coverage of ``[start, end)``. Raises ValidationError for an empty or too long range, and for a
        partition's coverage where it is not recorded (it would answer "nothing covered", which is not so)."""
        check_query(start, end, self._max_query_ms)
        if partition_key is not None and not self._per_partition:
            raise ValidationError(
                "partitionKey: this stack does not keep coverage per partition (CoveragePerPartition is false): "
                "ask for the asset's coverage without partitionKey",
                field="partitionKey",
            )
        merged = self._store.spans(asset_key, start, end, partition_key)
        return CoverageAnswer.of(asset_key, merged, start, end, partition_key)

    def newest_window(
        self,
        asset_key: str,
        windows: WindowShape,
        now: int,
        lookback_ms: int | None = None,
        partition_key: str | None = None,
    ) -> Span | None:
        """The newest fully covered, closed aligned window within ``lookback_ms`` before ``now``."""
        lookback = lookback_ms if lookback_ms is not None else 3 * windows.size_ms + windows.lateness_ms
        merged = self._store.spans(asset_key, max(0, now - lookback), now, partition_key)
        return newest_covered_window(merged, windows, now)

    def windows_after(
        self,
        asset_key: str,
        windows: WindowShape,
        now: int,
        after_end: int,
        limit: int = 100,
        partition_key: str | None = None,
    ) -> list[Span]:
        """Fully covered, closed windows starting at or after ``after_end`` (the last triggered window's end)."""
        merged = self._store.spans(asset_key, after_end, now, partition_key)
        return covered_windows(merged, windows, now, after_end=after_end, limit=limit)


def coverage_of_groups(
    store: CoverageStore | None,
    groups: list[tuple[Group, GroupCursor | None]],
    now: int,
    max_days: int = MAX_QUERY_DAYS,
) -> dict[str, list[Span]]:
    """The merged intervals the coverage members of these groups are evaluated on, per asset: from the
    earliest window any of them still needs (the last triggered window's end) up to ``now``."""
    from lakehook.domain.evaluation import coverage_from

    starts: dict[str, int] = {}
    for group, cursor in groups:
        for member in group.members:
            spec = member.condition.coverage
            if spec is not None:
                start = max(coverage_from(spec, cursor, now), now - max_days * DAY_MS)
                starts[member.asset_key] = min(starts.get(member.asset_key, start), start)
    if store is None or not starts:
        return {}
    return {key: store.spans(key, start, now) for key, start in starts.items() if start < now}


def coverage_of_partitions(store: CoverageStore | None, group: Group, partitions: list[str]) -> dict[str, list[Span]]:
    """The merged intervals a partitioned group's coverage members are evaluated on for ``partitions``, per asset:
    each partition's window is its own time span (:func:`lakehook.domain.partition_time.partition_span`), so one read
    per coverage member from the oldest span's start to the newest one's end (the day segments between holding
    coverage are its items); nothing for partitions without a span."""
    from lakehook.domain.partition_time import partition_span

    spans = [s for p in partitions if (s := partition_span(p, group.partition_timezone)) is not None]
    members = dict.fromkeys(m.asset_key for m in group.members if m.condition.coverage is not None)
    if store is None or not spans or not members:
        return {}
    start, end = min(s.start for s in spans), max(s.end for s in spans)
    return {key: store.spans(key, start, end) for key in members}
