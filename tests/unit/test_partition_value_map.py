"""A mapping of values onto values (issue 33): a group keyed on ``region`` takes it from a member's ``country`` with
``"region": {"field": "country", "map": {"de": "eu", "fr": "eu", "us": "us"}}``: a commit touching ``country=de``
touches ``region=eu``, one touching a country the map does not name touches no partition. With ``complete`` (true or
``{"atLeast": n}``) it is a rollup: ``region=eu`` is held once de and fr each have a commit (docs/partitions.md,
"Several fields, values, and grains further apart")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import ValidationError
from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import PartitionFact, mapping_of, partition_view
from lakehook.domain.partition_rules import MemberPartition
from lakehook.domain.partitions import format_partition_key, parse_partition_key
from lakehook.domain.status import Status
from lakehook.usecases.resolve_partitions import partition_pins
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_fanout import commit
from tests.unit.test_partition_multifield import DAY, GROUP_LEVEL, PATH, days, refused, rule_of
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake

BY = ("dt", "region")
COUNTRIES = {"de": "eu", "fr": "eu", "us": "us"}


def by_region(region: dict[str, Any], mode: str = "ALL_UPDATED") -> Any:
    """Orders keyed on dt and country (its region from the map), clicks keyed on dt and region as the group is."""
    orders = {"assetKey": ORDERS, "partition": {"fields": {"region": region}}}
    return rule_of(orders, {"assetKey": CLICKS, "partition": {}}, partition_by=BY, mode=mode, rule_id="daily")


def mapped(**extra: Any) -> dict[str, Any]:
    return {"field": "country", "map": COUNTRIES, **extra}


# --- the model -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        ({"region": {"field": "country", "map": {}}}, "region.map", "Dictionary should have at least 1 item"),
        ({"region": {"map": {"de": ""}}}, "region.map", "each value mapped, and each it maps onto, is 1 to 256"),
        ({"region": {"map": {"": "eu"}}}, "region.map", "each value mapped, and each it maps onto, is 1 to 256"),
        ({"region": {"map": {f"c{n}": "eu" for n in range(1001)}}}, "region.map", "at most 1000 items"),
        ({"region": {"map": COUNTRIES, "grain": "day"}}, "region", "map takes no grain and no fanOut"),
        ({"region": {"map": COUNTRIES, "fanOut": {"values": ["eu"]}}}, "region", "map takes no grain and no fanOut"),
        ({"region": mapped(complete={"from": 1, "to": 3})}, "region", 'map with complete takes true or {"atLeast"'),
        ({"region": mapped(complete="hour")}, "region", 'map with complete takes true or {"atLeast": n}'),
        ({"region": mapped(complete={"atLeast": 1, "values": ["de"]})}, "region", "map with complete takes true"),
        ({"region": mapped(complete={"atLeast": 2})}, "", "region.complete.atLeast (2) is above the 1 units"),
        ({"country": {"map": COUNTRIES}}, GROUP_LEVEL, "fields.country: not a field of partitionBy"),
    ],
)
def test_a_bad_map_is_a_400_naming_the_field(fields: dict[str, Any], where: str, words: str) -> None:
    error = refused(fields, BY)
    if where == GROUP_LEVEL:
        assert error.field == GROUP_LEVEL and f"members.1.partition.{words}" in str(error), str(error)
        return
    assert error.field == (f"{PATH}.{where}" if where else PATH), str(error)
    assert words in str(error), str(error)


def test_the_spelling_round_trips_and_the_map_is_part_of_a_plain_mappings_id() -> None:
    for region in (mapped(), mapped(complete=True), mapped(complete={"atLeast": 1})):
        rule = by_region(region)
        shown = json_form(rule)["groups"][0]["members"][0]["partition"]["fields"]["region"]
        assert {k: v for k, v in shown.items() if v is not False} == region
        assert type(rule).model_validate(json_form(rule)) == rule

    def of(region: dict[str, Any]) -> str:
        return MemberPartition.model_validate({"fields": {"region": region}}).mapping_id(BY)

    other = {"de": "central", "fr": "eu", "us": "us"}
    assert of(mapped()) != of({"field": "country", "map": other})  # its facts hold the regions: another map, others
    assert of(mapped()) == of({"field": "country", "map": dict(reversed(COUNTRIES.items()))})  # order is no part
    assert of(mapped(complete=True)) == of({"field": "country", "map": other, "complete": True})  # facts: countries
    assert len({of(mapped()), of(mapped(complete=True)), of({"field": "country"})}) == 3


# --- mapping keys: properties ----------------------------------------------------------------------

names = st.text(alphabet="abcxyz/=%", min_size=1, max_size=3)


@st.composite
def maps(draw: st.DrawFn) -> tuple[MemberPartition, dict[str, str]]:
    """A member mapping countries onto regions (plain, or rolled up: every one or at least one), next to ``dt`` as
    it is, cut to days, or rolled up from hours."""
    countries = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    onto = {c: draw(st.sampled_from(["eu", "us", "ap"])) for c in countries}
    region: dict[str, Any] = {"field": "country", "map": onto}
    region.update(draw(st.sampled_from([{}, {"complete": True}, {"complete": {"atLeast": 1}}])))
    dt = draw(st.sampled_from([{}, {"grain": "day"}, {"field": "hour", "grain": "day", "complete": True}]))
    return MemberPartition.model_validate({"fields": {"region": region, "dt": dt}}), onto


@settings(max_examples=examples(200), deadline=None)
@given(drawn=maps(), data=st.data())
def test_a_country_touches_its_regions_partition_and_every_partition_a_fact_names_needs_it(
    drawn: tuple[MemberPartition, dict[str, str]], data: st.DataObject
) -> None:
    mapping, onto = drawn
    country = data.draw(st.one_of(st.sampled_from(sorted(onto)), names))
    day = data.draw(days)
    hour = f"{day}-{data.draw(st.integers(0, 23)):02d}"
    key = format_partition_key([("dt", day), ("hour", hour), ("country", country)])
    fact = mapping.fact_key(key, BY)
    if country not in onto:
        assert fact is None and mapping.map_key(key, BY) is None  # a country the map does not name: no partition
        return
    assert fact is not None
    named = mapping.partitions_of(fact, BY)
    assert len(named) == 1 and dict(parse_partition_key(named[0]))["region"] == onto[country]
    units = mapping.unit_keys(named[0], BY)
    assert fact in units and len(units) <= mapping.units(BY)
    assert mapping.misfit(named[0], BY) is None
    for unit in units:
        assert mapping.partitions_of(unit, BY) == named  # each unit it needs names it back
    rolled = mapping.fields["region"].rolls_up
    wanted = [c for c in onto if onto[c] == onto[country]] if rolled else [country]
    assert sorted({dict(parse_partition_key(u))["region"] for u in units}) == sorted(
        wanted if rolled else [onto[country]]
    )
    if not mapping.fields["dt"].rolls_up:
        assert mapping.map_key(key, BY) == named[0]


# --- a region is held exactly when each of its countries has a fact ------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(day=days, touched=st.sets(st.sampled_from(["de", "fr", "us", "jp"])), least=st.booleans())
def test_a_region_of_countries_is_held_exactly_when_each_or_one_of_them_has_a_fact(
    day: str, touched: set[str], least: bool
) -> None:
    rule = by_region(mapped(complete={"atLeast": 1} if least else True))
    group = rule.groups[0]
    orders = group.members[0]
    assert orders.partition is not None
    clicks = PartitionFact(CLICKS, mapping_of(group, group.members[1]), f"dt={day}/region=eu", 1, 1)
    facts = {clicks.key: clicks}
    for n, country in enumerate(sorted(touched), start=2):
        key = orders.partition.fact_key(f"dt={day}/country={country}", BY)
        if key is not None:  # jp maps onto no region
            facts[(ORDERS, mapping_of(group, orders), key)] = PartitionFact(
                ORDERS, mapping_of(group, orders), key, n, n
            )
    view, cursor = partition_view(rule, group, f"dt={day}/region=eu", facts, {}, None)
    verdict = evaluate_group(rule, group, {}, cursor, 0, partition=view)
    present = touched & {"de", "fr"}
    assert verdict.ready is (bool(present) if least else present == {"de", "fr"})
    if not verdict.ready:
        member = verdict.members[0]
        assert member.status is Status.WAITING_FOR_PARTITION
        reason = member.reason or ""
        assert f"{len(present)} of the 2 units of dt={day}/region=eu (country mapped onto region)" in reason
        assert f"missing dt={day}/region={min({'de', 'fr'} - present)}" in reason


# --- the resolver ----------------------------------------------------------------------------------


def test_a_country_runs_its_region_and_one_not_mapped_runs_nothing() -> None:
    rule = by_region(mapped(), mode="ANY_UPDATED")
    lake = Lake(rule)
    commit(lake, ORDERS, 1, f"dt={DAY}/country=de", f"dt={DAY}/country=jp")
    commit(lake, CLICKS, 900, f"dt={DAY}/region=eu", f"dt={DAY}/region=us")
    lake.deliver()
    assert lake.runs() == [(f"dt={DAY}/region=eu", [(ORDERS, 1), (CLICKS, 900)])]
    assert lake.partitions.writes == 3  # de onto eu, and clicks' two: jp is none
    board = {p.partition: p for p in lake.explain().partitions}
    assert board[f"dt={DAY}/region=us"].status is Status.WAITING_FOR_PARTITION
    assert f"no data commit has touched dt={DAY}/region=us yet" in (board[f"dt={DAY}/region=us"].reason or "")
    commit(lake, ORDERS, 2, f"dt={DAY}/country=jp")
    lake.deliver()
    assert len(lake.runs()) == 1  # jp touches no region
    commit(lake, ORDERS, 3, f"dt={DAY}/country=fr")
    lake.deliver()
    assert lake.runs()[1:] == [(f"dt={DAY}/region=eu", [(ORDERS, 3), (CLICKS, 900)])]  # fr is eu too
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    with pytest.raises(ValidationError, match="region 'ap' is none of the values the member's map maps onto"):
        partition_pins(lake.partitions, rule.groups[0], f"dt={DAY}/region=ap", states)


def test_a_region_runs_once_each_of_its_countries_has_a_commit() -> None:
    """A rollup of mapped values: eu waits for fr once de came (explain naming it), runs when fr comes, pinning the
    newest; a commit to us alone runs us (its one country)."""
    lake = Lake(by_region(mapped(complete=True)))
    commit(lake, CLICKS, 900, f"dt={DAY}/region=eu", f"dt={DAY}/region=us")
    commit(lake, ORDERS, 1, f"dt={DAY}/country=de")
    lake.deliver()
    assert lake.runs() == []
    [eu] = [p for p in lake.explain().partitions if p.partition == f"dt={DAY}/region=eu"]
    expected = f"1 of the 2 units of dt={DAY}/region=eu (country mapped onto region) have a data commit; missing"
    assert expected in (eu.reason or "") and f"dt={DAY}/region=fr" in (eu.reason or "")
    commit(lake, ORDERS, 2, f"dt={DAY}/country=fr", f"dt={DAY}/country=us")
    lake.deliver()
    assert sorted(lake.runs()) == [
        (f"dt={DAY}/region=eu", [(ORDERS, 2), (CLICKS, 900)]),
        (f"dt={DAY}/region=us", [(ORDERS, 2), (CLICKS, 900)]),
    ]


def test_a_map_with_no_preimage_for_a_group_value_is_no_partition_of_the_member() -> None:
    mapping = MemberPartition.model_validate({"fields": {"region": mapped(complete=True)}})
    assert mapping.unit_keys(f"dt={DAY}/region=ap", BY) == []
    assert "none of the values the member's map maps onto (region eu, us)" in (
        mapping.misfit(f"dt={DAY}/region=ap", BY) or ""
    )
    with pytest.raises(PydanticValidationError):
        MemberPartition.model_validate({"fields": {"region": {"map": {"de": "eu"}, "complete": {"atLeast": 0}}}})
