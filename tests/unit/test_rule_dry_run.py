"""``PUT /rules/{ruleId}?dryRun=true`` lists the runs the write would start (``PutRule.preview``): the resolver's plan
(gather and plan, as explain does), nothing claimed and nothing written; on the in-memory fakes, checked against
what the write then claims. A new partitioned rule with ``startFrom: LATEST`` starts a run per ready partition its
members' newest commits touched, from facts other rules wrote too (docs/partitions.md)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.triggers import PlannedRun
from lakehook.domain.json_form import json_form
from lakehook.domain.triggers import TriggerStatus
from lakehook.usecases.rule_writes import PutRule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily
from tests.unit.test_resolve_usecase import A, B
from tests.unit.test_rule_start import Rules

DAYS = [f"2026-11-{d:02d}" for d in range(1, 31)]


def body(rule_id: str, **policy: Any) -> dict[str, Any]:
    return json_form(daily(rule_id=rule_id, **policy))


def writer(lake: Lake) -> PutRule:
    return PutRule(lake.rules, clock=lambda: lake.now, resolver=lake.resolve)


def started(lake: Lake, rule_id: str) -> list[str]:
    """The keys of the runs the rule's claims start, in claim order."""
    order = [lake.triggers.triggers[k] for k in lake.triggers.claim_order]
    return [t.trigger_key for t in order if t.rule_id == rule_id and t.status is not TriggerStatus.SKIPPED]


def test_a_new_partitioned_rule_lists_a_run_per_past_partition_other_rules_facts_make_ready() -> None:
    # GIVEN a rule on orders and payments by day that already recorded payments' facts for 30 days
    lake = Lake(daily(rule_id="first"))
    lake.commit(PAYMENTS, 7, *DAYS)
    lake.deliver()
    lake.commit(ORDERS, 1, *DAYS)  # orders touches the 30 days: the first rule runs each
    lake.deliver()
    assert len(started(lake, "first")) == 30
    put = writer(lake)

    # WHEN a second rule on the same tables is dry-run
    rule, runs = put.preview("second", body("second"))

    # THEN it lists the 30 runs, one per day, each pinning both tables' commits; nothing is written
    assert rule.rule_id == "second"
    assert sorted(t.partition for t in runs) == sorted(f"dt={d}" for d in DAYS)
    assert {tuple((p.asset_key, p.snapshot_id) for p in t.inputs) for t in runs} == {((ORDERS, 1), (PAYMENTS, 7))}
    assert lake.rules.get_rule("second") is None and started(lake, "second") == []
    shown = PlannedRun.from_domain(runs[0]).dump()
    assert shown["groupId"] == "g" and shown["partition"].startswith("dt=") and len(shown["inputs"]) == 2

    # and the write starts exactly those runs
    put.put("second", body("second"))
    assert sorted(started(lake, "second")) == sorted(t.trigger_key for t in runs)


def test_a_rule_that_ran_its_partitions_lists_no_run_again() -> None:
    lake = Lake(daily(rule_id="first"))
    lake.commit(PAYMENTS, 7, *DAYS[:3])
    lake.commit(ORDERS, 1, *DAYS[:3])
    lake.deliver()
    assert len(started(lake, "first")) == 3
    assert writer(lake).preview("first", body("first"))[1] == []  # rewriting it starts nothing: every day ran


def test_a_disabled_rule_lists_no_run() -> None:
    lake = Lake()
    lake.commit(PAYMENTS, 7, DAYS[0])
    lake.commit(ORDERS, 1, DAYS[0])
    lake.deliver()
    disabled = {**body("off"), "enabled": False}
    assert writer(lake).preview("off", disabled)[1] == []
    assert writer(lake).preview("on", body("on"))[1] != []


def test_an_unpartitioned_rule_lists_its_run_unless_it_starts_from_the_next_change() -> None:
    world = Rules()
    world.snap(A, 1)
    world.snap(B, 7)
    world.deliver()
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": A}, {"assetKey": B}]}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }
    _, runs = world.put_rule.preview("latest", rule)
    assert [[p.snapshot_id for p in t.inputs] for t in runs] == [[1, 7]]
    next_change = {**rule, "policy": {"startFrom": "NEXT_CHANGE"}}
    assert world.put_rule.preview("next", next_change)[1] == []  # it records where it starts: no run
    world.put_rule.put("latest", rule)
    assert world.runs("latest") == [[1, 7]]
    world.put_rule.put("next", next_change)
    assert world.runs("next") == []


commits = st.lists(
    st.tuples(st.sampled_from([ORDERS, PAYMENTS]), st.sets(st.sampled_from(DAYS[:6]), min_size=1, max_size=4)),
    max_size=8,
)


@settings(max_examples=examples(40), deadline=None)
@given(
    history=commits,
    later=commits,
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION"]),
    cooldown=st.sampled_from([0, 3600]),
)
def test_the_dry_run_lists_exactly_the_runs_the_write_then_starts(
    history: list[tuple[str, set[str]]], later: list[tuple[str, set[str]]], mode: str, cooldown: int
) -> None:
    # GIVEN another rule's history of commits by day, delivered, and later commits it may or may not have seen
    lake = Lake(daily(rule_id="first"))
    sid = 0
    for batch, deliver in ((history, True), (later, False)):
        for asset, days in batch:
            sid += 1
            lake.commit(asset, sid, *sorted(days))
        if deliver:
            lake.deliver()
    new = body("second", mode=mode, minIntervalSeconds=cooldown)
    put = writer(lake)
    # WHEN the new rule is dry-run, THEN the write starts exactly what it listed
    _, runs = put.preview("second", new)
    put.put("second", new)
    assert sorted(started(lake, "second")) == sorted(t.trigger_key for t in runs)
