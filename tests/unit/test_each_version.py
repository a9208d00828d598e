"""EACH_VERSION means each version, in order: every accepted snapshot (a late, STALE one too) gets one trigger,
gaps the lineage shows wait (WAITING_FOR_VERSION), and version n+1 is claimed only after n SUCCEEDED."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import Status
from lakehook.domain.triggers import TriggerStatus
from lakehook.ports.rules import Deferral
from tests.unit.test_resolve_usecase import START, World, rule

A = "paimon://lake/ods/a"


def each() -> World:
    return World(rule("each", {"assetKey": A}, mode="EACH_VERSION"))


def test_pushes_1_3_2_trigger_1_2_3_in_order() -> None:
    world = each()
    world.snap(A, 1)
    world.deliver()
    world.snap(A, 3)
    report = world.deliver()
    assert world.claimed() == [[1]]
    assert report.verdicts[("each", "g")].status is Status.WAITING_FOR_VERSION  # 2 is missing
    world.snap(A, 2)  # STALE for the state, logged for the rule
    world.deliver()
    assert world.claimed() == [[1], [2], [3]]


def test_a_snapshot_that_changed_no_data_is_no_version_to_run() -> None:
    """An overwrite that matched nothing (``dataChanged: false``) is passed over like a compaction; 3 follows."""
    world = each()
    world.snap(A, 1)
    world.snap(A, 2, commitKind="OVERWRITE", dataChanged=False)
    world.snap(A, 3)
    world.deliver()
    assert world.claimed() == [[1], [3]]


def test_a_batch_3_2_1_triggers_1_2_3() -> None:
    world = each()
    world.snap(A, 3, 2, 1)
    world.deliver()
    assert world.claimed() == [[1], [2], [3]]


def test_a_failed_version_blocks_the_next_visibly_and_a_retry_releases_it() -> None:
    world = each()
    world.snap(A, 1, 2)
    world.dispatch(world.deliver(dispatch=False), fail=True)
    assert world.claimed() == [[1]]
    failed = next(iter(world.triggers.triggers.values()))
    verdict = world.resolve.evaluate(world.rules.get_rule("each").rule, claim=False).verdicts[("each", "g")]  # type: ignore[union-attr]
    assert verdict.status is Status.BLOCKED_BY_FAILED_TRIGGER and failed.trigger_key in (verdict.reason or "")
    # retry under the same key: it SUCCEEDED, its stream record wakes the group, 2 follows
    world.triggers.triggers[failed.trigger_key] = failed.model_copy(update={"status": TriggerStatus.SUCCEEDED})
    world.dispatch(world.resolve(deferred=[Deferral("each", "g", 0)]))
    assert world.claimed() == [[1], [2]]


@settings(max_examples=60, deadline=None)
@given(
    order=st.permutations(list(range(1, 7))),
    extra=st.lists(st.integers(1, 6), max_size=4),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    failing=st.sets(st.integers(1, 6), max_size=2),
)
def test_any_push_order_runs_each_version_once_in_order(
    order: list[int], extra: list[int], cuts: list[int], failing: set[int]
) -> None:
    """Pushes in any order, duplicated, delivered in batches, a target failing some versions first: at the end
    each snapshot has exactly one trigger and the runs started in version order."""
    world = each()
    pushes = order + extra
    started: list[int] = []

    def run() -> None:
        # the target: a failing version FAILs once (the head of line holds), then a retry succeeds
        while True:
            pending = [t for t in world.triggers.triggers.values() if t.status is TriggerStatus.TRIGGERING]
            failed = [t for t in world.triggers.triggers.values() if t.status is TriggerStatus.FAILED]
            if not pending and not failed:
                return
            woken = []
            for t in pending:
                sid = t.inputs[0].snapshot_id
                assert sid is not None
                if sid in failing:
                    failing.discard(sid)
                    world.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.FAILED})
                else:
                    started.append(sid)
                    world.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.SUCCEEDED})
                    woken.append(Deferral(t.rule_id, t.group_id, 0))
            if not pending:
                for t in failed:  # POST /triggers/{key}/retry
                    world.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.TRIGGERING})
                continue
            if woken:
                world.resolve(deferred=woken)

    i = 0
    for cut in cuts * 5:
        if i >= len(pushes):
            break
        for sid in pushes[i : i + cut]:
            world.snap(A, sid)
        i += cut
        world.resolve([c for c in world.stream.pop(A, [])])
        run()
    for sid in pushes[i:]:
        world.snap(A, sid)
    world.resolve([c for c in world.stream.pop(A, [])])
    run()
    world.now = START + 16 * 60_000  # gaps that never filled have settled
    world.resolve(deferred=world.sweeper())
    run()
    claimed = [p[0] for p in world.claimed()]
    assert len(claimed) == len(set(claimed)), "a version ran twice"
    assert claimed == sorted(claimed), "versions claimed out of order"
    assert started == sorted(started), "runs started out of order"
    # every version after the first one claimed is claimed: none skipped
    assert claimed == list(range(claimed[0], 7))
