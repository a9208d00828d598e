"""What one group contributes to the gather (:class:`lakehook.usecases.resolve_gather.GatherInputs`), on one path
for every group: the gather reads what a batch needs once for all its groups (member states and cursors, EACH_VERSION
history and snapshot logs, the batch's partition facts and commits: :class:`SharedReads`), then, in one loop over
its work, each group's own reads (:class:`GroupInputs`): the trigger its cursor names (head of line, every group
alike: :func:`head_of_line`), its view of the batch's version reads, and what its kind of group adds
(:class:`GroupReads`): an unpartitioned group its coverage intervals
(:class:`WholeReads`); a partitioned group its partitions' reads
(:class:`lakehook.usecases.resolve_partition_reads.PartitionedReads`). The kind only decides which reads a group
makes; the plan reads :class:`GroupInputs` for every group alike (its lanes' kind follows from what was read:
``partitions`` or not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from lakehook.domain.coverage import Span
from lakehook.domain.rules import Group, Mode, Rule
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import GroupRef, ResolutionInputs
from lakehook.usecases.coverage import coverage_of_groups
from lakehook.usecases.resolve_partitions import PartitionInputs, Versions
from lakehook.usecases.resolve_report import ResolverStores
from lakehook.usecases.resolve_whole_versions import GroupVersions


@dataclass(frozen=True)
class Wake:
    """Which partitioned groups read their pending partitions: those a deferral, an unpartitioned member's change or
    an evaluation (``everything``) woke scan them from the newest key, a continuation below its key (``after``); the
    others (a commit of a partitioned member, a slice) evaluate the partitions named (``given``: carried over)."""

    everything: bool = True
    scan: frozenset[GroupRef] = frozenset()
    after: Mapping[GroupRef, str] = field(default_factory=dict)
    given: Mapping[GroupRef, frozenset[str]] = field(default_factory=dict)

    def page(self, ref: GroupRef) -> tuple[bool, str | None]:
        """Whether the group reads a page of its pending partitions, and below which key."""
        if self.everything or ref in self.scan:
            return True, None
        if ref in self.after:
            return True, self.after[ref]
        return False, None


@dataclass(frozen=True)
class GroupInputs:
    """What one group's lanes read of their own, beside the batch-wide reads: the trigger the group cursor names
    (head of line), an unpartitioned group's coverage intervals (a group with coverage members), a partitioned
    group's partitions' reads (None: the group is its one lane), or the error met reading for it (its plan raises
    it); and its view of the batch's whole-table version reads (EACH_VERSION over its members' snapshot logs and
    history, :class:`lakehook.usecases.resolve_whole_versions.GroupVersions`)."""

    previous: Trigger | None = None
    coverage: dict[str, list[Span]] | None = None
    partitions: PartitionInputs | None = None
    error: BaseException | None = None
    versions: GroupVersions = field(default_factory=GroupVersions)


@dataclass
class SharedReads:
    """What the gather read once for all the groups of an invocation, that a group's own reads start from: the
    member states and cursors, the partitions the batch names per partitioned group and the versions it brings
    (EACH_VERSION per partition), what woke each group, whether it is explain, and the clock."""

    inputs: ResolutionInputs
    now: int
    explain: bool = False
    wake: Wake = field(default_factory=Wake)
    named: Mapping[GroupRef, frozenset[str]] = field(default_factory=dict)
    versions: Versions = field(default_factory=dict)


class GroupReads(Protocol):
    """One kind of group's own reads (made once the batch-wide ones are): what its lanes read beside them."""

    def __call__(self, rule: Rule, group: Group, shared: SharedReads) -> GroupInputs: ...


class WholeReads:
    """An unpartitioned group's own reads: its coverage intervals, from what its cursor still needs (read once:
    later windows of its claims lie inside that), when it has coverage members; a rule error met reading them is
    the group's (its plan raises it)."""

    def __init__(self, stores: ResolverStores, rule_error: Callable[[BaseException], bool]):
        self._stores = stores
        self._rule_error = rule_error

    def __call__(self, rule: Rule, group: Group, shared: SharedReads) -> GroupInputs:
        if not group.covers:
            return GroupInputs()
        cursor = shared.inputs.cursors.get((rule.rule_id, group.group_id))
        try:
            return GroupInputs(coverage=coverage_of_groups(self._stores.coverage, [(group, cursor)], shared.now))
        except Exception as exc:
            if not self._rule_error(exc):
                raise
            return GroupInputs(error=exc)


def head_of_line(stores: ResolverStores, rule: Rule, cursor: GroupCursor | None) -> Trigger | None:
    """The trigger an EACH_VERSION group's cursor names (head of line), one read; None for any other group."""
    if rule.policy.mode is not Mode.EACH_VERSION or cursor is None or not cursor.trigger_key:
        return None
    return stores.triggers.get(cursor.trigger_key)
