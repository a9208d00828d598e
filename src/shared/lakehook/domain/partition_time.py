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

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from lakehook.domain.coverage import Span
from lakehook.domain.partition_rules import Grain, parse_time_value
from lakehook.domain.partitions import parse_partition_key
from lakehook.domain.time import MAX_ISO_MS, validate_timezone

DEFAULT_PARTITION_TIMEZONE = "UTC"


def validate_partition_timezone(value: str) -> str:
    """An IANA time zone name (``Europe/Berlin``), else ValueError."""
    return validate_timezone(value, "partitionTimezone")


def _period_end(start: datetime, grain: Grain) -> datetime | None:
    """The (naive, wall-clock) end of the period of ``grain`` starting at ``start``; None past what datetime holds
    (the last hour, day, month or year of 9999)."""
    try:
        if grain is Grain.HOUR:
            return start + timedelta(hours=1)
        if grain is Grain.DAY:
            return start + timedelta(days=1)
        if grain is Grain.MONTH:
            return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        return start.replace(year=start.year + 1)
    except (ValueError, OverflowError):  # replace() raises the one, adding a timedelta the other
        return None


_EPOCH = datetime(1970, 1, 1)
_FIRST_MS = (datetime(1, 1, 1) - _EPOCH) // timedelta(milliseconds=1)  # 0001-01-01T00:00:00Z
_LAST_WALL = datetime(9999, 12, 31, 23, 59, 59, 999000)  # the last wall-clock millisecond datetime holds


def _instant(wall: datetime, zone: ZoneInfo) -> int:
    """A wall-clock time in ``zone`` as epoch ms, by arithmetic: one that is an instant before year 1 or after 9999
    in UTC (``0001-01-01T00:00`` east of UTC) is no datetime, but is a number."""
    offset = wall.replace(tzinfo=zone).utcoffset() or timedelta(0)
    return (wall - _EPOCH - offset) // timedelta(milliseconds=1)


def value_span(value: str, timezone: str = DEFAULT_PARTITION_TIMEZONE) -> Span | None:
    """The instants one value names in ``timezone``, or None when it is no time value (or names no instant there).
    A span is cut to the instants lakehook can show, 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z (the end of
    9999 is that last instant: ``dt=9999-12-31``, the open end of a zipper table's rows, is a day like another)."""
    parsed = parse_time_value(value)
    if parsed is None:
        return None
    grain, start = parsed
    zone = ZoneInfo(timezone)
    end = _period_end(start, grain)
    last = _instant(end, zone) if end is not None else _instant(_LAST_WALL, zone) + 1  # 10000-01-01T00:00 there
    first, last = max(_instant(start, zone), _FIRST_MS), min(last, MAX_ISO_MS)
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
