"""Time values of a partitioned group's grain mapping: exactly the real dates, hours, months and years written in ASCII
digits (issue 33).

``\\d`` matched every script's digits and days 29 to 31 passed in every month, so 2026-12-06 in fullwidth digits,
2026-12-07 in Arabic-Indic digits and 2026-02-30 were days, and one calendar day could run under two keys. The
reference here is written apart from the code: ASCII digits in the grain's shape, a month 1 to 12, a day of that
month (leap years included), an hour 0 to 23, a year from 0001 (the first a calendar date has in Python).
"""

from __future__ import annotations

import calendar
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.partition_rules import (
    Grain,
    MemberPartition,
    cut_to_grain,
    format_time_value,
    grain_of,
    parse_time_value,
    units_of,
)
from lakehook.domain.partitions import format_partition_key
from lakehook.domain.rules import parse_duration_ms
from tests.hypothesis_profiles import examples

FULLWIDTH = "\uff12\uff10\uff12\uff16-12-06"  # 2026-12-06
ARABIC_INDIC = "\u0662\u0660\u0662\u0666-12-07"  # 2026-12-07
SHAPES = {1: Grain.YEAR, 2: Grain.MONTH, 3: Grain.DAY, 4: Grain.HOUR}
WIDTHS = (4, 2, 2, 2)
ASCII_DIGITS = frozenset("0123456789")


def reference(value: str) -> tuple[Grain, datetime] | None:
    """The grain and the instant a value names, by hand: None when it is no time value."""
    parts = value.split("-")
    if len(parts) not in SHAPES or any(len(p) != w for p, w in zip(parts, WIDTHS, strict=False)):
        return None
    if any(not set(p) <= ASCII_DIGITS for p in parts):
        return None
    numbers = [int(p) for p in parts] + [1, 1, 0][len(parts) - 1 :]
    year, month, day, hour = numbers
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1] or hour > 23:
        return None
    return SHAPES[len(parts)], datetime(year, month, day, hour)


# Every script's decimal digits (fullwidth, Arabic-Indic, Devanagari …), and ASCII ones
unicode_digits = st.characters(categories=["Nd"])
numbers = st.integers(min_value=0, max_value=99)


@st.composite
def written(draw: st.DrawFn) -> str:
    """A value shaped like a time value (every month and day number, 00 to 99), some digits maybe of another script,
    maybe with a trailing newline or a sign."""
    count = draw(st.integers(min_value=1, max_value=4))
    year = draw(st.integers(min_value=0, max_value=9999))
    rest = [draw(numbers) for _ in range(count - 1)]
    text = "-".join([f"{year:04d}", *(f"{n:02d}" for n in rest)])
    chars = list(text)
    for i in draw(st.sets(st.integers(min_value=0, max_value=len(chars) - 1), max_size=3)):
        if chars[i].isdigit():
            chars[i] = draw(unicode_digits)
    tail = draw(st.sampled_from(["", "", "", "\n", " ", "-", "Z"]))
    return "".join(chars) + tail


real = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23))
values = st.one_of(
    written(),
    real.flatmap(lambda d: st.sampled_from([format_time_value(d, g) for g in Grain])),
    st.text(max_size=14),
    st.from_regex("[0-9\u0660-\u0669\uff10-\uff19-]{4,13}", fullmatch=True),
)


@settings(max_examples=examples(2000))
@given(values)
def test_exactly_the_real_ascii_dates_hours_months_and_years_are_time_values(value: str) -> None:
    expected = reference(value)
    assert parse_time_value(value) == expected
    assert grain_of(value) == (expected[0] if expected else None)
    if expected is None:
        assert all(cut_to_grain(value, g) is None for g in Grain)
        return
    grain, moment = expected
    assert format_time_value(moment, grain) == value  # canonical: one instant, one text per grain
    for coarser in Grain:
        cut = cut_to_grain(value, coarser)
        if list(Grain).index(coarser) > list(Grain).index(grain):
            assert cut is None  # a month names no day
        else:
            assert cut is not None and grain_of(cut) is coarser and value.startswith(cut)


@settings(max_examples=examples(500))
@given(real, st.sampled_from(list(Grain)))
def test_a_time_value_round_trips(moment: datetime, grain: Grain) -> None:
    text = format_time_value(moment, grain)
    parsed = parse_time_value(text)
    assert parsed is not None and parsed[0] is grain and format_time_value(parsed[1], grain) == text
    if grain is not Grain.HOUR:
        assert all(grain_of(u) is not None for u in units_of(text, grain))


@pytest.mark.parametrize("year", [2023, 2024, 1900, 2000])
def test_every_month_and_day_number_of_a_year(year: int) -> None:
    for month in range(0, 100):
        for day in range(0, 100):
            value = f"{year:04d}-{month:02d}-{day:02d}"
            real_day = 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]
            assert (grain_of(value) is Grain.DAY) == real_day, value
            assert (grain_of(f"{value}-00") is Grain.HOUR) == real_day, value
        assert (grain_of(f"{year:04d}-{month:02d}") is Grain.MONTH) == (1 <= month <= 12)


@pytest.mark.parametrize("value", [FULLWIDTH, ARABIC_INDIC, "2026-02-30", "2026-04-31", "2026-12-01\n", "0000"])
def test_one_calendar_day_maps_to_one_key(value: str) -> None:
    """The issue's examples: none of them is a day of a group keyed on ``dt``, so no day runs under two keys."""
    mapping = MemberPartition.model_validate({"fields": {"dt": {"grain": "day"}}})
    assert mapping.map_key(format_partition_key([("dt", value)]), ("dt",)) is None
    assert mapping.misfit(format_partition_key([("dt", value)]), ("dt",)) is not None
    assert mapping.map_key("dt=2026-12-06-10", ("dt",)) == "dt=2026-12-06"


@pytest.mark.parametrize("text", ["P\u0661D", "PT\uff11\uff15M", "PT1H\n", "P1D\n"])
def test_a_window_duration_is_ascii_digits_only(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601 duration"):
        parse_duration_ms(text)
    assert parse_duration_ms("PT15M") == 900_000
