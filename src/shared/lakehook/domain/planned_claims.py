"""A planned claim, of a group or of one partition of a partitioned group: the trigger a READY verdict makes, the
cursor it is conditional on and what moving that cursor needs (:func:`plan_claim`). Every lane of a plan makes its
claims here (:func:`lakehook.domain.lanes.plan_lane`), so a claim means the same for a group and for a partition;
the apply makes them (one at a time for a group, in transactions of 50 for partitions)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakehook.domain.evaluation import GroupEvaluation, backfills_of
from lakehook.domain.rules import Group, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, next_trigger


@dataclass(frozen=True)
class PlannedClaim:
    """One claim: the trigger (its pins as evaluated: the apply describes them for the run manifest, which never
    changes the key), the cursor the claim is conditional on (None: the group, or the partition, never ran), the
    cursor it starts from, and what moving the cursor needs (the members' backfills; a window behind the newest
    closed one is counted in the catch-up). ``log_pins``: an EACH_VERSION group logs pinned snapshots known only from
    the state first (not taken for late ones)."""

    trigger: Trigger
    expected: GroupCursor | None
    base: GroupCursor
    backfills: Mapping[str, str] = field(default_factory=dict)
    catch_up_at: int | None = None
    log_pins: bool = False
    baseline: bool = False  # a startFrom NEXT_CHANGE starting point (no run: the versions present then)
    behind: Trigger | None = None  # EACH_VERSION: the run in flight (or FAILED) a backfill's skip stays behind

    @property
    def holds_line(self) -> Trigger:
        """The trigger the next version waits for once this claim is made: the run a skip stays behind, else this
        claim's own."""
        return self.behind if self.behind is not None else self.trigger

    def with_pins(self, pins: tuple[PinnedInput, ...]) -> PlannedClaim:
        return PlannedClaim(
            self.trigger.model_copy(update={"inputs": pins}),
            self.expected,
            self.base,
            self.backfills,
            self.catch_up_at,
            self.log_pins,
            self.baseline,
            self.behind,
        )

    def moved(self) -> GroupCursor:
        """The group's (or the partition's) cursor once this claim is made. A skip behind a run names that run: the
        next version waits for it (head of line), as it did before the skip."""
        moved = self.base.after(self.trigger, dict(self.backfills), self.baseline, self.catch_up_at)
        if self.behind is None:
            return moved
        return moved.model_copy(update={"trigger_key": self.behind.trigger_key})


def plan_claim(
    rule: Rule,
    group: Group,
    verdict: GroupEvaluation,
    cursor: GroupCursor | None,
    states: Mapping[str, AssetState],
    now: int,
    partition: str | None = None,
) -> PlannedClaim:
    """The claim of a READY ``verdict`` of ``group`` (of its ``partition``) under ``cursor``: a SKIPPED trigger when
    the verdict skips; for EACH_VERSION, a partition's trigger is ``in_order`` (its SUCCEEDED wakes the resolver for
    the partition's next version) and a group's logs its pins."""
    base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id, partition)
    backfills = backfills_of(group, states)
    trigger = next_trigger(
        rule.rule_id,
        group.group_id,
        base,
        verdict.pins,
        status=TriggerStatus.SKIPPED if verdict.skip else TriggerStatus.TRIGGERING,
        reason=verdict.reason,
        now=now,
        window=verdict.window,
        partition=partition,
        marker=_empty_skip_marker(verdict, base, backfills),
    )
    each_version = rule.policy.mode is Mode.EACH_VERSION
    if each_version and partition is not None:
        trigger = trigger.model_copy(update={"in_order": True})
    catch_up = trigger.created_at if verdict.backlog is not None else None
    log_pins = each_version and partition is None and group.window is None
    behind = verdict.behind if verdict.skip else None
    return PlannedClaim(trigger, cursor, base, backfills, catch_up, log_pins, behind=behind)


def _empty_skip_marker(verdict: GroupEvaluation, base: GroupCursor, backfills: Mapping[str, str]) -> str | None:
    """A backfill's skip pinning exactly what the cursor holds (the backfill made nothing newer) is claimed under a
    key of its own, ``backfill-<digest of the backfills it records>``: under the plain key it would be the claim that
    pinned those versions (the cursor's run, or an earlier skip), met as already claimed, so the backfill would never
    be recorded on the cursor and the group's next version would be absorbed as its skip. None otherwise."""
    if not verdict.skip:
        return None
    held = sorted(p.identity() for p in base.pins.values())
    if sorted(p.identity() for p in verdict.pins) != held or verdict.window != base.window:
        return None
    ids = "\n".join(sorted(f"{k}={v}" for k, v in backfills.items()))
    return f"backfill-{hashlib.sha256(ids.encode()).hexdigest()[:12]}"
