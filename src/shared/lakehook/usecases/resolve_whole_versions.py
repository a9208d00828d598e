"""EACH_VERSION of unpartitioned groups in the gather: the version reads of the whole-table kind of group, made once
for the batch and batched per asset across its groups (:class:`WholeVersionReads`), then handed to each group as its
own view (:class:`GroupVersions`, in its :class:`lakehook.usecases.resolve_group_reads.GroupInputs`), which its one
lane (:class:`lakehook.usecases.resolve_plan.WholeGroup`) reads.

Budget per invocation (those of the module docstring of :mod:`lakehook.usecases.resolve_gather`): one history query
per member that has versions between the cursor and now it did not see (:class:`VersionLog`), one snapshot-log query
per member stepping by snapshot whose state is past the cursor (:class:`SnapshotLog`), for members gated on quality
checks one batched read of the checks on the logged snapshots whose verdict the state does not hold, and, for a late
snapshot a group already ran past, one log query (is it logged already?) and, when the log holds it, a page of the
rule's triggers (did this group run it?). A partitioned group runs its versions per partition instead
(:mod:`lakehook.usecases.resolve_partition_reads`); it reads none of these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lakehook.domain.evaluation import VersionLog, select_member, steps_by_snapshot
from lakehook.domain.late_versions import LateVersion, passed_over
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput
from lakehook.domain.versions import Lineage, LoggedSnapshot, SnapshotLog, SnapshotRecord, Verdict, lineage_of
from lakehook.ports.rules import GroupRef, ResolutionInputs
from lakehook.usecases.late_versions import logged_already, ran_for_group
from lakehook.usecases.resolve_report import ResolverLimits, ResolverStores

Work = Sequence[tuple[Rule, Group]]
"""the groups one invocation evaluates, with their rules, in evaluation order"""


def each_version(rule: Rule, group: Group) -> bool:
    """Whether the group runs every version of its members in order (EACH_VERSION without windows); a partitioned
    group does so per partition, through its partitions' versions
    (:func:`lakehook.usecases.resolve_partitions.in_order`), not the snapshot log."""
    return rule.policy.mode is Mode.EACH_VERSION and group.window is None and group.partition_by is None


@dataclass(frozen=True)
class GroupVersions:
    """One group's view of the batch's whole-table version reads: its members' known states (``logs``), snapshot logs
    (with quality verdicts), when a member's history gap its owner may still fill is final (``recheck``), the
    snapshots the batch brought of its members (``seen``), and the snapshots of the batch it ran past before they
    were known (``late``, recorded as SKIPPED). The reads are per asset: a group gets those of its members that an
    EACH_VERSION group of the batch needed (none when no such group has them)."""

    logs: Mapping[str, VersionLog] = field(default_factory=dict)
    snapshots: Mapping[str, SnapshotLog] = field(default_factory=dict)
    recheck: Mapping[str, int] = field(default_factory=dict)
    seen: Mapping[str, Sequence[SnapshotRecord]] = field(default_factory=dict)
    late: tuple[LateVersion, ...] = ()


@dataclass(frozen=True)
class WholeVersions:
    """What :class:`WholeVersionReads` read for a batch, per asset (shared by the groups of that asset): the batch's
    images of EACH_VERSION members (kept as their history) and the snapshots it brought of them (logged), their known
    states, their snapshot logs (with quality verdicts), when a history gap is final, the orders known to be in the
    stored snapshot log, and the late snapshots per group."""

    owned: dict[str, list[AssetState]]
    seen: dict[str, list[SnapshotRecord]]
    logs: dict[str, VersionLog]
    recheck: dict[str, int]
    snapshots: dict[str, SnapshotLog]
    persisted: dict[str, set[int]]
    late: list[LateVersion]

    def of(self, rule: Rule, group: Group) -> GroupVersions:
        """``group``'s own view: what was read of its members, and its late snapshots."""
        keys = set(group.asset_keys)
        ref = (rule.rule_id, group.group_id)
        return GroupVersions(
            {k: log for k, log in self.logs.items() if k in keys},
            {k: log for k, log in self.snapshots.items() if k in keys},
            {k: due for k, due in self.recheck.items() if k in keys},
            {k: found for k, found in self.seen.items() if k in keys},
            tuple(item for item in self.late if (item.rule.rule_id, item.group_id) == ref),
        )


class WholeVersionReads:
    """The version reads of the unpartitioned EACH_VERSION groups of an invocation (see the module docstring): one
    entry point over the work, each read batched per asset across the groups that need it."""

    def __init__(self, stores: ResolverStores, limits: ResolverLimits, rule_error: Callable[[BaseException], bool]):
        self._stores = stores
        self._limits = limits
        self._rule_error = rule_error

    def __call__(
        self,
        work: Work,
        images: Mapping[str, list[AssetState]],
        recorded: Mapping[str, Sequence[SnapshotRecord]],
        inputs: ResolutionInputs,
        now: int,
    ) -> WholeVersions:
        """Read what the EACH_VERSION groups of ``work`` step through, from the batch's state ``images`` (by asset, in
        first-seen order) and ``recorded`` snapshots, and the member states and cursors read (``inputs``)."""
        versioned = {k for rule, g in work if each_version(rule, g) for k in g.asset_keys}
        owned = {k: found for k, found in images.items() if k in versioned and found}
        seen = _seen_snapshots(owned, recorded, versioned)
        states, cursors = inputs.states, inputs.cursors
        logs, recheck = self._logs(work, states, cursors, owned, now)
        persisted: dict[str, set[int]] = {}
        snapshots = self._snapshot_logs(work, states, cursors, seen, now, persisted, owned, recheck)
        late = self._late(work, recorded, cursors)
        judged = self._judged(work, snapshots, states, cursors)
        return WholeVersions(owned, seen, logs, recheck, judged, persisted, late)

    # --- late snapshots -------------------------------------------------------------------------------

    def _late(
        self, work: Work, recorded: Mapping[str, Sequence[SnapshotRecord]], cursors: Mapping[GroupRef, GroupCursor]
    ) -> list[LateVersion]:
        """The snapshots of this batch an EACH_VERSION group ran past before they were known
        (:mod:`lakehook.domain.late_versions`), unless already logged and run by this group (a claim logged it,
        pinning it on its quality verdict, or its push logged it before the group ran past it, and the group ran
        it: ``ran_for_group`` asks this group's runs). Their push decided and recorded the skip already (the same
        key, written once: here only for a snapshot whose push could not read the asset's rules). One log
        query per such snapshot, and a page of the rule's triggers when the log holds it."""
        late = [
            found
            for rule, group in work
            for key, records in recorded.items()
            if key in group.asset_keys
            for record in records
            if (found := passed_over(rule, group, cursors.get((rule.rule_id, group.group_id)), record, key))
        ]
        logged: dict[tuple[str, int], bool] = {}
        for item in late:
            where = (item.asset_key, item.record.order)
            if where not in logged:
                logged[where] = logged_already(self._stores.history, item.asset_key, item.record)
        return [
            item
            for item in late
            if not logged[(item.asset_key, item.record.order)]
            or not ran_for_group(self._stores.triggers, item.rule.rule_id, item.group_id, item.asset_key, item.record)
        ]

    # --- state history -------------------------------------------------------------------------------

    def _logs(
        self,
        work: Work,
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
        owned: dict[str, list[AssetState]],
        now: int,
    ) -> tuple[dict[str, VersionLog], dict[str, int]]:
        """What is known of each EACH_VERSION member's versions (this batch, the stored history, now), and
        when the history of a member with newer versions, handled by another resolver, will be final."""
        ranges: dict[str, tuple[int, int]] = {}
        members: set[str] = set()
        for rule, group in work:
            if not each_version(rule, group):
                continue
            members.update(group.asset_keys)
            cursor = cursors.get((rule.rule_id, group.group_id))
            if cursor is None:
                continue
            for member in group.members:
                needed = self._history_range(member, cursor.pins.get(member.asset_key), states, owned)
                if needed is not None:
                    low, high = ranges.get(member.asset_key, needed)
                    ranges[member.asset_key] = (min(low, needed[0]), max(high, needed[1]))
        logs: dict[str, VersionLog] = {}
        recheck: dict[str, int] = {}
        for key in members:
            state = states.get(key)
            logs[key] = self._version_log(key, ranges.get(key), state, owned.get(key), now)
            if state is not None and key in ranges:
                reached = [s.version for s in logs[key].after(ranges[key][0] - 1)]
                if state.version not in reached:  # stopped at a gap the owner may still fill
                    recheck[key] = (state.updated_at or now) + self._limits.history_settle_ms
        return logs, recheck

    def _history_range(
        self,
        member: Member,
        last: PinnedInput | None,
        states: dict[str, AssetState],
        owned: dict[str, list[AssetState]],
    ) -> tuple[int, int] | None:
        """The state versions of a member's history to read: from the cursor's up to what this batch or the state
        holds, when the member has a version newer than the cursor's; None when nothing newer."""
        state = states.get(member.asset_key)
        try:
            pin = select_member(member, state).pin if state is not None else None
        except Exception as exc:
            if not self._rule_error(exc):
                raise
            return None  # the group's evaluation meets the same error and records it
        if last is None or state is None or pin is None or pin.ordinal <= last.ordinal:
            return None  # nothing newer than the cursor, so no history to look at
        mine = owned.get(member.asset_key)
        upto = min(s.version for s in mine) - 1 if mine else state.version - 1
        first = last.state_version + 1
        return (first, upto) if first <= upto else None

    def _version_log(
        self,
        key: str,
        needed: tuple[int, int] | None,
        state: AssetState | None,
        mine: list[AssetState] | None,
        now: int,
    ) -> VersionLog:
        """One member's known states, and below which version a gap is final: below this batch's own first record,
        or below a state unchanged for the settle time (its owner handled or dropped its records)."""
        known: list[AssetState] = list(mine or ())
        if needed is not None:
            known.extend(self._stores.history.between(key, *needed))
        if state is not None:
            known.append(state)
        if mine:
            lost_before = min(s.version for s in mine)
        elif state is not None and (state.updated_at or 0) + self._limits.history_settle_ms <= now:
            lost_before = state.version
        else:
            lost_before = 0
        return VersionLog.of(known, lost_before=lost_before)

    # --- snapshot log -------------------------------------------------------------------------------

    def _snapshot_logs(
        self,
        work: Work,
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
        seen: Mapping[str, Sequence[SnapshotRecord]],
        now: int,
        persisted: dict[str, set[int]],
        owned: Mapping[str, Sequence[AssetState]],
        recheck: dict[str, int],
    ) -> dict[str, SnapshotLog]:
        """Per EACH_VERSION member stepping by snapshot: the logged snapshots after the oldest cursor that needs
        them (one query per such asset), the snapshots this batch saw, and the state's own newest ones;
        ``persisted`` gets the orders of those known to be stored (read, or logged by this batch).

        A table without lineage shows no gap, so there a snapshot counts only once every snapshot accepted before
        it is known (:func:`_known_upto`); the others wait, their asset in ``recheck`` at the end of the settle
        time (the stream records still to come wake the group before that)."""
        logs: dict[str, SnapshotLog] = {}
        limit = 2 * self._limits.max_claims_per_group + 10
        settle = self._limits.history_settle_ms
        pinned = _pinned_only(work, cursors)
        for key, start in _snapshot_floors(work, cursors).items():
            state = states.get(key)
            entries = [LoggedSnapshot(r, now) for r in seen.get(key, ())]
            complete = True
            newest = state.latest_record.order if state is not None and state.latest_record is not None else None
            if start is not None and newest is not None and newest > start:
                stored = self._stores.history.snapshots_after(key, start, limit)
                complete = len(stored) < limit
                entries = stored + entries
            persisted[key] = {e.record.order for e in entries}
            stepping = start is not None and key in pinned and lineage_of(key) is Lineage.NONE
            bound = _known_upto(start, entries, state, owned.get(key, ()), now, settle) if stepping else None
            entries = _with_newest(key, entries, state, complete, bound, now, settle, recheck)
            logs[key] = SnapshotLog.of(entries, lineage_of(key), settle)
        return logs

    def _judged(
        self,
        work: Work,
        logs: dict[str, SnapshotLog],
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
    ) -> dict[str, SnapshotLog]:
        """The snapshot logs of members gated on quality checks, with the verdict of each snapshot still to run (after
        the oldest cursor that needs it; every logged one for a group not started yet): what the state tells (its
        newest verdicts), else one batched read of those snapshots' quality events (no read when none is left)."""
        since = _quality_floors(work, logs, cursors)
        if not since:
            return logs
        verdicts: dict[tuple[str, int], Verdict] = {}
        wanted: list[tuple[str, int]] = []
        for key, floor in sorted(since.items()):
            state = states.get(key)
            for entry in logs[key].after(floor):
                told = state.quality_of(entry.record) if state is not None else None
                if told is None:
                    wanted.append((key, entry.record.snapshot_id))
                else:
                    verdicts[(key, entry.record.snapshot_id)] = told
        if wanted:
            verdicts.update(self._stores.reader.quality_verdicts(wanted))
        judged = dict(logs)
        for key in since:
            judged[key] = logs[key].with_quality({sid: v for (k, sid), v in verdicts.items() if k == key})
        return judged


def _seen_snapshots(
    owned: Mapping[str, Sequence[AssetState]], recorded: Mapping[str, Sequence[SnapshotRecord]], versioned: set[str]
) -> dict[str, list[SnapshotRecord]]:
    """The snapshots a batch brought for EACH_VERSION members: recorded events (late ones too) and state images."""
    seen: dict[str, list[SnapshotRecord]] = {}
    for key in versioned:
        found = list(recorded.get(key, ()))
        for state in owned.get(key, ()):
            found += [r for r in (state.latest_record, state.latest_data) if r is not None]
        if found:
            seen[key] = found
    return seen


def _with_newest(
    key: str,
    entries: Sequence[LoggedSnapshot],
    state: AssetState | None,
    complete: bool,
    bound: int | None,
    now: int,
    settle_ms: int,
    recheck: dict[str, int],
) -> list[LoggedSnapshot]:
    """The log's entries and the state's newest snapshots (when the stored log was read whole), without those above
    ``bound`` (:func:`_known_upto`): those wait, and the asset is rechecked at the end of the settle time."""
    if state is None:
        return list(entries)
    at = state.updated_at if state.updated_at is not None else now
    found = list(entries)
    if complete:
        found += [LoggedSnapshot(r, at) for r in (state.latest_record, state.latest_data) if r is not None]
    if bound is None or all(e.record.order <= bound for e in found):
        return found
    recheck[key] = min(recheck.get(key, at + settle_ms), at + settle_ms)
    return [e for e in found if e.record.order <= bound]


def _known_upto(
    start: int | None,
    entries: Sequence[LoggedSnapshot],
    state: AssetState | None,
    owned: Sequence[AssetState],
    now: int,
    settle_ms: int,
) -> int | None:
    """On a table without lineage: up to which order every accepted snapshot is known, or None for all of them.

    All are known once this batch holds the state's own image (its records came in stream order) or once the state
    has been unchanged for the settle time. Else up to the cursor's snapshot (it ran) and to the newest snapshot the
    resolver logged or sees (each in stream order: every snapshot accepted before it was handled first), and not
    above: a snapshot accepted since then whose record is still to come would be stepped over. A late push's entry
    (:attr:`lakehook.domain.versions.LoggedSnapshot.late`) and the state's newest say nothing of those. ``entries``:
    what was logged or seen, not the state's newest."""
    if start is None or state is None or any(image.version >= state.version for image in owned):
        return None
    if (state.updated_at if state.updated_at is not None else now) + settle_ms <= now:
        return None
    return max([start, *(e.record.order for e in entries if not e.late)])


def _pinned_only(work: Work, cursors: Mapping[GroupRef, GroupCursor]) -> set[str]:
    """The members stepping by snapshot whose every EACH_VERSION group has run (its cursor pins a snapshot of them):
    the groups that step from a run to the next version (a first trigger takes the oldest one known)."""
    pinned: dict[str, bool] = {}
    for rule, group in work:
        if not each_version(rule, group):
            continue
        cursor = cursors.get((rule.rule_id, group.group_id))
        for member in group.members:
            if steps_by_snapshot(member):
                last = cursor.pins.get(member.asset_key) if cursor is not None and cursor.seq > 0 else None
                ran = last is not None and last.snapshot_id is not None
                pinned[member.asset_key] = pinned.get(member.asset_key, True) and ran
    return {key for key, ran in pinned.items() if ran}


def _snapshot_floors(work: Work, cursors: Mapping[GroupRef, GroupCursor]) -> dict[str, int | None]:
    """Per EACH_VERSION member stepping by snapshot: the order after which its logged snapshots are needed (the
    oldest cursor's pinned snapshot; before a group's first trigger, the oldest late snapshot noted on its cursor,
    which its push answered "it runs in order", or the oldest of its snapshots noted as seen arriving while the group
    could not run yet), or None when a group needing it pins no snapshot of it yet."""
    since: dict[str, int | None] = {}
    for rule, group in work:
        if not each_version(rule, group):
            continue
        cursor = cursors.get((rule.rule_id, group.group_id))
        for member in group.members:
            if not steps_by_snapshot(member):
                continue
            key = member.asset_key
            last = cursor.pins.get(key) if cursor is not None and cursor.seq > 0 else None
            floor = last.ordinal[0] if last is not None and last.snapshot_id is not None else None
            if floor is None and cursor is not None:
                floor = cursor.floor_of(key)
            if floor is None:
                since.setdefault(key, None)
                continue
            held = since.get(key)
            since[key] = floor if held is None else min(held, floor)
    return since


def _quality_floors(
    work: Work, logs: Mapping[str, SnapshotLog], cursors: Mapping[GroupRef, GroupCursor]
) -> dict[str, int]:
    """Per EACH_VERSION member gated on quality checks: the order above which its snapshots' verdicts are needed
    (the oldest cursor's; -1 for a group not started yet)."""
    since: dict[str, int] = {}
    for rule, group in work:
        if not each_version(rule, group):
            continue
        cursor = cursors.get((rule.rule_id, group.group_id))
        for member in group.members:
            key = member.asset_key
            if not (member.condition.quality_status and steps_by_snapshot(member) and key in logs):
                continue
            last = cursor.pins.get(key) if cursor is not None and cursor.seq > 0 else None
            floor = last.ordinal[0] if last is not None and last.snapshot_id is not None else -1
            since[key] = min(since.get(key, floor), floor)
    return since
