"""EACH_VERSION per partition in the gather: what a batch brings the partitioned groups that run each version of
their partitions in order, read once for all of them (:class:`PartitionVersionReads` → :class:`BatchVersions`: the
batch's commits per (asset, mapping, partition), those known with their partitions and those known in part, the
pieces of those), and per group its partitions' next versions, head-of-line triggers and the gaps before them
(:func:`partition_versions`, called by :class:`lakehook.usecases.resolve_partition_reads.PartitionedReads`), counted
against the invocation's version queries (:class:`VersionReads`, shared by every partitioned group of the
invocation). An unpartitioned group's versions are :mod:`lakehook.usecases.resolve_whole_versions`'.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lakehook.domain.commit_pieces import CommitPiece, KnownPieces, whole_commits
from lakehook.domain.partition_evaluation import (
    FactKey,
    PartitionFact,
    counted_as_run,
    facts_of,
    member_keys,
    units_needed,
)
from lakehook.domain.partition_gaps import gap_before, gaps_shown
from lakehook.domain.rules import Group, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, TriggerStatus
from lakehook.domain.verdicts import Gap
from lakehook.domain.versions import LoggedSnapshot, SnapshotLog, SnapshotRecord, lineage_of
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import TriggerStore
from lakehook.usecases.resolve_partitions import PartitionInputs, Touched, Versions, in_order
from lakehook.usecases.resolve_report import ResolverLimits, ResolverStores, bounded


def partition_versions(
    triggers: TriggerStore,
    store: PartitionStore,
    budget: VersionReads,
    group: Group,
    inputs: PartitionInputs,
    brought: Versions,
    start: GroupCursor | None = None,
) -> PartitionInputs:
    """EACH_VERSION per partition: for each partition with news (a kept fact or a commit of the batch newer than
    what its cursor pins), the trigger its cursor names (head of line: one batched read for them all), and per
    partitioned member its next stored version after the cursor: one query, only when the kept fact is newer (the
    batch's own versions are the plan's to add) and the partition's last run SUCCEEDED (while it has not, the
    kept fact stands for the next version: the partition waits for its run, whichever version is next); and
    which of the batch's versions below a partition's cursor were stored already (one batched read of those).

    The next-version queries are counted against the invocation's (``budget``, :class:`VersionReads`): a partition whose
    queries do not fit is not evaluated here but carried to the resolver queue (``past``), as a partition past
    the fact reads is; its late versions' checks are still made (the batch's versions are not carried).
    A startFrom NEXT_CHANGE rule's ``start`` counts as run (:func:`counted_as_run`): versions are read after it."""
    cursors: dict[str, GroupCursor | None] = {}
    names: dict[str, str] = {}
    for partition in inputs.partitions:
        cursor = inputs.cursors.get(partition)
        floor = counted_as_run(cursor, start)
        if _has_news(group, partition, floor, inputs.facts, brought):
            cursors[partition] = floor
            if cursor is not None and cursor.seq > 0 and cursor.trigger_key:
                names[partition] = cursor.trigger_key  # the partition's own last run (head of line)
    runs = triggers.get_many(set(names.values())) if names else {}
    previous = {p: t for p, k in names.items() if (t := runs.get(k)) is not None}
    versions: dict[str, dict[FactKey, tuple[PartitionFact, ...]]] = {}
    gaps: dict[str, dict[str, Gap]] = {}
    past: list[str] = []
    for partition, cursor in cursors.items():
        run = previous.get(partition)
        held = run is not None and run.status not in (TriggerStatus.SUCCEEDED, TriggerStatus.SKIPPED)
        found = _partition_next(store, group, partition, cursor, inputs.facts, brought, budget, held)
        if found is None:
            past.append(partition)
            continue
        if found[0]:
            versions[partition] = found[0]
        if found[1]:
            gaps[partition] = found[1]
    known = _stored_below(store, group, inputs, brought)
    read = replace(inputs, versions=versions, previous=previous, known=known, gaps=gaps)
    return read.carrying(past) if past else read


def _has_news(
    group: Group,
    partition: str,
    cursor: GroupCursor | None,
    facts: Mapping[FactKey, PartitionFact],
    brought: Versions,
) -> bool:
    """Whether a kept fact or a commit of the batch touching ``partition`` is newer than what its cursor pins, every
    partitioned member having one (a rollup: each unit it needs, n of them for ``atLeast``; a partition a member never
    touched waits for it: no version of it is read)."""
    for member in group.partitioned_members:
        keys = member_keys(group, member, partition)
        if sum(k in facts or k in brought for k in keys) < units_needed(group, member, len(keys)):
            return False
    for member in group.partitioned_members:
        last = cursor.pins.get(member.asset_key) if cursor is not None else None
        floor = last.ordinal[0] if last is not None else -1
        for key in member_keys(group, member, partition):
            fact = facts.get(key)
            if (fact is not None and fact.order > floor) or any(v.order > floor for v in brought.get(key, ())):
                return True
    return False


@dataclass
class VersionReads:
    """EACH_VERSION per partition: the version queries one invocation makes, for all its partitioned groups (``most``:
    ``max_version_reads``; None, no bound: explain, or no resolver queue to carry the rest), and what they read: the
    next versions, by (fact key, cursor order), and a table's commits after a cursor's (for a gap before the next
    version, :mod:`lakehook.domain.partition_gaps`), by (asset, cursor order), with the batch's own commits: each read
    once per invocation, shared by the partitions and groups at that version. A partition's queries are taken whole
    or not at all, and the first partition with some always fits (an invocation makes progress), so an invocation
    makes at most ``max(most, two per partitioned member of one partition)`` of them."""

    most: int | None
    commits: Mapping[str, Sequence[SnapshotRecord]]  # the batch's commits whose partitions are known (logged next)
    now: int
    settle_ms: int = 15 * 60_000
    page: int = 1000  # a table's commits one query reads (ResolverLimits.commit_log_page)
    used: int = 0
    read: dict[tuple[FactKey, int], tuple[PartitionFact, ...]] = field(default_factory=dict)
    # per (asset, cursor order): the table's commits logged after it read so far, and whether that is all of them
    logged: dict[tuple[str, int], tuple[list[LoggedSnapshot], bool]] = field(default_factory=dict)
    filled: dict[str, bool] = field(default_factory=dict)  # per asset: a commit of the batch fills a gap of its table
    alone: bool = False  # the partition being read is the invocation's first with queries: it always goes on
    in_part: Mapping[str, Sequence[SnapshotRecord]] = field(default_factory=dict)  # the batch's commits known in part

    def take(self, wanted: Mapping[FactKey, int], checked: Mapping[str, int]) -> bool:
        """Count a partition's queries (those not made yet), if they fit: its next versions (``wanted``) and the
        first page of the commits of its members' tables after its cursor (``checked``, for a gap before the next
        version; further pages are counted as they are read)."""
        fresh = sum((key, floor) not in self.read for key, floor in wanted.items())
        fresh += sum((asset, floor) not in self.logged for asset, floor in checked.items())
        if self.most is not None and self.used and self.used + fresh > self.most:
            return False
        self.alone = self.used == 0
        self.used += fresh
        return True

    def gaps(
        self,
        store: PartitionStore,
        group: Group,
        partition: str,
        cursor: GroupCursor,
        versions: Mapping[FactKey, tuple[PartitionFact, ...]],
        brought: Versions,
    ) -> dict[str, Gap] | None:
        """Per partitioned member's asset, the gap of its table's commits before the partition's next version (the
        oldest of those read and the batch's after the cursor), unless settled: the table's commits logged after the
        cursor's up to the next version (a query per ``page`` of them, per asset and cursor order, shared by the
        partitions there) and the batch's. None when the pages up to the next version do not fit in the invocation's
        version reads (the partition is carried over, and reads them from a later invocation)."""
        found: dict[str, Gap] = {}
        for member in group.partitioned_members:
            last = cursor.pins.get(member.asset_key)
            if last is None or not gaps_shown(member.asset_key):
                continue
            floor = last.ordinal[0]
            keys = member_keys(group, member, partition)
            after = [v.order for k in keys for v in (*versions.get(k, ()), *brought.get(k, ())) if v.order > floor]
            if not after:
                continue
            log = self._log(store, member.asset_key, floor, min(after))
            if log is None:
                return None
            gap = gap_before(member.asset_key, last, min(after), log, self.now)
            if gap is not None:
                found[member.asset_key] = gap
        return found

    def fills(self, store: PartitionStore, group: Group, states: Mapping[str, AssetState]) -> bool:
        """Whether the batch brought a commit of a partitioned member of ``group`` that fills a gap of its table: one
        older than a commit logged before (a pending partition may wait at it, so the group reads a page of them).
        Only for a commit older than its table's newest: then one query of the commits logged after it (per asset
        and invocation)."""
        for member in group.partitioned_members:
            key = member.asset_key
            if key not in self.filled:
                self.filled[key] = self._filled(store, key, states.get(key))
            if self.filled[key]:
                return True
        return False

    def _filled(self, store: PartitionStore, asset_key: str, state: AssetState | None) -> bool:
        brought = {r.order for r in self.commits.get(asset_key, ())}
        newest = state.latest_record.order if state is not None and state.latest_record is not None else None
        if not brought or newest is None or min(brought) >= newest:
            return False
        self.used += 1
        logged = store.commits_after(asset_key, min(brought), len(brought) + 1)
        return any(e.record.order not in brought for e in logged)

    def _log(self, store: PartitionStore, asset_key: str, floor: int, upto: int) -> SnapshotLog | None:
        """The asset's commits known with their partitions after ``floor``, up to ``upto`` (the next version) at
        least: logged, a page a query, and this batch's. Each page past the first is counted as it is read; when the
        invocation's reads are used up before ``upto``, None (the partition is carried over), unless the partition is
        the invocation's first: then what was read (a gap at its end waits until it settles)."""
        entries, whole = self.logged.get((asset_key, floor), ([], False))
        read = (asset_key, floor) in self.logged
        while not whole and (not entries or entries[-1].record.order < upto):
            if read and self.most is not None and self.used >= self.most:
                if not self.alone:
                    return None
                break
            if read:
                self.used += 1  # the first page was counted when the partition's queries were taken
            page = store.commits_after(asset_key, entries[-1].record.order if entries else floor, self.page)
            entries, whole, read = [*entries, *page], len(page) < self.page, True
            self.logged[(asset_key, floor)] = (entries, whole)
        mine = [LoggedSnapshot(r, self.now) for r in self.commits.get(asset_key, ()) if r.order > floor]
        mine += [LoggedSnapshot(r, self.now, partial=True) for r in self.in_part.get(asset_key, ()) if r.order > floor]
        return SnapshotLog.of([*entries, *mine], lineage_of(asset_key), self.settle_ms)


def _gap_reads(
    group: Group, partition: str, cursor: GroupCursor | None, wanted: Mapping[FactKey, int], brought: Versions
) -> dict[str, int]:
    """Per partitioned member whose table shows gaps and which has a version after the cursor's (kept, ``wanted``,
    or this batch's), the order its cursor pins: the table's commits after it are read for a gap."""
    found: dict[str, int] = {}
    for member in group.partitioned_members if cursor is not None else ():
        assert cursor is not None
        last = cursor.pins.get(member.asset_key)
        if last is None or not gaps_shown(member.asset_key):
            continue
        floor = last.ordinal[0]
        keys = member_keys(group, member, partition)
        if any(k in wanted for k in keys) or any(v.order > floor for k in keys for v in brought.get(k, ())):
            found[member.asset_key] = floor
    return found


def _partition_next(
    store: PartitionStore,
    group: Group,
    partition: str,
    cursor: GroupCursor | None,
    facts: Mapping[FactKey, PartitionFact],
    brought: Versions,
    budget: VersionReads,
    held: bool,
) -> tuple[dict[FactKey, tuple[PartitionFact, ...]], dict[str, Gap]] | None:
    """One partition with news: its members' next stored versions (:func:`_next_versions`) and the gaps of their
    tables before them; None when its queries do not fit in the invocation's ``budget`` (it is carried over)."""
    wanted = _newer_keys(group, partition, cursor, facts)
    checked = {} if held else _gap_reads(group, partition, cursor, wanted, brought)
    if not budget.take({} if held else wanted, checked):
        return None
    versions: dict[FactKey, tuple[PartitionFact, ...]] = {}
    for key, floor in wanted.items():
        found = _next_versions(store, key, floor, facts.get(key), budget.read, held)
        if found:
            versions[key] = found
    gaps = budget.gaps(store, group, partition, cursor, versions, brought) if checked and cursor is not None else {}
    return None if gaps is None else (versions, gaps)


def _newer_keys(
    group: Group, partition: str, cursor: GroupCursor | None, facts: Mapping[FactKey, PartitionFact]
) -> dict[FactKey, int]:
    """The fact keys of a partition whose kept fact is newer than what its cursor pins, each with the order pinned:
    those whose next stored version is read (one query each, unless the partition's last run holds it)."""
    wanted: dict[FactKey, int] = {}
    for member in group.partitioned_members:
        last = cursor.pins.get(member.asset_key) if cursor is not None else None
        floor = last.ordinal[0] if last is not None else -1
        for key in member_keys(group, member, partition):
            fact = facts.get(key)
            if fact is not None and fact.order > floor:
                wanted[key] = floor
    return wanted


def _next_versions(
    store: PartitionStore,
    key: FactKey,
    floor: int,
    fact: PartitionFact | None,
    read: dict[tuple[FactKey, int], tuple[PartitionFact, ...]],
    held: bool,
) -> tuple[PartitionFact, ...]:
    """One fact key of a partition above the order its cursor pins (``floor``): the next stored version when the kept
    fact is newer (one query, shared by the partitions at that same version: a fan-out's; while the partition's last
    run has not succeeded, ``held``, the kept fact stands for it, unread; the fact too when no version after the
    cursor is kept); () otherwise."""
    if fact is None or fact.order <= floor:
        return ()
    if held:
        return (fact,)
    if (key, floor) not in read:
        read[(key, floor)] = tuple(store.versions_after(key, floor, 1))
    # none kept after the cursor, yet a newer fact: its versions were not kept (written while no EACH_VERSION rule
    # mapping it was enabled, or expired): the partition steps to the newest, never stuck behind what is gone
    return read[(key, floor)] or (fact,)


def _stored_below(
    store: PartitionStore, group: Group, inputs: PartitionInputs, brought: Versions
) -> frozenset[tuple[FactKey, int]]:
    """The batch's versions below what a partition's cursor pins that were stored already (its batch was handled
    before: they ran or their skip was recorded then): one batched read of those only."""
    below: set[tuple[FactKey, int]] = set()
    for partition in inputs.partitions:
        cursor = inputs.cursors.get(partition)
        for member in group.partitioned_members if cursor is not None and cursor.seq > 0 else ():
            assert cursor is not None
            last = cursor.pins.get(member.asset_key)
            floor = last.ordinal[0] if last is not None else -1
            for key in member_keys(group, member, partition):
                below.update((key, version.order) for version in brought.get(key, ()) if version.order < floor)
    return frozenset(store.stored_versions(below)) if below else frozenset()


# --- what a batch brings, for EACH_VERSION per partition: read once for every partitioned group ----------------


@dataclass(frozen=True)
class BatchVersions:
    """What a batch brings partitioned EACH_VERSION groups, read once for all of them: every commit of the batch
    touching one of their (asset, mapping, partition) keys (``versions``: kept by the apply before the facts), the
    batch's commits known with their partitions (``commits``: logged by the apply), its data commits still known in
    part (``in_part``: logged as such, a partition whose next version is one tells a gap before it) and the pieces of
    those (``pieces``: noted by the apply); and the invocation's version queries (``budget``), shared by the
    partitioned groups' reads."""

    versions: dict[FactKey, tuple[PartitionFact, ...]]
    commits: dict[str, list[SnapshotRecord]]
    in_part: dict[str, list[SnapshotRecord]]
    pieces: list[CommitPiece]
    budget: VersionReads


class PartitionVersionReads:
    """EACH_VERSION per partition, the batch-wide reads (:class:`BatchVersions`): one entry point over the work; one
    batched read of the pieces kept before of the commits the batch holds in part, none otherwise."""

    def __init__(self, stores: ResolverStores, limits: ResolverLimits):
        self._stores = stores
        self._limits = limits

    def __call__(
        self,
        work: Sequence[tuple[Rule, Group]],
        touched: Touched,
        pieces: Sequence[CommitPiece],
        recorded: Mapping[str, Sequence[SnapshotRecord]],
        now: int,
        explain: bool,
    ) -> BatchVersions:
        """What the batch brings the partitioned EACH_VERSION groups of ``work``: from the commits it ``touched``, the
        ``pieces`` of them it holds (where each starts among its commit's keys) and the snapshots it ``recorded``."""
        commits, in_part, rest = self._known_commits(work, touched, pieces, recorded)
        return BatchVersions(
            brought_versions(work, touched), commits, in_part, rest, self._version_reads(commits, in_part, now, explain)
        )

    def _known_commits(
        self,
        work: Sequence[tuple[Rule, Group]],
        touched: Touched,
        held: Sequence[CommitPiece],
        recorded: Mapping[str, Sequence[SnapshotRecord]],
    ) -> tuple[dict[str, list[SnapshotRecord]], dict[str, list[SnapshotRecord]], list[CommitPiece]]:
        """The batch's commits known with their partitions (logged by the apply), its data commits still known in
        part (logged as such: a partition whose next version is one tells a gap before it), and the pieces of those
        (noted by the apply). A commit is known once its pieces cover every key it touched
        (:mod:`lakehook.domain.commit_pieces`): the batch's, with those kept before (one batched read of the commits
        the batch holds in part)."""
        assets = {m.asset_key for rule, group in work if in_order(rule, group) for m in group.partitioned_members}
        pieces = [p for p in held if p.asset_key in assets]
        whole = whole_commits(pieces)
        rest = [p for p in pieces if p.ref not in whole and p.record.changes_data]
        store = self._stores.partitions
        stored: dict[tuple[str, int], KnownPieces] = {}
        if rest and store is not None:
            stored = store.commit_pieces(sorted({p.ref for p in rest}))
            whole |= whole_commits(rest, stored)
        commits = brought_commits(work, whole, recorded)
        return commits, _known_in_part(touched, assets, whole), [p for p in rest if p.ref not in whole]

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


def _known_in_part(
    touched: Touched, assets: Collection[str], whole: Mapping[tuple[str, int], SnapshotRecord]
) -> dict[str, list[SnapshotRecord]]:
    """The data commits of ``assets`` the batch holds and that are not known ``whole``, per asset, oldest first."""
    found: dict[str, list[SnapshotRecord]] = {}
    for asset, entries in sorted(touched.items()):
        part = {r.order: r for r, _ in entries if r.changes_data and (asset, r.order) not in whole}
        if asset in assets and part:
            found[asset] = [part[o] for o in sorted(part)]
    return found


def brought_versions(work: Sequence[tuple[Rule, Group]], touched: Touched) -> dict[FactKey, tuple[PartitionFact, ...]]:
    """Every data commit of ``touched`` touching an (asset, mapping, partition) of a partitioned EACH_VERSION group of
    ``work``, oldest first, each once: the versions the apply keeps (before the facts) and the plan steps through."""
    found: dict[FactKey, dict[int, PartitionFact]] = {}
    for rule, group in work:
        if not in_order(rule, group):
            continue
        for key in dict.fromkeys(m.asset_key for m in group.partitioned_members):
            for record, parts in touched.get(key, ()):
                for fact in facts_of(group, key, parts, record):
                    found.setdefault(fact.key, {})[fact.order] = fact
    return {key: tuple(kept[o] for o in sorted(kept)) for key, kept in sorted(found.items())}


def brought_commits(
    work: Sequence[tuple[Rule, Group]],
    whole: Mapping[tuple[str, int], SnapshotRecord],
    recorded: Mapping[str, Sequence[SnapshotRecord]],
) -> dict[str, list[SnapshotRecord]]:
    """The commits of a batch whose partitions are known, per partitioned member of an EACH_VERSION partitioned group
    of ``work``: each commit known whole (``whole``: its pieces, the batch's and those kept before, cover every key it
    touched, :mod:`lakehook.domain.commit_pieces`), and each recorded one that changed no data (it touches no
    partition's versions). A data commit recorded without its partitions, or known only in part, is not among them:
    a partition's next version waits at it (:mod:`lakehook.domain.partition_gaps`) until its pieces all came (a
    newer version of a partition in a piece still to come must not run first) or it settles."""
    assets = {m.asset_key for rule, group in work if in_order(rule, group) for m in group.partitioned_members}
    found: dict[str, dict[int, SnapshotRecord]] = {}
    for key in sorted(assets):
        known = [record for (asset, _), record in whole.items() if asset == key]
        known += [record for record in recorded.get(key, ()) if not record.changes_data]
        for record in known:
            found.setdefault(key, {}).setdefault(record.order, record)
    return {key: [kept[o] for o in sorted(kept)] for key, kept in found.items()}
