"""Rollups more than one grain apart (issue 33): ``"complete": "hour"`` on ``"grain": "month"`` waits for each hour
of the month (up to 744), ``"complete": "day"`` on ``"grain": "year"`` for each of its days; a range names each
unit's own number (``{"from": 6, "to": 22, "unit": "hour"}``: hours 06 to 21 of each day of the month). Checked
when the rule is written (finer than grain, at most MAX_UNITS), explained with the missing units
(docs/partitions.md, "Several fields, values, and grains further apart")."""

from __future__ import annotations

import calendar
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import PartitionFact, mapping_of, partition_view
from lakehook.domain.partition_rules import MAX_UNITS, Grain, MemberPartition, units_of
from lakehook.domain.status import Status
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_fanout import commit
from tests.unit.test_partition_multifield import PATH, refused, rule_of
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake

MONTH_OF_HOURS: dict[str, Any] = {"fields": {"dt": {"field": "hour", "grain": "month", "complete": "hour"}}}


def monthly(mode: str = "ALL_UPDATED") -> Any:
    """Orders keyed on months as they are, clicks rolling its hours up into each month."""
    return rule_of(
        {"assetKey": ORDERS, "partition": {}},
        {"assetKey": CLICKS, "partition": MONTH_OF_HOURS},
        mode=mode,
        rule_id="monthly",
    )


# --- the model -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        (
            {"dt": {"grain": "year", "complete": "hour"}},
            "dt.complete",
            "a year names up to 8784 hours, above the limit",
        ),
        ({"dt": {"grain": "day", "complete": "day"}}, "dt.complete", "complete (day) must be a grain finer than grain"),
        ({"dt": {"grain": "day", "complete": "year"}}, "dt.complete", "must be a grain finer than grain (day)"),
        ({"dt": {"grain": "month", "complete": "weekly"}}, "dt.complete", "complete is true (one grain finer), a fin"),
        ({"dt": {"complete": "hour"}}, "dt", "complete (a rollup) needs a grain of day, month or year"),
        ({"dt": {"grain": "hour", "complete": "hour"}}, "dt", "complete (a rollup) needs a grain of day, month or"),
        (
            {"dt": {"grain": "year", "complete": {"from": 1, "to": 3, "unit": "hour"}}},
            "dt.complete",
            "complete.unit hour: a year names up to 8784 hours",
        ),
        (
            {"dt": {"grain": "month", "complete": {"from": 6, "to": 25, "unit": "hour"}}},
            "dt.complete",
            "to (25) must be above from and at most 24 (the hour after the last)",
        ),
        (
            {"dt": {"grain": "year", "complete": {"from": 29, "to": 31, "unit": "day"}}},
            "dt.complete",
            "from (29) must be day 1 to 28 of the month",
        ),
    ],
)
def test_a_rollup_further_apart_is_checked_when_written(fields: dict[str, Any], where: str, words: str) -> None:
    error = refused(fields)
    assert error.field == f"{PATH}.{where}", str(error)
    assert words in str(error), str(error)


def test_a_month_of_hours_and_a_year_of_days_wait_for_each_unit_up_to_the_limit() -> None:
    month = MemberPartition.model_validate(MONTH_OF_HOURS)
    assert month.units(("dt",)) == 744 <= MAX_UNITS
    assert month.unit_keys("dt=2024-02", ("dt",)) == [f"dt={h}" for h in units_of("2024-02", Grain.MONTH, Grain.HOUR)]
    assert len(month.unit_keys("dt=2026-02", ("dt",))) == 28 * 24
    assert month.fact_key("hour=2026-02-03-04/region=eu", ("dt",)) == "dt=2026-02-03-04"
    assert month.fact_key("hour=2026-02-03", ("dt",)) is None  # a day names no hour
    assert month.partitions_of("dt=2026-02-03-04", ("dt",)) == ["dt=2026-02"]
    year = MemberPartition.model_validate({"fields": {"dt": {"field": "day", "grain": "year", "complete": "day"}}})
    assert year.units(("dt",)) == 366 and len(year.unit_keys("dt=2026", ("dt",))) == 365
    assert year.fact_key("day=2026-07-04-10", ("dt",)) == "dt=2026-07-04"
    business = MemberPartition.model_validate(
        {"fields": {"dt": {"grain": "month", "complete": {"from": 6, "to": 22, "unit": "hour"}}}}
    )
    assert business.units(("dt",)) == 31 * 16 and len(business.unit_keys("dt=2026-02", ("dt",))) == 28 * 16
    assert business.describe_coverage(("dt",)) == " (hours 06 to 21 of each day)"
    halves = MemberPartition.model_validate(
        {"fields": {"dt": {"grain": "year", "complete": {"from": 16, "to": 32, "unit": "day"}}}}
    )
    assert len(halves.unit_keys("dt=2026", ("dt",))) == sum(calendar.monthrange(2026, m)[1] - 15 for m in range(1, 13))
    assert halves.units(("dt",)) == 12 * 16


def test_one_grain_named_is_the_rollup_of_true_and_keeps_its_id_one_further_has_its_own() -> None:
    """``"complete": "day"`` on a month is ``"complete": true``: the same facts, the same mapping id; a month of
    hours keeps facts per hour, so under an id of its own."""

    def of(complete: Any) -> MemberPartition:
        return MemberPartition.model_validate(
            {"fields": {"dt": {"field": "t", "grain": "month", "complete": complete}}}
        )

    assert of("day").mapping_id(("dt",)) == of(True).mapping_id(("dt",)) == of({"from": 1, "to": 5}).mapping_id(("dt",))
    assert of("hour").mapping_id(("dt",)) == of({"from": 1, "to": 5, "unit": "hour"}).mapping_id(("dt",))
    assert of("hour").mapping_id(("dt",)) != of(True).mapping_id(("dt",))


def test_the_spelling_round_trips() -> None:
    rule = monthly()
    shown = json_form(rule)["groups"][0]["members"][1]["partition"]["fields"]["dt"]
    assert shown == {"field": "hour", "grain": "month", "complete": "hour"}
    assert type(rule).model_validate(json_form(rule)) == rule


# --- a month is complete exactly when every hour has a fact --------------------------------------

months = st.tuples(st.integers(2000, 2030), st.integers(1, 12)).map(lambda ym: f"{ym[0]:04d}-{ym[1]:02d}")


@settings(max_examples=examples(60), deadline=None)
@given(month=months, data=st.data())
def test_a_month_of_hours_is_complete_exactly_when_every_hour_has_a_fact(month: str, data: st.DataObject) -> None:
    rule = monthly()
    group = rule.groups[0]
    clicks = group.members[1]
    hours = units_of(month, Grain.MONTH, Grain.HOUR)
    missing = data.draw(st.sets(st.sampled_from(hours), max_size=3))
    orders = PartitionFact(ORDERS, mapping_of(group, group.members[0]), f"dt={month}", 1, 1)
    facts = {orders.key: orders}
    for n, hour in enumerate(h for h in hours if h not in missing):
        fact = PartitionFact(CLICKS, mapping_of(group, clicks), f"dt={hour}", 10 + n, 10 + n)
        facts[fact.key] = fact
    view, cursor = partition_view(rule, group, f"dt={month}", facts, {}, None)
    verdict = evaluate_group(rule, group, {}, cursor, 0, partition=view)
    assert verdict.ready is (not missing)
    if missing:
        member = verdict.members[1]
        assert member.status is Status.WAITING_FOR_PARTITION
        first = min(missing)
        reason = member.reason or ""
        assert f"{len(hours) - len(missing)} of the {len(hours)} units of dt={month} have a data commit" in reason
        assert f"missing dt={first}" in reason and member.current["missing"] == [f"dt={h}" for h in sorted(missing)]
    else:
        assert [p.snapshot_id for p in verdict.pins] == [1, 10 + len(hours) - 1]


def test_a_month_runs_once_its_last_hour_arrives_through_the_resolver() -> None:
    """February's 672 hours in three commits: the month waits, explain naming the missing hours, until the last one,
    then runs once pinning the newest; an hour of March runs nothing for February."""
    lake = Lake(monthly())
    hours = units_of("2026-02", Grain.MONTH, Grain.HOUR)
    commit(lake, ORDERS, 1, "dt=2026-02")
    commit(lake, CLICKS, 900, *(f"hour={h}" for h in hours[:300]))
    commit(lake, CLICKS, 901, *(f"hour={h}" for h in hours[300:-1]), "hour=2026-03-01-00")
    lake.deliver()
    assert lake.runs() == []
    [line] = [p for p in lake.explain("monthly").partitions if p.partition == "dt=2026-02"]
    assert line.status is Status.WAITING_FOR_PARTITION
    assert "671 of the 672 units of dt=2026-02 have a data commit; missing dt=2026-02-28-23" in (line.reason or "")
    commit(lake, CLICKS, 902, f"hour={hours[-1]}")
    lake.deliver()
    assert lake.runs() == [("dt=2026-02", [(ORDERS, 1), (CLICKS, 902)])]
    commit(lake, CLICKS, 903, "hour=2026-03-01-01")
    lake.deliver()
    assert len(lake.runs()) == 1
