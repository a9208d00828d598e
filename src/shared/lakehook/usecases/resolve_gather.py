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

One path for every group: the reads above that serve all the groups are made once, each kind of group's batch-wide
version reads among them (:class:`lakehook.usecases.resolve_whole_versions.WholeVersionReads`: EACH_VERSION over
an unpartitioned group's snapshot logs and history;
:class:`lakehook.usecases.resolve_partition_versions.PartitionVersionReads`: what the batch brings EACH_VERSION per
partition), then one loop over the work (:meth:`GatherInputs._groups`) gives
each group its own inputs (``GroupInputs``, in :attr:`Gathered.groups`, the one per-group mapping the plan reads: its
view of the version reads among them); the kind of group only decides which reads it makes (``GroupReads`` in
:mod:`lakehook.usecases.resolve_group_reads`: an unpartitioned group's coverage, a partitioned group's partitions,
:mod:`lakehook.usecases.resolve_partition_reads`).

What is read here is all the plan (:mod:`lakehook.usecases.resolve_plan`) decides on; the writes come after, in
:mod:`lakehook.usecases.resolve_apply`. So every read sees the store as the batch found it: the snapshot log, for
one, is read before this batch's snapshots are logged, and the batch's own snapshots are added to it here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lakehook.domain.commit_pieces import CommitPiece
from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import Deferral, GroupRef, PartitionWork, ResolutionInputs, StateChange
from lakehook.usecases.resolve_group_reads import (
    GroupInputs,
    GroupReads,
    SharedReads,
    Wake,
    WholeReads,
    head_of_line,
)
from lakehook.usecases.resolve_partition_reads import PartitionedReads, carried_groups
from lakehook.usecases.resolve_partition_versions import PartitionVersionReads, VersionReads
from lakehook.usecases.resolve_partitions import brought_facts, touched_of_states
from lakehook.usecases.resolve_report import ResolverLimits, ResolverStores
from lakehook.usecases.resolve_whole_versions import WholeVersionReads, WholeVersions

Work = list[tuple[Rule, Group]]
"""the groups one invocation evaluates, with their rules, in evaluation order"""


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
    """What one invocation read, and what its batch brought: all the plan decides on. Per group, what its lanes read
    (``groups``, the one per-group mapping the plan reads, each group's versions among them); batch-wide, what the
    batch brought that the apply writes per asset (EACH_VERSION history, snapshot log and partition versions)."""

    work: Work
    inputs: ResolutionInputs
    batch: Batch
    owned: dict[str, list[AssetState]]  # this batch's images of EACH_VERSION members (kept as their history)
    seen: dict[str, list[SnapshotRecord]]  # the snapshots the batch brought for EACH_VERSION members (logged)
    persisted: dict[str, set[int]]  # per asset, the orders known to be in the stored snapshot log
    brought: dict[FactKey, PartitionFact]  # the partition facts the batch's data commits give partitioned groups
    versions: dict[FactKey, tuple[PartitionFact, ...]]  # EACH_VERSION partitioned groups: every commit of the batch
    commits: dict[str, list[SnapshotRecord]]  # EACH_VERSION partitioned groups: the batch's commits, partitions known
    pieces: list[CommitPiece]  # EACH_VERSION partitioned groups: pieces of the batch's commits still known in part
    # EACH_VERSION partitioned groups: the batch's data commits still known in part (logged as such by the apply)
    in_part: dict[str, list[SnapshotRecord]]
    groups: dict[GroupRef, GroupInputs]  # per group of the work: what its lanes read of their own (one path)

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
        return carried_groups(carried, rules, focus)

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
        partitioned group's pending partitions, and their count): the member states and cursors, each kind of
        group's batch-wide version reads, then each group's own reads."""
        inputs = self._stores.reader.read(
            sorted({k for _, g in work for k in g.asset_keys}), [(r.rule_id, g.group_id) for r, g in work]
        )
        # a stream batch brings the commits it recorded; an evaluation (a PUT, evaluate now, explain) brings what it
        # takes of the members' newest data commits (ResolveAssetChange._evaluation, bounded), else the states' own
        touched = batch.touched if batch.touched is not None else touched_of_states(inputs.states)
        whole = WholeVersionReads(self._stores, self._limits, self._rule_error)(
            work, batch.images, batch.recorded, inputs, now
        )
        named, brought = brought_facts(work, touched)
        pieces = batch.with_touched(touched).pieces()
        partitioned = PartitionVersionReads(self._stores, self._limits)(
            work, touched, pieces, batch.recorded, now, explain
        )
        shared = SharedReads(inputs, now, explain, wake or Wake(), named, partitioned.versions)
        return Gathered(
            work=work,
            inputs=inputs,
            batch=batch,
            owned=whole.owned,
            seen=whole.seen,
            persisted=whole.persisted,
            brought=brought,
            versions=partitioned.versions,
            commits=partitioned.commits,
            pieces=partitioned.pieces,
            in_part=partitioned.in_part,
            groups=self._groups(work, shared, whole, partitioned.budget),
        )

    def _groups(
        self, work: Work, shared: SharedReads, whole: WholeVersions, budget: VersionReads
    ) -> dict[GroupRef, GroupInputs]:
        """Each group's own reads, on one path in work order: the trigger its cursor names (head of line: one read
        per EACH_VERSION group whose cursor names one), its view of the batch's whole-table version reads, and, when
        its states and cursor were read, what its kind of group reads
        (:class:`lakehook.usecases.resolve_group_reads.GroupReads`: an unpartitioned group's coverage, a partitioned
        group's partitions, their version queries counted against ``budget`` for all)."""
        unpartitioned: GroupReads = WholeReads(self._stores, self._rule_error)
        partitioned: GroupReads = PartitionedReads(self._stores, self._limits, budget)
        found: dict[GroupRef, GroupInputs] = {}
        for rule, group in work:
            ref = (rule.rule_id, group.group_id)
            previous = head_of_line(self._stores, rule, shared.inputs.cursors.get(ref))
            own = _NOTHING
            if shared.inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys) is None:
                kind = partitioned if group.partition_by is not None else unpartitioned  # which reads, not which path
                own = kind(rule, group, shared)
            found[ref] = replace(own, previous=previous, versions=whole.of(rule, group))
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
