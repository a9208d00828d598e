"""Rollups and fan-outs of more than one field, over a field's values, and fan-outs more than one grain apart
(issue 33b): a member rolls up hours x regions into a day (``"region": {"complete": {"values": [...]}}``), fans a
year out to its days (``"fanOut": "day"``) or a day out to each region (``"fanOut": {"values": [...]}``); a partition
needs, and a fact names, the product of the fields' units, at most MAX_UNITS, refused when the rule is written
(docs/partitions.md, "Several fields, values, and grains further apart")."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import PartitionFact, mapping_of, partition_view
from lakehook.domain.partition_rules import MAX_UNITS, Grain, MemberPartition, grain_of, units_of
from lakehook.domain.partitions import format_partition_key, parse_partition_key
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.usecases.resolve_continue import weights
from lakehook.usecases.resolve_partitions import partition_pins
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_fanout import commit
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake

DAY = "2026-12-01"
REGIONS = ["eu", "us"]
HOURS_BY_REGION: dict[str, Any] = {
    "fields": {"dt": {"field": "hour", "grain": "day", "complete": True}, "region": {"complete": {"values": REGIONS}}}
}


def rule_of(
    *members: dict[str, Any], partition_by: tuple[str, ...] = ("dt",), mode: str = "ALL_UPDATED", rule_id: str = "r"
) -> Rule:
    members = members or ({"assetKey": ORDERS, "partition": {}}, {"assetKey": CLICKS, "partition": HOURS_BY_REGION})
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode},
            "groups": [{"groupId": "g", "partitionBy": list(partition_by), "members": list(members)}],
        }
    )


def refused(fields: dict[str, Any], partition_by: tuple[str, ...] = ("dt",)) -> ValidationError:
    data = copy.deepcopy(json_form(rule_of()))
    data["groups"][0]["partitionBy"] = list(partition_by)
    data["groups"][0]["members"][1]["partition"] = {"fields": fields}
    with pytest.raises(ValidationError) as caught:
        parse_rule("r", data)
    return caught.value


# --- the model: spelling and validation ------------------------------------------------------------


def test_the_new_mappings_round_trip() -> None:
    for partition, by in [
        (HOURS_BY_REGION, ("dt",)),
        ({"fields": {"dt": {"field": "y", "grain": "year", "fanOut": "day"}}}, ("dt",)),
        ({"fields": {"dt": {"grain": "day"}, "region": {"fanOut": {"values": REGIONS}}}}, ("dt", "region")),
    ]:
        rule = rule_of({"assetKey": ORDERS, "partition": partition}, partition_by=by)
        shown = json_form(rule)["groups"][0]["members"][0]["partition"]["fields"]
        assert {f: {k: v for k, v in s.items() if v is not False} for f, s in shown.items()} == partition["fields"]
        assert Rule.model_validate(json_form(rule)) == rule


PATH = "groups.0.members.1.partition.fields"
GROUP_LEVEL = "groups.0.members"  # checked against the group's partitionBy: the message names the member's field


@pytest.mark.parametrize(
    ("fields", "by", "where", "words"),
    [
        ({"region": {"complete": {"values": []}}}, ("dt",), "region.complete", "values: Tuple should have at least 1"),
        ({"region": {"complete": {"values": ["eu", "eu"]}}}, ("dt",), "region.complete", "'eu' is named twice"),
        ({"region": {"complete": {"values": [""]}}}, ("dt",), "region.complete", "each value is 1 to 256"),
        ({"region": {"complete": {"values": ["eu"], "from": 1}}}, ("dt",), "region.complete", "from: Extra inputs"),
        ({"region": {"grain": "day", "complete": {"values": ["eu"]}}}, ("dt",), "region", "takes no field or grain"),
        ({"region": {"field": "r", "complete": {"values": ["eu"]}}}, ("dt",), "region", "takes no field or grain"),
        ({"region": {}}, ("dt",), GROUP_LEVEL, "fields.region: not a field of partitionBy"),
        ({"region": {"complete": True, "grain": "day"}}, ("dt",), GROUP_LEVEL, "fields.region: not a field of"),
        ({"dt": {"complete": {"values": ["eu"]}}}, ("dt",), GROUP_LEVEL, "fields.dt: complete with values rolls up"),
        (
            {"dt": {"field": "hour", "grain": "day"}, "hour": {"complete": {"values": ["eu"]}}},
            ("dt",),
            GROUP_LEVEL,
            "fields.hour: the member's field hour holds group field dt",
        ),
        (
            {
                "dt": {"field": "hour", "grain": "day", "complete": True},
                "region": {"complete": {"values": [f"r{n}" for n in range(42)]}},
            },
            ("dt",),
            "",
            "24 (dt) x 42 (region) = 1008 units one partition of the rollup needs, above the limit of 1000",
        ),
        ({"dt": {"grain": "day", "fanOut": "day"}}, ("dt",), "dt.fanOut", "fanOut (day) must be a grain finer"),
        ({"dt": {"grain": "day", "fanOut": "month"}}, ("dt",), "dt.fanOut", "must be a grain finer than grain (day)"),
        ({"dt": {"grain": "year", "fanOut": "hour"}}, ("dt",), "dt.fanOut", "names up to 8784 hours, above the limit"),
        ({"dt": {"grain": "day", "fanOut": "weekly"}}, ("dt",), "dt.fanOut", 'a finer grain (hour, day, month) or {"'),
        ({"dt": {"fanOut": "day"}}, ("dt",), "dt", "fanOut needs a grain"),
        ({"region": {"fanOut": {"values": ["eu"]}, "grain": "day"}}, ("dt", "region"), "region", "no field or grain"),
        ({"region": {"fanOut": {"values": ["eu"]}}}, ("dt",), GROUP_LEVEL, "fields.region: not a field of partition"),
        ({"region": {"fanOut": {"values": ["eu"]}, "complete": True}}, ("dt", "region"), "region", "exclude each"),
    ],
)
def test_a_bad_mapping_is_a_400_naming_the_field(
    fields: dict[str, Any], by: tuple[str, ...], where: str, words: str
) -> None:
    error = refused(fields, by)
    if where == GROUP_LEVEL:
        assert error.field == GROUP_LEVEL and f"members.1.partition.{words}" in str(error), str(error)
        return
    assert error.field == (f"{PATH}.{where}" if where else PATH), str(error)
    assert words in str(error)


def test_the_bound_is_the_product_of_the_fields_and_exactly_the_limit_is_allowed() -> None:
    """24 hours x 41 regions (984) is allowed, 42 (1008) is not; a year's 366 days is one fan-out, 8784 hours none."""
    at = {
        "dt": {"field": "hour", "grain": "day", "complete": True},
        "region": {"complete": {"values": [f"r{n}" for n in range(41)]}},
    }
    rule = rule_of({"assetKey": CLICKS, "partition": {"fields": at}})
    mapping = rule.groups[0].members[0].partition
    assert mapping is not None and mapping.units(("dt",)) == 984 <= MAX_UNITS
    assert len(mapping.unit_keys(f"dt={DAY}", ("dt",))) == 984
    ranged = MemberPartition.model_validate(
        {
            "fields": {
                "dt": {"grain": "day", "complete": {"from": 6, "to": 22}},
                "region": {"complete": {"values": REGIONS}},
            }
        }
    )
    assert ranged.units(("dt",)) == 32 == len(ranged.unit_keys(f"dt={DAY}", ("dt",)))
    assert ranged.describe_coverage(("dt",)) == " (hours 06 to 21 x region eu, us)"
    year = MemberPartition.model_validate({"fields": {"dt": {"grain": "year", "fanOut": "day"}}})
    assert year.fan_out(("dt",)) == 366 and len(year.partitions_of("dt=2024", ("dt",))) == 366
    assert len(year.partitions_of("dt=2026", ("dt",))) == 365


def test_one_field_mappings_keep_their_mapping_ids_so_kept_facts_stay_theirs() -> None:
    """The facts of a mapping are kept under its id: a rule written before keeps finding them."""

    def old(spec: list[Any]) -> str:
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    plain = MemberPartition.model_validate({"fields": {"dt": {"field": "hour", "grain": "day"}}})
    assert plain.mapping_id(("dt", "region")) == old([["dt", "hour", "day"], ["region", "region", None]])
    rolled = MemberPartition.model_validate({"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}})
    assert rolled.mapping_id(("dt",)) == old([["dt", "hour", "day"], ["complete", "dt"]])
    fanned = MemberPartition.model_validate({"fields": {"hr": {"field": "dt", "grain": "day", "fanOut": True}}})
    assert fanned.mapping_id(("hr",)) == old([["hr", "dt", "day"]])  # a fan-out shares the plain mapping's facts
    # a rollup over values keeps other facts (their keys hold the value), whatever the values
    other = MemberPartition.model_validate(
        {"fields": {**HOURS_BY_REGION["fields"], "region": {"complete": {"values": ["ap"]}}}}
    )
    both = MemberPartition.model_validate(HOURS_BY_REGION)
    assert both.mapping_id(("dt",)) == other.mapping_id(("dt",)) != rolled.mapping_id(("dt",))


# --- mapping keys: properties ----------------------------------------------------------------------

days = st.dates().map(lambda d: d.isoformat()).filter(lambda v: len(v) == 10)
values = st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=4, unique=True)


@st.composite
def mappings(draw: st.DrawFn) -> tuple[MemberPartition, tuple[str, ...]]:
    """A member rolling up (one grain apart or further) and fanning out some of: ``t`` (a time field), ``u`` (a second
    one), ``v`` (values of a field the group keys on, fanned out) and ``w`` (values of a member field, rolled up)."""
    fields: dict[str, Any] = {}
    by = ["t", "u", "v"]
    for name in ("t", "u"):
        grain = draw(st.sampled_from(["day", "month", "year"]))
        kind = draw(st.sampled_from(["plain", "complete", "completeFar", "fanOut", "fanOutFar"]))
        far = "day" if grain == "year" else "hour"  # a year's days, a month's (or a day's) hours
        if kind == "plain":
            fields[name] = {"field": f"m{name}", "grain": grain}
        elif kind == "complete":
            fields[name] = {"field": f"m{name}", "grain": grain, "complete": True}
        elif kind == "completeFar":
            fields[name] = {"field": f"m{name}", "grain": grain, "complete": far}
        elif kind == "fanOut" or grain == "day":
            fields[name] = {"field": f"m{name}", "grain": grain, "fanOut": True}
        else:
            fields[name] = {"field": f"m{name}", "grain": grain, "fanOut": far}
    if draw(st.booleans()):
        fields["v"] = {"fanOut": {"values": draw(values)}}
    if draw(st.booleans()):
        fields["w"] = {"complete": {"values": draw(values)}}
    try:
        mapping = MemberPartition.model_validate({"fields": fields})
    except PydanticValidationError:  # past the bound: refused when written, nothing to map
        reject()
    return mapping, tuple(by)


def member_key(draw: Callable[[st.SearchStrategy[Any]], Any], mapping: MemberPartition) -> str:
    """A key of the member: an hour for its time fields (it cuts to every grain), any text for ``v``, one of the
    rolled-up values (or another) for ``w``."""
    out = [(name, f"{draw(days)}-{draw(st.integers(0, 23)):02d}") for name in ("mt", "mu")]
    out.append(("v", draw(st.text(max_size=4))))
    out.append(("w", draw(st.one_of(st.sampled_from(list(_values(mapping, "w"))), st.text(min_size=1, max_size=4)))))
    return format_partition_key(out)


def _values(mapping: MemberPartition, name: str) -> tuple[str, ...]:
    source = mapping.fields.get(name)
    found = None if source is None else (source.rollup_values or source.fan_out_values)
    return found.values if found is not None else ("x",)


@settings(max_examples=examples(150), deadline=None)
@given(drawn=mappings(), data=st.data())
def test_every_partition_a_fact_names_maps_back_to_that_fact(
    drawn: tuple[MemberPartition, tuple[str, ...]], data: st.DataObject
) -> None:
    """For any mapping of several fields and any member key: each partition its fact names needs that fact (among
    its units), fits the mapping, and there are at most fan_out() of them and each needs at most units() facts."""
    mapping, by = drawn
    key = member_key(data.draw, mapping)
    fact = mapping.fact_key(key, by)
    assert fact is not None  # an hour cuts to every grain, and every other field is named
    named = mapping.partitions_of(fact, by)
    assert len(named) <= mapping.fan_out(by)
    assert len(set(named)) == len(named)
    picked = {named[0], named[-1], *data.draw(st.lists(st.sampled_from(named), max_size=3))} if named else set()
    for partition in picked:  # a few of them: a fact may name up to 1000, each needing up to 1000 units
        assert mapping.misfit(partition, by) is None
        units = mapping.unit_keys(partition, by)
        assert len(units) <= mapping.units(by) and len(set(units)) == len(units)
        w = mapping.fields.get("w")
        rolled_out = w is not None and dict(parse_partition_key(fact))["w"] not in _values(mapping, "w")
        assert (fact in units) is not rolled_out  # a value the rollup does not wait for is no unit of it
        for unit in {units[0], units[-1], *data.draw(st.lists(st.sampled_from(units), max_size=3))}:
            assert partition in mapping.partitions_of(unit, by)  # each unit it needs names it back


# --- a partition of a rollup over hours x regions is complete exactly when every unit has a fact -------

GROUP = rule_of().groups[0]
CLICKS_MEMBER = GROUP.members[1]


def fact(unit: str, order: int) -> PartitionFact:
    return PartitionFact(CLICKS, mapping_of(GROUP, CLICKS_MEMBER), unit, order, order)


@settings(max_examples=examples(120), deadline=None)
@given(
    day=days,
    touched=st.sets(st.tuples(st.integers(0, 23), st.sampled_from(["eu", "us", "ap"])), max_size=60),
)
def test_a_day_of_hours_by_region_is_complete_exactly_when_every_unit_of_the_product_has_a_fact(
    day: str, touched: set[tuple[int, str]]
) -> None:
    rule = rule_of()
    group = rule.groups[0]
    orders = PartitionFact(ORDERS, mapping_of(group, group.members[0]), f"dt={day}", 1, 1)
    facts = {orders.key: orders}
    assert CLICKS_MEMBER.partition is not None
    for n, (hour, region) in enumerate(sorted(touched), start=2):
        unit = CLICKS_MEMBER.partition.fact_key(f"hour={day}-{hour:02d}/region={region}", ("dt",))
        assert unit is not None
        facts[fact(unit, n).key] = fact(unit, n)
    view, cursor = partition_view(rule, group, f"dt={day}", facts, {}, None)
    verdict = evaluate_group(rule, group, {}, cursor, 0, partition=view)
    wanted = {(h, r) for h in range(24) for r in REGIONS}
    missing = sorted(wanted - touched)
    assert verdict.ready is (not missing)
    clicks = verdict.members[1]
    if missing:
        assert clicks.status is Status.WAITING_FOR_PARTITION
        first = f"dt={day}-{missing[0][0]:02d}/region={missing[0][1]}"
        assert f"{48 - len(missing)} of the 48 units of dt={day} (region eu, us)" in (clicks.reason or "")
        assert f"missing {first}" in (clicks.reason or "")
    else:
        newest = max(n for n, u in enumerate(sorted(touched), start=2) if u[1] in REGIONS)
        assert [p.snapshot_id for p in verdict.pins] == [1, newest]


# --- the resolver ----------------------------------------------------------------------------------


def regional(lake: Lake, sid: int, *units: tuple[str, str]) -> None:
    """A clicks commit touching (hour, region) units."""
    commit(lake, CLICKS, sid, *(f"hour={h}/region={r}" for h, r in units))


@settings(max_examples=examples(12), deadline=None)
@given(
    order=st.permutations([(h, r) for h in range(24) for r in REGIONS]),
    batch=st.integers(1, 48),
    extra=st.booleans(),
)
def test_a_day_runs_once_when_its_last_hour_and_region_arrives_and_explain_names_the_missing(
    order: list[tuple[int, str]], batch: int, extra: bool
) -> None:
    """The 48 (hour, region) units arrive in any order and batching: the day waits, explain naming the missing
    units, until the last one has a commit, then runs once pinning the newest; a region not waited for runs
    nothing; a unit rewritten runs the day again (ANY_UPDATED), one of another region does not."""
    lake = Lake(rule_of(mode="ANY_UPDATED", rule_id="daily"))
    commit(lake, ORDERS, 1, f"dt={DAY}")
    if extra:
        regional(lake, 800, (f"{DAY}-05", "ap"))
    lake.deliver()
    for n, (hour, region) in enumerate(order, start=1):
        regional(lake, 900 + n, (f"{DAY}-{hour:02d}", region))
        if n % batch and n < 47:
            continue
        lake.deliver()
        if n == 47:
            assert lake.runs() == []
            [line] = [p for p in lake.explain().partitions if p.partition == f"dt={DAY}"]
            assert line.status is Status.WAITING_FOR_PARTITION
            last = f"dt={DAY}-{order[47][0]:02d}/region={order[47][1]}"
            assert f"47 of the 48 units of dt={DAY} (region eu, us) have a data commit; missing {last}" in (
                line.reason or ""
            )
            [clicks] = [m for m in line.members if m.asset_key == CLICKS]
            assert clicks.current["missing"] == [last]
    assert lake.runs() == [(f"dt={DAY}", [(ORDERS, 1), (CLICKS, 948)])]
    regional(lake, 990, (f"{DAY}-05", "ap"))
    lake.deliver()
    assert len(lake.runs()) == 1
    regional(lake, 991, (f"{DAY}-05", "us"))
    lake.deliver()
    assert lake.runs()[1:] == [(f"dt={DAY}", [(ORDERS, 1), (CLICKS, 991)])]


def test_a_manual_run_of_a_day_missing_units_names_them() -> None:
    lake = Lake(rule_of(rule_id="daily"))
    commit(lake, ORDERS, 1, f"dt={DAY}")
    regional(lake, 900, *((f"{DAY}-{h:02d}", r) for h in range(24) for r in REGIONS if (h, r) != (23, "us")))
    lake.deliver()
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    with pytest.raises(ConflictError, match=rf"1 of the 48 units of dt={DAY} \(dt={DAY}-23/region=us\)"):
        partition_pins(lake.partitions, GROUP, f"dt={DAY}", states)
    regional(lake, 901, (f"{DAY}-23", "us"))
    lake.deliver()
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    pins = partition_pins(lake.partitions, GROUP, f"dt={DAY}", states)
    assert {k: p.snapshot_id for k, p in pins.items()} == {ORDERS: 1, CLICKS: 901}


def test_a_years_commit_fans_out_to_its_days() -> None:
    """A yearly table (``"fanOut": "day"``) next to a daily one: each day runs once both touched it, pinning the
    year's commit; one fact for the year, weighed as its 366 days."""
    yearly = {"assetKey": ORDERS, "partition": {"fields": {"dt": {"field": "y", "grain": "year", "fanOut": "day"}}}}
    rule = rule_of(yearly, {"assetKey": CLICKS, "partition": {}}, rule_id="daily")
    lake = Lake(rule)
    commit(lake, ORDERS, 1, "y=2026")
    lake.deliver()
    assert lake.runs() == [] and lake.partitions.writes == 1
    commit(lake, CLICKS, 900, f"dt={DAY}", "dt=2027-01-01")
    lake.deliver()
    assert lake.runs() == [(f"dt={DAY}", [(ORDERS, 1), (CLICKS, 900)])]
    [line] = [p for p in lake.explain().partitions if p.partition == "dt=2027-01-01"]
    assert "no data commit has touched dt=2027 (fanned out to dt=2027-01-01) yet" in (line.reason or "")
    assert weights([(rule, rule.groups[0])]) == {ORDERS: 366, CLICKS: 1}
    assert all(grain_of(d) is Grain.DAY for d in units_of("2026", Grain.YEAR, Grain.DAY))
    assert len(units_of("2026-02", Grain.MONTH, Grain.HOUR)) == 28 * 24


def test_a_daily_table_fans_out_to_each_region_of_a_regional_group() -> None:
    """``"region": {"fanOut": {"values": [...]}}``: a daily table with no region feeds each (day, region) partition
    of the listed regions; a region not listed is no partition of it."""
    fanned = {"assetKey": ORDERS, "partition": {"fields": {"region": {"fanOut": {"values": REGIONS}}}}}
    rule = rule_of(fanned, {"assetKey": CLICKS, "partition": {}}, partition_by=("dt", "region"), rule_id="daily")
    lake = Lake(rule)
    commit(lake, ORDERS, 1, f"dt={DAY}")
    commit(lake, CLICKS, 900, f"dt={DAY}/region=eu", f"dt={DAY}/region=ap")
    lake.deliver()
    assert lake.runs() == [(f"dt={DAY}/region=eu", [(ORDERS, 1), (CLICKS, 900)])]
    board = lake.explain()
    [ap] = [p for p in board.partitions if p.partition == f"dt={DAY}/region=ap"]
    assert ap.status is Status.WAITING_FOR_PARTITION and ORDERS in (ap.reason or "")
    assert (
        GroupExplanation.from_domain(board).dump()["pendingPartitions"] == 2
    )  # ap (clicks touched it), and us (the day touched it)
    commit(lake, CLICKS, 901, f"dt={DAY}/region=us")
    lake.deliver()
    assert lake.runs()[1:] == [(f"dt={DAY}/region=us", [(ORDERS, 1), (CLICKS, 901)])]
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    with pytest.raises(ValidationError, match="region 'ap' is none of the values the member fans out to"):
        partition_pins(lake.partitions, rule.groups[0], f"dt={DAY}/region=ap", states)
    assert weights([(rule, rule.groups[0])]) == {ORDERS: 2, CLICKS: 1}


def test_a_field_renamed_without_a_grain_maps_the_members_dt_onto_the_groups_day() -> None:
    """``{"day": {"field": "dt"}}``: the member's ``dt`` is the group's ``day``, value as it is."""
    renamed = {"assetKey": ORDERS, "partition": {"fields": {"day": {"field": "dt"}}}}
    rule = rule_of(renamed, {"assetKey": CLICKS, "partition": {}}, partition_by=("day",), rule_id="daily")
    mapping = rule.groups[0].members[0].partition
    assert mapping is not None and mapping.fact_key("dt=2026-12-01/region=eu", ("day",)) == "day=2026-12-01"
    assert mapping.fact_key("day=2026-12-01", ("day",)) is None  # the member's own field is dt
    lake = Lake(rule)
    commit(lake, ORDERS, 1, "dt=not-a-date")
    commit(lake, CLICKS, 900, "day=not-a-date")
    lake.deliver()
    assert lake.runs() == [("day=not-a-date", [(ORDERS, 1), (CLICKS, 900)])]
