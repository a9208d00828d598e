"""A partitioned group's verdict for one partition key: run it, or what it waits for.

Pure functions, shared by the resolver (which claims what they call READY) and by explain. A group with
``partitionBy`` keys on the partitions its partitioned members' commits touched, mapped onto its fields
(:mod:`lakehook.domain.partition_rules`). What the resolver knows of one (asset, mapping, partition) is a
:class:`PartitionFact`: the newest data commit that touched it, advance-only. Partition ``p`` is READY when

- every unpartitioned member satisfies its condition on the asset state (it gates every partition and its version
  is pinned in each partition's run, but its own updates alone run no partition);
- every partitioned member has a fact for ``p`` (a data commit touched ``p``; WAITING_FOR_PARTITION otherwise);
- the policy holds against the cursor of ``(rule, group, p)``, the versions ``p`` last ran with: ``ALL_UPDATED``
  every partitioned member's fact is newer than the one pinned, ``ANY_UPDATED`` one is newer and none older;
- no cooldown (``minIntervalSeconds`` since ``p``'s last run) or quiet period (a member state changed) holds it,
  and, for a scheduled or windowed group, ``p`` has not run for the latest tick or the newest closed window yet.

This module says what ``p``'s members are and which cursor ``p`` is judged under (:func:`partition_view`); the one
judge of every group, :func:`lakehook.domain.evaluation.evaluate_group`, judges them (with that
:class:`PartitionView` and cursor) as it judges an unpartitioned group, so every group behaviour holds per partition
by the same code.

The pins are the partitioned members' facts (the snapshot of the newest commit touching ``p``: the table as of it
holds ``p`` as it is now) and the unpartitioned members' chosen versions; the trigger key hashes the partition too.

``EACH_VERSION`` steps instead through the data commits touching ``p`` (its versions, given per fact key): each
partitioned member's next one after ``p``'s cursor (the first run: the oldest known), an unpartitioned member at its
newest satisfying version; version n+1 waits until ``p``'s run for n SUCCEEDED (head of line, per partition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lakehook.domain.evaluation import GroupEvaluation, MemberEvaluation, PartitionView, select_member
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Member, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, PinnedInput
from lakehook.domain.verdicts import Gap
from lakehook.domain.versions import SnapshotRecord

FactKey = tuple[str, str, str]
"""(asset key, mapping id, partition key)"""


@dataclass(frozen=True)
class PartitionFact:
    """The newest data-changing commit of an asset that touched one partition, as a member maps it."""

    asset_key: str
    mapping: str
    partition: str
    snapshot_id: int
    order: int
    schema_id: int | None = None
    commit_time: int | None = None

    @property
    def key(self) -> FactKey:
        return (self.asset_key, self.mapping, self.partition)

    def newer_than(self, other: PartitionFact | None) -> bool:
        return other is None or self.order > other.order

    def pin(self) -> PinnedInput:
        return PinnedInput(
            asset_key=self.asset_key,
            snapshot_id=self.snapshot_id,
            snapshot_order=self.order if self.order != self.snapshot_id else None,
            schema_id=self.schema_id,
            commit_time=self.commit_time,
        )


def mapping_of(group: Group, member: Member) -> str:
    """The id of how ``member`` maps its keys onto ``group``'s partitions (members mapping alike share facts)."""
    assert member.partition is not None and group.partition_by is not None
    return member.partition.mapping_id(group.partition_by)


def facts_of(group: Group, asset_key: str, touched: TouchedPartitions, record: SnapshotRecord) -> list[PartitionFact]:
    """The facts one data-changing commit of ``asset_key`` gives ``group``'s partitioned members: each touched key
    mapped onto the group's partitions (keys that do not map are not partitions of the group). None for a commit
    that changed no data (a compaction rewrites what a partition holds, it does not change it)."""
    if not record.changes_data or group.partition_by is None:
        return []
    found: dict[FactKey, PartitionFact] = {}
    for member in group.partitioned_members:
        if member.asset_key != asset_key or member.partition is None:
            continue
        mapping = mapping_of(group, member)
        for key in touched.keys:
            partition = member.partition.fact_key(key, group.partition_by)
            if partition is not None:
                sid, order = record.snapshot_id, record.order
                fact = PartitionFact(asset_key, mapping, partition, sid, order, record.schema_id, record.commit_time)
                found[fact.key] = fact
    return list(found.values())


def partitions_of_fact(group: Group, fact: PartitionFact) -> list[str]:
    """The group's partitions a fact tells about: the one it belongs to (a rollup's unit, cut to its partition), or
    for a fan-out member every unit of its value (a day's fact names the day's 24 hours)."""
    assert group.partition_by is not None
    for member in group.partitioned_members:
        if (
            member.asset_key == fact.asset_key
            and member.partition is not None
            and mapping_of(group, member) == fact.mapping
        ):
            return member.partition.partitions_of(fact.partition, group.partition_by)
    return [fact.partition]


def member_keys(group: Group, member: Member, partition: str) -> list[FactKey]:
    """The facts ``member`` needs for ``partition``: the partition's, for a rollup every unit of it, for a fan-out
    the one of the member's value holding it (``hr=2026-12-01`` for the hour ``hr=2026-12-01-10``)."""
    assert member.partition is not None and group.partition_by is not None
    mapping = mapping_of(group, member)
    return [(member.asset_key, mapping, k) for k in member.partition.unit_keys(partition, group.partition_by)]


def units_needed(group: Group, member: Member, units: int) -> int:
    """How many of a partitioned member's ``units`` fact keys for a partition need a fact: each of them, or, for a
    rollup with ``{"atLeast": n}``, n (over the product of its rolled-up fields)."""
    assert member.partition is not None and group.partition_by is not None
    n = member.partition.at_least(group.partition_by)
    return units if n is None else min(n, units)


def fact_keys(group: Group, partition: str) -> list[FactKey]:
    """What the group needs to know of ``partition``: one fact per partitioned member (per unit for a rollup)."""
    return [k for m in group.partitioned_members for k in member_keys(group, m, partition)]


def touched_since(
    group: Group,
    partition: str,
    facts: Mapping[FactKey, PartitionFact],
    cursor: GroupCursor | None,
    start: GroupCursor | None = None,
) -> bool:
    """Whether a partitioned member has a data commit touching ``partition`` (a rollup: one of its units) newer than
    what the partition's last run pinned (and, for a startFrom NEXT_CHANGE rule, than what was there when it started:
    ``start``): it stays pending, visible and counted, until it runs, whether or not its members are complete (a
    rollup's day missing an hour is pending)."""
    floor = counted_as_run(cursor, start)
    for member in group.partitioned_members:
        last = floor.pins.get(member.asset_key) if floor is not None else None
        for key in member_keys(group, member, partition):
            fact = facts.get(key)
            if fact is not None and (last is None or fact.order > last.ordinal[0]):
                return True
    return False


def counted_as_run(cursor: GroupCursor | None, start: GroupCursor | None) -> GroupCursor | None:
    """What a partition counts as run, after which its partitioned members' commits touching it are news: its own
    ``cursor``'s pins (None before its first run), and, for a startFrom NEXT_CHANGE rule, where the rule started
    (``start``, the group's cursor, a baseline) where that is newer: a commit there then never runs the partition.
    EACH_VERSION reads a partition's next versions after these (the first after the start, none before it)."""
    own = cursor if cursor is not None and cursor.seq > 0 else None
    if start is None or not start.baseline:
        return own
    pins = dict(own.pins) if own is not None else {}
    for key, there in start.pins.items():
        if key not in pins or there.ordinal > pins[key].ordinal:
            pins[key] = there
    return (own if own is not None else start).model_copy(update={"pins": pins})


def partition_view(
    rule: Rule,
    group: Group,
    partition: str,
    facts: Mapping[FactKey, PartitionFact],
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    registered: Mapping[str, bool] | None = None,
    *,
    versions: Mapping[FactKey, Sequence[PartitionFact]] | None = None,
    gaps: Mapping[str, Gap] | None = None,
    start: GroupCursor | None = None,
) -> tuple[PartitionView, GroupCursor | None]:
    """What the one judge (:func:`lakehook.domain.evaluation.evaluate_group`) judges ``partition`` of ``group`` on: the
    partition's view (its members' verdicts, :func:`partition_members`) and the cursor it is judged under: its own
    ``cursor`` (None before its first run), or, for a startFrom NEXT_CHANGE rule, that cursor as the rule's start
    leaves it (:func:`started`). The group's steps judge the view as they judge any group: the policy, schedule,
    window, backfill, cooldown and quiet period hold per partition. EACH_VERSION: ``versions`` holds the known data
    commits touching the partition per fact key (after the partition's cursor: its next ones), and ``gaps`` per
    partitioned member (by asset key) a gap of its table's commits before its next version that the partition waits
    at. ``start``: the group's own cursor, the point every partition starts from
    (:mod:`lakehook.domain.partition_start`): a startFrom NEXT_CHANGE rule's starting point, or where a completed
    backfill ended (its commits are skipped, policy.backfill SKIP)."""
    first = cursor is None or cursor.seq == 0  # EACH_VERSION: a rollup's first run is the commit that completed it
    view = partition_members(group, partition, facts, states, registered, versions, first=first)
    if gaps:
        view = replace(view, gaps={i: gaps[m.asset_key] for i, m in enumerate(group.members) if m.asset_key in gaps})
    if start is not None:
        view = replace(view, start=start)
        if start.baseline:
            cursor = started(rule, group, partition, cursor, start, view)
    return view, cursor


def started(
    rule: Rule, group: Group, partition: str, cursor: GroupCursor | None, start: GroupCursor, view: PartitionView
) -> GroupCursor | None:
    """startFrom NEXT_CHANGE: ``partition``'s cursor as the rule's starting point ``start`` (the group's cursor: each
    partitioned member's newest data commit when the rule started) leaves it. Per partitioned member, the version the
    partition had then counts as run: its newest commit touching the partition if that is not newer than the start,
    else the start's own version (the partition has news since); a partition that ran a newer one keeps it. The
    claim is still conditional on the partition's own cursor (the lane's): only the evaluation sees this one."""
    base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id, partition)
    pins = dict(base.pins)
    for i in sorted(view.counted):
        pin, there = view.members[i].pin, start.pins.get(group.members[i].asset_key)
        if pin is None or there is None:
            continue
        there = pin if pin.ordinal <= there.ordinal else there
        own = pins.get(there.asset_key)
        if own is None or there.ordinal > own.ordinal:
            pins[there.asset_key] = there
    if pins == base.pins:
        return cursor
    return base.model_copy(update={"pins": pins, "baseline": True})


def partition_members(
    group: Group,
    partition: str,
    facts: Mapping[FactKey, PartitionFact],
    states: Mapping[str, AssetState],
    registered: Mapping[str, bool] | None = None,
    versions: Mapping[FactKey, Sequence[PartitionFact]] | None = None,
    *,
    first: bool = False,
) -> PartitionView:
    """The members' verdicts for ``partition``: an unpartitioned member's on its asset's state (it gates every
    partition); a partitioned member's version is its newest data commit touching the partition (a rollup's: the
    newest of its units, once each has one, or at least n of them for ``atLeast``), WAITING_FOR_PARTITION while
    there is none (or it is below minSnapshotId). EACH_VERSION (``versions``): each partitioned member's steps, from
    the commit that completed its rollup when the partition never ran (``first``)."""
    members: list[MemberEvaluation] = []
    for member in group.members:
        if member.partition is None:
            known = None if registered is None else registered.get(member.asset_key, False)
            members.append(select_member(member, states.get(member.asset_key), known))
            continue
        wanted = member_keys(group, member, partition)
        found = [facts[k] for k in wanted if k in facts]
        needed = units_needed(group, member, len(wanted))
        if wanted and len(found) < needed:  # a rollup missing units (or a partition of no commit yet)
            at_least = needed if needed < len(wanted) else None  # n of them, not each
            members.append(_incomplete(member, partition, wanted, found, _coverage_of(group, member), at_least))
            continue
        fanned = bool(member.partition.fan_out_fields(group.partition_by or ()))
        members.append(_partitioned(member, partition, max(found, key=lambda f: f.order, default=None), fanned))
    counted = frozenset(i for i, m in enumerate(group.members) if m.partition is not None)
    steps = (
        {i: _steps(group, group.members[i], partition, versions, facts if first else None) for i in counted}
        if versions is not None
        else {}
    )
    return PartitionView(partition, tuple(members), counted, steps)


def _steps(
    group: Group,
    member: Member,
    partition: str,
    versions: Mapping[FactKey, Sequence[PartitionFact]],
    facts: Mapping[FactKey, PartitionFact] | None = None,
) -> tuple[PinnedInput, ...]:
    """EACH_VERSION: a partitioned member's known commits touching ``partition`` (a rollup's: any of its units), oldest
    first, each once, none below its minSnapshotId. Before the partition's first run (``facts`` given) none before
    the commit that completed a rollup (:func:`completed_at`): the table as of an older one does not hold the
    partition whole, so those commits are no version of it of their own (the first run's data holds them)."""
    floor = member.condition.min_snapshot_id
    keys = member_keys(group, member, partition)
    if facts is not None:
        complete = completed_at(group, member, keys, versions, facts)
        floor = complete if floor is None or (complete is not None and complete > floor) else floor
    found: dict[int, PartitionFact] = {}
    for key in keys:
        for fact in versions.get(key, ()):
            if floor is None or fact.order >= floor:
                found.setdefault(fact.order, fact)
    return tuple(found[order].pin() for order in sorted(found))


def completed_at(
    group: Group,
    member: Member,
    keys: Sequence[FactKey],
    versions: Mapping[FactKey, Sequence[PartitionFact]],
    facts: Mapping[FactKey, PartitionFact],
) -> int | None:
    """The order of the commit at which a partitioned member first held a partition: each of its fact ``keys`` (a
    rollup's units, or n of them for ``atLeast``) has a commit at or before it, judged by each key's oldest known
    commit (its oldest kept version, else its fact); None while too few keys have one. One key: its oldest commit."""
    firsts = sorted(
        min([v.order for v in versions.get(k, ())] + ([facts[k].order] if k in facts else []))
        for k in keys
        if versions.get(k) or k in facts
    )
    needed = units_needed(group, member, len(keys))
    return firsts[needed - 1] if needed and len(firsts) >= needed else None


def _coverage_of(group: Group, member: Member) -> str:
    """`` (hours 06 to 21)`` for a rollup over a range of its units (`` (region eu, us)`` over values, joined by
    `` x ``); empty for one over every unit."""
    assert member.partition is not None and group.partition_by is not None
    return member.partition.describe_coverage(group.partition_by)


def _incomplete(
    member: Member,
    partition: str,
    wanted: list[FactKey],
    found: list[PartitionFact],
    coverage: str = "",
    needed: int | None = None,
) -> MemberEvaluation:
    """A partitioned member missing facts for ``partition``: the one it needs, or how many of its units (of the
    ``needed`` ones, for ``atLeast``) have one, and which are missing."""
    if len(wanted) == 1 and not coverage:
        reason = f"no data commit has touched {_touching(partition, wanted[0][2])} yet"
        return MemberEvaluation(
            member.asset_key, Status.WAITING_FOR_PARTITION, None, {}, {"partition": partition}, reason
        )
    have = {f.partition for f in found}
    missing = [k for _, _, k in wanted if k not in have]
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    counted = "" if needed is None else f", at least {needed} needed"
    reason = (
        f"{len(found)} of the {len(wanted)} units of {partition}{coverage} have a data commit{counted}; missing {shown}"
    )
    current = {"units": len(found), "missing": missing[:24]}
    required: dict[str, Any] = {"partition": partition, "units": len(wanted)}
    if needed is not None:
        required["atLeast"] = needed
    return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, current, required, reason)


def _touching(partition: str, key: str) -> str:
    """What a member's commit touches for ``partition``: the partition, or the value of a fan-out member holding it
    (``hr=2026-12-01 (fanned out to hr=2026-12-01-10)``)."""
    return partition if key == partition else f"{key} (fanned out to {partition})"


def _partitioned(member: Member, partition: str, fact: PartitionFact | None, fanned: bool = False) -> MemberEvaluation:
    """A partitioned member's verdict: its newest commit touching the partition, pinned (whether it is newer than
    what the partition last ran with is the policy's to judge), or why there is none to pin."""
    required: dict[str, Any] = {"partition": partition}
    floor = member.condition.min_snapshot_id
    if floor is not None:
        required["minSnapshotId"] = floor
    if fact is None:
        reason = f"no data commit has touched {partition} yet"
        return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, {}, required, reason)
    current: dict[str, Any] = {"snapshotId": fact.snapshot_id, "order": fact.order, "partition": partition}
    if fanned and fact.partition != partition:
        current["fanOutOf"] = fact.partition  # a fan-out: the member's commit touched the value holding it
    if floor is not None and fact.order < floor:
        touching = _touching(partition, fact.partition)
        reason = f"the newest commit touching {touching} is {fact.snapshot_id}, below minSnapshotId {floor}"
        return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, current, required, reason)
    return MemberEvaluation(member.asset_key, Status.READY, fact.pin(), current, required)


def summarize(verdicts: Sequence[GroupEvaluation]) -> tuple[Status, str]:
    """A partitioned group's own status from its partitions' verdicts: READY if one is, else the first one's."""
    if not verdicts:
        return Status.WAITING_FOR_PARTITION, "no partition of the group is waiting: no commit touched one since"
    ready = [v for v in verdicts if v.ready]
    if ready:
        return Status.READY, f"{len(ready)} of {len(verdicts)} partitions shown are ready"
    first = verdicts[0]
    return first.status, first.reason or first.status.value
