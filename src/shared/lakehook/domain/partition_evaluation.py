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
- no cooldown (``minIntervalSeconds`` since ``p``'s last run) or quiet period (a member state changed) holds it.

The pins are the partitioned members' facts (the snapshot of the newest commit touching ``p``: the table as of it
holds ``p`` as it is now) and the unpartitioned members' chosen versions; the trigger key hashes the partition too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lakehook.domain.evaluation import GroupEvaluation, MemberEvaluation, select_member
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput
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


def fact_keys(group: Group, partition: str) -> list[FactKey]:
    """What the group needs to know of ``partition``: one fact per partitioned member (per unit for a rollup)."""
    return [k for m in group.partitioned_members for k in member_keys(group, m, partition)]


def touched_since(
    group: Group, partition: str, facts: Mapping[FactKey, PartitionFact], cursor: GroupCursor | None
) -> bool:
    """Whether a partitioned member has a data commit touching ``partition`` (a rollup: one of its units) newer than
    what the partition's last run pinned: it stays pending, visible and counted, until it runs, whether or not its
    members are complete (a rollup's day missing an hour is pending)."""
    if cursor is not None and cursor.seq == 0:
        cursor = None
    for member in group.partitioned_members:
        last = cursor.pins.get(member.asset_key) if cursor is not None else None
        for key in member_keys(group, member, partition):
            fact = facts.get(key)
            if fact is not None and (last is None or fact.order > last.ordinal[0]):
                return True
    return False


def evaluate_partition(
    rule: Rule,
    group: Group,
    partition: str,
    facts: Mapping[FactKey, PartitionFact],
    states: Mapping[str, AssetState],
    cursor: GroupCursor | None,
    now: int,
    registered: Mapping[str, bool] | None = None,
) -> GroupEvaluation:
    """The verdict of ``group`` for ``partition``: READY with the pins to claim, or the first thing it waits for.
    ``cursor`` is the partition's own cursor (None before its first run)."""
    if cursor is not None and cursor.seq == 0:
        cursor = None
    members: list[MemberEvaluation] = []
    pins: list[PinnedInput] = []
    behind = False
    for member in group.members:
        if member.partition is None:
            known = None if registered is None else registered.get(member.asset_key, False)
            gate = select_member(member, states.get(member.asset_key), known)
            members.append(gate)
            if gate.pin is not None:
                pins.append(gate.pin)
            continue
        wanted = member_keys(group, member, partition)
        found = [facts[k] for k in wanted if k in facts]
        if wanted and len(found) < len(wanted):  # a rollup missing units (or a partition of no commit yet)
            members.append(_incomplete(member, partition, wanted, found, _coverage_of(group, member)))
            continue
        fact = max(found, key=lambda f: f.order, default=None)
        members.append(_partitioned(member, partition, fact, cursor))
        if fact is not None:
            pins.append(fact.pin())
            last = cursor.pins.get(member.asset_key) if cursor is not None else None
            behind = behind or (last is not None and fact.order < last.ordinal[0])
    verdict = _decide(rule, group, partition, members, cursor, states, now, behind)
    if verdict.ready:
        return replace(verdict, pins=tuple(pins))
    return verdict


def _coverage_of(group: Group, member: Member) -> str:
    """`` (hours 06 to 21)`` for a rollup over a range of its units (`` (region eu, us)`` over values, joined by
    `` x ``); empty for one over every unit."""
    assert member.partition is not None and group.partition_by is not None
    return member.partition.describe_coverage(group.partition_by)


def _incomplete(
    member: Member, partition: str, wanted: list[FactKey], found: list[PartitionFact], coverage: str = ""
) -> MemberEvaluation:
    if len(wanted) == 1 and not coverage:
        reason = f"no data commit has touched {_touching(partition, wanted[0][2])} yet"
        return MemberEvaluation(
            member.asset_key, Status.WAITING_FOR_PARTITION, None, {}, {"partition": partition}, reason
        )
    have = {f.partition for f in found}
    missing = [k for _, _, k in wanted if k not in have]
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    reason = f"{len(found)} of the {len(wanted)} units of {partition}{coverage} have a data commit; missing {shown}"
    current = {"units": len(found), "missing": missing[:24]}
    required = {"partition": partition, "units": len(wanted)}
    return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, current, required, reason)


def _touching(partition: str, key: str) -> str:
    """What a member's commit touches for ``partition``: the partition, or the value of a fan-out member holding it
    (``hr=2026-12-01 (fanned out to hr=2026-12-01-10)``)."""
    return partition if key == partition else f"{key} (fanned out to {partition})"


def _partitioned(
    member: Member, partition: str, fact: PartitionFact | None, cursor: GroupCursor | None
) -> MemberEvaluation:
    required: dict[str, Any] = {"partition": partition}
    floor = member.condition.min_snapshot_id
    if floor is not None:
        required["minSnapshotId"] = floor
    if fact is None:
        reason = f"no data commit has touched {partition} yet"
        return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, {}, required, reason)
    current: dict[str, Any] = {"snapshotId": fact.snapshot_id, "order": fact.order, "partition": partition}
    if fact.partition != partition:
        current["fanOutOf"] = fact.partition  # a fan-out: the member's commit touched the value holding it
    touching = _touching(partition, fact.partition)
    if floor is not None and fact.order < floor:
        reason = f"the newest commit touching {touching} is {fact.snapshot_id}, below minSnapshotId {floor}"
        return MemberEvaluation(member.asset_key, Status.WAITING_FOR_PARTITION, None, current, required, reason)
    last = cursor.pins.get(member.asset_key) if cursor is not None else None
    if last is not None and fact.order <= last.ordinal[0]:
        required["newerThan"] = last.to_api()
        touched = "it" if touching == partition else touching
        reason = f"snapshot {last.snapshot_id} already ran for {partition}; waiting for a newer commit touching "
        reason += touched
        return MemberEvaluation(member.asset_key, Status.WAITING_FOR_UPDATE, fact.pin(), current, required, reason)
    return MemberEvaluation(member.asset_key, Status.READY, fact.pin(), current, required)


def _decide(
    rule: Rule,
    group: Group,
    partition: str,
    members: list[MemberEvaluation],
    cursor: GroupCursor | None,
    states: Mapping[str, AssetState],
    now: int,
    behind: bool,
) -> GroupEvaluation:
    """The partition's verdict from its members' (what blocks first: the rule disabled, a gate, a partition no commit
    of a member touched yet, the policy, then a cooldown or a quiet period)."""
    answer = _Answer(group.group_id, partition, tuple(members))
    if not rule.enabled:
        return answer(Status.DISABLED, "the rule is disabled")
    partitioned = [m for m, g in zip(members, group.members, strict=True) if g.partition is not None]
    gates = [m for m, g in zip(members, group.members, strict=True) if g.partition is None]
    waiting = (
        _first_gate(gates, partition)
        or _missing(members, partition)
        or _policy_waits(rule, members, partitioned, partition, behind)
    )
    if waiting is not None:
        return answer(*waiting)
    held = _cooldown(rule, cursor, partition, now) or _quiet(rule, group, states, partition, now)
    if held is not None:
        return answer(*held)
    return answer(Status.READY, f"{partition}: ready")


@dataclass(frozen=True)
class _Answer:
    """A partition's verdict with its members, built once the status and reason are known."""

    group_id: str
    partition: str
    members: tuple[MemberEvaluation, ...]

    def __call__(self, status: Status, reason: str, until: int | None = None) -> GroupEvaluation:
        return GroupEvaluation(
            self.group_id, status, self.members, until=until, reason=reason, partition=self.partition
        )


_Wait = tuple[Status, str]
_Hold = tuple[Status, str, int]


def _first_gate(gates: list[MemberEvaluation], partition: str) -> _Wait | None:
    """The first unpartitioned member (a gate of every partition) that is not satisfied."""
    gate = next((m for m in gates if m.status is not Status.READY), None)
    if gate is None:
        return None
    return gate.status, f"{partition}: waiting for {gate.asset_key} ({gate.reason})"


def _missing(members: list[MemberEvaluation], partition: str) -> _Wait | None:
    """The partitioned members no data commit of which touched the partition yet (or below minSnapshotId)."""
    missing = [m for m in members if m.status is Status.WAITING_FOR_PARTITION]
    if not missing:
        return None
    names = ", ".join(m.asset_key for m in missing)
    return Status.WAITING_FOR_PARTITION, f"{partition}: waiting for {names} ({missing[0].reason})"


def _policy_waits(
    rule: Rule, members: list[MemberEvaluation], partitioned: list[MemberEvaluation], partition: str, behind: bool
) -> _Wait | None:
    """ALL_UPDATED: every partitioned member touched the partition since its last run; ANY_UPDATED: one did, and
    none would pin a commit older than the partition ran with."""
    updated = [m for m in partitioned if m.status is Status.READY]
    stale = [m for m in partitioned if m.status is Status.WAITING_FOR_UPDATE]
    ready = (bool(updated) and not behind) if rule.policy.mode is Mode.ANY_UPDATED else not stale
    if ready:
        return None
    waiting = stale if stale else members
    names = ", ".join(m.asset_key for m in waiting)
    return Status.WAITING_FOR_UPDATE, f"{partition}: waiting for {names} ({waiting[0].reason})"


def _cooldown(rule: Rule, cursor: GroupCursor | None, partition: str, now: int) -> _Hold | None:
    """``minIntervalSeconds`` since the partition's last run."""
    interval = rule.policy.min_interval_seconds
    if cursor is None or cursor.claimed_at is None or not interval:
        return None
    ends = cursor.claimed_at + interval * 1000
    if ends <= now:
        return None
    return (
        Status.COOLDOWN,
        f"{partition}: last ran at {ms_to_iso(cursor.claimed_at)}; minIntervalSeconds is {interval}",
        ends,
    )


def _quiet(rule: Rule, group: Group, states: Mapping[str, AssetState], partition: str, now: int) -> _Hold | None:
    """``quietPeriodSeconds`` since any member's state changed."""
    quiet = rule.policy.quiet_period_seconds
    changed = [s.updated_at for k in group.asset_keys if (s := states.get(k)) and s.updated_at is not None]
    if not quiet or not changed or max(changed) + quiet * 1000 <= now:
        return None
    why = f"{partition}: a member changed at {ms_to_iso(max(changed))}; quietPeriodSeconds is {quiet}"
    return Status.QUIET_PERIOD, why, max(changed) + quiet * 1000


def summarize(verdicts: Sequence[GroupEvaluation]) -> tuple[Status, str]:
    """A partitioned group's own status from its partitions' verdicts: READY if one is, else the first one's."""
    if not verdicts:
        return Status.WAITING_FOR_PARTITION, "no partition of the group is waiting: no commit touched one since"
    ready = [v for v in verdicts if v.ready]
    if ready:
        return Status.READY, f"{len(ready)} of {len(verdicts)} partitions shown are ready"
    first = verdicts[0]
    return first.status, first.reason or first.status.value
