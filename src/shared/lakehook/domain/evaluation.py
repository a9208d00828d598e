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
- ``minIntervalSeconds`` (cooldown after a trigger) and ``quietPeriodSeconds`` (no member state
  changed for that long) answer COOLDOWN / QUIET_PERIOD with the time they end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lakehook.domain.conditions import Blocked, Chosen, conditions_of, history_order
from lakehook.domain.coverage import Span, is_covered, missing, newest_covered_window
from lakehook.domain.rules import BackfillPolicy, Group, Member, Mode, Rule, WindowSpec
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.status import Status as Status  # re-exported: explain, the resolver and tests name it here
from lakehook.domain.time import MAX_ISO_MS, ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window
from lakehook.domain.versions import SnapshotLog, SnapshotRecord, Verdict, follows

# --- members -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberEvaluation:
    """One member's verdict: the version it would pin, or why it cannot."""

    asset_key: str
    status: Status
    pin: PinnedInput | None
    current: dict[str, Any] = field(default_factory=dict)
    required: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    alias: str | None = None  # the alias the rule named the member by (asset_key is its asset)

    def to_api(self) -> dict[str, Any]:
        data: dict[str, Any] = {"assetKey": self.asset_key}
        if self.alias is not None:
            data["alias"] = self.alias
        return {
            **data,
            "status": self.status.value,
            "current": self.current,
            "required": self.required,
            "reason": self.reason,
        }


def _current(state: AssetState, member: Member) -> dict[str, Any]:
    c = member.condition
    data: dict[str, Any] = {"snapshotId": state.latest_snapshot_id, "stateVersion": state.version}
    if state.watermark is not None:
        data["watermark"] = state.watermark
    if c.quality_status:
        data["qualityPassedSnapshotId"] = state.quality_passed_snapshot_id
        data["qualityFailedSnapshotId"] = state.quality_failed_snapshot_id
    if c.schema_status:
        data["schemaId"] = state.latest_schema_id
        data["schemaStatus"] = state.schema_status.value
    if c.tag:
        data["tags"] = sorted(state.tags)
    if c.manifest:
        data["manifestUri"] = state.manifest_uri
        data["manifestStatus"] = state.manifest_status
        data["manifestReason"] = state.manifest_reason
    if c.coverage is not None and state.last_coverage_end is not None:
        data["lastCoveredInterval"] = {
            "start": ms_to_iso(state.last_coverage_start or 0),
            "end": ms_to_iso(state.last_coverage_end),
        }
    if state.backfill_status is not BackfillStatus.NONE:
        data["backfillId"] = state.backfill_id
        data["backfillStatus"] = state.backfill_status.value
    return {k: v for k, v in data.items() if v is not None}


def select_member(member: Member, state: AssetState | None, registered: bool | None = None) -> MemberEvaluation:
    """The newest version of the member's asset that satisfies its condition (READY), or the block.

    Each condition kind is one rule (:mod:`lakehook.domain.conditions`): they run in precedence order on the
    version chosen so far, and the first that blocks gives the status and reason. ``registered`` tells a
    registered asset without state (BLOCKED_BY_SNAPSHOT) from an unknown one; None means "not looked up",
    and a stateless member is then BLOCKED_BY_UNKNOWN_ASSET.
    """
    evaluation = _select(member, state, registered)
    return replace(evaluation, alias=member.alias) if member.alias is not None else evaluation


def _select(member: Member, state: AssetState | None, registered: bool | None) -> MemberEvaluation:
    key, required = member.asset_key, member.condition.to_api()
    if state is None:
        return _stateless(key, required, registered)
    rules = conditions_of(member)
    current = _current(state, member)
    for rule in rules:
        current.update(rule.shows(state))
    chosen = Chosen.newest(state)
    for rule in rules:
        outcome = rule.evaluate(state, chosen)
        if isinstance(outcome, Blocked):
            return MemberEvaluation(key, outcome.status, None, current, required, outcome.reason)
        chosen = outcome
    reason = next((note for rule in rules if (note := rule.note(state, chosen)) is not None), None)
    return MemberEvaluation(key, Status.READY, _pin(member, state, chosen), current, required, reason)


def _stateless(key: str, required: dict[str, Any], registered: bool | None) -> MemberEvaluation:
    if registered:
        reason = "registered, but no event has reached its state yet"
        return MemberEvaluation(key, Status.BLOCKED_BY_SNAPSHOT, None, {}, required, reason)
    suffix = " and it is not registered" if registered is False else ""
    reason = f"no event was ever recorded for this asset{suffix}"
    return MemberEvaluation(key, Status.BLOCKED_BY_UNKNOWN_ASSET, None, {}, required, reason)


def _pin(member: Member, state: AssetState, chosen: Chosen) -> PinnedInput:
    """What a trigger pins of the chosen version (the order only where it is not the id)."""
    c, known = member.condition, chosen.known
    return PinnedInput(
        asset_key=member.asset_key,
        snapshot_id=chosen.snapshot_id,
        snapshot_order=chosen.order if chosen.order != chosen.snapshot_id else None,
        schema_id=known.schema_id if known is not None else None,
        watermark=state.watermark,
        commit_time=known.commit_time if known is not None else None,
        state_version=state.version,
        manifest_uri=state.manifest_uri if c.manifest else None,
        manifest_sha256=state.manifest_sha256 if c.manifest else None,
        metadata_location=known.metadata_location if known is not None else None,
        tag=c.tag,
    )


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


@dataclass(frozen=True)
class Gap:
    """A snapshot the lineage says exists after (snapshot_id, order) and before ``next_id``, not recorded yet."""

    asset_key: str
    snapshot_id: int
    order: int
    next_id: int
    until: int  # when the gap counts as final and is stepped over


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
    {Status.BLOCKED_BY_QUALITY, Status.BLOCKED_BY_SCHEMA, Status.BLOCKED_BY_WATERMARK, Status.BLOCKED_BY_BACKFILL}
)


@dataclass(frozen=True)
class Held:
    """EACH_VERSION: the next version of a member is a snapshot whose gate does not pass (yet): it holds the line."""

    snapshot_id: int
    status: Status
    reason: str


# --- groups --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    """A group that steps through windows (EACH_VERSION, coverage), behind the newest closed one: how many closed
    windows have not run yet (the next one included), the next one, and when it may start."""

    pending: int
    next: Window
    next_at: int

    def describe(self) -> str:
        return (
            f"{self.pending} windows pending, next [{ms_to_iso(self.next.start)}, {ms_to_iso(self.next.end)}) "
            f"at {ms_to_iso(self.next_at)}"
        )

    def to_api(self) -> dict[str, Any]:
        return {"pendingWindows": self.pending, "next": self.next.to_api(), "nextAt": ms_to_iso(self.next_at)}


@dataclass(frozen=True)
class GroupEvaluation:
    """A group's verdict. READY carries the pins (and window) to claim; ``skip`` claims without a run."""

    group_id: str
    status: Status
    members: tuple[MemberEvaluation, ...]
    pins: tuple[PinnedInput, ...] = ()
    window: Window | None = None
    until: int | None = None
    reason: str | None = None
    skip: bool = False
    gaps: tuple[Gap, ...] = ()  # EACH_VERSION: missing snapshots a targeted poll should look for
    backlog: Backlog | None = None  # a stepping windowed group behind the newest closed window
    schedule: ScheduleExplanation | None = None  # a scheduled group: its ticks and what the next run waits for
    partition: str | None = None  # a partitioned group's verdict for one partition key
    # a partitioned group: the verdicts of its partitions evaluated (newest first, a page), and how many are pending
    partitions: tuple[GroupEvaluation, ...] = ()
    pending_partitions: int | None = None

    @property
    def ready(self) -> bool:
        return self.status is Status.READY

    def partition_api(self) -> dict[str, Any]:
        """One partition's line on its group's board: the key, status, reason, and what it would pin."""
        data: dict[str, Any] = {"partition": self.partition, "status": self.status.value, "reason": self.reason}
        waiting = [m.asset_key for m in self.members if m.status is not Status.READY]
        if waiting:
            data["waitingFor"] = waiting
        if self.ready:
            data["pins"] = [p.to_api() for p in self.pins]
        if self.until is not None:
            data["until"] = ms_to_iso(self.until)
        return data

    def to_api(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "groupId": self.group_id,
            "status": self.status.value,
            "reason": self.reason,
            "members": [m.to_api() for m in self.members],
        }
        if self.until is not None:
            data["until"] = ms_to_iso(self.until)
        if self.backlog is not None:
            data["backlog"] = self.backlog.to_api()
        if self.schedule is not None:
            data["schedule"] = self.schedule.to_api()
        if self.partition is not None:
            data["partition"] = self.partition
        if self.pending_partitions is not None:
            data["pendingPartitions"] = self.pending_partitions
            data["partitions"] = [p.partition_api() for p in self.partitions]
        if self.ready:
            data["pins"] = [p.to_api() for p in self.pins]
            if self.window is not None:
                data["window"] = self.window.to_api()
        return data


def _with(
    members: list[MemberEvaluation], index: int, status: Status, reason: str, required: dict[str, Any] | None = None
) -> None:
    m = members[index]
    members[index] = replace(m, status=status, reason=reason, required={**m.required, **(required or {})})


def _first_blocked(group_id: str, members: list[MemberEvaluation], **extra: Any) -> GroupEvaluation:
    bad = next(m for m in members if m.status is not Status.READY)
    return GroupEvaluation(group_id, bad.status, tuple(members), reason=f"{bad.asset_key}: {bad.reason}", **extra)


@dataclass(frozen=True)
class PartitionView:
    """One partition of a partitioned group, as the group's steps judge it: its key, its members' verdicts (a
    partitioned member's version is the newest data commit touching the partition, built by
    :mod:`lakehook.domain.partition_evaluation`; an unpartitioned member's is its asset's newest satisfying version),
    and which members' updates count for the policy (the partitioned ones: an unpartitioned member gates every
    partition but need not advance between two runs of one)."""

    key: str
    members: tuple[MemberEvaluation, ...]
    counted: frozenset[int]
    # EACH_VERSION: per partitioned member (by index) the known data commits touching the partition, oldest first
    versions: Mapping[int, tuple[PinnedInput, ...]] = field(default_factory=dict)

    def next_after(self, index: int, last: PinnedInput) -> PinnedInput | None:
        """EACH_VERSION: the member's first known commit touching the partition after ``last`` (its next version)."""
        return next((v for v in self.versions.get(index, ()) if v.ordinal[0] > last.ordinal[0]), None)

    def first(self, index: int, pin: PinnedInput) -> PinnedInput:
        """EACH_VERSION before the partition's first run: the member's oldest known commit touching it (a gate, an
        unpartitioned member, keeps its newest satisfying version ``pin``)."""
        return next(iter(self.versions.get(index, ())), pin)


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
    return _first_blocked(g.gid, list(members), **extra)


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
    found = _window(g.rule, g.group, g.states, g.cursor, g.members, g.now, g.coverage)
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
            _with(members, i, found.status, found.reason, {"snapshotId": found.snapshot_id})
        elif isinstance(found, Gap):
            gaps.append(found)
            chosen.append(last)
            _with(
                members,
                i,
                Status.WAITING_FOR_VERSION,
                f"the snapshot after {found.snapshot_id} is missing (the next known is {found.next_id}); "
                f"the table is polled for it; stepped over at {ms_to_iso(found.until)} if it never comes",
                {"after": last.to_api()},
            )
        elif found is None:
            chosen.append(last)
            if members[i].status is Status.READY:  # else it keeps the gate that blocks it on the current state
                where = view.key if view is not None else None
                _wait(members, i, member, states.get(member.asset_key), last, cursor.baseline, where)
        else:
            chosen.append(found)
            moved = True
    return chosen if moved and not held else None


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
        _with(members, index, Status.WAITING_FOR_UPDATE, reason, required)
        return
    latest = state.latest_snapshot_id if state else None
    latest_order = history_order(latest, state.latest_snapshot_order) if state else None
    if (
        member.condition.quality_status
        and latest_order is not None
        and last.snapshot_id is not None
        and latest_order > last.ordinal[0]
    ):
        _with(
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
    _with(members, index, Status.WAITING_FOR_UPDATE, why, required)


def _wait_in_partition(
    members: list[MemberEvaluation], index: int, last: PinnedInput, partition: str, required: dict[str, Any]
) -> None:
    """A partitioned member whose newest commit touching the partition already ran for it (or is older)."""
    touching = members[index].current.get("fanOutOf")
    touched = "it" if touching is None else f"{touching} (fanned out to {partition})"
    reason = f"snapshot {last.snapshot_id} already ran for {partition}; waiting for a newer commit touching {touched}"
    _with(members, index, Status.WAITING_FOR_UPDATE, reason, required)


def _window(
    rule: Rule,
    group: Group,
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    members: list[MemberEvaluation],
    now: int,
    coverage: Mapping[str, Sequence[Span]],
) -> tuple[Window, int] | GroupEvaluation:
    """The window to claim: the newest closed one, or with EACH_VERSION (or coverage) the next one after the cursor;
    with it how many closed windows are still to run, that one included (arithmetic: none is enumerated)."""
    spec = group.window
    assert spec is not None
    size = spec.size_ms
    last = cursor.window if cursor is not None else None
    ends = _closed_ends(group, states, coverage, now, last)
    newest = min(ends.values())
    need = max(size, newest) if last is None else last.end + size
    if newest < need:
        return _not_closed_yet(group, members, ends, need, coverage, now, last)
    stepwise = (rule.policy.mode is Mode.EACH_VERSION or group.covers) and last is not None
    end = need if stepwise else newest
    for i, member in enumerate(group.members):  # the newest watermark window may be one a coverage member lacks
        spans = coverage.get(member.asset_key, ())
        if member.condition.coverage is not None and not is_covered(spans, end - size, end):
            _coverage_block(members, i, member, coverage, now, None, Span(end - size, end))
    if any(m.status is not Status.READY for m in members):
        return _first_blocked(group.group_id, members)
    return Window(start=end - size, end=end), (newest - end) // size + 1


def _closed_ends(
    group: Group,
    states: Mapping[str, AssetState],
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
) -> dict[int, int]:
    """Per windowed or coverage member (by index), the end of the newest window it has closed: by its watermark, and
    for a coverage member by what is covered contiguously (after the last window, else the newest covered)."""
    ends: dict[int, int] = {}
    for i, member in enumerate(group.members):
        windowed = member.condition.window
        state = states.get(member.asset_key)
        if windowed is not None and state is not None and state.watermark is not None:
            ends[i] = windowed.newest_complete_end(state.watermark)
        covering = member.condition.coverage
        if covering is not None:
            end = _covered_end(coverage.get(member.asset_key, ()), covering, now, last.end if last else None)
            ends[i] = min(ends.get(i, end), end)
    return ends


def _not_closed_yet(
    group: Group,
    members: list[MemberEvaluation],
    ends: Mapping[int, int],
    need: int,
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
) -> GroupEvaluation:
    """The window ending at ``need`` is not closed for every member: each member short of it is blocked (by its
    watermark, or its coverage with the exact gaps), and the group waits for the first coverage window to close."""
    closes: list[int] = []
    for i, end in ends.items():
        if end >= need:
            continue
        if group.members[i].condition.coverage is not None and (last is not None or end == 0):
            closes.extend(_coverage_block(members, i, group.members[i], coverage, now, last))
            continue
        windowed = group.members[i].condition.window
        assert windowed is not None
        _with(
            members,
            i,
            Status.BLOCKED_BY_WATERMARK,
            _not_closed(need, windowed.lateness_ms),
            {"watermarkAtLeast": need + windowed.lateness_ms},
        )
    return _first_blocked(group.group_id, members, until=min(closes, default=None))


def _not_closed(end: int, lateness_ms: int) -> str:
    """Why the window ending at ``end`` has not fired; one that could only close after the last instant
    lakehook holds (a watermark at 9999-12-31T23:59:59.999Z) never will, and says so."""
    if end + lateness_ms <= MAX_ISO_MS:
        return f"window ending {ms_to_iso(end)} is not closed yet"
    last = f"{ms_to_iso(MAX_ISO_MS)}, the last instant a watermark can hold"
    if end > MAX_ISO_MS:
        return f"the next window can never close: it ends after {last}"
    return f"window ending {ms_to_iso(end)} can never close: with its allowed lateness it closes after {last}"


def coverage_from(spec: WindowSpec, cursor: GroupCursor | None, now: int) -> int:
    """Where the coverage a group needs starts: the last triggered window's end, else a few windows back."""
    if cursor is not None and cursor.window is not None:
        return cursor.window.end
    return max(0, now - 3 * spec.size_ms - spec.lateness_ms)


def _covered_end(spans: Sequence[Span], spec: WindowSpec, now: int, after_end: int | None) -> int:
    """The end of the windows a coverage member can fire: contiguous from ``after_end``, else the newest (0: none)."""
    size, horizon = spec.size_ms, now - spec.lateness_ms
    if after_end is None:
        newest = newest_covered_window(spans, spec, now)
        return newest.end if newest is not None else 0
    # spans are merged, so what is covered contiguously from after_end lies in one span: no window is enumerated
    # (one interval covering years of minute windows costs the same as one covering a single window)
    span = next((s for s in spans if s.start <= after_end < s.end), None)
    if span is None:
        return after_end
    reach = min(span.end, horizon)
    return after_end + max(0, (reach - after_end) // size) * size


def _coverage_block(
    members: list[MemberEvaluation],
    index: int,
    member: Member,
    coverage: Mapping[str, Sequence[Span]],
    now: int,
    last: Window | None,
    window: Span | None = None,
) -> list[int]:
    """Mark a coverage member blocked on the window it needs next (after the last one, else the newest that
    ended), with the exact gaps; answer when that window closes if only its allowed lateness holds it."""
    spec = member.condition.coverage
    assert spec is not None
    size = spec.size_ms
    if window is None:
        end = last.end + size if last is not None else (now // size) * size
        window = Span(end - size, end)
    gaps = missing(coverage.get(member.asset_key, ()), window.start, window.end)
    shown = f"[{ms_to_iso(window.start)}, {ms_to_iso(window.end)})"
    closes = window.end + spec.lateness_ms
    if gaps:
        listed = ", ".join(f"[{ms_to_iso(g.start)}, {ms_to_iso(g.end)})" for g in gaps)
        reason = f"window {shown} is not covered; missing {listed}"
    else:
        reason = f"window {shown} is covered; it closes at {ms_to_iso(closes)} (allowedLatenessSeconds)"
    m = members[index]
    current = {**m.current, "missing": [{"start": ms_to_iso(g.start), "end": ms_to_iso(g.end)} for g in gaps]}
    required = {"window": {"start": ms_to_iso(window.start), "end": ms_to_iso(window.end)}}
    members[index] = replace(
        m, status=Status.BLOCKED_BY_COVERAGE, reason=reason, current=current, required={**m.required, **required}
    )
    return [] if gaps or closes <= now else [closes]


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
        _with(
            members,
            i,
            Status.BLOCKED_BY_BACKFILL,
            f"backfill {state.backfill_id} is running; snapshots it commits do not trigger",
        )
    if running:
        return _first_blocked(group.group_id, members)
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


@dataclass(frozen=True)
class RuleEvaluation:
    """Every group's verdict at one instant; the rule is ready when any group is (OR)."""

    rule_id: str
    groups: tuple[GroupEvaluation, ...]
    evaluated_at: int

    @property
    def ready(self) -> bool:
        return any(g.ready for g in self.groups)


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
