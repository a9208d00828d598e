"""Rollups that need at least n of their units (issue 33, Airflow's MinimumCount): ``"complete": {"atLeast": 20}``
holds a day once 20 of its hours have a data commit, pinning the newest of them; with several rolled-up fields n
counts the units of their product; explain says how many of how many are there and which are missing; n is 1 to the
fewest units a partition has, checked when the rule is written (docs/partitions.md, "Several fields, values, and
grains further apart")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import ConflictError
from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import PartitionFact, mapping_of, partition_view
from lakehook.domain.partition_rules import MemberPartition
from lakehook.domain.status import Status
from lakehook.usecases.resolve_partitions import partition_pins
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_fanout import commit
from tests.unit.test_partition_multifield import DAY, PATH, REGIONS, days, refused, rule_of
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake


def counting(n: int, **extra: Any) -> dict[str, Any]:
    """Clicks rolling a day's hours up, needing ``n`` of them (or of the product with ``extra`` fields)."""
    return {"fields": {"dt": {"field": "hour", "grain": "day", "complete": {"atLeast": n}}, **extra}}


def rule_counting(partition: dict[str, Any], mode: str = "ALL_UPDATED") -> Any:
    return rule_of(
        {"assetKey": ORDERS, "partition": {}}, {"assetKey": CLICKS, "partition": partition}, mode=mode, rule_id="daily"
    )


# --- the model -------------------------------------------------------------------------------------

HOURS_TRUE = {"field": "hour", "grain": "day", "complete": True}


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        (counting(0)["fields"], "dt.complete", "atLeast: Input should be greater than or equal to 1"),
        (counting(25)["fields"], "", "dt.complete.atLeast (25) is above the 24 units the fewest partition of the"),
        (
            {"dt": {"grain": "month", "complete": {"atLeast": 29}}},
            "",
            "dt.complete.atLeast (29) is above the 28 units",
        ),
        (
            {"dt": {"grain": "month", "complete": {"atLeast": 20, "from": 16, "to": 32}}},
            "",
            "dt.complete.atLeast (20) is above the 13 units",  # February's 16th to 28th
        ),
        (
            {"dt": HOURS_TRUE, "region": {"complete": {"atLeast": 49, "values": REGIONS}}},
            "",
            "region.complete.atLeast (49) is above the 48 units the fewest partition of the rollup has (24 (dt) x 2",
        ),
        (
            {"dt": counting(2)["fields"]["dt"], "region": {"complete": {"atLeast": 1, "values": REGIONS}}},
            "",
            "region.complete.atLeast: atLeast is on one rolled-up field (dt has one)",
        ),
        ({"dt": {"grain": "day", "complete": {"atLeast": 3, "from": 6}}}, "dt.complete", "from and to go together"),
        (
            {"region": {"complete": {"atLeast": 1, "values": ["eu"], "unit": "hour"}}},
            "region.complete",
            "values takes no unit, from or to",
        ),
        ({"dt": {"grain": "day", "complete": {"atLeast": 2, "values": []}}}, "dt.complete", "values: Tuple should"),
        ({"dt": {"grain": "day", "complete": {"atLeast": 2, "from": 6, "to": 25}}}, "dt.complete", "to (25) must be"),
        ({"dt": {"grain": "year", "complete": {"atLeast": 2, "unit": "hour"}}}, "dt.complete", "a year names up to"),
        ({"dt": {"grain": "day", "complete": {"atLeast": "most"}}}, "dt.complete", "atLeast: Input should be a valid"),
        ({"dt": {"complete": {"atLeast": 2}}}, "dt", "complete (a rollup) needs a grain of day, month or year"),
    ],
)
def test_a_bad_count_is_a_400_naming_the_field(fields: dict[str, Any], where: str, words: str) -> None:
    error = refused(fields)
    assert error.field == (f"{PATH}.{where}" if where else PATH), str(error)
    assert words in str(error), str(error)


def fewest(grain: str, start: int | None, end: int | None) -> int:
    """The fewest units a partition has, counted by hand: a day's hours, a month's days (February's 28 in a common
    year, a range's days up to the 28th), a year's months; within [start, end) when a range is given."""
    first, top = {"day": (0, 24), "month": (1, 29), "year": (1, 13)}[grain]
    low, high = (first, top) if start is None or end is None else (start, end)
    return len(range(max(low, first), min(high, top)))


@settings(max_examples=examples(200), deadline=None)
@given(
    grain=st.sampled_from(["day", "month", "year"]),
    bounds=st.one_of(st.none(), st.tuples(st.integers(0, 28), st.integers(1, 32))),
    n=st.integers(-1, 40),
    regions=st.integers(0, 3),
)
def test_a_count_is_accepted_exactly_from_1_to_the_fewest_units_of_the_product(
    grain: str, bounds: tuple[int, int] | None, n: int, regions: int
) -> None:
    top = {"day": (23, 24), "month": (28, 32), "year": (12, 13)}[grain]
    low = 0 if grain == "day" else 1
    fits = bounds is None or (low <= bounds[0] <= top[0] and bounds[0] < bounds[1] <= top[1])
    spec: dict[str, Any] = {"atLeast": n}
    if bounds is not None:
        spec.update({"from": bounds[0], "to": bounds[1]})
    fields: dict[str, Any] = {"dt": {"grain": grain, "complete": spec}}
    if regions:
        fields["region"] = {"complete": {"values": [f"r{i}" for i in range(regions)]}}
    units = fewest(grain, *(bounds or (None, None))) * max(regions, 1)
    try:
        mapping = MemberPartition.model_validate({"fields": fields})
    except PydanticValidationError as exc:
        assert not (fits and 1 <= n <= units), str(exc)
        return
    assert fits and 1 <= n <= units
    assert mapping.at_least(("dt",)) == n


def test_the_spelling_round_trips_and_keeps_the_mapping_id_of_its_units() -> None:
    rule = rule_counting(counting(20))
    shown = json_form(rule)["groups"][0]["members"][1]["partition"]["fields"]["dt"]
    assert shown == {"field": "hour", "grain": "day", "complete": {"atLeast": 20}}
    assert type(rule).model_validate(json_form(rule)) == rule
    every = MemberPartition.model_validate({"fields": {"dt": HOURS_TRUE}})
    assert rule.groups[0].members[1].partition is not None
    assert rule.groups[0].members[1].partition.mapping_id(("dt",)) == every.mapping_id(("dt",))  # the same facts


def test_each_version_takes_a_count_as_any_rollup_but_not_from_next_change() -> None:
    data = json_form(rule_counting(counting(2)))
    data["policy"]["mode"] = "EACH_VERSION"
    assert parse_rule("daily", data).policy.mode.value == "EACH_VERSION"  # a 400 until 2026-12-07
    data["policy"]["startFrom"] = "NEXT_CHANGE"
    with pytest.raises(Exception, match="rolls up"):
        parse_rule("daily", data)


# --- a partition is held exactly when at least n units have a fact ---------------------------------


@settings(max_examples=examples(150), deadline=None)
@given(
    day=days,
    n=st.integers(1, 48),
    touched=st.sets(st.tuples(st.integers(0, 23), st.sampled_from(["eu", "us", "ap"])), max_size=60),
)
def test_a_day_of_hours_by_region_is_held_exactly_when_at_least_n_units_have_a_fact(
    day: str, n: int, touched: set[tuple[int, str]]
) -> None:
    """n over the product: 24 hours x 2 regions; a unit of another region is none of them."""
    rule = rule_counting(counting(n, region={"complete": {"values": REGIONS}}))
    group = rule.groups[0]
    clicks = group.members[1]
    assert clicks.partition is not None
    orders = PartitionFact(ORDERS, mapping_of(group, group.members[0]), f"dt={day}", 1, 1)
    facts = {orders.key: orders}
    for order, (hour, region) in enumerate(sorted(touched), start=2):
        unit = clicks.partition.fact_key(f"hour={day}-{hour:02d}/region={region}", ("dt",))
        assert unit is not None
        fact = PartitionFact(CLICKS, mapping_of(group, clicks), unit, order, order)
        facts[fact.key] = fact
    view, cursor = partition_view(rule, group, f"dt={day}", facts, {}, None)
    verdict = evaluate_group(rule, group, {}, cursor, 0, partition=view)
    present = [(o, u) for o, u in enumerate(sorted(touched), start=2) if u[1] in REGIONS]
    assert verdict.ready is (len(present) >= n)
    member = verdict.members[1]
    if len(present) >= n:
        assert [p.snapshot_id for p in verdict.pins] == [1, max(o for o, _ in present)]
        return
    assert member.status is Status.WAITING_FOR_PARTITION
    missing = sorted({(h, r) for h in range(24) for r in REGIONS} - touched)
    needed = "" if n == 48 else f", at least {n} needed"
    reason = member.reason or ""
    assert f"{len(present)} of the 48 units of dt={day} (region eu, us) have a data commit{needed}; missing" in reason
    assert f"missing dt={day}-{missing[0][0]:02d}/region={missing[0][1]}" in reason
    assert member.current["units"] == len(present) and len(member.current["missing"]) == min(24, len(missing))
    assert member.required.get("atLeast") == (None if n == 48 else n)


# --- the resolver ----------------------------------------------------------------------------------


def test_a_day_runs_once_its_twentieth_hour_arrives_and_again_when_a_new_hour_comes() -> None:
    """Hours arrive one commit each: nothing runs for 19, explain says 19 of 24 of the 20 needed; the 20th runs the
    day pinning it; with ANY_UPDATED a 21st hour runs it again (a newer unit), an hour of another day does not; a
    manual run of a day with too few hours is a 409 naming the count."""
    rule = rule_counting(counting(20), mode="ANY_UPDATED")
    lake = Lake(rule)
    commit(lake, ORDERS, 1, f"dt={DAY}")
    for hour in range(19):
        commit(lake, CLICKS, 100 + hour, f"hour={DAY}-{hour:02d}")
    lake.deliver()
    assert lake.runs() == []
    [line] = [p for p in lake.explain().partitions if p.partition == f"dt={DAY}"]
    assert line.status is Status.WAITING_FOR_PARTITION
    expected = f"19 of the 24 units of dt={DAY} have a data commit, at least 20 needed; missing dt={DAY}-19"
    assert expected in (line.reason or "")
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    with pytest.raises(ConflictError, match=rf"at least 20 of the 24 units of dt={DAY} \(it has 19; missing"):
        partition_pins(lake.partitions, rule.groups[0], f"dt={DAY}", states)
    commit(lake, CLICKS, 200, f"hour={DAY}-23")
    lake.deliver()
    assert lake.runs() == [(f"dt={DAY}", [(ORDERS, 1), (CLICKS, 200)])]
    commit(lake, CLICKS, 201, "hour=2026-12-02-05")
    lake.deliver()
    assert len(lake.runs()) == 1
    commit(lake, CLICKS, 202, f"hour={DAY}-20")
    lake.deliver()
    assert lake.runs()[1:] == [(f"dt={DAY}", [(ORDERS, 1), (CLICKS, 202)])]
