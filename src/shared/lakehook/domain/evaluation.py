"""Evaluate a rule's groups against asset state: which versions to pin, or why not.

Pure functions, shared by the resolver (which claims what they call READY) and by explain
(which shows the same verdicts to a person). A member's condition selects the NEWEST version
that satisfies it: ``qualityStatus: PASSED`` pins the newest snapshot whose check passed, never a
newer one that failed or is unchecked. The policy then decides whether the group fires:

- ``ALL_UPDATED``: every member's pinned version is newer than the one the group last fired with;
- ``ANY_UPDATED``: at least one is newer and none is older (intermediate versions coalesce);
- ``EACH_VERSION``: each member advances to its NEXT version after the cursor, one trigger per
  step, so none is skipped: a member whose versions are its table's snapshots steps through the asset's
  snapshot log (:class:`SnapshotLog`, every accepted snapshot by order, late ones too) and waits at a gap
  the lineage shows (WAITING_FOR_VERSION) until it fills or settles; each snapshot is judged by its own
  gates (:func:`at_snapshot`: its quality checks, its schema, the asset's watermark and backfill), and one
  that does not pass holds the group there, its gate's status naming the snapshot. Tag and manifest members
  step through the known state history (:class:`VersionLog`). Head of line: version n+1 is claimed only
  once version n's trigger SUCCEEDED (or was SKIPPED); a FAILED one blocks the group visibly
  (BLOCKED_BY_FAILED_TRIGGER). A snapshot that arrives only after the group ran a newer one is no version after
  the cursor: it never runs, and its push records it as skipped (:mod:`lakehook.domain.late_versions`). A
  partition of a partitioned group steps through the data commits touching it (:class:`PartitionView`), head of
  line per partition;
- a windowed group (``watermarkAtLeast: {window}``) fires once per window: the newest closed
  window, or with ``EACH_VERSION`` every window in order, at most ``maxRunsPerEvaluation`` behind the newest
  closed one per evaluation (CATCHING_UP with the :class:`Backlog` otherwise);
- a ``coverage`` member makes the group fire once per aligned window its intervals cover fully, in
  order from the last triggered window (the first: the newest covered one); a gap blocks with the
  exact missing ranges (BLOCKED_BY_COVERAGE), a covered window not yet past its lateness waits;
- ``manifest: SEALED`` needs a verified, sealed spool manifest (BLOCKED_BY_MANIFEST otherwise, with
  its status and reason: an INTERRUPTED or INVALID one blocks); ``backfillStatus: COMPLETED`` waits
  for the asset's backfill to complete;
- ``cdcRecoveredTo`` waits for the asset's CDC source to report (CDC_LAG_RECOVERED) it caught up to an instant,
  or with ``window`` to the end of the window the group runs for (BLOCKED_BY_CDC_LAG otherwise; the window step
  in :mod:`lakehook.domain.windows`);
- ``minIntervalSeconds`` (cooldown after a trigger) and ``quietPeriodSeconds`` (no member state
  changed for that long) answer COOLDOWN / QUIET_PERIOD with the time they end.

Each of these behaviours is one step class of :mod:`lakehook.domain.group_steps` (in precedence order); the
EACH_VERSION history walk is :mod:`lakehook.domain.version_history`, the policy's step after a cursor
:mod:`lakehook.domain.group_progress`. This module runs them: :func:`evaluate_group`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lakehook.domain.coverage import Span
from lakehook.domain.group_progress import Evaluating, advance
from lakehook.domain.group_steps import steps_of
from lakehook.domain.member_selection import select_member
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.rules import Group, Rule
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.domain.verdicts import (
    Backlog,
    Gap,
    GroupEvaluation,
    Held,
    PartialCommit,
    PartitionView,
    RuleEvaluation,
)
from lakehook.domain.version_history import VersionLog, at_snapshot, steps_by_snapshot
from lakehook.domain.versions import SnapshotLog
from lakehook.domain.windows import coverage_from

__all__ = [
    "Backlog",
    "Gap",
    "GroupEvaluation",
    "Held",
    "MemberEvaluation",
    "PartialCommit",
    "PartitionView",
    "RuleEvaluation",
    "Status",
    "VersionLog",
    "at_snapshot",
    "backfills_of",
    "coverage_from",
    "evaluate_group",
    "evaluate_rule",
    "select_member",
    "steps_by_snapshot",
]


def evaluate_group(
    rule: Rule,
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    now: int,
    *,
    registered: Mapping[str, bool] | None = None,
    logs: Mapping[str, VersionLog] | None = None,
    coverage: Mapping[str, Sequence[Span]] | None = None,
    snapshots: Mapping[str, SnapshotLog] | None = None,
    previous: Trigger | None = None,
    partition: PartitionView | None = None,
) -> GroupEvaluation:
    """The group's verdict at ``now``; with ``partition``, the verdict of that partition of a partitioned group under
    its own ``cursor`` (one path for every group, so each behaviour below holds per partition). ``logs``
    (EACH_VERSION) holds the known history per member asset, ``snapshots`` the snapshot log per member asset,
    ``previous`` the cursor's trigger (head of line); ``coverage`` the merged intervals of each coverage member from
    the last triggered window's end (or from :func:`coverage_from`) to ``now``.

    The group's steps (:func:`lakehook.domain.group_steps.steps_of`) run in order; the first that answers a verdict
    decides, and a group that passes them all is READY with the pins (and window) they chose."""
    members = (
        list(partition.members)
        if partition is not None
        else [
            select_member(
                m, states.get(m.asset_key), None if registered is None else registered.get(m.asset_key, False)
            )
            for m in group.members
        ]
    )
    g = Evaluating(
        rule,
        group,
        states,
        cursor if cursor is not None and (cursor.seq > 0 or cursor.baseline) else None,  # a partition's start
        now,
        members,
        logs or {},
        snapshots or {},
        coverage or {},
        previous,
        partition,
    )
    for step in steps_of(rule, group):
        verdict = step.evaluate(g)
        if verdict is not None:
            return _in_partition(g, _with_schedule(g, _with_progress(g, verdict)))
    ready = GroupEvaluation(group.group_id, Status.READY, tuple(members), pins=tuple(g.pins), window=g.window)
    return _in_partition(g, _with_schedule(g, _with_progress(g, ready)))


def _with_progress(g: Evaluating, verdict: GroupEvaluation) -> GroupEvaluation:
    """The verdict with what the steps found on the way: a windowed group's backlog, a require tree's verdict."""
    if g.backlog is None and g.require is None:
        return verdict
    return replace(verdict, backlog=g.backlog or verdict.backlog, require=g.require)


def _in_partition(g: Evaluating, verdict: GroupEvaluation) -> GroupEvaluation:
    """A partition's verdict names its partition, in the field and first in its reason (``dt=2026-12-01: …``)."""
    if g.partition is None:
        return verdict
    key = g.partition.key
    return replace(verdict, partition=key, reason=f"{key}: {verdict.reason or 'ready'}")


def _with_schedule(g: Evaluating, verdict: GroupEvaluation) -> GroupEvaluation:
    """A scheduled group's verdict with its ticks and what its next run waits for: the members this verdict
    found unsatisfied. One that ran for its last tick (WAITING_FOR_SCHEDULE) was not asked yet what its policy
    needs since that trigger: that is the step the resolver takes at the next tick (:func:`_on_schedule`), taken
    here on the same reads, so explain names the members the tick will wait for."""
    schedule = g.group.schedule
    if schedule is None:
        return verdict
    cursor = g.cursor
    ran_until = cursor.window.end if cursor is not None and cursor.window is not None else None
    members = list(verdict.members)
    if verdict.status is Status.WAITING_FOR_SCHEDULE and cursor is not None and g.group.members:
        advance(g, cursor, members, list(g.pins), [])
    waiting = tuple(m for m in members if m.status is not Status.READY)
    return replace(verdict, schedule=ScheduleExplanation.at(schedule, g.now, ran_until, waiting))


def backfills_of(group: Group, states: Mapping[str, AssetState]) -> dict[str, str]:
    """The backfill each member's state names, recorded in the cursor at a claim."""
    return {k: s.backfill_id for k in group.asset_keys if (s := states.get(k)) is not None and s.backfill_id}


# --- rules ---------------------------------------------------------------------------------------


def evaluate_rule(
    rule: Rule,
    states: Mapping[str, AssetState],
    cursors: Mapping[str, GroupCursor],
    now: int,
    *,
    registered: Mapping[str, bool] | None = None,
    logs: Mapping[str, VersionLog] | None = None,
    coverage: Mapping[str, Sequence[Span]] | None = None,
) -> RuleEvaluation:
    """Evaluate every group; ``cursors`` maps group id to the group's cursor."""
    groups = tuple(
        evaluate_group(
            rule, g, states, cursors.get(g.group_id), now, registered=registered, logs=logs, coverage=coverage
        )
        for g in rule.groups
    )
    return RuleEvaluation(rule.rule_id, groups, now)
