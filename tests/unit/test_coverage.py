"""Coverage of [start, end): merging, exact gaps, aligned windows and day segments, against brute force."""

from __future__ import annotations

import time
from itertools import pairwise

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lakehook.domain.coverage import (
    DAY_MS,
    HOUR_MS,
    MAX_SEGMENT_BYTES,
    AlignedWindows,
    CorruptSegmentError,
    CoverageAnswer,
    CoverageTooFragmentedError,
    Span,
    check_query,
    clip,
    covered_ratio,
    covered_windows,
    decode_segment,
    encode_segment,
    is_covered,
    join_sorted,
    merge,
    missing,
    newest_covered_window,
    segment_label,
    segment_of_label,
    segments_between,
    split_by_segment,
    unite,
)
from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.time import parse_instant_ms
from lakehook.usecases.coverage import QueryCoverage, RecordCoverage
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.hypothesis_profiles import examples

FIVE_MIN = 300_000
JUNE = parse_instant_ms("2025-06-01T00:00:00Z")
ASSET = "s3://spool/orders"


def at(text: str) -> int:
    return parse_instant_ms(text)


# --- a brute-force model: every covered instant, one by one --------------------------------------------


def points(intervals: list[tuple[int, int]]) -> set[int]:
    return {t for s, e in intervals for t in range(s, e)}


def brute_gaps(intervals: list[tuple[int, int]], start: int, end: int) -> list[Span]:
    covered = points(intervals)
    gaps: list[Span] = []
    for t in range(start, end):
        if t in covered:
            continue
        if gaps and gaps[-1].end == t:
            gaps[-1] = Span(gaps[-1].start, t + 1)
        else:
            gaps.append(Span(t, t + 1))
    return gaps


intervals_st = st.lists(
    st.tuples(st.integers(0, 120), st.integers(1, 40)).map(lambda p: (p[0], p[0] + p[1])), max_size=25
)


@settings(max_examples=examples(400), deadline=None)
@given(intervals=intervals_st, query=st.tuples(st.integers(0, 170), st.integers(1, 60)), data=st.data())
def test_gaps_match_a_brute_force_model_in_any_arrival_order(
    intervals: list[tuple[int, int]], query: tuple[int, int], data: st.DataObject
) -> None:
    start, end = query[0], query[0] + query[1]
    expected = brute_gaps(intervals, start, end)
    # GIVEN the intervals arrive in an arbitrary order, one at a time (overlaps, adjacency, repeats)
    arrival = data.draw(st.permutations(intervals))
    merged: list[Span] = []
    for interval in arrival:
        merged = unite(merged, interval)
    # THEN the incremental merge equals the batch merge, and the gaps are exactly the brute-force ones
    assert merged == merge(intervals)
    assert missing(merged, start, end) == expected
    assert is_covered(merged, start, end) == (not expected)
    # and the merged spans are disjoint, sorted and never adjacent (adjacency unites)
    assert all(a.end < b.start for a, b in pairwise(merged))
    assert points([(s.start, s.end) for s in merged]) == points(intervals)


def test_reprocessed_hour_supersedes_twelve_five_minute_slices() -> None:
    hour = at("2025-06-01T10:00:00Z")
    slices = [(hour + i * FIVE_MIN, hour + (i + 1) * FIVE_MIN) for i in range(12) if i != 7]
    merged = merge(slices)
    assert missing(merged, hour, hour + HOUR_MS) == [Span(hour + 7 * FIVE_MIN, hour + 8 * FIVE_MIN)]
    # the re-processed hour arrives late and unites with what was there: the gap is gone
    merged = unite(merged, (hour, hour + HOUR_MS))
    assert merged == [Span(hour, hour + HOUR_MS)]
    # and an old slice arriving after it changes nothing
    assert unite(merged, slices[3]) == merged


def test_the_seed_example_reports_one_gap_in_june() -> None:
    # GIVEN June covered in 5-minute slices except 03:10-03:25 on the 14th
    gap = (at("2025-06-14T03:10:00Z"), at("2025-06-14T03:25:00Z"))
    july = at("2025-07-01T00:00:00Z")
    slices = [(t, t + FIVE_MIN) for t in range(JUNE, july, FIVE_MIN) if not gap[0] <= t < gap[1]]
    merged = merge(reversed(slices))
    assert merged == [Span(JUNE, gap[0]), Span(gap[1], july)]
    assert missing(merged, JUNE, july) == [Span(*gap)]


# --- aligned windows ------------------------------------------------------------------------------------


def brute_windows(intervals: list[tuple[int, int]], size: int, lateness: int, now: int) -> list[Span]:
    covered = points(intervals)
    return [
        Span(k * size, (k + 1) * size)
        for k in range(0, now // size + 1)
        if (k + 1) * size + lateness <= now and all(t in covered for t in range(k * size, (k + 1) * size))
    ]


@settings(max_examples=examples(300), deadline=None)
@given(
    intervals=intervals_st,
    size=st.integers(1, 30),
    lateness=st.integers(0, 20),
    now=st.integers(0, 200),
    after=st.integers(0, 200),
)
# the newest span still open (it starts at the horizon) and an older one holding a closed window
@example(intervals=[(0, 10), (30, 40)], size=5, lateness=0, now=30, after=0)
# the lateness holds back the windows ending in the last 10 ms
@example(intervals=[(0, 40)], size=5, lateness=10, now=40, after=0)
def test_windows_match_a_brute_force_model(
    intervals: list[tuple[int, int]], size: int, lateness: int, now: int, after: int
) -> None:
    merged = merge(intervals)
    windows = AlignedWindows(size, lateness)
    expected = brute_windows(intervals, size, lateness, now)
    assert newest_covered_window(merged, windows, now) == (expected[-1] if expected else None)
    assert covered_windows(merged, windows, now, limit=10_000) == expected
    assert covered_windows(merged, windows, now, after_end=after, limit=10_000) == [
        w for w in expected if w.start >= after
    ]


def test_one_trigger_per_hour_waits_for_the_whole_hour_and_the_lateness() -> None:
    ten = at("2025-06-01T10:00:00Z")
    windows = AlignedWindows.hourly(lateness_ms=10 * 60_000)
    merged = merge([(ten, ten + 55 * 60_000)])
    assert newest_covered_window(merged, windows, now_ms=ten + 2 * HOUR_MS) is None  # 10:55-11:00 missing
    merged = unite(merged, (ten + 55 * 60_000, ten + HOUR_MS + 5 * 60_000))
    assert newest_covered_window(merged, windows, now_ms=ten + HOUR_MS + 9 * 60_000) is None  # lateness not over
    assert newest_covered_window(merged, windows, now_ms=ten + HOUR_MS + 10 * 60_000) == Span(ten, ten + HOUR_MS)


def test_hourly_and_daily_windows_close_at_their_end_unless_a_lateness_holds_them() -> None:
    assert newest_covered_window(merge([(0, HOUR_MS)]), AlignedWindows.hourly(), HOUR_MS) == Span(0, HOUR_MS)
    day = merge([(0, DAY_MS)])
    assert newest_covered_window(day, AlignedWindows.daily(), DAY_MS) == Span(0, DAY_MS)
    late = AlignedWindows.daily(lateness_ms=HOUR_MS)
    assert newest_covered_window(day, late, DAY_MS + HOUR_MS - 1) is None
    assert newest_covered_window(day, late, DAY_MS + HOUR_MS) == Span(0, DAY_MS)


def test_at_most_100_covered_windows_are_listed_oldest_first_unless_told() -> None:
    merged = merge([(0, 150 * HOUR_MS)])
    found = covered_windows(merged, AlignedWindows.hourly(), 150 * HOUR_MS)
    assert found == [Span(h * HOUR_MS, (h + 1) * HOUR_MS) for h in range(100)]
    assert len(covered_windows(merged, AlignedWindows.hourly(), 150 * HOUR_MS, limit=150)) == 150


def test_daily_windows_are_utc_days() -> None:
    merged = merge([(at("2025-06-01T00:00:00Z"), at("2025-06-03T12:00:00Z"))])
    found = covered_windows(merged, AlignedWindows.daily(), now_ms=at("2025-06-10T00:00:00Z"))
    assert found == [
        Span(at("2025-06-01T00:00:00Z"), at("2025-06-02T00:00:00Z")),
        Span(at("2025-06-02T00:00:00Z"), at("2025-06-03T00:00:00Z")),
    ]


# --- day segments ---------------------------------------------------------------------------------------


def test_an_interval_crossing_midnight_is_split_per_day() -> None:
    start, end = at("2025-06-01T23:55:00Z"), at("2025-06-03T00:05:00Z")
    pieces = split_by_segment((start, end))
    assert [segment_label(day) for day, _ in pieces] == ["2025-06-01", "2025-06-02", "2025-06-03"]
    assert merge(p for _, p in pieces) == [Span(start, end)]
    assert segments_between(start, end) == [day for day, _ in pieces]
    assert segment_of_label("2025-06-02") == pieces[1][0]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, DAY_MS - 1), st.integers(1, 3 * HOUR_MS)), max_size=40))
def test_segments_round_trip(raw: list[tuple[int, int]]) -> None:
    day = JUNE
    spans = merge((day + s, min(day + s + length, day + DAY_MS)) for s, length in raw)
    assert decode_segment(encode_segment(spans, day), day) == spans


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4 * DAY_MS), st.integers(1, 2 * DAY_MS)), max_size=30))
def test_day_segments_read_back_in_order_unite_at_midnight(raw: list[tuple[int, int]]) -> None:
    intervals = [(JUNE + s, JUNE + s + length) for s, length in raw]
    by_day: dict[int, list[Span]] = {}
    for interval in intervals:
        for day, piece in split_by_segment(interval):
            by_day.setdefault(day, []).append(piece)
    stored = {day: encode_segment(merge(pieces), day) for day, pieces in by_day.items()}
    read_back = [span for day in sorted(stored) for span in decode_segment(stored[day], day)]
    assert join_sorted(read_back) == merge(intervals)


def test_a_fragmented_day_of_five_minute_slices_is_small() -> None:
    spans = merge((t, t + FIVE_MIN) for t in range(JUNE, JUNE + DAY_MS, 2 * FIVE_MIN))  # every other slice
    assert len(spans) == 144
    assert len(encode_segment(spans, JUNE)) <= 6 * 144


def test_a_day_too_fragmented_to_store_is_refused() -> None:
    spans = [Span(JUNE + t, JUNE + t + 1) for t in range(0, 2 * (MAX_SEGMENT_BYTES // 2 + 10), 2)]
    with pytest.raises(CoverageTooFragmentedError):
        encode_segment(spans, JUNE)


def test_bytes_that_are_not_a_segment_are_refused() -> None:
    with pytest.raises(CorruptSegmentError):
        decode_segment(b"\x80", JUNE)  # ends inside a varint
    with pytest.raises(CorruptSegmentError):
        decode_segment(b"\x00\x05\x00\x05", JUNE)  # adjacent spans: not merged


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x00\x05\x01", "coverage segment 2025-06-01 has an odd number of values"),
        (b"\x00\x00", "coverage segment 2025-06-01 is not merged"),  # an empty span
        (b"\x00\x05\x00\x05", "coverage segment 2025-06-01 is not merged"),
    ],
)
def test_a_corrupt_segment_is_refused_naming_its_day_and_why(data: bytes, why: str) -> None:
    with pytest.raises(CorruptSegmentError) as refused:
        decode_segment(data, JUNE)
    assert str(refused.value) == why


def test_spans_one_millisecond_apart_round_trip() -> None:
    spans = [Span(JUNE, JUNE + 5), Span(JUNE + 6, JUNE + 10)]
    assert decode_segment(encode_segment(spans, JUNE), JUNE) == spans
    wide = [Span(JUNE + 128, JUNE + 256), Span(JUNE + 385, JUNE + 514)]  # gaps and lengths of 128 and 129
    assert encode_segment(wide, JUNE) == bytes([0x80, 0x01, 0x80, 0x01, 0x81, 0x01, 0x81, 0x01])
    assert decode_segment(encode_segment(wide, JUNE), JUNE) == wide


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff" * 10 + b"\x01", "coverage segment holds a varint longer than 64 bits"),
        (b"\x00\x85", "coverage segment ends inside a varint"),
        (bytes([0x00, 0x80, 0x8E, 0xCE, 0x29]), "coverage segment 2025-06-01 runs past its day"),  # 86,400,001 ms
    ],
)
def test_a_segment_that_cannot_be_read_says_why(data: bytes, why: str) -> None:
    with pytest.raises(CorruptSegmentError) as refused:
        decode_segment(data, JUNE)
    assert str(refused.value) == why


@pytest.mark.parametrize("spans", [[Span(JUNE + 5, JUNE + 5)], [Span(JUNE, JUNE + DAY_MS + 1)], [Span(JUNE - 1, JUNE)]])
def test_only_merged_spans_inside_their_day_are_encoded(spans: list[Span]) -> None:
    with pytest.raises(ValueError, match=f"^spans must be merged and inside the day starting at {JUNE}$"):
        encode_segment(spans, JUNE)


def test_an_empty_query_is_fully_covered_and_an_answer_names_its_asset_and_partition() -> None:
    assert covered_ratio(0, 0) == 1.0 and covered_ratio(1, 3) == round(1 / 3, 4)
    answer = CoverageAnswer.of(ASSET, merge([(0, 10)]), 0, 20, "dt=1")
    assert (answer.asset_key, answer.partition_key, answer.missing) == (ASSET, "dt=1", [Span(10, 20)])
    assert merge([(5, 5), (7, 6)]) == []  # empty or reversed intervals cover nothing


def test_an_empty_interval_adds_nothing_and_an_empty_query_is_covered() -> None:
    merged = merge([(10, 20)])
    assert unite(merged, (30, 30)) == merged == unite(merged, (40, 35))
    assert is_covered(merged, 50, 50) and is_covered([], 7, 7)
    assert not is_covered(merged, 50, 51)


@pytest.mark.parametrize(
    ("size", "lateness", "why"),
    [(0, 0, "window size must be positive"), (HOUR_MS, -1, "allowed lateness must not be negative")],
)
def test_a_window_needs_a_positive_size_and_no_negative_lateness(size: int, lateness: int, why: str) -> None:
    with pytest.raises(ValueError, match=f"^{why}$"):
        AlignedWindows(size, lateness)


# --- the use cases over the in-memory store --------------------------------------------------------------


def covered_event(start: str, end: str, partition: str | None = None) -> AssetEvent:
    return AssetEvent.model_validate(
        {
            "eventType": "INTERVAL_COVERED",
            "assetKey": ASSET,
            "interval": {"start": start, "end": end},
            "partitionKey": partition,
        }
    )


def test_record_then_query_reports_the_exact_gaps() -> None:
    store = InMemoryCoverageStore()
    record, query = RecordCoverage(store, clock=lambda: 1), QueryCoverage(store)
    first = record.record(covered_event("2025-06-14T03:00:00Z", "2025-06-14T03:10:00Z"))
    record.record(covered_event("2025-06-14T03:25:00Z", "2025-06-14T04:00:00Z"))
    again = record.record(covered_event("2025-06-14T03:00:00Z", "2025-06-14T03:05:00Z"))
    assert first is not None and first.changed
    assert again is not None and not again.changed  # already covered: nothing new
    answer = query.query(ASSET, at("2025-06-14T03:00:00Z"), at("2025-06-14T04:00:00Z"))
    assert not answer.covered
    assert answer.missing == [Span(at("2025-06-14T03:10:00Z"), at("2025-06-14T03:25:00Z"))]


def test_other_event_types_record_nothing() -> None:
    store = InMemoryCoverageStore()
    event = AssetEvent(event_type=EventType.SNAPSHOT_COMMITTED, asset_key="paimon://lake/db/t", snapshot_id=1)
    assert RecordCoverage(store).record(event) is None
    assert store.merged == {}


def test_partition_keys_are_labels_unless_kept_per_partition() -> None:
    store = InMemoryCoverageStore()
    RecordCoverage(store, per_partition=False).record(
        covered_event("2025-06-01T10:05:00Z", "2025-06-01T10:10:00Z", "2025-06-01T10:05")
    )
    assert list(store.merged) == [(ASSET, None)]
    per_partition = RecordCoverage(store, per_partition=True)
    change = per_partition.record(covered_event("2025-06-01T10:00:00Z", "2025-06-01T10:05:00Z", "region=eu"))
    assert change is not None and change.partition_changed
    eu = QueryCoverage(store).query(ASSET, at("2025-06-01T10:00:00Z"), at("2025-06-01T10:10:00Z"), "region=eu")
    assert eu.missing == [Span(at("2025-06-01T10:05:00Z"), at("2025-06-01T10:10:00Z"))]
    whole = QueryCoverage(store).query(ASSET, at("2025-06-01T10:00:00Z"), at("2025-06-01T10:10:00Z"))
    assert whole.covered


def test_a_days_label_names_its_utc_midnight_whatever_the_local_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert segment_of_label("2025-06-01") == JUNE and segment_label(JUNE) == "2025-06-01"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_days_a_range_touches_end_before_its_end() -> None:
    noon = JUNE + DAY_MS // 2
    assert segments_between(noon, noon) == []  # empty
    assert segments_between(noon, JUNE + DAY_MS) == [JUNE]  # [start, end): the next midnight is not touched
    assert segments_between(JUNE, JUNE + DAY_MS + 1) == [JUNE, JUNE + DAY_MS]


def test_a_query_is_refused_unless_it_ends_after_its_start_within_the_bound() -> None:
    month = 31 * DAY_MS
    check_query(JUNE, JUNE + 1, month)
    check_query(JUNE, JUNE + month, month)  # exactly the bound
    for start, end, message in (
        (JUNE, JUNE, "end must be after start"),
        (JUNE, JUNE + month + 1, "the query spans more than 31 days; ask for less"),
    ):
        with pytest.raises(ValidationError) as refused:
            check_query(start, end, month)
        assert (str(refused.value), refused.value.field) == (message, "end")


def test_queries_must_be_ordered_and_bounded() -> None:
    query = QueryCoverage(InMemoryCoverageStore(), max_query_days=31)
    with pytest.raises(ValidationError) as reversed_range:
        query.query(ASSET, JUNE + 10, JUNE)
    assert reversed_range.value.field == "end"
    with pytest.raises(ValidationError):
        query.query(ASSET, JUNE, JUNE + 32 * DAY_MS)


def test_newest_window_through_the_use_case() -> None:
    store = InMemoryCoverageStore()
    ten = at("2025-06-01T10:00:00Z")
    store.add(ASSET, Span(ten - HOUR_MS, ten + HOUR_MS), 1)
    query = QueryCoverage(store)
    assert query.newest_window(ASSET, AlignedWindows.hourly(), now=ten + 2 * HOUR_MS) == Span(ten, ten + HOUR_MS)
    assert query.windows_after(ASSET, AlignedWindows.hourly(), now=ten + 2 * HOUR_MS, after_end=ten) == [
        Span(ten, ten + HOUR_MS)
    ]


sorted_spans = st.lists(
    st.tuples(st.integers(0, 60), st.integers(1, 12)).map(lambda s: Span(s[0], s[0] + s[1])), max_size=12
).map(sorted)


@given(spans=sorted_spans)
def test_joining_sorted_spans_covers_exactly_their_points_with_no_two_spans_meeting(spans: list[Span]) -> None:
    """Spans in start order (days' spans one after another) join into disjoint spans, each ending before the next
    starts (spans that meet at a boundary are one), covering exactly the points the spans did."""
    joined = join_sorted(spans)
    assert all(a.end < b.start for a, b in pairwise(joined))
    assert all(s.start < s.end for s in joined)
    points = {p for s in spans for p in range(s.start, s.end)}
    assert {p for s in joined for p in range(s.start, s.end)} == points


def test_an_empty_or_reversed_range_clips_to_nothing() -> None:
    """The parts of the spans inside ``[start, end)`` when it holds no instant: none, even inside a span (make
    mutation: clip's ``end <= start`` read as ``end < start`` kept an empty part)."""
    merged = merge([(0, 10), (20, 30)])
    assert clip(merged, 5, 5) == [] and clip(merged, 25, 21) == [] and clip(merged, 10, 10) == []
    assert clip(merged, 5, 6) == [Span(5, 6)]


def test_a_day_encoded_in_exactly_the_limit_is_stored_and_one_interval_more_is_refused_saying_so() -> None:
    """One-millisecond spans a millisecond apart encode in two bytes each: 131,072 of them are the 256 KiB limit
    exactly (make mutation: the limit read as ``>=``, and the refusal's text lost)."""
    fits = [Span(JUNE + 2 * i, JUNE + 2 * i + 1) for i in range(MAX_SEGMENT_BYTES // 2)]
    data = encode_segment(fits, JUNE)
    assert len(data) == MAX_SEGMENT_BYTES and decode_segment(data, JUNE) == fits
    one_more = [*fits, Span(JUNE + MAX_SEGMENT_BYTES, JUNE + MAX_SEGMENT_BYTES + 1)]
    with pytest.raises(CoverageTooFragmentedError) as refused:
        encode_segment(one_more, JUNE)
    assert str(refused.value) == (
        f"the day 2025-06-01 would hold {len(one_more)} separate intervals ({MAX_SEGMENT_BYTES + 2} bytes encoded, "
        f"the limit is {MAX_SEGMENT_BYTES}); send coarser intervals"
    )


def test_a_varint_of_64_bits_is_read_whole() -> None:
    """Ten bytes carry a 64-bit varint (the tenth at shift 63): a gap of 2**63 is read, and refused as past its day,
    not as a varint too long (make mutation: the 64-bit bound read as ``shift >= 63``)."""
    gap = bytes([0x80] * 9 + [0x01])  # 2**63
    with pytest.raises(CorruptSegmentError) as refused:
        decode_segment(gap + b"\x01", JUNE)
    assert str(refused.value) == "coverage segment 2025-06-01 runs past its day"
