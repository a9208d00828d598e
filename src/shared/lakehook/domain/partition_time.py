"""The time a partition stands for: ``dt=2026-12-06`` is ``[2026-12-06T00:00, 2026-12-07T00:00)`` in the group's
``partitionTimezone`` (UTC unless it names one). A partitioned group's coverage member needs that span covered
(:mod:`lakehook.domain.group_steps`, ``CoversPartition``), and a freshness ``expectedBy`` expects a partition's run by
the first deadline after it ends (:mod:`lakehook.domain.freshness`). Pure.

A partition's values that are time values (``parse_time_value``: ``2026``, ``2026-12``, ``2026-12-06``,
``2026-12-06-10``) each name a period; the partition's span is where they all hold (``dt=2026-12-06/hr=2026-12-06-10``
is that hour). A partition with no time value (``region=eu``), or whose time values never hold at once
(``dt=2026-12-06/hr=2026-12-07-01``, or an hour a daylight-saving change skips), has no span.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from lakehook.domain.coverage import Span
from lakehook.domain.partition_rules import Grain, parse_time_value
from lakehook.domain.partitions import parse_partition_key
from lakehook.domain.time import validate_timezone

DEFAULT_PARTITION_TIMEZONE = "UTC"


def validate_partition_timezone(value: str) -> str:
    """An IANA time zone name (``Europe/Berlin``), else ValueError."""
    return validate_timezone(value, "partitionTimezone")


def _period_end(start: datetime, grain: Grain) -> datetime:
    """The (naive, wall-clock) end of the period of ``grain`` starting at ``start``."""
    if grain is Grain.HOUR:
        return start + timedelta(hours=1)
    if grain is Grain.DAY:
        return start + timedelta(days=1)
    if grain is Grain.MONTH:
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start.replace(year=start.year + 1)


def _instant(wall: datetime, zone: ZoneInfo) -> int:
    """A wall-clock time in ``zone`` as epoch ms (year 10000, the end of 9999, as its first instant)."""
    return int(wall.replace(tzinfo=zone).astimezone(UTC).timestamp() * 1000)


def value_span(value: str, timezone: str = DEFAULT_PARTITION_TIMEZONE) -> Span | None:
    """The instants one value names in ``timezone``, or None when it is no time value (or names no instant there)."""
    parsed = parse_time_value(value)
    if parsed is None:
        return None
    grain, start = parsed
    zone = ZoneInfo(timezone)
    try:
        end = _period_end(start, grain)
    except ValueError:  # the year 9999 ends past what datetime holds
        end = datetime(9999, 12, 31, 23, 59, 59, 999000)
    first, last = _instant(start, zone), _instant(end, zone)
    return Span(first, last) if first < last else None


def partition_span(key: str, timezone: str | None = None) -> Span | None:
    """The instants partition ``key`` stands for: where every time value of it holds, in ``timezone`` (default UTC);
    None when it has no time value or they never hold at once."""
    zone = timezone or DEFAULT_PARTITION_TIMEZONE
    spans: list[Span] = []
    for _, value in parse_partition_key(key):
        if value is None or parse_time_value(value) is None:
            continue
        span = value_span(value, zone)
        if span is None:  # a time value naming no instant in the zone (an hour a daylight-saving change skips)
            return None
        spans.append(span)
    if not spans:
        return None
    start, end = max(s.start for s in spans), min(s.end for s in spans)
    return Span(start, end) if start < end else None
