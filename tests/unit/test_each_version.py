"""EACH_VERSION means each version, in order: every accepted snapshot (a late, STALE one too) gets one trigger,
gaps the lineage shows wait (WAITING_FOR_VERSION), and version n+1 is claimed only after n SUCCEEDED. A snapshot
that arrives after the group ran a newer one cannot run in order: it is skipped, and every answer says so."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.evaluation import Status
from lakehook.domain.events import IngestStatus
from lakehook.domain.late_versions import (
    AlreadyRan,
    LateVersion,
    already_ran,
    is_late_skip,
    late_in_partition,
    passed_over,
    ran_among,
    reached,
    steps_through,
)
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
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


# --- the late-version decisions, one by one (lakehook.domain.late_versions) -------------------------------------


def each_rule(*members: dict[str, Any], groups: int = 1, **rule: Any) -> Rule:
    group = {"members": list(members) or [{"assetKey": A}], **rule.pop("group", {})}
    return Rule.model_validate(
        {
            "ruleId": "each",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": "EACH_VERSION"},
            "groups": [{"groupId": "g" if n == 0 else f"g{n}", **group} for n in range(groups)],
            **rule,
        }
    )


def record(snapshot_id: int, order: int | None = None, **fields: Any) -> SnapshotRecord:
    order = snapshot_id if order is None else order
    return SnapshotRecord.model_validate({"snapshotId": snapshot_id, "order": order, "commitKind": "APPEND", **fields})


def cursor_at(*pins: PinnedInput, seq: int = 1, **fields: Any) -> GroupCursor:
    return GroupCursor(rule_id="each", group_id="g", seq=seq, pins={p.asset_key: p for p in pins}, **fields)


def pinned(snapshot_id: int | None, order: int | None = None, asset_key: str = A, **fields: Any) -> PinnedInput:
    return PinnedInput(asset_key=asset_key, snapshot_id=snapshot_id, snapshot_order=order, **fields)


def test_a_group_steps_through_the_data_snapshots_of_its_snapshot_members_of_an_enabled_each_version_rule() -> None:
    each_version = each_rule()
    assert steps_through(each_version, each_version.groups[0], A, record(3))
    assert not steps_through(each_version, each_version.groups[0], H, record(3))  # not its member
    compaction = record(4, commitKind="COMPACT")
    assert not steps_through(each_version, each_version.groups[0], A, compaction)  # passed over anyway
    compacting = each_rule({"assetKey": A, "condition": {"includeCompaction": True}})
    assert steps_through(compacting, compacting.groups[0], A, compaction)
    floor = each_rule({"assetKey": A, "condition": {"minSnapshotId": 5}})
    assert steps_through(floor, floor.groups[0], A, record(5))
    assert not steps_through(floor, floor.groups[0], A, record(4))  # below minSnapshotId: passed over anyway
    for other in (
        each_rule(enabled=False),
        each_rule(policy={"mode": "ALL_UPDATED"}),
        each_rule({"assetKey": A}, {"assetKey": H, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}),
        each_rule({"assetKey": A, "condition": {"tag": "release"}}),
        each_rule({"assetKey": A, "partition": {}}, group={"partitionBy": ["dt"]}),  # it steps per partition
    ):
        assert not steps_through(other, other.groups[0], A, record(3))


def test_a_cursor_reached_a_snapshot_once_it_pins_that_one_or_a_newer_one_of_the_asset_after_a_first_trigger() -> None:
    five = cursor_at(pinned(105, order=5))  # ordered by its place in history, not by its id
    assert reached(five, record(105, 5), A) and reached(five, record(4), A)
    assert not reached(five, record(6), A) and not reached(five, record(5), H)
    assert not reached(None, record(1), A)
    assert not reached(cursor_at(pinned(105, order=5), seq=0), record(1), A)  # no first trigger yet
    assert not reached(cursor_at(pinned(None, watermark=9)), record(1), A)  # a watermark pin is no snapshot


def test_a_snapshot_older_than_the_cursors_is_passed_over_and_its_skip_says_where_the_group_was() -> None:
    rule = each_rule()
    group = rule.groups[0]
    five = cursor_at(pinned(5), replay_epoch=2)
    three = record(3, schemaId=1, commitTime=300, metadataLocation="s3://m/3.json", watermark=30)
    late = passed_over(rule, group, five, three, A)
    assert late is not None and late == LateVersion(rule, "g", A, three, pinned(5), baseline=False)
    assert late.reason == "version 3 arrived after 5 and will not run for rule each"
    for not_late in (
        passed_over(rule, group, five, record(5), A),  # the one it holds
        passed_over(rule, group, five, record(6), A),  # newer: runs in order
        passed_over(rule, group, None, three, A),
        passed_over(rule, group, cursor_at(pinned(5), seq=0), three, A),  # the first trigger starts at the oldest
        passed_over(rule, group, cursor_at(pinned(None, watermark=9)), three, A),
        passed_over(rule, group, five, three, H),  # no pin of that asset
        passed_over(each_rule(policy={"mode": "ALL_UPDATED"}), group, five, three, A),  # no version of the group
    ):
        assert not_late is None
    started = passed_over(rule, group, cursor_at(pinned(5), baseline=True), three, A)
    assert started is not None and started.baseline
    assert started.reason == (
        "version 3 is older than version 5, where rule each started (startFrom NEXT_CHANGE), and will not run for "
        "rule each"
    )
    two = each_rule(groups=2)
    assert LateVersion(two, "g1", A, three, pinned(5), False).reason == (
        "version 3 arrived after 5 and will not run for rule each (group g1)"
    )
    skip = late.trigger(five, 7_000)
    pin = pinned(3, schema_id=1, commit_time=300, metadata_location="s3://m/3.json", watermark=30)
    assert skip.inputs == (pin,) and is_late_skip(skip)
    assert skip.trigger_key == trigger_key("each", "g", [pin], None, 2, marker="late")
    assert (skip.rule_id, skip.group_id, skip.status, skip.replay_epoch, skip.sequence) == (
        "each",
        "g",
        TriggerStatus.SKIPPED,
        2,
        1,
    )
    assert (skip.created_at, skip.updated_at, skip.reason, skip.window, skip.partition) == (
        7_000,
        7_000,
        late.reason,
        None,
        None,
    )
    reordered = LateVersion(rule, "g", A, record(103, 3), pinned(5), False).trigger(five, 7_000)
    assert reordered.inputs[0].snapshot_order == 3  # an order other than the id is pinned with it


def test_a_commit_late_in_a_partition_is_a_skip_of_that_partition_once() -> None:
    rule = each_rule(groups=2)
    version, passed = pinned(3), pinned(5)
    skip = late_in_partition(rule, "g1", "dt=2026-12-07", version, passed, cursor_at(seq=4, replay_epoch=1), 9_000)
    assert skip.reason == (
        f"version 3 of {A} touched dt=2026-12-07 after 5 ran for it and will not run for rule each (group g1)"
    )
    assert skip.trigger_key == trigger_key("each", "g1", [version], None, 1, marker="late", partition="dt=2026-12-07")
    assert (skip.rule_id, skip.group_id, skip.partition, skip.inputs, skip.status) == (
        "each",
        "g1",
        "dt=2026-12-07",
        (version,),
        TriggerStatus.SKIPPED,
    )
    assert (skip.replay_epoch, skip.sequence, skip.created_at, skip.updated_at) == (1, 4, 9_000, 9_000)
    assert is_late_skip(skip)
    one = late_in_partition(each_rule(), "g", "dt=1", version, passed, cursor_at(), 9_000)
    assert one.reason == f"version 3 of {A} touched dt=1 after 5 ran for it and will not run for rule each"


def test_a_late_push_of_a_version_the_group_ran_or_holds_says_so_and_runs_nothing() -> None:
    rule = each_rule()
    group = rule.groups[0]
    five = cursor_at(pinned(5))
    assert already_ran(rule, group, five, record(3), A, ran=True) == AlreadyRan(
        rule, "g", record(3), ran=True, baseline=False
    )
    assert (
        AlreadyRan(rule, "g", record(3), True, False).reason
        == "version 3 already triggered rule each, before this push"
    )
    holds = already_ran(rule, group, five, record(5), A, ran=False)
    assert holds is not None and holds == AlreadyRan(rule, "g", record(5), ran=False, baseline=False)
    assert holds.reason == "version 5 is where rule each skipped to and will not run for rule each"
    started = already_ran(rule, group, cursor_at(pinned(5), baseline=True), record(5), A, ran=False)
    assert started is not None and started == AlreadyRan(rule, "g", record(5), ran=False, baseline=True)
    assert started.reason == (
        "version 5 is where rule each started (startFrom NEXT_CHANGE) and will not run for rule each"
    )
    assert AlreadyRan(each_rule(groups=2), "g1", record(5), True, False).reason == (
        "version 5 already triggered rule each (group g1), before this push"
    )
    assert already_ran(rule, group, five, record(3), A, ran=False) is None  # passed over, not run: passed_over says
    assert already_ran(rule, group, five, record(6), A, ran=True) is None  # not reached: it runs in order
    assert already_ran(rule, group, five, record(3), H, ran=True) is None
    assert already_ran(rule, group, None, record(3), A, ran=True) is None
    assert already_ran(each_rule(enabled=False), group, five, record(3), A, ran=True) is None


def made(*pins: PinnedInput, group_id: str = "g", **fields: Any) -> Trigger:
    key = trigger_key("each", group_id, list(pins), None, 0, marker=fields.pop("marker", None))
    return Trigger(
        trigger_key=key, rule_id="each", group_id=group_id, inputs=pins, created_at=0, updated_at=0, **fields
    )


def test_whether_a_group_ran_a_version_is_read_from_its_triggers_newest_first() -> None:
    three = record(3)
    ran = made(pinned(3))
    assert ran_among([ran], "g", A, three) is True
    # another group's, a late skip's, another asset's or a watermark's pins say nothing: the next trigger tells
    for silent in (
        made(pinned(3), group_id="g1", status=TriggerStatus.SKIPPED),
        made(pinned(3), status=TriggerStatus.SKIPPED, marker="late"),
        made(pinned(3, asset_key=H)),
        made(pinned(None, watermark=3)),
        made(pinned(2), replay_of="each.g.older"),  # a replay of an older version may come after a newer claim
    ):
        assert ran_among([silent, ran], "g", A, three) is True
        assert ran_among([silent], "g", A, three) is None
    assert ran_among([made(pinned(3), status=TriggerStatus.SKIPPED), ran], "g", A, three) is False  # skipped to it
    assert ran_among([made(pinned(2)), ran], "g", A, three) is False  # claims are in order: older ones pin older
    assert ran_among([made(pinned(4)), ran], "g", A, three) is True  # a newer one: read on
    assert ran_among([], "g", A, three) is None
