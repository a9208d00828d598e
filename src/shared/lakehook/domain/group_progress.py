"""A group's evaluation in progress (:class:`Evaluating`: its inputs, its members' verdicts, the pins and window
chosen so far) and the policy's step after a cursor: which pins the group claims next under ALL_UPDATED,
ANY_UPDATED or EACH_VERSION (:func:`advance`), or why each member waits. Pure; the group steps
(:mod:`lakehook.domain.group_steps`) take them in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.conditions import history_order
from lakehook.domain.coverage import Span
from lakehook.domain.json_form import json_form
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.requirements import NodeVerdict
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, Window
from lakehook.domain.verdicts import Backlog, Gap, GroupEvaluation, Held, PartitionView, first_blocked, with_status
from lakehook.domain.version_history import VersionLog, next_of
from lakehook.domain.versions import SnapshotLog


@dataclass
class Evaluating:
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
    require: NodeVerdict | None = None  # a group with require: its tree's verdict at every node, as last judged

    @property
    def gid(self) -> str:
        return self.group.group_id

    @property
    def counted(self) -> frozenset[int] | None:
        """The members whose updates count for the policy (None: every member)."""
        return self.partition.counted if self.partition is not None else None


def _partition_blocked(g: Evaluating, members: Sequence[MemberEvaluation], **extra: Any) -> GroupEvaluation:
    """A partition's wait on its members: the first unsatisfied gate (an unpartitioned member), else every member
    with the first blocked partitioned member's status, named together (``waiting for orders, payments (…)``)."""
    view = g.partition
    assert view is not None
    gates = [m for i, m in enumerate(members) if i not in view.counted and m.status is not Status.READY]
    first = gates[0] if gates else next(m for m in members if m.status is not Status.READY)
    alike = [first] if gates else [m for m in members if m.status is first.status]
    names = ", ".join(m.asset_key for m in alike)
    reason = f"waiting for {names} ({first.reason})"
    others = "".join(f"; and for {m.asset_key} ({m.reason})" for m in gates[1:])  # each gate says what it waits for
    return GroupEvaluation(g.gid, first.status, tuple(g.members), reason=reason + others, **extra)


def blocked(g: Evaluating, members: Sequence[MemberEvaluation], **extra: Any) -> GroupEvaluation:
    """The group's (or partition's) wait on the first of ``members`` that is not satisfied."""
    if g.partition is not None:
        return _partition_blocked(g, members, **extra)
    return first_blocked(g.gid, list(members), **extra)


def advance(
    g: Evaluating, cursor: GroupCursor, members: list[MemberEvaluation], pins: list[PinnedInput], gaps: list[Gap]
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
            wait_for_newer(members, i, member, g.states.get(member.asset_key), last, cursor.baseline, partition_key(g))
    return None


def _newer(pin: PinnedInput, last: PinnedInput | None) -> bool:
    return last is None or pin.ordinal > last.ordinal


def _older(pin: PinnedInput, last: PinnedInput | None) -> bool:
    return last is not None and pin.ordinal < last.ordinal


def partition_key(g: Evaluating) -> str | None:
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
        found = view.next_after(i, last) if view is not None else next_of(member, last, states, logs, snapshots, now)
        if isinstance(found, Held):  # holds the whole group: no member runs past a version held back
            held = True
            chosen.append(last)
            with_status(members, i, found.status, found.reason, {"snapshotId": found.snapshot_id})
        elif isinstance(found, Gap):
            gaps.append(found)
            chosen.append(last)
            with_status(members, i, Status.WAITING_FOR_VERSION, _gap_reason(found, view), {"after": json_form(last)})
        elif found is None:
            chosen.append(last)
            if members[i].status is Status.READY:  # else it keeps the gate that blocks it on the current state
                where = view.key if view is not None else None
                wait_for_newer(members, i, member, states.get(member.asset_key), last, cursor.baseline, where)
        else:
            chosen.append(found)
            moved = True
    return chosen if moved and not held else None


def _gap_reason(gap: Gap, view: PartitionView | None) -> str:
    """Why a member waits at a gap of its table's history (a partition: a commit whose partitions are not known)."""
    stepped = f"the table is polled for it; stepped over at {ms_to_iso(gap.until)} if it never comes"
    if view is None:
        return f"the snapshot after {gap.snapshot_id} is missing (the next known is {gap.next_id}); {stepped}"
    return (
        f"the commit of the table after {gap.snapshot_id} is not known with its partitions (the next known is "
        f"{gap.next_id}), and it may touch {view.key}: its versions wait, in order; {stepped}"
    )


def wait_for_newer(
    members: list[MemberEvaluation],
    index: int,
    member: Member,
    state: AssetState | None,
    last: PinnedInput,
    baseline: bool = False,
    partition: str | None = None,
) -> None:
    pinned = members[index].pin
    required = {"newerThan": json_form(last)}
    if partition is not None:
        _wait_in_partition(members, index, last, partition, required, baseline)
        return
    if pinned is not None and pinned.ordinal < last.ordinal:
        reason = f"state read at version {pinned.state_version} is older than the last trigger's"
        with_status(members, index, Status.WAITING_FOR_UPDATE, reason, required)
        return
    latest = state.latest_snapshot_id if state else None
    latest_order = history_order(latest, state.latest_snapshot_order) if state else None
    if (
        member.condition.quality_status
        and latest_order is not None
        and last.snapshot_id is not None
        and latest_order > last.ordinal[0]
    ):
        with_status(
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
    with_status(members, index, Status.WAITING_FOR_UPDATE, why, required)


def _wait_in_partition(
    members: list[MemberEvaluation],
    index: int,
    last: PinnedInput,
    partition: str,
    required: dict[str, Any],
    baseline: bool = False,
) -> None:
    """A partitioned member whose newest commit touching the partition already ran for it (or is older), or was there
    when a startFrom NEXT_CHANGE rule started (``baseline``)."""
    touching = members[index].current.get("fanOutOf")
    touched = "it" if touching is None else f"{touching} (fanned out to {partition})"
    done = (
        f"startFrom is NEXT_CHANGE: snapshot {last.snapshot_id} was there when the rule started"
        if baseline
        else f"snapshot {last.snapshot_id} already ran for {partition}"
    )
    reason = f"{done}; waiting for a newer commit touching {touched}"
    with_status(members, index, Status.WAITING_FOR_UPDATE, reason, required)
