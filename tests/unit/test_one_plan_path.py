"""Every group is planned on one path (issue 33, the design step): an unpartitioned group is the one-partition case
of a partitioned group, one lane under the group-wide key (None) planned by the same per-partition planner
(:class:`lakehook.domain.plan_lanes.PlanLanes`) as a partitioned group's partitions, and settled the same way;
the board of its one lane is its verdict. A claiming call makes exactly the claims of that one plan, for both kinds of
group in the same batch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.plan_lanes import PartitionsPlan
from lakehook.ports.rules import StateChange
from lakehook.usecases.resolve_plan import GroupPlan
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily
from tests.unit.test_resolve_usecase import rule

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]
MODES = ("ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION")

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
