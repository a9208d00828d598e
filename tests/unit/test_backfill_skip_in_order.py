"""``backfill: SKIP`` with ``EACH_VERSION``: a backfill's skip made while the cursor's run has not SUCCEEDED (still in
flight, or FAILED) is claimed at once, absorbing what the backfill made and no later commit, and stays behind that
run: the next version waits for it (head of line), a FAILED one blocking it, so no two runs of one group (or
partition) are in flight at once and a FAILED run still holds the versions after it. Found by the review of issue
33 (2026-12-07): before, the skip moved the cursor past the run in flight and the next version started beside it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.domain.triggers import TriggerStatus
from lakehook.usecases.resolve import ResolveReport
from tests.unit.test_partition_resolve import ORDERS, Lake, daily
from tests.unit.test_resolve_usecase import A, World, rule

P = "2026-12-01"


def _backfill_beside_a_run(world: World, asset: str, commit: Callable[[int], None], end: TriggerStatus) -> list[int]:
    """Run 1 claimed and left ``end`` (TRIGGERING, or FAILED), 2 waiting behind it; a backfill commits 3; then 4
    comes: the versions of each run claimed after run 1 (none while it has not SUCCEEDED)."""
    commit(1)
    world.deliver(dispatch=False)
    first = world.triggers.triggers[world.triggers.claim_order[0]]
    world.triggers.triggers[first.trigger_key] = first.model_copy(update={"status": end})
    commit(2)
    world.deliver(dispatch=False)
    world.push("BACKFILL_STARTED", asset, backfillId="bf1")
    commit(3)
    world.deliver(dispatch=False)
    world.push("BACKFILL_COMPLETED", asset, backfillId="bf1")
    world.deliver(dispatch=False)
    world.sweep(0, dispatch=False)
    commit(4)
    world.deliver(dispatch=False)
    world.sweep(0, dispatch=False)
    later = [world.triggers.triggers[k] for k in world.triggers.claim_order[1:]]
    return [t.inputs[0].snapshot_id or 0 for t in later if t.status is not TriggerStatus.SKIPPED]


@pytest.mark.parametrize("end", [TriggerStatus.TRIGGERING, TriggerStatus.FAILED])
def test_no_version_of_a_group_runs_beside_its_run_in_flight_after_a_backfill(end: TriggerStatus) -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION", backfill="SKIP"))
    assert _backfill_beside_a_run(world, A, lambda sid: world.snap(A, sid), end) == []  # before the fix: [4]


@pytest.mark.parametrize("end", [TriggerStatus.TRIGGERING, TriggerStatus.FAILED])
def test_no_version_of_a_partition_runs_beside_its_run_in_flight_after_a_backfill(end: TriggerStatus) -> None:
    each = daily({"assetKey": ORDERS, "partition": {}}, mode="EACH_VERSION")
    lake = Lake(Rule.model_validate({**json_form(each), "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"}}))
    assert (
        _backfill_beside_a_run(lake, ORDERS, lambda sid: lake.commit(ORDERS, sid, P), end) == []
    )  # before the fix: [4]


def _then_the_run_succeeds(world: World) -> list[int]:
    """Run 1 ends SUCCEEDED (a FAILED one once retried): the versions of each run claimed after it, in order."""
    first = world.triggers.triggers[world.triggers.claim_order[0]]
    world.triggers.triggers[first.trigger_key] = first.model_copy(update={"status": TriggerStatus.TRIGGERING})
    world.dispatch(ResolveReport())  # every run in flight SUCCEEDED, each waking its group as the stream does
    later = [world.triggers.triggers[k] for k in world.triggers.claim_order[1:]]
    return [t.inputs[0].snapshot_id or 0 for t in later if t.status is not TriggerStatus.SKIPPED]


@pytest.mark.parametrize("end", [TriggerStatus.TRIGGERING, TriggerStatus.FAILED])
def test_once_the_run_succeeds_the_commit_after_the_backfill_runs_and_the_absorbed_ones_never(
    end: TriggerStatus,
) -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION", backfill="SKIP"))
    _backfill_beside_a_run(world, A, lambda sid: world.snap(A, sid), end)
    status = Status.WAITING_FOR_RUN if end is TriggerStatus.TRIGGERING else Status.BLOCKED_BY_FAILED_TRIGGER
    assert (
        world.resolve.evaluate(world.rules.get_rule("each").rule, claim=False).verdicts[("each", "g")].status is status
    )
    assert _then_the_run_succeeds(world) == [4]  # 2 and 3 were absorbed by the skip; 4 runs once, after run 1

    each = daily({"assetKey": ORDERS, "partition": {}}, mode="EACH_VERSION")
    lake = Lake(Rule.model_validate({**json_form(each), "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"}}))
    _backfill_beside_a_run(lake, ORDERS, lambda sid: lake.commit(ORDERS, sid, P), end)
    line = {p.partition: p for p in lake.explain().partitions}[f"dt={P}"]
    assert line.status is status, line
    assert _then_the_run_succeeds(lake) == [4]
