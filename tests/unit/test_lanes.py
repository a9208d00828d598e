"""One plan loop for every lane (a group, or a partition), group behaviours as step classes, and one claim path.

- :func:`lakehook.domain.lanes.plan_lane`: evaluate, claim what is READY, move the cursor, evaluate again, at most the
  lane's budget of claims; the verdict it ends on says when it is looked at again.
- :func:`lakehook.domain.group_steps.steps_of`: a group runs the steps its rule asks for, in precedence order, and
  exactly one step chooses its versions.
- :class:`lakehook.usecases.resolve_claims.ClaimLanes`: rounds of at most 50 claims, a lane's next claim in the next
  round, lanes planned again after a lost race, the lanes as applied in the plan's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.group_steps import (
    PRECEDENCE,
    ByPolicy,
    Cooldown,
    Disabled,
    HeadOfLine,
    MembersHold,
    OnSchedule,
    OnWindow,
    QuietPeriod,
    steps_of,
)
from lakehook.domain.lanes import DeferWhy, Lane, plan_lane
from lakehook.domain.planned_claims import PlannedClaim, plan_claim
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window, trigger_key
from lakehook.domain.verdicts import Backlog, GroupEvaluation
from lakehook.ports.rules import Claim, ClaimResult
from lakehook.usecases.resolve_claims import ClaimLanes
from tests.fakes.memory_rules import InMemoryTriggerStore

NOW = 1_800_000_000_000


def a_rule(mode: str = "ALL_UPDATED", enabled: bool = True, group: dict[str, Any] | None = None, **policy: Any) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "enabled": enabled,
            "policy": {"mode": mode, **policy},
            "groups": [group or {"groupId": "g", "members": [{"assetKey": "iceberg://glue/db/a"}]}],
        }
    )


def versions_of(rule: Rule, ready: int, *, until: int | None = None):  # type: ignore[no-untyped-def]
    """A lane whose cursor moves one version per claim: READY while fewer than ``ready`` claims were made from the
    start, then COOLDOWN (until ``until``) or WAITING_FOR_UPDATE."""

    def evaluate(cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        done = cursor.seq if cursor is not None else 0
        if done < ready:
            pin = PinnedInput(asset_key="iceberg://glue/db/a", snapshot_id=done + 1)
            return GroupEvaluation("g", Status.READY, (), pins=(pin,))
        status = Status.COOLDOWN if until is not None else Status.WAITING_FOR_UPDATE
        return GroupEvaluation("g", status, (), until=until, reason="waits")

    def claim(verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        return plan_claim(rule, rule.groups[0], verdict, cursor, {}, NOW)

    return evaluate, claim


@given(ready=st.integers(0, 6), budget=st.integers(0, 6), timed=st.booleans())
def test_a_lane_claims_what_is_ready_up_to_its_budget_then_says_when_to_look_again(
    ready: int, budget: int, timed: bool
) -> None:
    rule = a_rule()
    evaluate, claim = versions_of(rule, ready, until=NOW + 5000 if timed else None)
    lane = plan_lane(evaluate, claim, None, None, budget)
    made = min(ready, budget)
    assert len(lane.claims) == made and len(lane.verdicts) == made + 1  # the verdict it settles on, after them
    assert [c.trigger.inputs[0].snapshot_id for c in lane.claims] == list(range(1, made + 1))
    assert all(v.ready for v in lane.verdicts[:made])
    assert lane.after == (lane.claims[-1].moved() if made else None)
    if ready > budget:  # still ready: its claims are used, it goes on in the next invocation
        assert lane.settled.ready and lane.next(NOW) == (NOW, DeferWhy.CLAIMS_USED)
    elif timed:
        assert lane.next(NOW) == (NOW + 5000, DeferWhy.WAIT_ENDS)
    else:
        assert lane.next(NOW) is None  # news wakes it


def test_a_rule_error_ends_the_lane_keeping_the_claims_before_it() -> None:
    rule = a_rule()
    evaluate, claim = versions_of(rule, 5)

    def failing(cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        if cursor is not None and cursor.seq == 2:
            raise ValueError("unreadable member")
        return evaluate(cursor, previous)

    lane = plan_lane(failing, claim, None, None, 5, rule_error=lambda e: isinstance(e, ValueError))
    assert len(lane.claims) == 2 and isinstance(lane.error, ValueError) and lane.next(NOW) is None
    try:
        plan_lane(failing, claim, None, None, 5)  # an error that is not the rule's propagates
    except ValueError:
        pass
    else:
        raise AssertionError("the error was swallowed")


def test_the_claim_planned_from_a_moved_cursor_waits_for_the_one_before_it() -> None:
    rule = a_rule(mode="EACH_VERSION")
    evaluate, claim = versions_of(rule, 3)
    seen: list[str | None] = []

    def recording(cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        seen.append(previous.trigger_key if previous is not None else None)
        return evaluate(cursor, previous)

    lane = plan_lane(recording, claim, None, None, 3)
    assert seen == [None, *(c.trigger.trigger_key for c in lane.claims)]  # head of line: each after the one before
    assert [c.expected for c in lane.claims[1:]] == [c.moved() for c in lane.claims[:-1]]


# --- a planned claim ----------------------------------------------------------------------------------------

A = "iceberg://glue/db/a"
HOUR = Window(start=NOW - 3_600_000, end=NOW)


def ready(snapshot_id: int, **verdict: Any) -> GroupEvaluation:
    return GroupEvaluation("g", Status.READY, (), pins=(PinnedInput(asset_key=A, snapshot_id=snapshot_id),), **verdict)


@pytest.mark.parametrize("mode", ["ALL_UPDATED", "EACH_VERSION"])
@pytest.mark.parametrize("partition", [None, "dt=2026-12-07"])
def test_a_claim_is_its_verdicts_trigger_conditional_on_the_cursor_it_read(mode: str, partition: str | None) -> None:
    rule = a_rule(mode=mode)
    states = {A: AssetState(asset_key=A, backfill_id="bf-1"), "x": AssetState(asset_key="x", backfill_id="bf-2")}
    first = plan_claim(rule, rule.groups[0], ready(7, window=HOUR, reason="all updated"), None, states, NOW, partition)
    assert first.expected is None and first.base == GroupCursor.initial("r", "g", partition)  # it never ran
    made = first.trigger
    pins = (PinnedInput(asset_key=A, snapshot_id=7),)
    assert (made.rule_id, made.group_id, made.partition, made.inputs, made.window, made.reason) == (
        "r",
        "g",
        partition,
        pins,
        HOUR,
        "all updated",
    )
    assert made.status is TriggerStatus.TRIGGERING and made.sequence == 1 and made.created_at == NOW
    assert made.trigger_key == trigger_key("r", "g", pins, HOUR, 0, partition=partition)
    # EACH_VERSION: a partition's runs go in order; a group (not windowed) logs its pins
    assert made.in_order is (mode == "EACH_VERSION" and partition is not None)
    assert first.log_pins is (mode == "EACH_VERSION" and partition is None)
    assert first.backfills == {A: "bf-1"} and first.catch_up_at is None and not first.baseline  # its members' only
    moved = first.moved()
    assert (moved.seq, moved.trigger_key, moved.pins, moved.window, moved.claimed_at) == (
        1,
        made.trigger_key,
        {A: pins[0]},
        HOUR,
        NOW,
    )
    assert moved.backfills == {A: "bf-1"} and moved.partition == partition and moved.catch_up_runs == 0
    # the next claim is conditional on the cursor it read, and never dated before the claim before it
    second = plan_claim(rule, rule.groups[0], ready(8), moved, states, NOW - 5, partition)
    assert second.expected == moved and second.base == moved
    assert second.trigger.sequence == 2 and second.trigger.created_at == NOW and second.trigger.window is None
    assert second.moved().window == HOUR  # a claim without a window keeps the cursor's


def test_a_skip_claims_without_a_run_and_a_claim_behind_the_newest_window_counts_in_the_catch_up() -> None:
    rule = a_rule()
    ran = plan_claim(rule, rule.groups[0], ready(1), None, {}, NOW).moved()
    skipped = plan_claim(rule, rule.groups[0], ready(2, skip=True, reason="skipped"), ran, {}, NOW + 10)
    assert skipped.trigger.status is TriggerStatus.SKIPPED and skipped.trigger.reason == "skipped"
    assert skipped.moved().claimed_at == NOW  # the cooldown counts from the last real run
    behind = ready(3, window=HOUR, backlog=Backlog(pending=2, next=HOUR, next_at=NOW))
    catching_up = plan_claim(rule, rule.groups[0], behind, ran, {}, NOW + 20)
    assert catching_up.catch_up_at == NOW + 20
    assert (catching_up.moved().catch_up_since, catching_up.moved().catch_up_runs) == (NOW + 20, 1)


def test_a_claims_pins_described_again_change_nothing_else_of_it() -> None:
    rule = a_rule(mode="EACH_VERSION")
    planned = plan_claim(rule, rule.groups[0], ready(4, window=HOUR), None, {}, NOW)
    claim = replace(planned, backfills={A: "bf-9"}, catch_up_at=NOW - 1, baseline=True)
    described = (PinnedInput(asset_key=A, snapshot_id=4, commit_time=NOW - 60_000),)
    again = claim.with_pins(described)
    assert again.trigger.inputs == described and again.trigger.trigger_key == claim.trigger.trigger_key
    assert again.trigger.model_copy(update={"inputs": claim.trigger.inputs}) == claim.trigger
    assert (again.expected, again.base, again.backfills, again.catch_up_at, again.log_pins, again.baseline) == (
        None,
        claim.base,
        {A: "bf-9"},
        NOW - 1,
        True,
        True,
    )
    moved = again.moved()  # a baseline claim's cursor says so, with the backfills and the catch-up it was made with
    assert moved.baseline and moved.backfills == {A: "bf-9"} and moved.catch_up_since == NOW - 1
    assert moved.pins == {A: described[0]}


# --- group behaviours as steps ------------------------------------------------------------------------------


def names(rule: Rule) -> list[type]:
    return [type(s) for s in steps_of(rule, rule.groups[0])]


def test_a_group_runs_only_the_steps_its_rule_asks_for_in_precedence_order() -> None:
    assert names(a_rule()) == [MembersHold, ByPolicy]
    assert names(a_rule(enabled=False)) == [Disabled, MembersHold, ByPolicy]
    assert names(a_rule(mode="EACH_VERSION")) == [MembersHold, ByPolicy, HeadOfLine]
    assert names(a_rule(minIntervalSeconds=60, quietPeriodSeconds=30)) == [MembersHold, ByPolicy, Cooldown, QuietPeriod]
    scheduled = {"groupId": "g", "members": [], "schedule": {"cron": "0 * * * *"}}
    assert names(a_rule(group=scheduled)) == [MembersHold, OnSchedule]
    windowed = {
        "groupId": "g",
        "members": [{"assetKey": "iceberg://glue/db/a", "condition": {"watermarkAtLeast": {"window": "PT1H"}}}],
    }
    assert names(a_rule(group=windowed)) == [MembersHold, OnWindow]
    for rule in (a_rule(), a_rule(group=scheduled), a_rule(group=windowed)):  # one step chooses the versions
        assert sum(kind in (OnSchedule, OnWindow, ByPolicy) for kind in names(rule)) == 1
    assert [k.__name__ for k in PRECEDENCE].index("Disabled") == 0


# --- one claim path ---------------------------------------------------------------------------------------------


class Lanes:
    """A lane kind over plain lanes: what ClaimLanes asked of it, recorded."""

    def __init__(self, again: dict[str | None, Lane] | None = None) -> None:
        self.made: list[tuple[str | None, str]] = []
        self.again_with: list[tuple[str | None, int]] = []
        self._again = again or {}

    def lane(self, item: Lane) -> Lane:
        return item

    def prepare(self, item: Lane, index: int) -> PlannedClaim:
        return item.claims[index]

    def claimed(self, item: Lane, claim: PlannedClaim) -> None:
        self.made.append((item.partition, claim.trigger.trigger_key))

    def again(self, item: Lane, fresh: GroupCursor, made: int) -> Lane:
        self.again_with.append((item.partition, fresh.seq))
        return self._again.get(item.partition, Lane(item.partition, fresh, item.verdicts[:1], ()))

    def give_up(self, item: Lane, fresh: GroupCursor) -> Lane:
        return Lane(item.partition, fresh, item.verdicts[:1], ())

    def taken(self, item: Lane) -> Lane | None:
        return item.without_claims()


def lane_of(rule: Rule, partition: str | None, claims: int) -> Lane:
    evaluate, _ = versions_of(rule, claims)

    def claim(verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        return plan_claim(rule, rule.groups[0], verdict, cursor, {}, NOW, partition)

    return plan_lane(evaluate, claim, None, None, claims, partition=partition)


class CountingStore(InMemoryTriggerStore):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def claim_many(self, claims: Sequence[Claim]) -> list[ClaimResult]:
        self.sizes.append(len(claims))
        return super().claim_many(claims)


def test_lanes_are_claimed_in_rounds_of_50_a_lanes_next_claim_in_the_next_round() -> None:
    rule = a_rule()
    lanes = [lane_of(rule, None, 3), *(lane_of(rule, f"dt={d:03}", 1) for d in range(60))]
    store = CountingStore()
    kind = Lanes()
    claimed = ClaimLanes(store, kind, 3, lambda: None)(lanes)
    # round 1: the group's first claim and 49 partitions; round 2: its second and the 11 others; round 3: its third
    assert store.sizes == [50, 12, 1]
    assert len(kind.made) == 63 and claimed.conflicts == 0 and not claimed.again
    assert claimed.items == lanes  # as applied, in the plan's order
    cursor = store.get_cursors([("r", "g")])[("r", "g")]
    assert cursor.seq == 3  # the group's three claims, in order, each from the cursor the one before it moved


def test_a_lane_that_lost_a_race_is_planned_again_from_the_cursor_that_won() -> None:
    rule = a_rule()
    ours, theirs = lane_of(rule, "dt=001", 2), lane_of(rule, "dt=001", 1)
    store = InMemoryTriggerStore()
    winner = theirs.claims[0]
    store.claim(winner.trigger, winner.moved(), winner.expected)  # another resolver claimed first
    replanned = Lane("dt=001", winner.moved(), ours.verdicts[:1], ())
    kind = Lanes(again={"dt=001": replanned})
    claimed = ClaimLanes(store, kind, 3, lambda: None)([ours])
    assert claimed.conflicts == 1 and kind.again_with == [("dt=001", 1)] and claimed.items == [replanned]
