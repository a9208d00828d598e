"""A group's behaviours as a list of small steps, one class per concern, as :mod:`lakehook.domain.conditions` has
one class per member condition.

:func:`lakehook.domain.evaluation.evaluate_group` builds an :class:`Evaluating` (the group's inputs and its
members' verdicts) and hands it to each step of :func:`steps_of`, in :data:`PRECEDENCE` order. A step either answers
the group's verdict (it waits, with the status and reason a person reads, or it is READY with a verdict of its own,
as a completed backfill's skip is) or passes the group on, having chosen its pins (and window) where it is the step
that chooses them. The first verdict decides; a group that passes every step is READY with what they chose. A step
is built only for a group whose rule asks for it (``of`` answers None otherwise), so each group runs only its own
behaviours, and a partition of a partitioned group runs the very same steps under its own cursor.

Adding a behaviour is one class here (``of``, ``evaluate``), its place in :data:`PRECEDENCE`, and a test.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from lakehook.domain.group_progress import Evaluating, advance, blocked, partition_key, wait_for_newer
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.partition_time import partition_span
from lakehook.domain.requirements import NodeVerdict, judge
from lakehook.domain.rules import BackfillPolicy, Group, Mode, Rule
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window
from lakehook.domain.verdicts import Backlog, Gap, GroupEvaluation, PartitionView, first_blocked, with_status
from lakehook.domain.version_history import first_known, judged_per_snapshot
from lakehook.domain.windows import cover_partition, next_window


class GroupStep(ABC):
    """One behaviour of a group: answers the group's verdict, or passes it on (None)."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        """This step for the group, or None when its rule does not ask for it (by default every group has it)."""
        return cls()

    @abstractmethod
    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        """The group's verdict, if this step decides it; else None (the pins and window chosen so far in ``g``)."""


class Disabled(GroupStep):
    """A disabled rule runs nothing: DISABLED."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return None if rule.enabled else cls()

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        return GroupEvaluation(g.gid, Status.DISABLED, tuple(g.members), reason="the rule is disabled")


class MembersHold(GroupStep):
    """Every member satisfies its condition; the pins are their versions. EACH_VERSION judges a snapshot member's
    gates per snapshot: the newest snapshot failing one (or the newest verdicts disagreeing) does not hold back the
    older versions still to run; the stepping after the cursor decides."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.require is None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        stepping = judged_per_snapshot(g.rule, g.group, g.members, g.cursor, g.snapshots)
        if any(m.status is not Status.READY for i, m in enumerate(g.members) if i not in stepping):
            return blocked(g, g.members)
        g.pins = [p for i, m in enumerate(g.members) if (p := stepping.get(i) or m.pin) is not None]
        return None


class RequireHolds(GroupStep):
    """``require``: the group's tree over its members holds (:mod:`lakehook.domain.requirements`); the pins are the
    versions of the members that hold, one that does not hold pins nothing. Its verdict at every node is kept for
    explain."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.require is not None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        tree = judge_require(g)
        if not tree.holds:
            return require_blocked(g, tree)
        g.pins = [m.pin for m in g.members if m.status is Status.READY and m.pin is not None]
        return None


class RequireUpdated(GroupStep):
    """``require`` after the group's first claim, in place of :class:`ByPolicy`: ALL_UPDATED claims once the tree
    holds over the members that hold and are newer than the cursor's (a member the cursor did not pin is new),
    ANY_UPDATED once the tree holds and one member that holds is newer and none older. Either claims every member
    that holds; otherwise the members that hold but did not advance wait (WAITING_FOR_UPDATE) and the tree is judged
    again on what is left, so explain's tree shows why."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.require is not None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        cursor = g.cursor
        if cursor is None:
            return None
        holding = [i for i, m in enumerate(g.members) if m.status is Status.READY and m.pin is not None]
        last = {i: cursor.pins.get(g.members[i].asset_key) for i in holding}
        newer = {i for i in holding if _newer_than(g.members[i].pin, last[i])}
        older = [i for i in holding if _older_than(g.members[i].pin, last[i])]
        if self._updated(g, newer, older):
            judge_require(g)  # explain shows the tree on what the claim pins
            return None
        waiting = [i for i in holding if last[i] is not None and (i not in newer or i in older)]
        self._wait(g, cursor, waiting, last)
        return require_blocked(g, judge_require(g), waiting)

    @staticmethod
    def _wait(g: Evaluating, cursor: GroupCursor, waiting: list[int], last: dict[int, PinnedInput | None]) -> None:
        """The members that hold but did not advance past the cursor's pins wait for a newer version."""
        for i in waiting:
            member, previous = g.group.members[i], last[i]
            assert previous is not None
            wait_for_newer(g.members, i, member, g.states.get(member.asset_key), previous, cursor.baseline)

    @staticmethod
    def _updated(g: Evaluating, newer: set[int], older: list[int]) -> bool:
        """Whether the mode's update condition holds: ALL_UPDATED, the tree over the newer members; ANY_UPDATED, one
        newer member and none older."""
        if g.rule.policy.mode is Mode.ALL_UPDATED:
            return judge_require(g, {g.members[i].asset_key for i in newer}).holds
        return bool(newer) and not older


class BackfillSkip(GroupStep):
    """``policy.backfill: SKIP``: hold while a member's backfill runs, then absorb its versions (a SKIPPED claim). A
    partition holds alike, then absorbs the commits touching it up to where the group recorded the backfill's end
    (:func:`partition_backfill_skip`)."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if rule.policy.backfill is BackfillPolicy.SKIP else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        if g.partition is not None:
            verdict = backfill_running(g.group, g.states, g.members) or partition_backfill_skip(g, g.partition)
        else:
            verdict = backfill_skip(g.rule, g.group, g.states, g.cursor, g.members, g.pins)
        if verdict is None or not verdict.skip:
            return verdict
        return replace(verdict, behind=_in_flight(g))


def _in_flight(g: Evaluating) -> Trigger | None:
    """EACH_VERSION: the run the cursor names when it has not SUCCEEDED (still in flight, or FAILED). A backfill's
    skip is claimed at once (it absorbs what the backfill made, no later commit), but stays behind that run: the
    next version waits for it as it would without the skip (head of line), a FAILED one blocking it."""
    if g.rule.policy.mode is not Mode.EACH_VERSION or g.cursor is None:
        return None
    if head_of_line(g.gid, g.members, g.cursor, g.previous) is None:
        return None
    return g.previous


class OnSchedule(GroupStep):
    """A scheduled group claims the latest tick's window once its mode holds since its last run (:func:`on_schedule`);
    one that ran for the latest tick waits for the next (WAITING_FOR_SCHEDULE)."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.schedule is not None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        scheduled = on_schedule(g)
        if isinstance(scheduled, GroupEvaluation):
            return scheduled
        g.pins, g.window = scheduled
        return None


class OnWindow(GroupStep):
    """A windowed group (a watermark window or coverage) claims a closed window: the newest, or with EACH_VERSION each
    in order, at most ``maxRunsPerEvaluation`` behind the newest closed one per evaluation (CATCHING_UP otherwise);
    it never pins a member backwards."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        stepping = group.window is not None and not rule.spans_partitions(group)
        return cls() if group.schedule is None and stepping else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
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
                    reason=f"{g.backlog.describe()}: this evaluation started {cap} windows behind the newest closed "
                    "one (maxRunsPerEvaluation); the rest start in later evaluations, in order",
                )
        behind = [
            i for i, p in enumerate(g.pins) if (last := cursor.pins.get(p.asset_key)) and p.ordinal < last.ordinal
        ]
        for i in behind:  # a state read older than the last trigger's: never pin backwards
            member = g.group.members[i]
            last = cursor.pins[g.pins[i].asset_key]
            wait_for_newer(
                g.members, i, member, g.states.get(member.asset_key), last, cursor.baseline, partition_key(g)
            )
        return blocked(g, g.members) if behind else None


class CoversPartition(GroupStep):
    """A partitioned group whose partitions are their own windows (a coverage member, or EACH_VERSION with a watermark
    window: :meth:`lakehook.domain.rules.Rule.spans_partitions`): a partition's window is its own time span
    (``dt=2026-12-06``: that day in the group's ``partitionTimezone``, UTC by default), which each coverage member
    must cover and whose allowed lateness must have passed (BLOCKED_BY_COVERAGE with the exact gaps otherwise, or
    with when it closes), and which each watermark window member's watermark must have passed by its allowed lateness
    (BLOCKED_BY_WATERMARK); then the policy decides as for any partition, and the run's window is the span."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.schedule is None and rule.spans_partitions(group) else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        view = g.partition
        if view is None:  # a partitioned group is judged per partition only
            return None
        span = partition_span(view.key, g.group.partition_timezone)
        closes = cover_partition(g.group, view.key, span, g.states, g.members, g.coverage, g.now)
        if any(m.status is not Status.READY for m in g.members):
            return blocked(g, g.members, until=min(closes, default=None))
        assert span is not None
        g.window = Window(start=span.start, end=span.end)
        return None


class ByPolicy(GroupStep):
    """A group with neither schedule nor window claims what its policy asks for after its cursor (ALL_UPDATED every
    member newer, ANY_UPDATED one newer and none older, EACH_VERSION each member's next version); before its first
    claim, the versions its members hold (EACH_VERSION: the oldest version seen)."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        by_policy = group.schedule is None and (group.window is None or rule.spans_partitions(group))
        return cls() if by_policy and group.require is None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        if g.cursor is not None:
            return self._after_cursor(g, g.cursor)
        view = g.partition
        if g.rule.policy.mode is Mode.EACH_VERSION and view is not None:
            g.pins = [view.first(i, pin) for i, pin in enumerate(g.pins)]
        elif g.rule.policy.mode is Mode.EACH_VERSION:
            g.pins = [
                first_known(m, pin, g.logs.get(m.asset_key), g.snapshots.get(m.asset_key), g.states)
                for m, pin in zip(g.group.members, g.pins, strict=True)
            ]
        return None

    @staticmethod
    def _after_cursor(g: Evaluating, cursor: GroupCursor) -> GroupEvaluation | None:
        gaps: list[Gap] = []
        stepped = advance(g, cursor, g.members, g.pins, gaps)
        if stepped is not None:
            g.pins = stepped
            return None
        # what holds the group is a member that waits for a version or a gate, not one with nothing new
        holding = [m for m in g.members if m.status not in (Status.READY, Status.WAITING_FOR_UPDATE)]
        verdict = blocked(g, holding or g.members, gaps=tuple(gaps))
        verdict = replace(verdict, members=tuple(g.members))
        if gaps:
            return replace(verdict, until=min(gap.until for gap in gaps))
        return verdict


class HeadOfLine(GroupStep):
    """EACH_VERSION runs in order: the next version waits for the cursor's trigger to succeed (WAITING_FOR_RUN), and a
    FAILED one blocks it visibly (BLOCKED_BY_FAILED_TRIGGER)."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if rule.policy.mode is Mode.EACH_VERSION else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        if g.cursor is None:
            return None
        return head_of_line(g.gid, g.members, g.cursor, g.previous)


class Cooldown(GroupStep):
    """``minIntervalSeconds``: COOLDOWN until that long after the last claim."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if rule.policy.min_interval_seconds else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        seconds, cursor = g.rule.policy.min_interval_seconds, g.cursor
        if cursor is None or cursor.claimed_at is None or not seconds:
            return None
        ends = cursor.claimed_at + seconds * 1000
        if ends <= g.now:
            return None
        ran = "ran" if g.partition is not None else "triggered"
        return GroupEvaluation(
            g.gid,
            Status.COOLDOWN,
            tuple(g.members),
            until=ends,
            reason=f"last {ran} at {ms_to_iso(cursor.claimed_at)}; minIntervalSeconds is {seconds}",
        )


class QuietPeriod(GroupStep):
    """``quietPeriodSeconds``: QUIET_PERIOD until no member state changed for that long."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if rule.policy.quiet_period_seconds else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
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


class InRunWindow(GroupStep):
    """``runWindow``: a group that would run outside its window's hours waits until it opens
    (WAITING_FOR_RUN_WINDOW). Last in precedence: it only holds back what every other step let through."""

    @classmethod
    def of(cls, rule: Rule, group: Group) -> GroupStep | None:
        return cls() if group.run_window is not None else None

    def evaluate(self, g: Evaluating) -> GroupEvaluation | None:
        window = g.group.run_window
        assert window is not None
        opens = window.opens_after(g.now)
        if opens is None:
            return None
        return GroupEvaluation(
            g.gid,
            Status.WAITING_FOR_RUN_WINDOW,
            tuple(g.members),
            until=opens,
            reason=f"ready, but its runs start only in its runWindow ({window.describe()}); "
            f"it opens at {ms_to_iso(opens)}",
        )


# The order of a group's steps: the first verdict wins, so this is the precedence of the reasons explain gives.
# Exactly one of OnSchedule, OnWindow and ByPolicy chooses a group's versions.
PRECEDENCE: tuple[type[GroupStep], ...] = (
    Disabled,
    MembersHold,
    RequireHolds,
    BackfillSkip,
    OnSchedule,
    OnWindow,
    CoversPartition,
    ByPolicy,
    RequireUpdated,
    HeadOfLine,
    Cooldown,
    QuietPeriod,
    InRunWindow,
)


def steps_of(rule: Rule, group: Group) -> tuple[GroupStep, ...]:
    """The steps a group's rule asks for, in precedence order."""
    return tuple(step for kind in PRECEDENCE if (step := kind.of(rule, group)) is not None)


# --- what the steps share ------------------------------------------------------------------------------


def judge_require(g: Evaluating, holding: set[str] | None = None) -> NodeVerdict:
    """The group's require tree judged on the members that hold (``holding`` asset keys, by default those READY
    with a version), kept in ``g.require`` for explain."""
    require = g.group.require
    assert require is not None
    if holding is None:
        holding = {m.asset_key for m in g.members if m.status is Status.READY and m.pin is not None}
    g.require = judge(require, g.group.require_refs, holding.__contains__)
    return g.require


def require_blocked(g: Evaluating, tree: NodeVerdict, among: Sequence[int] | None = None) -> GroupEvaluation:
    """A group whose require tree does not hold (or whose members did not advance as its policy asks): the first
    member that does not hold (of ``among``, the members the policy holds back, when given) names the status, and
    the reason shows the tree."""
    candidates = [g.members[i] for i in among] if among is not None else g.members
    waiting = next((m for m in candidates if m.status is not Status.READY), None)
    status = waiting.status if waiting is not None else Status.WAITING_FOR_UPDATE
    first = f"; {waiting.asset_key}: {waiting.reason}" if waiting is not None else ""
    return GroupEvaluation(g.gid, status, tuple(g.members), reason=f"require: {tree.describe()}{first}")


def _newer_than(pin: PinnedInput | None, last: PinnedInput | None) -> bool:
    return pin is not None and (last is None or pin.ordinal > last.ordinal)


def _older_than(pin: PinnedInput | None, last: PinnedInput | None) -> bool:
    return pin is not None and last is not None and pin.ordinal < last.ordinal


def on_schedule(g: Evaluating) -> GroupEvaluation | tuple[list[PinnedInput], Window]:
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
        stepped = advance(g, cursor, members, pins, [])
        if stepped is None:
            holding = [m for m in members if m.status not in (Status.READY, Status.WAITING_FOR_UPDATE)]
            verdict = blocked(g, holding or members)
            return replace(
                verdict,
                members=tuple(members),
                reason=f"{verdict.reason} (for the tick at {ms_to_iso(tick)})",
            )
        pins = stepped
    return pins, Window(start=schedule.previous_tick(tick), end=tick)


def head_of_line(
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


def backfill_skip(
    rule: Rule,
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    members: list[MemberEvaluation],
    pins: list[PinnedInput],
) -> GroupEvaluation | None:
    """policy.backfill=SKIP: hold while a backfill runs; once it completed, absorb its versions (skip)."""
    running = backfill_running(group, states, members)
    if running is not None:
        return running
    if cursor is None:
        return None
    done = completed_backfills(group, states, cursor)
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


def backfill_running(
    group: Group, states: Mapping[str, AssetState], members: list[MemberEvaluation]
) -> GroupEvaluation | None:
    """While a member's backfill runs, the group (every partition of it) waits: BLOCKED_BY_BACKFILL."""
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
    return first_blocked(group.group_id, members) if running else None


def completed_backfills(group: Group, states: Mapping[str, AssetState], cursor: GroupCursor | None) -> list[int]:
    """The members whose backfill completed since ``cursor`` was claimed (it records the backfill each member's state
    named then; None: it never was, every completed one counts)."""
    seen = cursor.backfills if cursor is not None else {}
    return [
        i
        for i, m in enumerate(group.members)
        if (s := states.get(m.asset_key))
        and s.backfill_status is BackfillStatus.COMPLETED
        and s.backfill_id is not None
        and seen.get(m.asset_key) != s.backfill_id
    ]


def _backfill_absorbed(
    pins: Sequence[PinnedInput],
    counted: Iterable[int],
    ends: Mapping[str, PinnedInput],
    own: Mapping[str, PinnedInput],
) -> list[int]:
    """The counted members whose pinned commit the backfill made (at or before its recorded end, ``ends``) and the
    partition has not run (after its own last pin, ``own``)."""
    return [
        i
        for i in sorted(counted)
        if (end := ends.get(pins[i].asset_key)) is not None
        and pins[i].ordinal <= end.ordinal
        and ((last := own.get(pins[i].asset_key)) is None or pins[i].ordinal > last.ordinal)
    ]


def _made_by_then(view: PartitionView, index: int, pin: PinnedInput, ends: Mapping[str, PinnedInput]) -> PinnedInput:
    """EACH_VERSION: the member's newest known commit touching the partition at or before the backfill's recorded end
    (its newest, ``pin``, may be a commit made after the end, which runs: a partition evaluated after it came, its skip
    not claimed yet); ``pin`` when it knows none (other modes)."""
    end = ends.get(pin.asset_key)
    made = [v for v in view.versions.get(index, ()) if end is not None and v.ordinal <= end.ordinal]
    return made[-1] if made else pin


def partition_backfill_skip(g: Evaluating, view: PartitionView) -> GroupEvaluation | None:
    """policy.backfill=SKIP for one partition: the commits touching it that a completed backfill's member made up to
    where the group recorded the backfill's end (``view.start``, :func:`lakehook.domain.partition_start.backfill_point`)
    and that the partition has not run are absorbed (a SKIPPED claim pinning them; the other members keep the versions
    the partition last ran with, so their own news runs it next). Commits after that end run as any others."""
    point = view.start
    if point is None or point.baseline:
        return None
    own = g.cursor.pins if g.cursor is not None else {}
    made = [_made_by_then(view, i, pin, point.pins) for i, pin in enumerate(g.pins)]
    absorbed = _backfill_absorbed(made, view.counted, point.pins, own)
    if not absorbed:
        return None
    chosen = [made[i] if i in absorbed else own.get(pin.asset_key, pin) for i, pin in enumerate(g.pins)]
    names = ", ".join(f"{k} ({point.backfills.get(k)})" for k in (g.pins[i].asset_key for i in absorbed))
    return GroupEvaluation(
        g.gid,
        Status.READY,
        tuple(g.members),
        pins=tuple(chosen),
        window=g.cursor.window if g.cursor is not None else None,
        reason=f"backfill completed on {names}; its commits touching {view.key} are skipped",
        skip=True,
    )
