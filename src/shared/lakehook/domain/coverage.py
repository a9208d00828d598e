"""Coverage of ``[start, end)`` intervals: merged spans, the exact gaps, aligned windows, day segments.

An ``INTERVAL_COVERED`` event says "the asset holds the data of ``[start, end)``". Coverage is
the union of those intervals: overlapping and adjacent spans unite, and a re-processed interval
that supersedes older ones (one hour replacing twelve 5-minute slices) unites with them too, so
the answer never depends on arrival order. Every function here keeps spans *merged*: sorted,
disjoint and non-adjacent; all bounds are epoch milliseconds, starts inclusive, ends exclusive.

Storage is segmented by UTC day: an interval crossing midnight is split, each day is one item
whose spans are varint-delta encoded (about 6 bytes per 5-minute fragment), so a year of
fragmented 5-minute coverage is 365 items of at most ~1.7 KB, and one add rewrites one small item.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import NamedTuple, Protocol

from lakehook.domain.errors import LakehookError, ValidationError

SEGMENT_MS = 86_400_000  # one UTC day per stored segment
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
# A segment item must stay far below DynamoDB's 400 KB. 5-minute fragments need under 1 KB a day and
# one-second fragments with one-second gaps 173 KB; anything finer is refused, not stored.
MAX_SEGMENT_BYTES = 256 * 1024


class CoverageTooFragmentedError(LakehookError):
    """One day of an asset's coverage would hold more fragments than a segment item can store."""


class CorruptSegmentError(LakehookError):
    """A stored coverage segment does not decode to merged spans inside its day."""


class Span(NamedTuple):
    """A half-open interval ``[start, end)`` in epoch milliseconds."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


# --- merged spans ------------------------------------------------------------------------------


def merge(spans: Iterable[tuple[int, int]]) -> list[Span]:
    """Sort and unite: overlapping and adjacent spans become one; empty spans are dropped."""
    ordered = sorted((int(s), int(e)) for s, e in spans if e > s)
    merged: list[Span] = []
    for start, end in ordered:
        if merged and start <= merged[-1].end:
            if end > merged[-1].end:
                merged[-1] = Span(merged[-1].start, end)
        else:
            merged.append(Span(start, end))
    return merged


def unite(merged: Sequence[Span], new: tuple[int, int]) -> list[Span]:
    """``merged`` with ``new`` added: O(log n) to find the neighbours, one list copy to build the result."""
    start, end = new
    if end <= start:
        return list(merged)
    ends = [s.end for s in merged]
    starts = [s.start for s in merged]
    first = bisect_left(ends, start)  # first span ending at or after start: it touches or follows
    last = bisect_right(starts, end)  # spans before this start at or before end: they touch or precede
    if first < last:
        start = min(start, merged[first].start)
        end = max(end, merged[last - 1].end)
    return [*merged[:first], Span(start, end), *merged[last:]]


def clip(merged: Sequence[Span], start: int, end: int) -> list[Span]:
    """The parts of the merged spans inside ``[start, end)``."""
    if end <= start:
        return []
    first = bisect_right([s.end for s in merged], start)  # spans ending at or before start are outside
    last = bisect_left([s.start for s in merged], end, lo=first)  # spans starting at or after end are outside
    out = list(merged[first:last])
    if out:  # only the two edge spans can stick out
        if out[0].start < start:
            out[0] = Span(start, out[0].end)
        if out[-1].end > end:
            out[-1] = Span(out[-1].start, end)
    return out


def join_sorted(spans: Iterable[Span]) -> list[Span]:
    """Merged spans of consecutive days, in order, with the spans that meet at midnight united. O(n)."""
    out: list[Span] = []
    for span in spans:
        if out and span.start <= out[-1].end:
            if span.end > out[-1].end:
                out[-1] = Span(out[-1].start, span.end)
        else:
            out.append(span)
    return out


def missing(merged: Sequence[Span], start: int, end: int) -> list[Span]:
    """The exact gaps of ``[start, end)``: every sub-interval no span covers, in order."""
    gaps: list[Span] = []
    cursor = start
    for span in clip(merged, start, end):
        if span.start > cursor:
            gaps.append(Span(cursor, span.start))
        cursor = span.end
    if cursor < end:
        gaps.append(Span(cursor, end))
    return gaps


def is_covered(merged: Sequence[Span], start: int, end: int) -> bool:
    """Whether one merged span holds all of ``[start, end)`` (an empty query is covered)."""
    if end <= start:
        return True
    index = bisect_right([s.start for s in merged], start) - 1
    return index >= 0 and merged[index].end >= end


# --- aligned windows (a rule's coverage condition) -----------------------------------------------


class WindowShape(Protocol):
    """What an aligned window needs: its size and allowed lateness (a rule's WindowSpec has both)."""

    @property
    def size_ms(self) -> int: ...

    @property
    def lateness_ms(self) -> int: ...


@dataclass(frozen=True)
class AlignedWindows:
    """Windows ``[k * size, (k + 1) * size)`` aligned to the epoch in UTC (hours, days).

    ``lateness_ms`` holds a fully covered window back until that long after its end, so a late
    re-processed interval for it lands before the one trigger the window gets.
    """

    size_ms: int
    lateness_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise ValueError("window size must be positive")
        if self.lateness_ms < 0:
            raise ValueError("allowed lateness must not be negative")

    @classmethod
    def hourly(cls, lateness_ms: int = 0) -> AlignedWindows:
        return cls(HOUR_MS, lateness_ms)

    @classmethod
    def daily(cls, lateness_ms: int = 0) -> AlignedWindows:
        return cls(DAY_MS, lateness_ms)


def newest_covered_window(merged: Sequence[Span], windows: WindowShape, now_ms: int) -> Span | None:
    """The newest aligned window that is fully covered and past its allowed lateness, or None.

    The resolver pins it (the window goes into the trigger key), so each window triggers once.
    Walks the spans from the newest: O(1) when the newest span holds a whole window.
    """
    size = windows.size_ms
    horizon = now_ms - windows.lateness_ms  # a window may close only once its end is at or before this
    for span in reversed(merged):
        if span.start >= horizon:
            continue
        end = (min(span.end, horizon) // size) * size
        if end - size >= span.start:
            return Span(end - size, end)
    return None


def covered_windows(
    merged: Sequence[Span], windows: WindowShape, now_ms: int, *, after_end: int | None = None, limit: int = 100
) -> list[Span]:
    """Fully covered, closed windows, oldest first, starting at or after ``after_end`` (the last one's end).

    For rules that want every window rather than the newest; at most ``limit`` windows.
    """
    size = windows.size_ms
    horizon = now_ms - windows.lateness_ms
    found: list[Span] = []
    for span in merged:
        first = -(-span.start // size) * size  # the first aligned boundary at or after the span's start
        if after_end is not None:
            first = max(first, -(-after_end // size) * size)
        last_end = (min(span.end, horizon) // size) * size
        for start in range(first, last_end - size + 1, size):
            found.append(Span(start, start + size))
            if len(found) >= limit:
                return found
    return found


# --- day segments (how coverage is stored) --------------------------------------------------------


def segment_start(instant_ms: int) -> int:
    """The start of the UTC day that holds the instant."""
    return (instant_ms // SEGMENT_MS) * SEGMENT_MS


def segment_label(start_ms: int) -> str:
    """``YYYY-MM-DD`` of a segment, as its sort key ends (lexical order is time order)."""
    return datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def segment_of_label(label: str) -> int:
    """The start of the segment a ``YYYY-MM-DD`` label names."""
    moment = datetime.strptime(label, "%Y-%m-%d").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1000


def split_by_segment(span: tuple[int, int]) -> list[tuple[int, Span]]:
    """The span cut at UTC midnights: ``(segment start, piece)`` for each day it touches."""
    start, end = span
    pieces: list[tuple[int, Span]] = []
    while start < end:
        day = segment_start(start)
        piece_end = min(end, day + SEGMENT_MS)
        pieces.append((day, Span(start, piece_end)))
        start = piece_end
    return pieces


def segments_between(start: int, end: int) -> list[int]:
    """The starts of the UTC days that ``[start, end)`` touches."""
    if end <= start:
        return []
    return list(range(segment_start(start), segment_start(end - 1) + 1, SEGMENT_MS))


def encode_segment(spans: Sequence[Span], day_start: int) -> bytes:
    """Merged spans of one day as unsigned LEB128 varints: (gap since the previous end, length) pairs.

    Raises CoverageTooFragmentedError when the encoding would exceed MAX_SEGMENT_BYTES.
    """
    out = bytearray()
    cursor = day_start
    for span in spans:
        if span.start < cursor or span.end <= span.start or span.end > day_start + SEGMENT_MS:
            raise ValueError(f"spans must be merged and inside the day starting at {day_start}")
        _varint(out, span.start - cursor)
        _varint(out, span.end - span.start)
        cursor = span.end
    if len(out) > MAX_SEGMENT_BYTES:
        raise CoverageTooFragmentedError(
            f"the day {segment_label(day_start)} would hold {len(spans)} separate intervals "
            f"({len(out)} bytes encoded, the limit is {MAX_SEGMENT_BYTES}); send coarser intervals"
        )
    return bytes(out)


def decode_segment(data: bytes, day_start: int) -> list[Span]:
    """The inverse of :func:`encode_segment`; raises CorruptSegmentError on bytes it did not write."""
    values = list(_read_varints(data))
    if len(values) % 2:
        raise CorruptSegmentError(f"coverage segment {segment_label(day_start)} has an odd number of values")
    spans: list[Span] = []
    cursor = day_start
    for index in range(0, len(values), 2):
        gap, length = values[index], values[index + 1]
        if length <= 0 or (spans and gap <= 0):
            raise CorruptSegmentError(f"coverage segment {segment_label(day_start)} is not merged")
        start = cursor + gap
        spans.append(Span(start, start + length))
        cursor = start + length
    if cursor > day_start + SEGMENT_MS:
        raise CorruptSegmentError(f"coverage segment {segment_label(day_start)} runs past its day")
    return spans


def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_varints(data: bytes) -> Iterator[int]:
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise CorruptSegmentError("coverage segment holds a varint longer than 64 bits")
        else:
            yield value
            value = shift = 0
    if shift:
        raise CorruptSegmentError("coverage segment ends inside a varint")


# --- queries ----------------------------------------------------------------------------------------


RATIO_PLACES = 4  # the covered ratio is reported to this many decimal places


def covered_ratio(covered: int, total: int) -> float:
    """``covered / total`` rounded to :data:`RATIO_PLACES` places, computed exactly (integer milliseconds as a
    fraction, rounded half to even) before it becomes a float; an empty query (``total`` 0) is fully covered."""
    if total <= 0:
        return 1.0
    return float(round(Fraction(covered, total), RATIO_PLACES))


@dataclass(frozen=True)
class CoverageAnswer:
    """``covered`` and the exact ``missing`` gaps of a query ``[start, end)``, and how much of it is covered."""

    asset_key: str
    start: int
    end: int
    missing: list[Span]
    partition_key: str | None = None

    @property
    def covered(self) -> bool:
        return not self.missing

    @property
    def total_ms(self) -> int:
        """The length of ``[start, end)``."""
        return max(0, self.end - self.start)

    @property
    def covered_ms(self) -> int:
        """How many milliseconds of ``[start, end)`` are covered: all of it but the gaps."""
        return self.total_ms - sum(gap.length for gap in self.missing)

    @property
    def ratio(self) -> float:
        """The covered share of ``[start, end)``: covered ms / total ms, to :data:`RATIO_PLACES` places."""
        return covered_ratio(self.covered_ms, self.total_ms)

    @classmethod
    def of(
        cls, asset_key: str, merged: Sequence[Span], start: int, end: int, partition_key: str | None = None
    ) -> CoverageAnswer:
        return cls(asset_key, start, end, missing(merged, start, end), partition_key)


def check_query(start: int, end: int, max_span_ms: int) -> None:
    """Refuse an empty, reversed or too long query, naming the parameter."""
    if end <= start:
        raise ValidationError("end must be after start", field="end")
    if end - start > max_span_ms:
        raise ValidationError(f"the query spans more than {max_span_ms // DAY_MS} days; ask for less", field="end")
