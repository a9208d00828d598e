"""A quality verdict that comes before its snapshot is reported (by a push or a poll) makes that snapshot pinnable:
the verdict names it, and ``qualityStatus: PASSED`` pins the newest snapshot that passed. An EACH_VERSION group may
therefore run it before its push; the push, when it comes late, answers "already triggered" for that group, not
"will not run" (which would be false: it ran), and the resolver records no skip for it. Another EACH_VERSION group of
the same asset that never ran it and is past it does skip it, and says so.

The first test is the history ``TestExplainAgreesWithTheResolver`` (tests/unit/test_explain_agrees.py) found, shrunk:
``domain.late_versions.passed_over`` called the late push skipped because the group's cursor held a newer version,
not knowing the group ran this one. The snapshot log tells that some claim pinned the snapshot (a claim logs a pin the
log does not hold), and the group's own triggers tell which group (``domain.late_versions.ran_among``).
"""

from __future__ import annotations

from typing import Any

from lakehook.domain.events import IngestStatus
from lakehook.domain.late_versions import ran_among
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus
from lakehook.domain.versions import SnapshotRecord
from tests.unit.test_explain_agrees import RULES, ExplainMachine
from tests.unit.test_resolve_usecase import World, rule

A, B = "paimon://lake/ods/a", "paimon://lake/ods/b"


def test_a_snapshot_run_on_its_verdict_is_not_answered_will_not_run_when_its_push_comes_late() -> None:
    machine = ExplainMachine()
    machine.put_every_rule(start_from=["LATEST"] * len(RULES))
    for wait in (0, 0, 0, 0, 0, 4):
        machine.target_answers(fail=False, wait_ms=wait)
    machine.commit(asset=B, hold_back=False, verdict=None, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.commit(asset=A, hold_back=True, verdict=True, wait_ms=0)  # snapshot 1, its push held back; its verdict
    machine.target_answers(fail=False, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.commit(asset=A, hold_back=False, verdict=True, wait_ms=0)
    machine.target_answers(fail=False, wait_ms=0)
    machine.push_late(asset=A, index=0, wait_ms=0)  # snapshot 1's push, after 2's
    machine.target_answers(fail=False, wait_ms=0)  # explain checks every answer against what ran
    assert ("each_checked_ab", A, 1) not in machine.answered_skips


def _world() -> World:
    checked = rule("checked", {"assetKey": A, "condition": {"qualityStatus": "PASSED"}}, mode="EACH_VERSION")
    return World(checked, rule("every", {"assetKey": A}, mode="EACH_VERSION"))


def test_the_group_that_ran_it_is_told_so_and_the_one_that_went_past_it_skips_it() -> None:
    world = _world()
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)  # snapshot 1 is not reported yet
    world.deliver()
    assert world.claimed("checked") == [[1]]  # the verdict names it: it is the newest that passed
    world.snap(A, 2)
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=2)
    world.deliver()
    assert world.claimed("checked") == [[1], [2]]
    assert world.claimed("every") == [[2]]  # its first trigger starts at the oldest snapshot seen: 2
    world.snap(A, 1)  # 1's push, late
    answer = world.answers[-1]
    assert answer.status is IngestStatus.STALE
    assert answer.reason is not None
    assert "version 1 already triggered rule checked, before this push" in answer.reason
    assert "version 1 arrived after 2 and will not run for rule every" in answer.reason
    assert "will not run for rule checked" not in answer.reason
    world.deliver()
    assert world.skipped("checked") == {}  # it ran: no skip
    assert world.skipped("every") == {1: "version 1 arrived after 2 and will not run for rule every"}
    assert world.claimed("checked") == [[1], [2]]  # once each, never again
    assert world.claimed("every") == [[2]]


def test_a_late_push_of_the_version_the_group_holds_says_it_already_triggered() -> None:
    world = _world()
    world.snap(A, 2)  # 1 is held back, 2 has no verdict yet
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)  # a late verdict on a snapshot no push reported
    world.deliver()
    assert world.claimed("checked") == [[1]]
    world.snap(A, 1)
    answer = world.answers[-1]
    assert answer.reason is not None
    assert "version 1 already triggered rule checked, before this push" in answer.reason
    assert "runs in order for rule checked" not in answer.reason
    world.deliver()
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=2)
    world.deliver()
    assert world.claimed("checked") == [[1], [2]]
    assert world.skipped("checked") == {}


def test_a_verdict_on_an_unreported_snapshot_older_than_the_state_then_its_late_push() -> None:
    """The case a block on "no snapshot reported yet, or a verdict ahead of the newest" would not catch: 2 is
    reported, then a verdict names the unreported 1, which runs; once 2 ran too, 1's push says it already ran."""
    world = _world()
    world.snap(A, 2)
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)
    world.deliver()
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=2)
    world.deliver()
    assert world.claimed("checked") == [[1], [2]]
    world.snap(A, 1)
    answer = world.answers[-1]
    assert answer.reason is not None
    assert "version 1 already triggered rule checked, before this push" in answer.reason
    assert "will not run for rule checked" not in answer.reason
    world.deliver()
    assert world.skipped("checked") == {}
    assert world.claimed("checked") == [[1], [2]]


def test_a_late_snapshot_no_verdict_named_first_is_still_skipped_by_a_group_past_it() -> None:
    world = _world()
    world.snap(A, 2)
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=2)
    world.deliver()
    assert world.claimed("checked") == [[2]]
    world.snap(A, 1)  # never named by a verdict, never pinned: it will not run, for either rule
    answer = world.answers[-1]
    assert answer.reason is not None
    assert "version 1 arrived after 2 and will not run for rule checked" in answer.reason
    assert "already triggered" not in answer.reason
    world.deliver()
    assert set(world.skipped("checked")) == {1}


def _trigger(sid: int, status: TriggerStatus = TriggerStatus.SUCCEEDED, **fields: Any) -> Trigger:
    return Trigger(
        triggerKey=fields.pop("key", f"r.g.{sid}.{status.value}"),
        ruleId="r",
        groupId=fields.pop("group", "g"),
        status=status,
        inputs=(PinnedInput(assetKey=A, snapshotId=sid),),
        createdAt=0,
        updatedAt=0,
        **fields,
    )


def test_ran_among_reads_the_groups_runs_newest_first_until_an_older_version() -> None:
    late = SnapshotRecord(snapshot_id=4, order=4)
    skip = _trigger(4, TriggerStatus.SKIPPED, key="r.g.late.x")  # a late skip of 4 is no run, and no answer
    assert ran_among([skip, _trigger(6), _trigger(2, replayOf="r.g.2"), _trigger(4)], "g", A, late) is True
    assert ran_among([_trigger(6), _trigger(4, group="other")], "g", A, late) is None  # another group's run
    assert ran_among([_trigger(6), _trigger(3), _trigger(4)], "g", A, late) is False  # the group's claims are in order
    assert ran_among([_trigger(4, TriggerStatus.SKIPPED)], "g", A, late) is False  # skipped (a backfill), not run
    assert ran_among([], "g", A, late) is None
