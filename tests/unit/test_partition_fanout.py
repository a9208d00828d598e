"""Fan-out mappings (issue 33): a member whose value is coarser than the group's field gives every finer partition
inside it. A daily table (``fanOut``) and an hourly table in a group keyed on hours: each hour runs once both
touched it, pinning the day's commit; a new day's commit runs the hours again (ANY_UPDATED) or waits for the hourly
side (ALL_UPDATED); one fact per day is kept, the resolver's work per invocation is weighted by the partitions a
day names; manual runs and explain name the day (docs/partitions.md, "Fan-out")."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_rules import Grain, MemberPartition, grain_of
from lakehook.domain.partitions import format_partition_key
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.domain.status import Status
from lakehook.ports.rules import StateChange
from lakehook.usecases.resolve_continue import weights
from lakehook.usecases.resolve_partitions import partition_pins
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_bounds import Bounded
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake

DAY = "2026-12-01"
FAN: dict[str, Any] = {"fields": {"hr": {"field": "dt", "grain": "day", "fanOut": True}}}
HOURS: dict[str, Any] = {"fields": {"hr": {"field": "hour", "grain": "hour"}}}


def by_hour(*members: dict[str, Any], mode: str = "ALL_UPDATED", rule_id: str = "hourly") -> Rule:
    """A group keyed on hours: the daily orders fanned out, the hourly clicks as they are."""
    members = members or ({"assetKey": ORDERS, "partition": FAN}, {"assetKey": CLICKS, "partition": HOURS})
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode},
            "groups": [{"groupId": "g", "partitionBy": ["hr"], "members": list(members)}],
        }
    )


def commit(lake: Lake, asset: str, sid: int, *keys: str) -> None:
    """A commit of ``asset`` touching ``keys``: its event's stream record and the state's."""
    before = lake.store.get_state(asset)
    event = AssetEvent(
        eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, sequenceNumber=sid, partitions=list(keys)
    )
    if lake.ingest.ingest(event, SourceType.PUSH).status is not IngestStatus.DUPLICATE:
        lake.stream.setdefault(asset, []).append(
            StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)
        )
    after = lake.store.get_state(asset)
    if after is not None and (before is None or before.version != after.version):
        lake.stream.setdefault(asset, []).append(StateChange(asset, after))


def daily(lake: Lake, sid: int, *days: str) -> None:
    commit(lake, ORDERS, sid, *(f"dt={d}" for d in days))


def hourly(lake: Lake, sid: int, *hours: str) -> None:
    commit(lake, CLICKS, sid, *(f"hour={h}" for h in hours))


def explained(lake: Lake, rule_id: str = "hourly") -> dict[str, Any]:
    stored = lake.rules.get_rule(rule_id)
    assert stored is not None
    board = lake.resolve.evaluate(stored.rule, claim=False).verdicts[(rule_id, "g")]
    return {p.partition: p for p in board.partitions}


# --- the model: spelling and validation ------------------------------------------------------------


def test_a_fan_out_rule_round_trips_and_a_plain_one_says_nothing_of_it() -> None:
    rule = by_hour()
    assert Rule.model_validate(json_form(rule)) == rule
    assert json_form(rule)["groups"][0]["members"][0]["partition"]["fields"]["hr"]["fanOut"] is True
    plain = parse_rule(
        "hourly",
        {
            **json_form(by_hour()),
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": ORDERS, "partition": {"fields": {"dt": {"grain": "day"}}}}],
                }
            ],
        },
    )
    assert "fanOut" not in json_form(plain)["groups"][0]["members"][0]["partition"]["fields"]["dt"]


def _refused(*members: dict[str, Any]) -> ValidationError:
    data = copy.deepcopy(json_form(by_hour()))
    data["groups"][0]["members"] = list(members)
    with pytest.raises(ValidationError) as caught:
        parse_rule("hourly", data)
    return caught.value


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ({"field": "dt", "grain": "day", "fanOut": True, "complete": True}, "exclude each other"),
        ({"field": "dt", "fanOut": True}, "fanOut needs a grain"),
        ({"field": "dt", "grain": "hour", "fanOut": True}, "fanOut needs a grain"),
        ({"field": "dt", "grain": "day", "fanOut": "sometimes"}, ""),
    ],
)
def test_a_bad_fan_out_is_a_400_naming_the_field(source: dict[str, Any], words: str) -> None:
    error = _refused({"assetKey": ORDERS, "partition": {"fields": {"hr": source}}})
    assert error.field is not None and error.field.startswith("groups.0.members.0.partition.fields.hr")
    assert words in str(error)


def test_a_member_may_fan_out_two_fields_up_to_the_bound_of_partitions_a_fact_names() -> None:
    """Two fanned-out fields name the product of their units (a day's 24 hours x a year's 12 months); past
    MAX_UNITS partitions per fact the rule is refused, naming the fields."""
    two = {"hr": {"field": "dt", "grain": "day", "fanOut": True}, "mo": {"field": "y", "grain": "year", "fanOut": True}}
    data = copy.deepcopy(json_form(by_hour()))
    data["groups"][0]["partitionBy"] = ["hr", "mo"]
    data["groups"][0]["members"] = [{"assetKey": ORDERS, "partition": {"fields": two}}]
    rule = parse_rule("hourly", data)
    mapping = rule.groups[0].members[0].partition
    assert mapping is not None and mapping.fan_out(("hr", "mo")) == 24 * 12
    data["groups"][0]["members"][0]["partition"]["fields"]["mo"]["fanOut"] = "day"  # a year's 366 days x 24 hours
    with pytest.raises(ValidationError) as caught:
        parse_rule("hourly", data)
    assert caught.value.field == "groups.0.members.0.partition.fields"
    assert "24 (hr) x 366 (mo) = 8784 partitions one fact names, above the limit of 1000" in str(caught.value)


def test_a_fan_out_next_to_a_member_giving_the_field_at_another_grain_is_refused() -> None:
    """The daily table fans its days out to hours, but the other member cuts ``hr`` to days: no partition of the
    group could be both, so the group would never run."""
    error = _refused(
        {"assetKey": ORDERS, "partition": FAN},
        {"assetKey": CLICKS, "partition": {"fields": {"hr": {"field": "hour", "grain": "day"}}}},
    )
    assert error.field == "groups.0.members"
    assert "members.0.partition.fields.hr: fans days out to hours, but members.1 gives hr as days" in str(error)
    # a member that cuts the field to no grain, or one that is hourly, agrees with the fan-out
    by_hour({"assetKey": ORDERS, "partition": FAN}, {"assetKey": CLICKS, "partition": {"fields": {"hr": {}}}})
    by_hour({"assetKey": ORDERS, "partition": FAN}, {"assetKey": CLICKS, "partition": HOURS})


# --- mapping keys ----------------------------------------------------------------------------------

days = st.dates().map(lambda d: d.isoformat()).filter(lambda v: len(v) == 10)


@given(day=days, region=st.text(min_size=1, max_size=6))
def test_a_days_fact_names_its_24_hours_and_each_hour_finds_the_day(day: str, region: str) -> None:
    mapping = MemberPartition.model_validate({"fields": {"hr": {"field": "dt", "grain": "day", "fanOut": True}}})
    by = ("hr", "region")
    fact = mapping.fact_key(format_partition_key([("dt", day), ("region", region)]), by)
    assert fact == format_partition_key([("hr", day), ("region", region)])  # one fact, the day's
    hours = mapping.partitions_of(fact, by)
    assert hours == [format_partition_key([("hr", f"{day}-{h:02d}"), ("region", region)]) for h in range(24)]
    assert all(mapping.unit_keys(h, by) == [fact] and mapping.misfit(h, by) is None for h in hours)
    assert mapping.unit_keys(fact, by) == []  # a day is no partition of a group keyed on hours
    assert "is no hour (2026-12-01-10), the grain the member fans its days out to" in (mapping.misfit(fact, by) or "")
    assert mapping.fan_out(by) == 24


def test_a_month_fans_out_to_its_days_and_a_year_to_its_months() -> None:
    month = MemberPartition.model_validate({"fields": {"dt": {"grain": "month", "fanOut": True}}})
    assert month.partitions_of("dt=2024-02", ("dt",)) == [f"dt=2024-02-{d:02d}" for d in range(1, 30)]
    assert month.unit_keys("dt=2024-02-29", ("dt",)) == ["dt=2024-02"] and month.fan_out(("dt",)) == 31
    year = MemberPartition.model_validate({"fields": {"dt": {"field": "y", "grain": "year", "fanOut": True}}})
    assert year.fact_key("y=2026", ("dt",)) == "dt=2026"
    assert year.partitions_of("dt=2026", ("dt",)) == [f"dt=2026-{m:02d}" for m in range(1, 13)]
    assert year.fact_key("y=20788", ("dt",)) is None  # no time value: no partition of the group
    assert all(grain_of(p[3:]) is Grain.MONTH for p in year.partitions_of("dt=2026", ("dt",)))


# --- the resolver ----------------------------------------------------------------------------------


def test_each_hour_runs_once_both_touched_it_pinning_the_days_commit() -> None:
    lake = Lake(by_hour())
    daily(lake, 1, DAY)
    lake.deliver()
    assert lake.runs() == [] and lake.partitions.writes == 1  # one fact for the day, not 24
    hourly(lake, 900, f"{DAY}-10", f"{DAY}-11")
    lake.deliver()
    assert sorted(lake.runs()) == [
        (f"hr={DAY}-10", [(ORDERS, 1), (CLICKS, 900)]),
        (f"hr={DAY}-11", [(ORDERS, 1), (CLICKS, 900)]),
    ]
    hourly(lake, 901, f"{DAY}-12", "2026-12-02-05")
    lake.deliver()
    assert lake.runs()[2:] == [(f"hr={DAY}-12", [(ORDERS, 1), (CLICKS, 901)])]
    shown = explained(lake)
    waiting = shown[f"hr={DAY}-13"]  # the day touched it; the hourly side has not
    assert waiting.status is Status.WAITING_FOR_PARTITION and CLICKS in (waiting.reason or "")
    [orders] = [m for m in shown[f"hr={DAY}-10"].members if m.asset_key == ORDERS]
    assert orders.current == {"snapshotId": 1, "order": 1, "partition": f"hr={DAY}-10", "fanOutOf": f"hr={DAY}"}
    no_day = shown["hr=2026-12-02-05"]
    assert no_day.status is Status.WAITING_FOR_PARTITION
    assert "no data commit has touched hr=2026-12-02 (fanned out to hr=2026-12-02-05) yet" in (no_day.reason or "")


def test_a_new_days_commit_runs_its_hours_again_with_any_updated() -> None:
    lake = Lake(by_hour(mode="ANY_UPDATED"))
    daily(lake, 1, DAY)
    hourly(lake, 900, f"{DAY}-10", f"{DAY}-11")
    lake.deliver()
    assert len(lake.runs()) == 2
    daily(lake, 2, DAY)  # the day rewritten: every hour of it that ran runs again with the new day
    lake.deliver()
    assert sorted(lake.runs()[2:]) == [
        (f"hr={DAY}-10", [(ORDERS, 2), (CLICKS, 900)]),
        (f"hr={DAY}-11", [(ORDERS, 2), (CLICKS, 900)]),
    ]
    lake.deliver()
    assert len(lake.runs()) == 4


def test_a_new_days_commit_waits_for_the_hourly_side_with_all_updated() -> None:
    lake = Lake(by_hour())
    daily(lake, 1, DAY)
    hourly(lake, 900, f"{DAY}-10", f"{DAY}-11")
    lake.deliver()
    daily(lake, 2, DAY)
    lake.deliver()
    assert len(lake.runs()) == 2
    line = explained(lake)[f"hr={DAY}-10"]
    assert line.status is Status.WAITING_FOR_UPDATE and CLICKS in (line.reason or "")
    hourly(lake, 901, f"{DAY}-10")
    lake.deliver()
    assert lake.runs()[2:] == [(f"hr={DAY}-10", [(ORDERS, 2), (CLICKS, 901)])]
    hourly(lake, 902, f"{DAY}-11")  # both sides moved since hour 11 ran: the day's commit 2, the clicks' 902
    lake.deliver()
    assert lake.runs()[3:] == [(f"hr={DAY}-11", [(ORDERS, 2), (CLICKS, 902)])]


def test_a_manual_run_of_an_hour_pins_the_days_commit() -> None:
    lake = Lake(by_hour())
    daily(lake, 1, DAY)
    hourly(lake, 900, f"{DAY}-10", "2026-12-02-05")
    lake.deliver()
    group = by_hour().groups[0]
    states = {k: s for k in (ORDERS, CLICKS) if (s := lake.store.get_state(k)) is not None}
    pins = partition_pins(lake.partitions, group, f"hr={DAY}-10", states)
    assert {k: p.snapshot_id for k, p in pins.items()} == {ORDERS: 1, CLICKS: 900}
    with pytest.raises(
        ConflictError, match=r"no data commit touching hr=2026-12-02 \(fanned out to hr=2026-12-02-05\)"
    ):
        partition_pins(lake.partitions, group, "hr=2026-12-02-05", states)
    with pytest.raises(ValidationError, match="the grain the member fans its days out to") as caught:
        partition_pins(lake.partitions, group, f"hr={DAY}", states)
    assert caught.value.field == "partition"


# --- any arrival order -----------------------------------------------------------------------------

DAYS = ["2026-12-01", "2026-12-02"]
CLOCK = ["00", "10", "23"]
commits = st.lists(
    st.one_of(
        st.tuples(st.just(ORDERS), st.sets(st.sampled_from(DAYS), min_size=1)),
        st.tuples(
            st.just(CLICKS),
            st.sets(st.builds(lambda d, h: f"{d}-{h}", st.sampled_from(DAYS), st.sampled_from(CLOCK)), min_size=1),
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=examples(60), deadline=None)
@given(history=commits, mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]), data=st.data())
def test_in_any_arrival_order_each_hour_runs_once_per_combination_and_none_is_left_ready(
    history: list[tuple[str, set[str]]], mode: str, data: st.DataObject
) -> None:
    """Day commits and hour commits arrive shuffled, some twice, in batches of any size: no (hour, pins) runs twice,
    a run pins the daily commit that touched its day and the hourly one that touched it, pins never go back, every
    hour both sides touched ran, none is left READY, and with ANY_UPDATED each hour's last run pins the newest of
    each side."""
    ids = {ORDERS: 0, CLICKS: 100}
    numbered = []
    for asset, touched in history:
        ids[asset] += 1
        numbered.append((asset, ids[asset], sorted(touched)))
    arrivals = data.draw(st.permutations(numbered + data.draw(st.lists(st.sampled_from(numbered), max_size=3))))
    lake = Lake(by_hour(mode=mode))
    for asset, sid, touched in arrivals:
        (daily if asset == ORDERS else hourly)(lake, sid, *touched)
        if data.draw(st.booleans()):
            lake.deliver()
    lake.deliver()
    runs = lake.runs()
    assert len(runs) == len({(p, tuple(pins)) for p, pins in runs})
    days_of = {s: set(t) for a, s, t in numbered if a == ORDERS}
    hours_of = {s: set(t) for a, s, t in numbered if a == CLICKS}
    last: dict[tuple[str, str], int] = {}
    for partition, pins in runs:
        assert partition is not None
        hour = partition.removeprefix("hr=")
        seen = dict(pins)
        assert hour[:10] in days_of[seen[ORDERS]] and hour in hours_of[seen[CLICKS]]  # type: ignore[index]
        moved = []
        for asset, sid in pins:
            assert sid is not None and sid >= last.get((partition, asset), -1)
            moved.append(sid > last.get((partition, asset), -1))
            last[(partition, asset)] = sid
        assert all(moved) if mode == "ALL_UPDATED" else any(moved)
    both = {h for t in hours_of.values() for h in t if any(h[:10] in d for d in days_of.values())}
    assert {p for p, _ in runs} == {f"hr={h}" for h in both}
    assert not any(p.ready for p in explained(lake).values())
    assert {f.partition for f in lake.partitions.kept.values() if f.asset_key == ORDERS} == {
        f"hr={d}" for t in days_of.values() for d in t
    }  # one fact per day, never per hour
    if mode == "ANY_UPDATED":
        for h in both:
            newest_day = max(s for s, t in days_of.items() if h[:10] in t)
            newest_hour = max(s for s, t in hours_of.items() if h in t)
            assert (last[(f"hr={h}", ORDERS)], last[(f"hr={h}", CLICKS)]) == (newest_day, newest_hour)


# --- bounded work --------------------------------------------------------------------------------------


def test_a_fan_out_key_weighs_the_partitions_it_names() -> None:
    rule = by_hour()
    assert weights([(rule, rule.groups[0])]) == {ORDERS: 24, CLICKS: 1}
    other = by_hour({"assetKey": ORDERS, "partition": {"fields": {"hr": {"field": "dt", "grain": "day"}}}})
    assert weights([(rule, rule.groups[0]), (other, other.groups[0])]) == {ORDERS: 24, CLICKS: 1}  # one fact shared


@pytest.mark.parametrize("max_facts", [10, 48, 1000])
def test_a_commit_of_many_days_is_carried_over_by_the_hours_it_names_and_every_hour_runs(max_facts: int) -> None:
    """Five days of the daily table name 120 hours: an invocation takes the days whose hours fit its bound (one day
    at least, when a day alone names more), the rest go through the queue, and every hour both touched runs once."""
    bounded = Bounded.of(by_hour(), max_facts=max_facts, max_partition_claims=100)
    lake = bounded.lake
    five = [f"2026-12-0{d}" for d in range(1, 6)]
    hourly(lake, 900, *[f"{d}-{h:02d}" for d in five for h in (0, 12, 23)])
    bounded.deliver()
    bounded.drain()
    daily(lake, 1, *five)
    bounded.deliver()
    per = max(1, max_facts // 24)
    slices = [m["partitions"] for m in bounded.queue.messages]
    assert all(len(s) <= per for s in slices) and sum(len(s) for s in slices) == max(0, 5 - per)
    bounded.drain()
    bounded.bounded()
    assert sorted(p for p, _ in lake.runs()) == sorted(f"hr={d}-{h:02d}" for d in five for h in (0, 12, 23))
    assert lake.partitions.count_pending("hourly", "g") == 5 * 21  # the hours the clicks have not touched wait
