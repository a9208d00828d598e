"""A rollup over a coverage ``[from, to)`` of its units (``"complete": {"from": 6, "to": 22}``): validated when the
rule is written, and a partition runs once every unit of the range has a data commit, whatever the others do."""

from __future__ import annotations

import calendar
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_rules import Grain, MemberPartition, UnitRange
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake, daily, hourly

FIELD = "groups.0.members.1.partition.fields.dt.complete"


def body(complete: Any, grain: str = "day") -> dict[str, Any]:
    source = {"field": "hour", "grain": grain, "complete": complete}
    return {
        "target": {"type": "eventbridge", "eventBusName": "runs"},
        "groups": [
            {
                "groupId": "g",
                "partitionBy": ["dt"],
                "members": [
                    {"assetKey": ORDERS, "partition": {}},
                    {"assetKey": CLICKS, "partition": {"fields": {"dt": source}}},
                ],
            }
        ],
    }


def test_a_coverage_round_trips_as_from_and_to() -> None:
    rule = parse_rule("r", body({"from": 6, "to": 22}))
    shown = json_form(rule)["groups"][0]["members"][1]["partition"]["fields"]["dt"]
    assert shown["complete"] == {"from": 6, "to": 22}
    assert Rule.model_validate(json_form(rule)) == rule


@pytest.mark.parametrize(
    ("complete", "grain", "words"),
    [
        ({"from": 6, "to": 6}, "day", "from (6) must be below to (6)"),
        ({"from": 22, "to": 6}, "day", "must be below to"),
        ({"from": -1, "to": 3}, "day", "from (-1) must be hour 0 to 23"),
        ({"from": 0, "to": 25}, "day", "to (25) must be above from and at most 24"),
        ({"from": 0, "to": 3}, "month", "from (0) must be day 1 to 28"),
        ({"from": 29, "to": 32}, "month", "from (29) must be day 1 to 28"),
        ({"from": 1, "to": 33}, "month", "at most 32"),
        ({"from": 0, "to": 3}, "year", "from (0) must be month 1 to 12"),
        ({"from": 3, "to": 14}, "year", "at most 13"),
        ({"from": "six", "to": 22}, "day", "from: Input should be a valid integer"),
        ({"from": 6}, "day", "to: Field required"),
        ({"from": 6, "to": 22, "step": 2}, "day", "step: Extra inputs are not permitted"),
    ],
)
def test_a_bad_coverage_is_a_400_naming_complete(complete: dict[str, Any], grain: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule("r", body(complete, grain))
    assert caught.value.field == FIELD
    assert words in str(caught.value)


@given(day=st.dates().map(lambda d: d.isoformat()).filter(lambda v: len(v) == 10), data=st.data())
def test_a_coverages_units_are_exactly_those_of_the_range_a_month_ending_at_its_last_day(day: str, data: Any) -> None:
    grain = data.draw(st.sampled_from([Grain.DAY, Grain.MONTH, Grain.YEAR]))
    value = {Grain.DAY: day, Grain.MONTH: day[:7], Grain.YEAR: day[:4]}[grain]
    low, high, top = {Grain.DAY: (0, 23, 24), Grain.MONTH: (1, 28, 32), Grain.YEAR: (1, 12, 13)}[grain]
    start = data.draw(st.integers(low, high))
    end = data.draw(st.integers(start + 1, top))
    mapping = MemberPartition.model_validate(
        {"fields": {"dt": {"grain": grain.value, "complete": {"from": start, "to": end}}}}
    )
    units = [k.removeprefix("dt=") for k in mapping.unit_keys(f"dt={value}", ("dt",))]
    last = {Grain.DAY: 23, Grain.MONTH: calendar.monthrange(int(day[:4]), int(day[5:7]))[1], Grain.YEAR: 12}[grain]
    expected = [f"{value}-{n:02d}" for n in range(start, min(end - 1, last) + 1)]
    assert units == expected and units  # a month has a day of every range (from is at most 28)
    assert UnitRange.model_validate({"from": start, "to": end}).check(grain).start == start


ranges = st.integers(0, 23).flatmap(lambda a: st.tuples(st.just(a), st.integers(a + 1, 24)))


@settings(max_examples=examples(30), deadline=None)
@given(span=ranges, order=st.permutations(list(range(24))), batch=st.integers(1, 24))
def test_a_day_runs_once_every_hour_of_its_range_has_a_commit_in_any_order(
    span: tuple[int, int], order: list[int], batch: int
) -> None:
    """Hours arrive in any order and batching: the day waits (naming the missing hours of the range only) until
    the last hour of the range has a commit, then runs once pinning the newest commit among the range's hours; a
    commit to an hour outside the range runs nothing, one inside it runs the day again (ANY_UPDATED)."""
    start, end = span
    inside = set(range(start, end))
    rollup = {"field": "hour", "grain": "day", "complete": {"from": start, "to": end}}
    clicks = {"assetKey": CLICKS, "partition": {"fields": {"dt": rollup}}}
    lake = Lake(daily({"assetKey": ORDERS, "partition": {}}, clicks, mode="ANY_UPDATED"))
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.deliver()
    seen: set[int] = set()
    newest = 0
    for n, hour in enumerate(order, start=1):
        hourly(lake, 900 + n, f"2026-12-01-{hour:02d}")
        seen.add(hour)
        newest = 900 + n if hour in inside else newest
        if n % batch and n != len(order):
            continue
        lake.deliver()
        if inside <= seen:
            break
        assert lake.runs() == []
        [line] = [p for p in lake.explain().partitions if p.partition == "dt=2026-12-01"]
        assert line.status is Status.WAITING_FOR_PARTITION
        missing = sorted(inside - seen)
        units = f"{len(inside & seen)} of the {len(inside)} units of dt=2026-12-01 (hours {start:02d} to {end - 1:02d})"
        assert f"{units} have a data commit; missing dt=2026-12-01-{missing[0]:02d}" in (line.reason or "")
    assert lake.runs() == [("dt=2026-12-01", [(ORDERS, 1), (CLICKS, newest)])]
    outside = sorted(set(range(24)) - inside)
    if outside:
        hourly(lake, 990, f"2026-12-01-{outside[0]:02d}")
        lake.deliver()
        assert len(lake.runs()) == 1
    hourly(lake, 991, f"2026-12-01-{start:02d}")
    lake.deliver()
    assert lake.runs()[1:] == [("dt=2026-12-01", [(ORDERS, 1), (CLICKS, 991)])]


def test_the_range_is_half_open_hours_06_to_08_of_from_6_to_9_run_the_day_without_hour_09() -> None:
    """``{"from": 6, "to": 9}`` waits for hours 06, 07 and 08 only: the day runs on them without hour 09 (a range
    read as ``[from, to]`` would wait for 09 too), and the unit after the range is no unit of it."""
    rollup = {"field": "hour", "grain": "day", "complete": {"from": 6, "to": 9}}
    lake = Lake(
        daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": CLICKS, "partition": {"fields": {"dt": rollup}}})
    )
    lake.commit(ORDERS, 1, "2026-12-01")
    hourly(lake, 906, "2026-12-01-06")
    hourly(lake, 907, "2026-12-01-07")
    lake.deliver()
    assert lake.runs() == []
    [line] = [p for p in lake.explain().partitions if p.partition == "dt=2026-12-01"]
    assert "2 of the 3 units of dt=2026-12-01 (hours 06 to 08) have a data commit; missing dt=2026-12-01-08" in (
        line.reason or ""
    )
    hourly(lake, 908, "2026-12-01-08")
    lake.deliver()
    assert lake.runs() == [("dt=2026-12-01", [(ORDERS, 1), (CLICKS, 908)])]
    assert not UnitRange.model_validate({"from": 6, "to": 9}).holds("2026-12-01-09")
