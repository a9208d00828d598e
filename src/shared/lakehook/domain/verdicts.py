"""A group's verdict and the types it is made of: what the resolver claims (READY, with its pins and window) or why
not, per group or per partition, and what explain shows. Pure data; the steps that decide them are in
:mod:`lakehook.domain.evaluation`, a member's verdict in :mod:`lakehook.domain.member_selection`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.requirements import NodeVerdict
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, Window


@dataclass(frozen=True)
class Gap:
    """A snapshot the lineage says exists after (snapshot_id, order) and before ``next_id``, not recorded yet."""

    asset_key: str
    snapshot_id: int
    order: int
    next_id: int
    until: int  # when the gap counts as final and is stepped over


@dataclass(frozen=True)
class Held:
    """EACH_VERSION: the next version of a member is a snapshot whose gate does not pass (yet): it holds the line."""

    snapshot_id: int
    status: Status
    reason: str


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


@dataclass(frozen=True)
class PartialCommit:
    """A partitioned member's newest data commit whose partitions an evaluation no stream batch brought took only in
    part: it touched ``touched`` partitions, and the evaluation took the first ``evaluated`` of its keys (the state
    keeps a commit's first 1000 keys; an evaluation writes at most ``max_facts`` facts, a fan-out key weighing the
    partitions it names). A claiming evaluation hands the rest to the resolver's queue; explain shows the first."""

    asset_key: str
    snapshot_id: int
    touched: int
    evaluated: int


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
    partial: tuple[PartialCommit, ...] = ()  # explain: the members' newest commits it evaluated only in part
    require: NodeVerdict | None = None  # a group with a require tree: the tree's verdict at every node
    # EACH_VERSION: a backfill's skip made while the cursor's run has not SUCCEEDED stays behind that run (it holds
    # the line: the next version waits for it, as it would without the skip)
    behind: Trigger | None = None

    @property
    def ready(self) -> bool:
        return self.status is Status.READY


def with_status(
    members: list[MemberEvaluation], index: int, status: Status, reason: str, required: dict[str, Any] | None = None
) -> None:
    m = members[index]
    members[index] = replace(m, status=status, reason=reason, required={**m.required, **(required or {})})


def first_blocked(group_id: str, members: list[MemberEvaluation], **extra: Any) -> GroupEvaluation:
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
    # EACH_VERSION: per partitioned member (by index) a commit of its table missing before its next version, not
    # settled yet (a commit whose partitions are not known could touch the partition)
    gaps: Mapping[int, Gap] = field(default_factory=dict)
    # the group's own cursor, where it records a point every partition starts from: the versions present when a
    # startFrom NEXT_CHANGE rule started (``baseline``), or where a completed backfill ended (policy.backfill SKIP;
    # :mod:`lakehook.domain.partition_start`)
    start: GroupCursor | None = None

    def next_after(self, index: int, last: PinnedInput) -> PinnedInput | Gap | None:
        """EACH_VERSION: the member's first known commit touching the partition after ``last`` (its next version), or
        the gap of its table's commits before it that the partition waits at."""
        found = next((v for v in self.versions.get(index, ()) if v.ordinal[0] > last.ordinal[0]), None)
        gap = self.gaps.get(index)
        return gap if found is not None and gap is not None and gap.order >= last.ordinal[0] else found

    def first(self, index: int, pin: PinnedInput) -> PinnedInput:
        """EACH_VERSION before the partition's first run: the member's oldest known commit touching it (a gate, an
        unpartitioned member, keeps its newest satisfying version ``pin``)."""
        return next(iter(self.versions.get(index, ())), pin)


@dataclass(frozen=True)
class RuleEvaluation:
    """Every group's verdict at one instant; the rule is ready when any group is (OR)."""

    rule_id: str
    groups: tuple[GroupEvaluation, ...]
    evaluated_at: int

    @property
    def ready(self) -> bool:
        return any(g.ready for g in self.groups)
