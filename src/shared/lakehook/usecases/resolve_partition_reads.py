"""A partitioned group's own reads in the gather (:class:`PartitionedReads`, the partitioned kind of
:class:`lakehook.usecases.resolve_group_reads.GroupReads`): the partitions its batch names or it was given, and, when
its wake asks for it, a page of its pending partitions (one query); then, batched, the kept facts and the cursors of
them all, and the pending marks of those not on the page (explain: a short page, and the count, and no marks); its
coverage intervals over the spans of those partitions; and EACH_VERSION per partition, its partitions' next versions,
head-of-line triggers and the gaps before them, counted against the invocation's version queries, with the batch's
versions of its members' keys (:mod:`lakehook.usecases.resolve_partition_versions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lakehook.domain.partition_evaluation import FactKey, fact_keys
from lakehook.domain.partition_start import ended_backfills
from lakehook.domain.plan_lanes import EXPLAIN_PAGE
from lakehook.domain.rules import Group, Rule
from lakehook.domain.triggers import GroupCursor, partition_cursor_id
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import GroupRef, PartitionWork
from lakehook.usecases.coverage import coverage_of_partitions
from lakehook.usecases.resolve_group_reads import GroupInputs, SharedReads
from lakehook.usecases.resolve_partition_versions import VersionReads, partition_versions
from lakehook.usecases.resolve_partitions import PartitionInputs, in_order
from lakehook.usecases.resolve_report import ResolverLimits, ResolverStores, bounded


def carried_groups(
    carried: Sequence[PartitionWork], rules: Mapping[str, Rule], focus: dict[str, set[str]]
) -> tuple[dict[GroupRef, str], dict[GroupRef, frozenset[str]]]:
    """Add the groups of carried-over partition work whose rule (in ``rules``) still has them partitioned to the
    work (``focus``): which continue a scan below a key, and which partitions each is given."""
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


class PartitionedReads:
    """A partitioned group's own reads (see the module docstring); one per invocation, its version queries counted
    against ``budget`` for all its partitioned groups. A group with no partition store to read gets the error its
    plan raises."""

    def __init__(self, stores: ResolverStores, limits: ResolverLimits, budget: VersionReads):
        self._stores = stores
        self._limits = limits
        self._budget = budget

    def __call__(self, rule: Rule, group: Group, shared: SharedReads) -> GroupInputs:
        store = self._stores.partitions
        if store is None:
            return GroupInputs(
                error=ValueError("a partitioned group needs the resolver's partition store, and none is set")
            )
        ref = (rule.rule_id, group.group_id)
        given = shared.named.get(ref, frozenset()) | shared.wake.given.get(ref, frozenset())
        read = self._partition_inputs(store, rule, group, given, self._scan(store, rule, group, shared), shared.explain)
        if group.covers:  # each partition covers its own span
            read = replace(read, coverage=coverage_of_partitions(self._stores.coverage, group, read.partitions))
        if in_order(rule, group):
            start = shared.inputs.cursors.get(ref)  # a startFrom NEXT_CHANGE rule's start: versions are read after it
            read = partition_versions(self._stores.triggers, store, self._budget, group, read, shared.versions, start)
            members = set(group.asset_keys)
            read = replace(read, batch_versions={k: v for k, v in shared.versions.items() if k[0] in members})
        return GroupInputs(partitions=read)

    def _scan(self, store: PartitionStore, rule: Rule, group: Group, shared: SharedReads) -> tuple[bool, str | None]:
        """Whether the group reads a page of its pending partitions, and below which key: as its wake asks, or from
        the newest when a backfill of it ended or (EACH_VERSION) the batch fills a gap of a member's table."""
        ref, states = (rule.rule_id, group.group_id), shared.inputs.states
        scan = shared.wake.page(ref)
        if not scan[0] and ended_backfills(rule, group, states, shared.inputs.cursors.get(ref)):
            return True, None  # a backfill ended: each pending partition absorbs the commits it made there
        if not scan[0] and in_order(rule, group) and self._budget.fills(store, group, states):
            return True, None  # a commit that fills a gap of its table: a pending partition may wait at it
        return scan

    def _partition_inputs(
        self,
        store: PartitionStore,
        rule: Rule,
        group: Group,
        given: frozenset[str],
        scan: tuple[bool, str | None],
        explain: bool,
    ) -> PartitionInputs:
        """One partitioned group's reads: a page of its pending partitions when ``scan`` asks for it (below a key),
        the marks of the ``given`` partitions not on it, and, batched, the facts and cursors of them all."""
        rule_id, group_id = rule.rule_id, group.group_id
        page, more, whole = self._pending_page(store, rule_id, group_id, scan, explain)
        unmarked = [p for p in given if p not in page]
        if unmarked and not explain:
            page = {**page, **store.marks(rule_id, group_id, unmarked)}
        partitions, wanted, past = self._within_reads(group, PartitionInputs(given, page, {}, {}).partitions, explain)
        if past:
            given, page = given - set(past), {p: m for p, m in page.items() if p not in past}
        return PartitionInputs(
            given,
            page,
            store.facts(wanted) if wanted else {},
            self._cursors(rule_id, group_id, partitions),
            store.count_pending(rule_id, group_id) if explain else None,
            more,
            whole and not past,
            tuple(past),
        )

    def _cursors(self, rule_id: str, group_id: str, partitions: list[str]) -> dict[str, GroupCursor]:
        """The cursors of a group's ``partitions`` that exist: one batched read (none for no partition)."""
        ids = {p: partition_cursor_id(group_id, p) for p in partitions}
        cursors = self._stores.triggers.get_cursors([(rule_id, i) for i in ids.values()]) if ids else {}
        return {p: c for p, i in ids.items() if (c := cursors.get((rule_id, i))) is not None}

    def _within_reads(
        self, group: Group, partitions: list[str], explain: bool
    ) -> tuple[list[str], list[FactKey], list[str]]:
        """The partitions (newest first) whose facts fit in ``max_fact_reads`` (one at least; a rollup's partition
        reads a fact per unit), their fact keys, and the partitions past the bound: carried to the resolver queue,
        evaluated in a later invocation (with no queue, or for explain, nothing is past it)."""
        bound = self._limits.max_fact_reads if bounded(self._stores, explain) else None
        kept: list[str] = []
        wanted: list[FactKey] = []
        for i, partition in enumerate(partitions):
            keys = fact_keys(group, partition)
            if bound is not None and kept and len(wanted) + len(keys) > bound:
                return kept, wanted, partitions[i:]
            kept.append(partition)
            wanted.extend(keys)
        return kept, wanted, []

    def _pending_page(
        self, store: PartitionStore, rule_id: str, group_id: str, scan: tuple[bool, str | None], explain: bool
    ) -> tuple[dict[str, str], str | None, bool]:
        """A page of the group's pending partitions when ``scan`` asks for one (below its key): the page, the key the
        next page starts below (a full page, not explain), and whether the page holds every pending partition."""
        wanted, below = scan
        if not wanted:
            return {}, None, False
        size = EXPLAIN_PAGE if explain else self._limits.pending_page
        page = store.pending(rule_id, group_id, size, below)
        full = len(page) >= size
        return page, min(page) if full and not explain else None, below is None and not full
