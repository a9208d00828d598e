"""``backfill: SKIP`` with ``EACH_VERSION``: a known defect, recorded (review of issue 33, 2026-12-07).

A backfill's skip is claimed under the cursor without waiting for the run the cursor names (``BackfillSkip`` comes
before ``HeadOfLine``), so the skip moves the cursor past a run still TRIGGERING (or FAILED), and the next version
starts beside it: two runs of one group (or partition) in flight at once, and a FAILED run no longer holding the
versions after it. Making the skip wait is not enough: a skip claimed later absorbs what arrived meanwhile (an
unpartitioned group pins each backfilled member's newest version; a partition skips only when its newest commit is at
or before the backfill's recorded end), so the fix needs the skip to pin the newest version up to the backfill's end.
Each test is a strict xfail: it fails loudly once the defect is fixed, to be turned into a plain test then."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lakehook.domain.rules import Rule
from lakehook.domain.triggers import TriggerStatus
from tests.unit.test_partition_resolve import ORDERS, Lake, daily
from tests.unit.test_resolve_usecase import A, World, rule

P = "2026-12-01"
DEFECT = "a backfill's skip does not wait for the run in flight (BackfillSkip precedes HeadOfLine)"


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


@pytest.mark.xfail(strict=True, reason=DEFECT)
@pytest.mark.parametrize("end", [TriggerStatus.TRIGGERING, TriggerStatus.FAILED])
def test_no_version_of_a_group_runs_beside_its_run_in_flight_after_a_backfill(end: TriggerStatus) -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION", backfill="SKIP"))
    assert _backfill_beside_a_run(world, A, lambda sid: world.snap(A, sid), end) == []  # today: [4]


@pytest.mark.xfail(strict=True, reason=DEFECT)
@pytest.mark.parametrize("end", [TriggerStatus.TRIGGERING, TriggerStatus.FAILED])
def test_no_version_of_a_partition_runs_beside_its_run_in_flight_after_a_backfill(end: TriggerStatus) -> None:
    each = daily({"assetKey": ORDERS, "partition": {}}, mode="EACH_VERSION")
    lake = Lake(Rule.model_validate({**each.to_api(), "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"}}))
    assert _backfill_beside_a_run(lake, ORDERS, lambda sid: lake.commit(ORDERS, sid, P), end) == []  # today: [4]
