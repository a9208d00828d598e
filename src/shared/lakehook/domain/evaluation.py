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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lakehook.domain.conditions import history_order
from lakehook.domain.coverage import Span
from lakehook.domain.member_selection import select_member
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.rules import BackfillPolicy, Group, Member, Mode, Rule
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window
from lakehook.domain.verdicts import (
    Backlog,
    Gap,
    GroupEvaluation,
    Held,
    PartialCommit,
    PartitionView,
    RuleEvaluation,
    first_blocked,
    with_status,
)
from lakehook.domain.versions import SnapshotLog, SnapshotRecord, Verdict, follows
from lakehook.domain.windows import coverage_from, next_window

# Named here by explain, the resolver and tests (the types live in verdicts, member_selection and windows).
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

# --- what the resolver knows of an asset's history (EACH_VERSION) --------------------------------


@dataclass(frozen=True)
class VersionLog:
    """Known states of one asset, by state version, and below which version a gap is final.

    The resolver that handles an asset's own stream records knows every earlier record was
    handled already, so a missing version below its first record is lost for good
    (``lost_before``); anyone else must stop at a gap, because the history may still be written.
    """

    states: tuple[AssetState, ...]
    lost_before: int = 0

    @classmethod
    def of(cls, states: Sequence[AssetState], lost_before: int = 0) -> VersionLog:
        by_version = {s.version: s for s in states}
        return cls(tuple(by_version[v] for v in sorted(by_version)), lost_before)

    def after(self, version: int) -> list[AssetState]:
        """The known states newer than ``version``, in order, up to the first gap that may still fill."""
        found: list[AssetState] = []
        expected = version + 1
        for state in self.states:
            if state.version <= version:
                continue
            if state.version > expected and state.version - 1 >= self.lost_before:
                break  # versions expected..state.version-1 may still arrive
            found.append(state)
            expected = state.version + 1
        return found


def at_snapshot(state: AssetState, record: SnapshotRecord, quality: Verdict | None = None) -> AssetState:
    """The state as a member judges ``record``: that snapshot as the newest (its schema id, commit kind), the
    asset-wide gates as they hold now (which schemas are approved, the asset's watermark, its backfill), and with
    ``quality`` the verdict of that snapshot's own quality checks in place of the newest ones."""
    update: dict[str, Any] = {
        "latest_snapshot_id": record.snapshot_id,
        "latest_snapshot_order": record.order,
        "latest_parent_snapshot_id": record.parent_snapshot_id,
        "latest_schema_id": record.schema_id if record.schema_id is not None else state.latest_schema_id,
        "latest_commit_time": record.commit_time,
        "latest_commit_kind": record.commit_kind,
        "latest_metadata_location": record.metadata_location,
        "latest_snapshot_watermark": record.watermark,
        "latest_data_changed": record.changes_data,
        # a watermark gate is the asset's: the newest of its pushed and snapshot watermarks, as it is now
        "latest_watermark": state.watermark,
    }
    if record.changes_data:
        update["latest_data"] = record
    if quality is not None:
        passed = quality is Verdict.PASSED
        failed = quality is Verdict.FAILED
        update["quality_passed_snapshot_id"] = record.snapshot_id if passed else None
        update["quality_passed_order"] = record.order if passed else None
        update["quality_failed_snapshot_id"] = record.snapshot_id if failed else None
        update["quality_failed_order"] = record.order if failed else None
    return state.model_copy(update=update)


def steps_by_snapshot(member: Member) -> bool:
    """Whether a member's versions are its table's snapshots, so EACH_VERSION steps it through the snapshot log and
    judges each snapshot's gates (quality check, schema status, watermark, backfill) as they hold for that snapshot.

    A ``tag`` member's version is the snapshot the tag names, and a ``manifest`` member's the spool manifest's:
    those step through the state's history; a windowed or coverage member through its windows."""
    c = member.condition
    return not (c.tag or c.manifest or c.window is not None or c.coverage is not None)


# What blocks a snapshot-stepping member for one snapshot: its own gate, judged for that snapshot.
_GATES = frozenset(
    {
        Status.BLOCKED_BY_QUALITY,
        Status.BLOCKED_BY_SCHEMA,
        Status.BLOCKED_BY_WATERMARK,
        Status.BLOCKED_BY_BACKFILL,
        Status.BLOCKED_BY_CDC_LAG,
    }
)


# --- groups --------------------------------------------------------------------------------------


def _partition_blocked(g: _Group, members: Sequence[MemberEvaluation], **extra: Any) -> GroupEvaluation:
    """A partition's wait on its members: the first unsatisfied gate (an unpartitioned member), else every member
    with the first blocked partitioned member's status, named together (``waiting for orders, payments (…)``)."""
    view = g.partition
    assert view is not None
    gates = [m for i, m in enumerate(members) if i not in view.counted and m.status is not Status.READY]
    first = gates[0] if gates else next(m for m in members if m.status is not Status.READY)
    alike = [first] if gates else [m for m in members if m.status is first.status]
    names = ", ".join(m.asset_key for m in alike)
    reason = f"waiting for {names} ({first.reason})"
    return GroupEvaluation(g.gid, first.status, tuple(g.members), reason=reason, **extra)


def _blocked(g: _Group, members: Sequence[MemberEvaluation], **extra: Any) -> GroupEvaluation:
    """The group's (or partition's) wait on the first of ``members`` that is not satisfied."""
    if g.partition is not None:
        return _partition_blocked(g, members, **extra)
    return first_blocked(g.gid, list(members), **extra)


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

    The steps of :data:`_GROUP_STEPS` run in order; the first that answers a verdict decides, and a group that
    passes them all is READY with the pins (and window) they chose."""
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
    g = _Group(
        rule,
        group,
        states,
        cursor if cursor is not None and cursor.seq > 0 else None,
        now,
        members,
        logs or {},
        snapshots or {},
        coverage or {},
        previous,
        partition,
    )
    for step in _GROUP_STEPS:
        verdict = step(g)
        if verdict is not None:
            return _in_partition(g, _with_schedule(g, replace(verdict, backlog=g.backlog) if g.backlog else verdict))
    ready = GroupEvaluation(
        group.group_id, Status.READY, tuple(members), pins=tuple(g.pins), window=g.window, backlog=g.backlog
    )
    return _in_partition(g, _with_schedule(g, ready))


def _in_partition(g: _Group, verdict: GroupEvaluation) -> GroupEvaluation:
    """A partition's verdict names its partition, in the field and first in its reason (``dt=2026-12-01: …``)."""
    if g.partition is None:
        return verdict
    key = g.partition.key
    return replace(verdict, partition=key, reason=f"{key}: {verdict.reason or 'ready'}")


def _with_schedule(g: _Group, verdict: GroupEvaluation) -> GroupEvaluation:
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
        _advance(g, cursor, members, list(g.pins), [])
    waiting = tuple(m for m in members if m.status is not Status.READY)
    return replace(verdict, schedule=ScheduleExplanation.at(schedule, g.now, ran_until, waiting))


@dataclass
class _Group:
    """One group's evaluation in progress: its inputs, its members' verdicts, and the pins and window chosen."""

    rule: Rule
    group: Group
    states: Mapping[str, AssetState]
    cursor: GroupCursor | None  # None before the group's first trigger
    now: int
    members: list[MemberEvaluation]
    logs: Mapping[str, VersionLog]
    snapshots: Mapping[str, SnapshotLog]
    coverage: Mapping[str, Sequence[Span]]
    previous: Trigger | None
    partition: PartitionView | None = None  # one partition of a partitioned group
    pins: list[PinnedInput] = field(default_factory=list)
    window: Window | None = None
    backlog: Backlog | None = None

    @property
    def gid(self) -> str:
        return self.group.group_id

    @property
    def counted(self) -> frozenset[int] | None:
        """The members whose updates count for the policy (None: every member)."""
        return self.partition.counted if self.partition is not None else None


def _disabled(g: _Group) -> GroupEvaluation | None:
    if g.rule.enabled:
        return None
    return GroupEvaluation(g.gid, Status.DISABLED, tuple(g.members), reason="the rule is disabled")


def _members_hold(g: _Group) -> GroupEvaluation | None:
    """Every member satisfies its condition; the pins are their versions."""
    # EACH_VERSION judges a snapshot member's gates per snapshot: the newest snapshot failing one (or the newest
    # verdicts disagreeing) does not hold back the older versions still to run; the stepping below decides.
    stepping = _judged_per_snapshot(g.rule, g.group, g.members, g.cursor, g.snapshots)
    if any(m.status is not Status.READY for i, m in enumerate(g.members) if i not in stepping):
        return _blocked(g, g.members)
    g.pins = [p for i, m in enumerate(g.members) if (p := stepping.get(i) or m.pin) is not None]
    return None


def _backfill_skip(g: _Group) -> GroupEvaluation | None:
    """policy.backfill=SKIP: hold while a member's backfill runs, then absorb its versions."""
    if g.rule.policy.backfill is not BackfillPolicy.SKIP:
        return None
    return _backfill(g.rule, g.group, g.states, g.cursor, g.members, g.pins)


def _versions(g: _Group) -> GroupEvaluation | None:
    """Which versions (and window) the group claims next: by its schedule's tick, its window, its cursor, or with
    EACH_VERSION and no cursor the oldest version seen."""
    if g.group.schedule is not None:
        return _scheduled(g)
    if g.group.window is not None:
        return _windowed(g)
    if g.cursor is not None:
        return _after_cursor(g, g.cursor)
    view = g.partition
    if g.rule.policy.mode is Mode.EACH_VERSION and view is not None:
        g.pins = [view.first(i, pin) for i, pin in enumerate(g.pins)]
    elif g.rule.policy.mode is Mode.EACH_VERSION:
        g.pins = [
            _first_known(m, pin, g.logs.get(m.asset_key), g.snapshots.get(m.asset_key), g.states)
            for m, pin in zip(g.group.members, g.pins, strict=True)
        ]
    return None


def _scheduled(g: _Group) -> GroupEvaluation | None:
    scheduled = _on_schedule(g)
    if isinstance(scheduled, GroupEvaluation):
        return scheduled
    g.pins, g.window = scheduled
    return None


def _windowed(g: _Group) -> GroupEvaluation | None:
    found = next_window(g.rule, g.group, g.states, g.cursor, g.members, g.now, g.coverage)
    if isinstance(found, GroupEvaluation):
        return found
    g.window, pending = found
    cursor = g.cursor
    if cursor is None:
        return None
    if pending > 1:  # behind the newest closed window: catching up, at most maxRunsPerEvaluation per evaluation
        cap = g.rule.policy.runs_per_evaluation
        resumes = cursor.catch_up_spent(g.now, cap)
        g.backlog = Backlog(pending, g.window, resumes if resumes is not None else g.now)
        if resumes is not None:
            return GroupEvaluation(
                g.gid,
                Status.CATCHING_UP,
                tuple(g.members),
                until=resumes,
                reason=f"{g.backlog.describe()}: this evaluation started {cap} windows behind the newest closed one "
                "(maxRunsPerEvaluation); the rest start in later evaluations, in order",
            )
    behind = [i for i, p in enumerate(g.pins) if (last := cursor.pins.get(p.asset_key)) and p.ordinal < last.ordinal]
    for i in behind:  # a state read older than the last trigger's: never pin backwards
        member = g.group.members[i]
        last = cursor.pins[g.pins[i].asset_key]
        _wait(g.members, i, member, g.states.get(member.asset_key), last, cursor.baseline, _partition_key(g))
    return _blocked(g, g.members) if behind else None


def _after_cursor(g: _Group, cursor: GroupCursor) -> GroupEvaluation | None:
    """The policy's next pins after the last trigger (ALL_UPDATED / ANY_UPDATED / EACH_VERSION), or why none."""
    gaps: list[Gap] = []
    stepped = _advance(g, cursor, g.members, g.pins, gaps)
    if stepped is not None:
        g.pins = stepped
        return None
    # what holds the group is a member that waits for a version or a gate, not one with nothing new
    holding = [m for m in g.members if m.status not in (Status.READY, Status.WAITING_FOR_UPDATE)]
    blocked = _blocked(g, holding or g.members, gaps=tuple(gaps))
    blocked = replace(blocked, members=tuple(g.members))
    if gaps:
        return replace(blocked, until=min(gap.until for gap in gaps))
    return blocked


def _in_order(g: _Group) -> GroupEvaluation | None:
    """EACH_VERSION: the next version waits for the cursor's trigger (head of line)."""
    if g.rule.policy.mode is not Mode.EACH_VERSION or g.cursor is None:
        return None
    return _head_of_line(g.gid, g.members, g.cursor, g.previous)


def _cooldown(g: _Group) -> GroupEvaluation | None:
    """minIntervalSeconds: COOLDOWN until that long after the last trigger."""
    policy, cursor = g.rule.policy, g.cursor
    if cursor is None or cursor.claimed_at is None or not policy.min_interval_seconds:
        return None
    ends = cursor.claimed_at + policy.min_interval_seconds * 1000
    if ends <= g.now:
        return None
    ran = "ran" if g.partition is not None else "triggered"
    return GroupEvaluation(
        g.gid,
        Status.COOLDOWN,
        tuple(g.members),
        until=ends,
        reason=f"last {ran} at {ms_to_iso(cursor.claimed_at)}; minIntervalSeconds is {policy.min_interval_seconds}",
    )


def _quiet_period(g: _Group) -> GroupEvaluation | None:
    """quietPeriodSeconds: QUIET_PERIOD until no member state changed for that long."""
    quiet = g.rule.policy.quiet_period_seconds
    changed = [s.updated_at for k in g.group.asset_keys if (s := g.states.get(k)) and s.updated_at is not None]
    if not quiet or not changed:
        return None
    ends = max(changed) + quiet * 1000
    if ends <= g.now:
        return None
    return GroupEvaluation(
        g.gid,
        Status.QUIET_PERIOD,
        tuple(g.members),
        until=ends,
        reason=f"a member changed at {ms_to_iso(max(changed))}; quietPeriodSeconds is {quiet}",
    )


# A group's evaluation, step by step: the first step that answers a verdict decides.
_GROUP_STEPS: tuple[Callable[[_Group], GroupEvaluation | None], ...] = (
    _disabled,
    _members_hold,
    _backfill_skip,
    _versions,
    _in_order,
    _cooldown,
    _quiet_period,
)


def _on_schedule(g: _Group) -> GroupEvaluation | tuple[list[PinnedInput], Window]:
    """A scheduled group: the pins and the latest tick's window ``[previous tick, tick)``, or why not yet.

    It ran for a tick when its cursor's window ends there. With members and a cursor it also waits, as an
    unscheduled group does, for the updates its mode asks for since that trigger (ALL_UPDATED: every
    member; ANY_UPDATED: one); a group of a schedule alone fires on every tick.
    """
    schedule, cursor, members, now = g.group.schedule, g.cursor, g.members, g.now
    assert schedule is not None
    tick = schedule.latest_tick(now)
    last = cursor.window.end if cursor is not None and cursor.window is not None else None
    if last is not None and last >= tick:
        following = schedule.next_tick(now)
        return GroupEvaluation(
            g.gid,
            Status.WAITING_FOR_SCHEDULE,
            tuple(members),
            until=following,
            reason=f"ran for the tick at {ms_to_iso(last)}; the next tick is at {ms_to_iso(following)} "
            f"({schedule.cron}, {schedule.timezone})",
        )
    pins = g.pins
    if cursor is not None and g.group.members:
        stepped = _advance(g, cursor, members, pins, [])
        if stepped is None:
            holding = [m for m in members if m.status not in (Status.READY, Status.WAITING_FOR_UPDATE)]
            blocked = _blocked(g, holding or members)
            return replace(
                blocked,
                members=tuple(members),
                reason=f"{blocked.reason} (for the tick at {ms_to_iso(tick)})",
            )
        pins = stepped
    return pins, Window(start=schedule.previous_tick(tick), end=tick)


def _judged_per_snapshot(
    rule: Rule,
    group: Group,
    members: list[MemberEvaluation],
    cursor: GroupCursor | None,
    snapshots: Mapping[str, SnapshotLog],
) -> dict[int, PinnedInput]:
    """EACH_VERSION members blocked by a gate on the current state that step through their snapshot log from the
    cursor instead (index -> the version they last triggered with)."""
    if rule.policy.mode is not Mode.EACH_VERSION or group.window is not None or cursor is None:
        return {}
    found: dict[int, PinnedInput] = {}
    for i, (member, verdict) in enumerate(zip(group.members, members, strict=True)):
        last = cursor.pins.get(member.asset_key)
        if (
            verdict.status in _GATES
            and steps_by_snapshot(member)
            and member.asset_key in snapshots
            and last is not None
            and last.snapshot_id is not None
        ):
            found[i] = last
    return found


def _head_of_line(
    group_id: str, members: list[MemberEvaluation], cursor: GroupCursor, previous: Trigger | None
) -> GroupEvaluation | None:
    """EACH_VERSION dispatches in order: the next version waits until the cursor's trigger SUCCEEDED."""
    if previous is None or previous.trigger_key != cursor.trigger_key:
        return None
    if previous.status in (TriggerStatus.SUCCEEDED, TriggerStatus.SKIPPED):
        return None
    versions = ", ".join(f"{p.asset_key}@{p.snapshot_id}" for p in previous.inputs)
    if previous.status is TriggerStatus.FAILED:
        why = f": {previous.reason}" if previous.reason else ""
        return GroupEvaluation(
            group_id,
            Status.BLOCKED_BY_FAILED_TRIGGER,
            tuple(members),
            reason=f"trigger {previous.trigger_key} ({versions}) FAILED{why}; the next version runs once it "
            f"SUCCEEDED (POST /triggers/{previous.trigger_key}/retry)",
        )
    return GroupEvaluation(
        group_id,
        Status.WAITING_FOR_RUN,
        tuple(members),
        reason=f"trigger {previous.trigger_key} ({versions}) is {previous.status.value}; "
        "the next version starts once it SUCCEEDED",
    )


def _first_known(
    member: Member,
    current: PinnedInput,
    log: VersionLog | None,
    snapshots: SnapshotLog | None = None,
    states: Mapping[str, AssetState] | None = None,
) -> PinnedInput:
    """EACH_VERSION's first trigger: the oldest satisfying version this resolver saw arrive, else the current one."""
    state = (states or {}).get(member.asset_key)
    if snapshots is not None and state is not None and steps_by_snapshot(member):
        gated = member.condition.quality_status is not None
        for entry in snapshots.entries:
            quality = (entry.quality or Verdict.UNKNOWN) if gated else None
            chosen = select_member(member, at_snapshot(state, entry.record, quality))
            if chosen.pin is not None and chosen.pin.snapshot_id == entry.record.snapshot_id:
                return chosen.pin if chosen.pin.ordinal <= current.ordinal else current
        return current
    for state in log.after(-1) if log else ():
        chosen = select_member(member, state)
        if chosen.pin is not None:
            return chosen.pin
    return current


def _advance(
    g: _Group, cursor: GroupCursor, members: list[MemberEvaluation], pins: list[PinnedInput], gaps: list[Gap]
) -> list[PinnedInput] | None:
    """The pins to claim next given the cursor, or None (members marked with why they wait, ``gaps`` filled). Only
    the members whose updates count decide (a partition's partitioned members; every member of a group)."""
    group, mode = g.group, g.rule.policy.mode
    before = [cursor.pins.get(m.asset_key) for m in group.members]
    if mode is Mode.EACH_VERSION:
        return _each_next(group, g.states, cursor, members, pins, before, g.logs, g.snapshots, g.now, gaps, g.partition)
    counted = g.counted if g.counted is not None else range(len(group.members))
    advanced = {i: _newer(pins[i], before[i]) for i in counted}
    behind = any(_older(pins[i], before[i]) for i in counted)
    ready = all(advanced.values()) if mode is Mode.ALL_UPDATED else any(advanced.values()) and not behind
    if ready:
        return pins
    for i, moved in advanced.items():
        last, member = before[i], group.members[i]
        if last is not None and not moved:
            _wait(members, i, member, g.states.get(member.asset_key), last, cursor.baseline, _partition_key(g))
    return None


def _newer(pin: PinnedInput, last: PinnedInput | None) -> bool:
    return last is None or pin.ordinal > last.ordinal


def _older(pin: PinnedInput, last: PinnedInput | None) -> bool:
    return last is not None and pin.ordinal < last.ordinal


def _partition_key(g: _Group) -> str | None:
    return g.partition.key if g.partition is not None else None


def _each_next(
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor,
    members: list[MemberEvaluation],
    pins: list[PinnedInput],
    before: list[PinnedInput | None],
    logs: Mapping[str, VersionLog],
    snapshots: Mapping[str, SnapshotLog],
    now: int,
    gaps: list[Gap],
    view: PartitionView | None = None,
) -> list[PinnedInput] | None:
    """EACH_VERSION: every member's next version after the cursor's (or the cursor's, while it waits); None when
    none moved or a held version holds the group. A partition (``view``): a partitioned member's next version is its
    next commit touching the partition; an unpartitioned member (a gate) pins its newest satisfying version and does
    not step (its updates alone run no partition)."""
    chosen: list[PinnedInput] = []
    moved = held = False
    for i, (member, pin, last) in enumerate(zip(group.members, pins, before, strict=True)):
        if view is not None and i not in view.counted:
            chosen.append(pin)
            continue
        if last is None:
            chosen.append(view.first(i, pin) if view is not None else pin)
            moved = True
            continue
        found = view.next_after(i, last) if view is not None else _next_of(member, last, states, logs, snapshots, now)
        if isinstance(found, Held):  # holds the whole group: no member runs past a version held back
            held = True
            chosen.append(last)
            with_status(members, i, found.status, found.reason, {"snapshotId": found.snapshot_id})
        elif isinstance(found, Gap):
            gaps.append(found)
            chosen.append(last)
            with_status(members, i, Status.WAITING_FOR_VERSION, _gap_reason(found, view), {"after": last.to_api()})
        elif found is None:
            chosen.append(last)
            if members[i].status is Status.READY:  # else it keeps the gate that blocks it on the current state
                where = view.key if view is not None else None
                _wait(members, i, member, states.get(member.asset_key), last, cursor.baseline, where)
        else:
            chosen.append(found)
            moved = True
    return chosen if moved and not held else None


def _gap_reason(gap: Gap, view: PartitionView | None) -> str:
    """Why a member waits at a gap of its table's history (a partition: a commit whose partitions are not known)."""
    stepped = f"the table is polled for it; stepped over at {ms_to_iso(gap.until)} if it never comes"
    if view is None:
        return f"the snapshot after {gap.snapshot_id} is missing (the next known is {gap.next_id}); {stepped}"
    return (
        f"the commit of the table after {gap.snapshot_id} is not known with its partitions (the next known is "
        f"{gap.next_id}), and it may touch {view.key}: its versions wait, in order; {stepped}"
    )


def _next_of(
    member: Member,
    last: PinnedInput,
    states: Mapping[str, AssetState],
    logs: Mapping[str, VersionLog],
    snapshots: Mapping[str, SnapshotLog],
    now: int,
) -> PinnedInput | Gap | Held | None:
    """A member's next version after ``last``: through its snapshot log when its versions are snapshots, else
    through the known state history."""
    state = states.get(member.asset_key)
    log = snapshots.get(member.asset_key)
    if log is not None and state is not None and last.snapshot_id is not None and steps_by_snapshot(member):
        return _next_snapshot(member, last, state, log, now)
    return _next_version(member, last, logs.get(member.asset_key))


def _next_version(member: Member, last: PinnedInput, log: VersionLog | None) -> PinnedInput | None:
    """The first known version after ``last`` that satisfies the member's condition."""
    for state in log.after(last.state_version) if log else ():
        chosen = select_member(member, state)
        if chosen.pin is not None and chosen.pin.ordinal > last.ordinal:
            return chosen.pin
    return None


def _next_snapshot(
    member: Member, last: PinnedInput, state: AssetState, log: SnapshotLog, now: int
) -> PinnedInput | Gap | Held | None:
    """The first logged snapshot after ``last`` that is a version of the member: its pin, a gap before it, the
    gate that holds it, or None.

    Each snapshot is judged as it holds for that snapshot (:func:`at_snapshot`: its schema and watermark, its own
    quality verdict, the asset-wide gates as they are now). A snapshot that is no version of the member (a
    compaction it does not count, one below ``minSnapshotId``) is passed over; one whose gate does not pass holds
    the member there: the versions after it wait, in order, rather than run or be skipped."""
    assert last.snapshot_id is not None
    c = member.condition
    previous_id, previous_order = last.snapshot_id, last.ordinal[0]
    for entry in log.after(previous_order):
        record = entry.record
        if not follows(log.lineage, previous_id, previous_order, record):
            until = entry.recorded_at + log.settle_ms
            if until > now:
                return Gap(member.asset_key, previous_id, previous_order, record.snapshot_id, until)
        previous_id, previous_order = record.snapshot_id, record.order
        if (not c.include_compaction and not record.changes_data) or (
            c.min_snapshot_id is not None and record.order < c.min_snapshot_id
        ):
            continue  # not a version of this member
        quality = (entry.quality or Verdict.UNKNOWN) if c.quality_status else None
        chosen = select_member(member, at_snapshot(state, record, quality))
        if chosen.pin is not None and chosen.pin.snapshot_id == record.snapshot_id:
            return chosen.pin
        if chosen.status in _GATES:
            return Held(record.snapshot_id, chosen.status, _held_reason(record.snapshot_id, chosen, quality))
    return None


def _held_reason(snapshot_id: int, chosen: MemberEvaluation, quality: Verdict | None) -> str:
    after = "the versions after it wait (EACH_VERSION runs each version, in order)"
    if chosen.status is Status.BLOCKED_BY_QUALITY and quality is Verdict.FAILED:
        return (
            f"snapshot {snapshot_id} failed its quality check; {after}. To go past it, disable the rule and "
            "enable it again with startFrom NEXT_CHANGE"
        )
    if chosen.status is Status.BLOCKED_BY_QUALITY:
        return f"snapshot {snapshot_id} has no quality verdict yet; it runs once its check passes, and {after}"
    return f"snapshot {snapshot_id}: {chosen.reason}; {after}"


def _wait(
    members: list[MemberEvaluation],
    index: int,
    member: Member,
    state: AssetState | None,
    last: PinnedInput,
    baseline: bool = False,
    partition: str | None = None,
) -> None:
    pinned = members[index].pin
    required = {"newerThan": last.to_api()}
    if partition is not None:
        _wait_in_partition(members, index, last, partition, required)
        return
    if pinned is not None and pinned.ordinal < last.ordinal:
        reason = f"state read at version {pinned.state_version} is older than the last trigger's"
        with_status(members, index, Status.WAITING_FOR_UPDATE, reason, required)
        return
    latest = state.latest_snapshot_id if state else None
    latest_order = history_order(latest, state.latest_snapshot_order) if state else None
    if (
        member.condition.quality_status
        and latest_order is not None
        and last.snapshot_id is not None
        and latest_order > last.ordinal[0]
    ):
        with_status(
            members,
            index,
            Status.BLOCKED_BY_QUALITY,
            f"snapshot {last.snapshot_id} already triggered; snapshot {latest} has not passed its quality check",
            required,
        )
        return
    version = last.snapshot_id if last.snapshot_id is not None else last.watermark
    why = (
        f"startFrom is NEXT_CHANGE: version {version} was there when the rule started; waiting for a newer one"
        if baseline
        else f"version {version} already triggered; waiting for a newer one"
    )
    with_status(members, index, Status.WAITING_FOR_UPDATE, why, required)


def _wait_in_partition(
    members: list[MemberEvaluation], index: int, last: PinnedInput, partition: str, required: dict[str, Any]
) -> None:
    """A partitioned member whose newest commit touching the partition already ran for it (or is older)."""
    touching = members[index].current.get("fanOutOf")
    touched = "it" if touching is None else f"{touching} (fanned out to {partition})"
    reason = f"snapshot {last.snapshot_id} already ran for {partition}; waiting for a newer commit touching {touched}"
    with_status(members, index, Status.WAITING_FOR_UPDATE, reason, required)


def _backfill(
    rule: Rule,
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    members: list[MemberEvaluation],
    pins: list[PinnedInput],
) -> GroupEvaluation | None:
    """policy.backfill=SKIP: hold while a backfill runs; once it completed, absorb its versions (skip)."""
    running = [
        i
        for i, m in enumerate(group.members)
        if (s := states.get(m.asset_key)) and s.backfill_status is BackfillStatus.RUNNING
    ]
    for i in running:
        state = states[group.members[i].asset_key]
        with_status(
            members,
            i,
            Status.BLOCKED_BY_BACKFILL,
            f"backfill {state.backfill_id} is running; snapshots it commits do not trigger",
        )
    if running:
        return first_blocked(group.group_id, members)
    if cursor is None:
        return None
    done = [
        i
        for i, m in enumerate(group.members)
        if (s := states.get(m.asset_key))
        and s.backfill_status is BackfillStatus.COMPLETED
        and s.backfill_id is not None
        and cursor.backfills.get(m.asset_key) != s.backfill_id
    ]
    if not done:
        return None
    chosen = [
        pin if i in done or cursor.pins.get(pin.asset_key) is None else cursor.pins[pin.asset_key]
        for i, pin in enumerate(pins)
    ]
    names = ", ".join(f"{group.members[i].asset_key} ({states[group.members[i].asset_key].backfill_id})" for i in done)
    return GroupEvaluation(
        group.group_id,
        Status.READY,
        tuple(members),
        pins=tuple(chosen),
        window=cursor.window,
        reason=f"backfill completed on {names}; its snapshots are skipped",
        skip=True,
    )


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
