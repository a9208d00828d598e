"""The resolver's reads: everything one invocation decides on, read once and batched, before anything is decided.

Budget per invocation (a stream batch, deduplicated by asset): one reverse-index query per changed asset (the
rules of the asset, RFC 3.8), ONE batched read of every member state and group cursor those rules need (shared
across rules). ``EACH_VERSION`` rules add one history query per member that has versions between the cursor and
now it did not see, one snapshot-log query per member stepping by snapshot whose state is past the cursor, the
trigger each group's cursor names (head of line), and, for members gated on quality checks, one batched read of
the checks on the logged snapshots whose verdict the state does not hold. A late snapshot a group already ran past
costs one log query (is it logged already?) and, when the log holds it (a claim pinned it on its quality verdict),
a page of the rule's triggers, to tell whether this group ran it. A group with coverage members reads its intervals
once (a partitioned one: over the spans of the partitions it evaluates). A partitioned group reads one page of its
pending partitions (one query; explain: a short page, and their count) and, batched, the kept facts and the
partition cursors of those and of the partitions its batch touched; EACH_VERSION per partition adds at most
``max_version_reads`` next-version queries for the whole invocation (``VersionReads``).

One path for every group: the reads above that serve all the groups are made once, then one loop over the work
(:meth:`GatherInputs._groups`) gives each group its own inputs (``GroupInputs``, in :attr:`Gathered.groups`, the
one per-group mapping the plan reads); the kind of group only decides which reads it makes (``GroupReads`` in
:mod:`lakehook.usecases.resolve_group_reads`: an unpartitioned group's coverage, a partitioned group's partitions,
:mod:`lakehook.usecases.resolve_partition_reads`).

What is read here is all the plan (:mod:`lakehook.usecases.resolve_plan`) decides on; the writes come after, in
:mod:`lakehook.usecases.resolve_apply`. So every read sees the store as the batch found it: the snapshot log, for
one, is read before this batch's snapshots are logged, and the batch's own snapshots are added to it here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lakehook.domain.commit_pieces import CommitPiece, KnownPieces, whole_commits
from lakehook.domain.evaluation import VersionLog, select_member, steps_by_snapshot
from lakehook.domain.late_versions import LateVersion, passed_over
from lakehook.domain.partition_evaluation import (
    FactKey,
    PartitionFact,
)
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger
from lakehook.domain.versions import Lineage, LoggedSnapshot, SnapshotLog, SnapshotRecord, Verdict, lineage_of
from lakehook.ports.rules import Deferral, GroupRef, PartitionWork, ResolutionInputs, StateChange
from lakehook.usecases.late_versions import logged_already, ran_for_group
from lakehook.usecases.resolve_group_reads import GroupInputs, GroupReads, SharedReads, Wake, WholeReads
from lakehook.usecases.resolve_partition_reads import PartitionedReads, VersionReads, bounded
from lakehook.usecases.resolve_partitions import (
    Touched,
    brought_commits,
    brought_facts,
    brought_versions,
    in_order,
    touched_of_states,
)
from lakehook.usecases.resolve_report import ResolverLimits, ResolverStores

Work = list[tuple[Rule, Group]]
"""the groups one invocation evaluates, with their rules, in evaluation order"""


def each_version(rule: Rule, group: Group) -> bool:
    """Whether the group runs every version of its members in order (EACH_VERSION without windows); a partitioned
    group does so per partition, through its partitions' versions (:func:`in_order`), not the snapshot log."""
    return rule.policy.mode is Mode.EACH_VERSION and group.window is None and group.partition_by is None


@dataclass(frozen=True)
class Batch:
    """A batch's changes by asset: the assets in first-seen order, their state images and recorded snapshots, and
    the partitions its data commits touched (None: not a stream batch, take the states' newest commits'), and the
    assets of which it only carries a slice of a commit's partitions (they wake their partitioned groups only)."""

    changed: list[str]
    images: dict[str, list[AssetState]]
    recorded: dict[str, list[SnapshotRecord]]
    touched: dict[str, list[tuple[SnapshotRecord, TouchedPartitions]]] | None
    sliced: list[str] = field(default_factory=list)
    bare: list[str] = field(default_factory=list)  # assets of a change that says nothing more (a recheck)
    # per entry of ``touched`` (asset, order, its first key): where its keys start among the commit's sorted keys and
    # the commit's key count, when known: the pieces of commits that come in part (domain/commit_pieces.py)
    origins: dict[tuple[str, int, str], tuple[int, int | None]] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> Batch:
        """An evaluation no stream record brought (a PUT, evaluate now, explain)."""
        return cls([], {}, {}, None)

    @classmethod
    def of_touched(cls, touched: Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]]) -> Batch:
        """An evaluation's batch: what the states' newest data commits touched (their event's keys, from 0)."""
        batch = cls([], {}, {}, {asset: list(found) for asset, found in touched.items()})
        for asset, found in touched.items():
            for record, parts in found:
                batch.note_origin(asset, record, parts, 0, parts.count)
        return batch

    def note_origin(
        self, asset: str, record: SnapshotRecord, parts: TouchedPartitions, start: int | None, total: int | None
    ) -> None:
        if start is not None:
            self.origins[origin_key(asset, record, parts.keys)] = (start, total)

    def with_touched(self, touched: Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]]) -> Batch:
        """This batch, or (no stream batch) the evaluation's of ``touched``."""
        return self if self.touched is not None else Batch.of_touched(touched)

    def pieces(self) -> list[CommitPiece]:
        """The pieces of commits the batch holds (those whose start is known)."""
        found: list[CommitPiece] = []
        for asset, entries in (self.touched or {}).items():
            for record, parts in entries:
                origin = self.origins.get(origin_key(asset, record, parts.keys))
                if origin is not None:
                    found.append(CommitPiece(asset, record, origin[0], len(parts.keys), origin[1]))
        return found

    @classmethod
    def of(cls, changes: Sequence[StateChange]) -> Batch:
        batch = cls([], {}, {}, {})
        for change in changes:
            if change.partitions_only:
                batch._add_slice(change)
            else:
                batch._add_change(change)
        return batch

    def _add_touched(
        self, asset: str, record: SnapshotRecord, parts: TouchedPartitions, start: int | None, total: int | None
    ) -> None:
        """Note a commit's partitions (those ``start`` keys into its ``total``) among the batch's ``touched``."""
        assert self.touched is not None  # a stream batch's
        self.touched.setdefault(asset, []).append((record, parts))
        self.note_origin(asset, record, parts, start, total)

    def _add_slice(self, change: StateChange) -> None:
        """A slice of a commit's partitions: it wakes the asset's partitioned groups only."""
        if change.asset_key not in self.sliced:
            self.sliced.append(change.asset_key)
        if change.snapshot is not None and change.partitions is not None:
            self._add_touched(change.asset_key, change.snapshot, change.partitions, change.offset, change.total)

    def _add_change(self, change: StateChange) -> None:
        """A state change: its image, its recorded snapshot and the partitions its event or state names."""
        key = change.asset_key
        if key not in self.images:
            self.changed.append(key)
            self.images[key] = []
        if change.state is None and change.snapshot is None and key not in self.bare:
            self.bare.append(key)
        if change.state is not None and change.state.version > 0:
            self.images[key].append(change.state)
        if change.snapshot is not None:
            self.recorded.setdefault(key, []).append(change.snapshot)
            if change.partitions is not None:  # the event's keys: the commit's first (the rest come as parts)
                self._add_touched(key, change.snapshot, change.partitions, 0, change.partitions.count)
        if change.state is not None:
            for asset, found in touched_of_states({key: change.state}).items():
                for record, parts in found:
                    self._add_touched(asset, record, parts, 0, parts.count)


def origin_key(asset: str, record: SnapshotRecord, keys: Sequence[str]) -> tuple[str, int, str]:
    """How a batch finds where an entry of its ``touched`` starts in its commit: by the entry's first key."""
    return (asset, record.order, keys[0] if keys else "")


@dataclass(frozen=True)
class RulesRead:
    """The rules of a batch: the groups to evaluate, the deferred groups among them (a deferral is how a failed
    group is retried), the assets whose rules could not be read (rechecked later), and what woke each group."""

    work: Work
    retried: set[GroupRef]
    unreadable: list[tuple[str, BaseException]]
    wake: Wake = field(default_factory=Wake)


@dataclass(frozen=True)
class Gathered:
    """What one invocation read, and what its batch brought: all the plan decides on."""

    work: Work
    inputs: ResolutionInputs
    batch: Batch
    owned: dict[str, list[AssetState]]  # this batch's images of EACH_VERSION members (kept as their history)
    seen: dict[str, list[SnapshotRecord]]  # the snapshots the batch brought for EACH_VERSION members (logged)
    brought: dict[FactKey, PartitionFact]  # the partition facts the batch's data commits give partitioned groups
    versions: dict[FactKey, tuple[PartitionFact, ...]]  # EACH_VERSION partitioned groups: every commit of the batch
    commits: dict[str, list[SnapshotRecord]]  # EACH_VERSION partitioned groups: the batch's commits, partitions known
    pieces: list[CommitPiece]  # EACH_VERSION partitioned groups: pieces of the batch's commits still known in part
    # EACH_VERSION partitioned groups: the batch's data commits still known in part (logged as such by the apply)
    in_part: dict[str, list[SnapshotRecord]]
    groups: dict[GroupRef, GroupInputs]  # per group of the work: what its lanes read of their own (one path)
    late: list[LateVersion]  # snapshots of the batch a group ran past, not logged yet
    logs: dict[str, VersionLog]  # EACH_VERSION members' known states
    recheck: dict[str, int]  # when a member's history gap, which its owner may still fill, is final
    snapshots: dict[str, SnapshotLog]  # members stepping by snapshot: their snapshot logs (with quality verdicts)
    persisted: dict[str, set[int]]  # per asset, the orders known to be in the stored snapshot log

    def cursor(self, ref: GroupRef) -> GroupCursor | None:
        return self.inputs.cursors.get(ref)

    def group(self, ref: GroupRef) -> GroupInputs:
        """What the gather read for one group of its own (nothing, for a group it did not read)."""
        return self.groups.get(ref, _NOTHING)


_NOTHING = GroupInputs()


class GatherInputs:
    """Read what the resolver decides on (see the module docstring)."""

    def __init__(self, stores: ResolverStores, limits: ResolverLimits, rule_error: Callable[[BaseException], bool]):
        self._stores = stores
        self._limits = limits
        self._rule_error = rule_error

    # --- rules ---------------------------------------------------------------------------------------

    def rules(
        self,
        changed: Sequence[str],
        deferred: Sequence[Deferral],
        sliced: Sequence[str] = (),
        carried: Sequence[PartitionWork] = (),
        bare: Sequence[str] = (),
    ) -> RulesRead:
        """The rules naming the changed assets (reverse index) and the due deferrals' groups, enabled ones only; for
        assets of which a slice of partitions came (``sliced``), only the partitioned groups mapping them; and the
        groups of carried-over partition work. A partitioned group scans its pending partitions when an unpartitioned
        member changed, a deferral came due, or an asset of it is rechecked (``bare``: a change that names nothing)."""
        rules: dict[str, Rule] = {}
        focus: dict[str, set[str]] = {}
        unreadable: list[tuple[str, BaseException]] = []
        scan: set[GroupRef] = set()
        for asset_key in dict.fromkeys([*changed, *sliced]):
            whole = asset_key in changed
            try:
                found = self._stores.rules.rules_for_asset(asset_key)
            except Exception as exc:
                if not self._rule_error(exc):
                    raise
                # e.g. a stored rule that no longer parses: the asset's other rules cannot be told apart from
                # it, so the asset is checked again later; other assets go on.
                unreadable.append((asset_key, exc))
                continue
            for rule in found:
                groups = [g for g in rule.groups_with(asset_key) if whole or _maps(g, asset_key)]
                if groups:
                    rules[rule.rule_id] = rule
                    focus.setdefault(rule.rule_id, set()).update(g.group_id for g in groups)
                    scan.update(_scanning(rule, groups, asset_key, whole, asset_key in bare))
        retried = self._deferred_groups(deferred, rules, focus)
        after, given = self._carried_groups(carried, rules, focus)
        work = [
            (rule, group)
            for rule_id in sorted(focus)
            if (rule := rules[rule_id]).enabled
            for group in rule.groups
            if group.group_id in focus[rule_id]
        ]
        wake = Wake(False, frozenset(scan | retried), after, given)
        return RulesRead(work, retried, unreadable, wake)

    def _carried_groups(
        self, carried: Sequence[PartitionWork], rules: dict[str, Rule], focus: dict[str, set[str]]
    ) -> tuple[dict[GroupRef, str], dict[GroupRef, frozenset[str]]]:
        """Add the carried-over work's groups (and their rules) to the work: which continue a scan below a key, and
        which partitions each is given."""
        wanted = {w.rule_id for w in carried} - rules.keys()
        if wanted:
            rules.update(self._stores.rules.get_rules(wanted))
        after: dict[GroupRef, str] = {}
        given: dict[GroupRef, set[str]] = {}
        for item in carried:
            rule_or_none = rules.get(item.rule_id)
            group = rule_or_none.group(item.group_id) if rule_or_none is not None else None
            if group is None or group.partition_by is None:
                continue  # the rule or group is gone, or no longer partitioned: nothing left to carry on
            focus.setdefault(item.rule_id, set()).add(item.group_id)
            ref = (item.rule_id, item.group_id)
            given.setdefault(ref, set()).update(item.partitions)
            if item.after is not None:
                after[ref] = item.after
        return after, {ref: frozenset(parts) for ref, parts in given.items()}

    def _deferred_groups(
        self, deferred: Sequence[Deferral], rules: dict[str, Rule], focus: dict[str, set[str]]
    ) -> set[GroupRef]:
        """Add the due deferrals' groups (and their rules) to the work; the groups that still exist."""
        wanted = {d.rule_id for d in deferred} - rules.keys()
        if wanted:
            rules.update(self._stores.rules.get_rules(wanted))
        retried: set[GroupRef] = set()
        for item in deferred:
            rule_or_none = rules.get(item.rule_id)
            if rule_or_none is not None and rule_or_none.group(item.group_id) is not None:
                focus.setdefault(item.rule_id, set()).add(item.group_id)
                retried.add((item.rule_id, item.group_id))
        return retried

    # --- what the groups need ------------------------------------------------------------------------

    def __call__(
        self, work: Work, batch: Batch, now: int, *, explain: bool = False, wake: Wake | None = None
    ) -> Gathered:
        """Read what the groups of ``work`` need, once for all of them (``explain``: a short page of each
        partitioned group's pending partitions, and their count)."""
        versioned = {k for rule, g in work if each_version(rule, g) for k in g.asset_keys}
        owned = {k: batch.images[k] for k in batch.changed if k in versioned and batch.images[k]}
        seen = _seen_snapshots(owned, batch.recorded, versioned)
        inputs = self._stores.reader.read(
            sorted({k for _, g in work for k in g.asset_keys}), [(r.rule_id, g.group_id) for r, g in work]
        )
        # a stream batch brings the commits it recorded; an evaluation (a PUT, evaluate now, explain) brings what it
        # takes of the members' newest data commits (ResolveAssetChange._evaluation, bounded), else the states' own
        touched = batch.touched if batch.touched is not None else touched_of_states(inputs.states)
        logs, recheck = self._logs(work, inputs.states, inputs.cursors, owned, now)
        persisted: dict[str, set[int]] = {}
        snapshots = self._snapshot_logs(work, inputs.states, inputs.cursors, seen, now, persisted, owned, recheck)
        named, brought = brought_facts(work, touched)
        versions = brought_versions(work, touched)
        commits, in_part, pieces = self._known_commits(work, batch, touched)
        shared = SharedReads(inputs, now, explain, wake or Wake(), named, versions)
        return Gathered(
            work=work,
            inputs=inputs,
            batch=batch,
            owned=owned,
            seen=seen,
            brought=brought,
            versions=versions,
            commits=commits,
            pieces=pieces,
            in_part=in_part,
            groups=self._groups(work, shared, self._version_reads(commits, in_part, now, explain)),
            late=self._late(work, batch.recorded, inputs.cursors),
            logs=logs,
            recheck=recheck,
            snapshots=self._judged(work, snapshots, inputs.states, inputs.cursors),
            persisted=persisted,
        )

    def _groups(self, work: Work, shared: SharedReads, budget: VersionReads) -> dict[GroupRef, GroupInputs]:
        """Each group's own reads, on one path in work order: the trigger its cursor names (head of line: one read
        per EACH_VERSION group whose cursor names one), and, when its states and cursor were read, what its kind
        of group reads (:class:`lakehook.usecases.resolve_group_reads.GroupReads`: an unpartitioned group's
        coverage, a partitioned group's partitions, their version queries counted against ``budget`` for all)."""
        whole: GroupReads = WholeReads(self._stores, self._rule_error)
        partitioned: GroupReads = PartitionedReads(self._stores, self._limits, budget)
        found: dict[GroupRef, GroupInputs] = {}
        for rule, group in work:
            ref = (rule.rule_id, group.group_id)
            previous = self._previous_trigger(rule, shared.inputs.cursors.get(ref))
            own = _NOTHING
            if shared.inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys) is None:
                kind = partitioned if group.partition_by is not None else whole  # which reads, not which path
                own = kind(rule, group, shared)
            found[ref] = replace(own, previous=previous)
        return found

    def _version_reads(
        self,
        commits: dict[str, list[SnapshotRecord]],
        in_part: dict[str, list[SnapshotRecord]],
        now: int,
        explain: bool,
    ) -> VersionReads:
        """The invocation's version queries, shared by its partitioned groups (bounded unless explain or no queue)."""
        most = self._limits.max_version_reads if bounded(self._stores, explain) else None
        limits = self._limits
        return VersionReads(most, commits, now, limits.history_settle_ms, limits.commit_log_page, in_part=in_part)

    def _previous_trigger(self, rule: Rule, cursor: GroupCursor | None) -> Trigger | None:
        """The trigger an EACH_VERSION group's cursor names (head of line), one read; None for any other group."""
        if rule.policy.mode is not Mode.EACH_VERSION or cursor is None or not cursor.trigger_key:
            return None
        return self._stores.triggers.get(cursor.trigger_key)

    def _known_commits(
        self, work: Work, batch: Batch, touched: Touched
    ) -> tuple[dict[str, list[SnapshotRecord]], dict[str, list[SnapshotRecord]], list[CommitPiece]]:
        """EACH_VERSION per partition: the batch's commits known with their partitions (logged by the apply), its data
        commits still known in part (logged as such: a partition whose next version is one tells a gap before it),
        and the pieces of those (noted by the apply). A commit is known once its pieces cover every key it touched
        (:mod:`lakehook.domain.commit_pieces`): the batch's, with those kept before (one batched read of the commits
        the batch holds in part)."""
        assets = {m.asset_key for rule, group in work if in_order(rule, group) for m in group.partitioned_members}
        held = batch.with_touched(touched)
        pieces = [p for p in held.pieces() if p.asset_key in assets]
        whole = whole_commits(pieces)
        rest = [p for p in pieces if p.ref not in whole and p.record.changes_data]
        store = self._stores.partitions
        stored: dict[tuple[str, int], KnownPieces] = {}
        if rest and store is not None:
            stored = store.commit_pieces(sorted({p.ref for p in rest}))
            whole |= whole_commits(rest, stored)
        commits = brought_commits(work, whole, batch.recorded)
        return commits, _known_in_part(held, assets, whole), [p for p in rest if p.ref not in whole]

    # --- EACH_VERSION: late snapshots ----------------------------------------------------------------

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

    # --- EACH_VERSION: state history -----------------------------------------------------------------

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

    # --- EACH_VERSION: snapshot log and head of line -------------------------------------------------

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


def _known_in_part(
    batch: Batch, assets: Collection[str], whole: Mapping[tuple[str, int], SnapshotRecord]
) -> dict[str, list[SnapshotRecord]]:
    """The data commits of ``assets`` the batch holds and that are not known ``whole``, per asset, oldest first."""
    found: dict[str, list[SnapshotRecord]] = {}
    for asset, entries in sorted((batch.touched or {}).items()):
        part = {r.order: r for r, _ in entries if r.changes_data and (asset, r.order) not in whole}
        if asset in assets and part:
            found[asset] = [part[o] for o in sorted(part)]
    return found


def _scanning(rule: Rule, groups: Sequence[Group], asset_key: str, whole: bool, woke: bool) -> list[GroupRef]:
    """The groups of ``rule`` a change of the asset (not a slice: ``whole``) makes scan their pending partitions: an
    unpartitioned member's change may make any pending partition ready; a recheck (``woke``) scans every group."""
    return [(rule.rule_id, g.group_id) for g in groups if whole and (woke or _gates(g, asset_key))]


def _maps(group: Group, asset_key: str) -> bool:
    """Whether a partitioned member of ``group`` maps the asset's partitions."""
    return any(m.asset_key == asset_key for m in group.partitioned_members)


def _gates(group: Group, asset_key: str) -> bool:
    """Whether the asset is an unpartitioned member of ``group`` (every group without ``partitionBy`` included)."""
    return any(m.asset_key == asset_key and m.partition is None for m in group.members)


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
