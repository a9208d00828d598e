"""The resolver decides in one pure step, its plan, and then applies it: planning writes nothing and decides the same
twice, and with no racing resolver, a claiming call makes exactly the claims, deferrals and skips its plan lists."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.ports.rules import Deferral, StateChange
from lakehook.usecases.resolve import ResolverLimits, ResolverStores
from lakehook.usecases.resolve_plan import DeferWhy, Plan
from tests.hypothesis_profiles import examples
from tests.unit.test_resolve_usecase import START, A, B, World, rule
from tests.unit.test_spool_conditions import H0, HOUR, MIN, SPOOL, CoverageWorld, hourly
from tests.wiring import resolve_asset_change

MODES = ("ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION")


def _stored(world: World) -> Any:
    """Everything the resolver may write, as values."""
    return copy.deepcopy(
        (
            world.triggers.triggers,
            world.triggers.cursors,
            world.triggers.claim_order,
            world.deferrals.pending,
            world.deferrals.rechecks,
            world.history.states,
            world.history.snapshots,
            world.rules.rules,
        )
    )


def _planned(plan: Plan) -> tuple[list[str], list[Deferral], list[str]]:
    claims = [c.trigger.trigger_key for g in plan.groups for c in g.claims]
    deferrals = [g.deferral.deferral for g in plan.groups if g.deferral is not None]
    return claims, deferrals, [s.trigger_key for s in plan.skips]


# one step: a snapshot of A or B (with the next snapshot id), delivered now or left in the stream, then time passing
steps = st.lists(st.tuples(st.sampled_from([A, B]), st.booleans(), st.integers(0, 90_000)), min_size=1, max_size=12)


@settings(max_examples=examples(60), deadline=None)
@given(
    mode=st.sampled_from(MODES),
    cooldown=st.sampled_from([None, 60]),
    quiet=st.sampled_from([None, 30]),
    history=steps,
)
def test_a_claiming_call_does_what_its_plan_says_and_planning_writes_nothing(
    mode: str, cooldown: int | None, quiet: int | None, history: list[tuple[str, bool, int]]
) -> None:
    policy: dict[str, Any] = {}
    if cooldown is not None:
        policy["minIntervalSeconds"] = cooldown
    if quiet is not None and mode != "EACH_VERSION":
        policy["quietPeriodSeconds"] = quiet
    world = World(rule("r", {"assetKey": A}, {"assetKey": B}, mode=mode, **policy))
    sid = 0
    for asset, deliver, wait in history:
        sid += 1
        world.snap(asset, sid)
        world.now += wait
        due = [d for d in world.deferrals.due(world.now, 100) if isinstance(d, Deferral)]
        if not deliver and not due:
            continue
        batch: list[StateChange] = [c for a in list(world.stream) for c in world.stream.pop(a, [])] if deliver else []
        before = _stored(world)
        plan = world.resolve.plan(batch, due)
        assert _stored(world) == before, "planning wrote to a store"
        assert world.resolve.plan(batch, due) == plan, "the same inputs planned differently"
        report = world.resolve(batch, due)
        claims, deferrals, skips = _planned(plan)
        assert [t.trigger_key for t in report.claimed] == claims
        assert report.deferred == deferrals
        assert [t.trigger_key for t in report.skipped] == skips
        for group in plan.groups:  # the verdicts the report keeps are the plan's
            assert report.first_verdicts[group.ref] == group.verdicts[0]
            assert report.verdicts[group.ref] == group.verdicts[-1]
        world.dispatch(report)


def test_a_cooldown_is_planned_as_a_deferral_to_its_end_and_says_why() -> None:
    world = World(rule("r", {"assetKey": A}, mode="ANY_UPDATED", minIntervalSeconds=60))
    world.snap(A, 1)
    world.deliver()
    world.now += 10_000
    world.snap(A, 2)
    (group,) = world.resolve.plan(world.stream.pop(A)).groups
    assert group.claims == () and group.settled is not None and group.settled.status.value == "COOLDOWN"
    assert group.deferral is not None and group.deferral.why is DeferWhy.WAIT_ENDS
    assert group.deferral.deferral == Deferral("r", "g", START + 60_000)


def test_a_group_that_used_its_claims_is_planned_to_go_on_in_the_next_invocation() -> None:
    world = CoverageWorld(hourly())
    world.resolve = resolve_asset_change(
        ResolverStores(
            world.rules, world.reader, world.triggers, world.history, world.deferrals, coverage=world.coverage
        ),
        limits=ResolverLimits(max_claims_per_group=2),
        clock=lambda: world.now,
        observer=None,
    )
    world.now = H0 + HOUR + MIN
    world.cover(H0, H0 + HOUR)
    world.deliver()
    world.now = H0 + 5 * HOUR + MIN
    world.cover(H0 + HOUR, H0 + 5 * HOUR)  # four more closed hours at once: one claim each, two in this invocation
    (group,) = world.resolve.plan(world.stream[SPOOL]).groups
    assert [c.trigger.window.end for c in group.claims if c.trigger.window] == [H0 + 2 * HOUR, H0 + 3 * HOUR]
    assert group.deferral is not None and group.deferral.why is DeferWhy.CLAIMS_USED
    assert group.deferral.deferral == Deferral("hourly", "g", world.now)
    report = world.deliver(dispatch=False)
    assert [t.trigger_key for t in report.claimed] == [c.trigger.trigger_key for c in group.claims]
    assert report.deferred == [group.deferral.deferral]
    assert len(world.resolve(deferred=report.deferred).claimed) == 2  # the rest, in the next invocation
