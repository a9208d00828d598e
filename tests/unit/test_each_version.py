"""EACH_VERSION means each version, in order: every accepted snapshot (a late, STALE one too) gets one trigger,
gaps the lineage shows wait (WAITING_FOR_VERSION), and version n+1 is claimed only after n SUCCEEDED. A snapshot
that arrives after the group ran a newer one cannot run in order: it is skipped, and every answer says so."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import Status
from lakehook.domain.events import IngestStatus
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.triggers import TriggerStatus
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import Deferral, StateChange
from lakehook.usecases.rule_explain import ExplainRule
from tests.hypothesis_profiles import examples
from tests.unit.test_resolve_usecase import START, World, rule

A = "paimon://lake/ods/a"
H = "hudi://lake/ods/h"  # instant times: no lineage, a later commit always follows


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


def test_pushes_5_3_4_6_run_5_and_6_and_say_3_and_4_are_skipped_everywhere() -> None:
    """5 ran before 3 and 4 were known: they cannot run in order any more. The push answers, the rule's triggers and
    explain all say exactly that, and nothing says they still run."""
    world = each()
    for sid in (5, 3, 4, 6):
        world.now += 1_000  # each push a second after the last: explain lists the skips newest first
        world.snap(A, sid)
        world.deliver()
    assert world.claimed() == [[5], [6]]
    reasons = {
        3: "version 3 arrived after 5 and will not run for rule each",
        4: "version 4 arrived after 5 and will not run for rule each",
    }
    assert [(a.status, a.reason) for a in world.answers] == [
        (IngestStatus.ACCEPTED, None),
        (IngestStatus.STALE, f"{STALE}; {reasons[3]}"),
        (IngestStatus.STALE, f"{STALE}; {reasons[4]}"),
        (IngestStatus.ACCEPTED, None),
    ]
    assert world.skipped() == reasons
    explained = explain(world)["groups"][0]
    assert [(s["snapshotId"], s["reason"]) for s in explained["skipped"]] == [(4, reasons[4]), (3, reasons[3])]


def test_a_late_version_the_rule_has_not_passed_runs_in_order_and_the_answer_says_so() -> None:
    world = each()
    world.snap(A, 1)
    world.deliver()
    world.snap(A, 3)  # 2 is missing: the group waits at the gap
    world.deliver()
    world.snap(A, 2)
    assert world.answers[-1].reason == f"{STALE}; it runs in order for rule each"
    world.deliver()
    assert world.claimed() == [[1], [2], [3]] and world.skipped() == {}
    assert explain(world)["groups"][0]["skipped"] == []


def test_a_redelivered_late_record_is_skipped_once_and_a_logged_version_is_never_reported_skipped() -> None:
    world = each()
    world.snap(A, 5)
    world.deliver()
    world.snap(A, 3)
    batch = world.stream.pop(A)
    world.resolve(batch)
    world.resolve(batch)  # redelivered after a partial failure
    assert world.skipped() == {3: "version 3 arrived after 5 and will not run for rule each"}
    assert sum(1 for t in world.triggers.triggers.values() if is_late_skip(t)) == 1
    world.snap(A, 6)
    world.deliver()
    world.resolve([StateChange(A, snapshot=SnapshotRecord(snapshot_id=5, order=5))])  # 5 ran: it is logged
    assert 5 not in world.skipped() and world.claimed() == [[5], [6]]


STALE = "recorded; the asset state already holds a newer version"


def explain(world: World) -> dict[str, Any]:
    explainer = ExplainRule(world.rules, world.triggers, world.reader, clock=lambda: world.now, resolver=world.resolve)
    return explainer.explain("each")


@settings(max_examples=examples(80), deadline=None)
@given(
    asset=st.sampled_from([A, H]),
    order=st.permutations(list(range(1, 7))),
    extra=st.lists(st.integers(1, 6), max_size=4),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    failing=st.sets(st.integers(1, 6), max_size=2),
)
def test_any_push_order_runs_each_version_once_in_order_or_says_it_is_skipped(
    asset: str, order: list[int], extra: list[int], cuts: list[int], failing: set[int]
) -> None:
    """Pushes in any order, duplicated, delivered in batches, a target failing some versions first, on a table with
    lineage (Paimon) and one without (Hudi): at the end each snapshot either ran exactly once, in version order, or
    was skipped exactly once, and its push answer, the rule's triggers and explain say which, in the same words."""
    world = World(rule("each", {"assetKey": asset}, mode="EACH_VERSION"))
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
            world.snap(asset, sid)
        i += cut
        world.resolve([c for c in world.stream.pop(asset, [])])
        run()
    for sid in pushes[i:]:
        world.snap(asset, sid)
    world.resolve([c for c in world.stream.pop(asset, [])])
    run()
    world.now = START + 16 * 60_000  # gaps that never filled have settled
    world.resolve(deferred=world.sweeper())
    run()
    claimed = [p[0] for p in world.claimed()]
    skipped = world.skipped()
    assert len(claimed) == len(set(claimed)), "a version ran twice"
    assert claimed == sorted(claimed), "versions claimed out of order"
    assert started == sorted(started), "runs started out of order"
    assert set(claimed).isdisjoint(skipped), "a version ran and was reported skipped"
    assert set(claimed) | set(skipped) == set(range(1, 7)), "a version neither ran nor was reported skipped"
    # the first answer for each snapshot says what happened to it, in the words the skip and explain use
    first = {}
    for sid, answer in zip(pushes, world.answers, strict=True):
        first.setdefault(sid, answer)
    for sid, answer in first.items():
        if sid in skipped:
            assert answer.status is IngestStatus.STALE and answer.reason == f"{STALE}; {skipped[sid]}"
        elif answer.status is IngestStatus.STALE:
            assert answer.reason == f"{STALE}; it runs in order for rule each"
    listed = {s["snapshotId"]: s["reason"] for s in explain(world)["groups"][0]["skipped"]}
    assert listed == skipped


def test_a_late_version_below_where_a_next_change_rule_started_says_so() -> None:
    world = World()
    world.snap(H, 5)
    world.deliver()
    started = rule("each", {"assetKey": H}, mode="EACH_VERSION", startFrom="NEXT_CHANGE")
    assert world.resolve.start(started, ["g"])  # the starting point: 5, SKIPPED
    world.rules.put_rule(started, world.now)
    world.snap(H, 3)
    said = "version 3 is older than version 5, where rule each started (startFrom NEXT_CHANGE), and will not run for "
    assert world.answers[-1].reason == f"{STALE}; {said}rule each"
    world.deliver()
    world.snap(H, 6)
    world.deliver()
    assert world.claimed() == [[5], [6]] and world.skipped() == {3: f"{said}rule each"}
