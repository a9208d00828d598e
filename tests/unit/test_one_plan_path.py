"""Every group is planned on one path (issue 33, the design step): an unpartitioned group is the one-partition case
of a partitioned group, one lane under the group-wide key (None) planned by the same per-partition planner
(:class:`lakehook.domain.plan_lanes.PlanLanes`) as a partitioned group's partitions, and settled the same way;
the board of its one lane is its verdict. A claiming call makes exactly the claims of that one plan, for both kinds of
group in the same batch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.memory.rules import InMemoryTriggerStore
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.plan_lanes import Book, PartitionsPlan, PlanLanes
from lakehook.domain.planned_claims import PlannedClaim, plan_claim
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger
from lakehook.domain.verdicts import GroupEvaluation
from lakehook.ports.rules import StateChange
from lakehook.usecases.resolve_apply import _PartitionLanes
from lakehook.usecases.resolve_claims import ClaimLanes
from lakehook.usecases.resolve_plan import GroupPlan
from lakehook.usecases.resolve_report import ResolveReport, is_rule_error
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily
from tests.unit.test_resolve_usecase import rule

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]
MODES = ("ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION")
NOW = 1_800_000_000_000

# one step: a commit of orders or payments touching some days, delivered now or left in the stream, then time passing
steps = st.lists(
    st.tuples(
        st.sampled_from([ORDERS, PAYMENTS]),
        st.sets(st.sampled_from(DAYS), min_size=1, max_size=3),
        st.booleans(),
        st.integers(0, 90_000),
    ),
    min_size=1,
    max_size=8,
)


def _check_one_path(planned: GroupPlan) -> None:
    """The group's plan is its lanes' plan: an unpartitioned group's one lane under the group-wide key, keeping no
    pending list and carrying nothing over, its board its own verdict; a partitioned group's partitions, each with at
    most one claim an invocation."""
    assert isinstance(planned.lanes, PartitionsPlan)
    lanes = planned.lanes.partitions
    if planned.group.partition_by is None:
        (only,) = lanes
        assert not planned.per_partition
        assert only.lane.partition is None and only.pending is None
        assert planned.lane is only.lane and planned.verdicts == only.lane.verdicts
        assert planned.lanes.marks == () and planned.lanes.clears == () and planned.lanes.continued == ()
        assert planned.lanes.board(planned.group, explain=True) == planned.verdicts[0]
        assert planned.lanes.board(planned.group, explain=False) == planned.verdicts[-1]
    else:
        assert planned.lane is None and planned.per_partition
        assert all(p.lane.partition is not None and len(p.lane.claims) <= 1 for p in lanes)
    assert planned.claims == tuple(c for p in lanes for c in p.lane.claims)


@settings(max_examples=examples(40), deadline=None)
@given(mode=st.sampled_from(MODES), history=steps)
def test_every_group_is_planned_per_partition_by_one_planner_and_claimed_as_planned(
    mode: str, history: list[tuple[str, set[str], bool, int]]
) -> None:
    whole = rule("whole", {"assetKey": ORDERS}, {"assetKey": PAYMENTS}, mode=mode)
    lake = Lake(daily(mode=mode), whole)
    sid = 0
    for asset, days, deliver, wait in history:
        sid += 1
        lake.commit(asset, sid, *sorted(days))
        lake.now += wait
        if not deliver:
            continue
        batch: list[StateChange] = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
        plan = lake.resolve.plan(batch)
        kinds: dict[str, Any] = {}
        for planned in plan.groups:
            _check_one_path(planned)
            kinds[planned.rule.rule_id] = planned.group.partition_by
        assert set(kinds) == {"whole", "daily"}, "one batch planned both kinds of group"
        report = lake.resolve(batch)
        assert [t.trigger_key for t in report.claimed] == [c.trigger.trigger_key for g in plan.groups for c in g.claims]
        lake.dispatch(report)


# --- a partition's rule error survives its claim ------------------------------------------------------------------

ERROR_DAYS = ("dt=2026-12-02", "dt=2026-12-01")  # newest first, as a partitioned group plans them
DAY_ASSET = ORDERS


class _FailsAfterItsClaim(PlanLanes):
    """Two partitions, newest first: the first is READY once, and evaluating it under the cursor its claim leaves is
    a rule error (a bug of the rule's data), so the group's planning stops there; the second is never planned. Under
    a cursor another resolver moved further, nothing is new."""

    def keys(self) -> list[str | None]:
        return list(ERROR_DAYS)

    def cursor(self, key: str | None) -> GroupCursor | None:
        return None

    def previous(self, key: str | None) -> Trigger | None:
        return None

    def evaluate(self, key: str | None, cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        if cursor is not None and cursor.seq == 1:
            raise ValueError(f"{key}: a rule error after the claim")
        status = Status.READY if cursor is None else Status.WAITING_FOR_UPDATE  # another resolver's run: nothing new
        pin = PinnedInput(asset_key=DAY_ASSET, snapshot_id=1)
        member = MemberEvaluation(DAY_ASSET, status, pin)
        return GroupEvaluation(self.group.group_id, status, (member,), pins=(pin,), partition=key)

    def claim(self, key: str | None, verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        return plan_claim(self.rule, self.group, verdict, cursor, {}, self.now, key)


def _failing_lanes() -> tuple[_FailsAfterItsClaim, PartitionsPlan]:
    failing = daily({"assetKey": DAY_ASSET, "partition": {}}, rule_id="daily-error")
    lanes = _FailsAfterItsClaim(failing, failing.groups[0], NOW, Book({}), per_lane=1, rule_error=is_rule_error)
    planned = lanes(10)
    assert len(planned.partitions) == 1 and isinstance(planned.error, ValueError)  # the second day never planned
    return lanes, planned


def test_a_partition_whose_key_was_claimed_first_keeps_the_rule_error_its_plan_met() -> None:
    """A racing resolver claimed the failing partition's key under this very cursor: the claim is not made, and the
    group still fails on the rule error (the partitions after it were never planned: only a failure, retried, looks
    at them again), as it does when the claim is made."""
    lanes, planned = _failing_lanes()
    store = InMemoryTriggerStore()
    (claim,) = planned.claims
    assert store.put_replay(claim.trigger)  # the key taken, the cursor where it was read
    report = ResolveReport()
    claimed = ClaimLanes(store, _PartitionLanes(lanes.group, lanes, report), 3, lambda: None)(planned.partitions)
    assert report.claimed == [] and len(claimed.items) == 1
    assert isinstance(lanes.settle(claimed.items).error, ValueError)


def test_a_partition_whose_claim_lost_a_race_keeps_the_rule_error_its_plan_met() -> None:
    """Another resolver moved the failing partition's cursor first (twice, so it is given up): planned again from
    there, the lane need not meet the error again, but the partitions after it were still never planned: the group
    fails on the error it met, and is retried."""
    for conflicts in (3, 0):  # planned again from the cursor that won; given up at once
        lanes, planned = _failing_lanes()
        store = InMemoryTriggerStore()
        (claim,) = planned.claims
        moved = claim.moved()
        # another resolver's run moved the partition's cursor past the claim
        store.cursors[(moved.rule_id, moved.group_id)] = moved.model_copy(update={"seq": moved.seq + 1})
        report = ResolveReport()
        kind = _PartitionLanes(lanes.group, lanes, report)
        claimed = ClaimLanes(store, kind, conflicts, lambda: None)(planned.partitions)
        assert report.claimed == [] and claimed.conflicts >= 1 and len(claimed.items) == 1
        assert isinstance(lanes.settle(claimed.items).error, ValueError), conflicts
