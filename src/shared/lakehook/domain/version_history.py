"""The history an EACH_VERSION group steps through, one version at a time: the known states of an asset
(:class:`VersionLog`, for tag and manifest members) and its snapshot log (each snapshot judged by its own gates,
:func:`at_snapshot`). Pure; used by the group steps (:mod:`lakehook.domain.group_steps`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakehook.domain.member_selection import select_member
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, PinnedInput
from lakehook.domain.verdicts import Gap, Held
from lakehook.domain.versions import SnapshotLog, SnapshotRecord, Verdict, follows


@dataclass(frozen=True)
class VersionLog:
    """Known states of one asset, by state version, and below which version a gap is final.

    The resolver that handles an asset's own stream records knows every earlier record was
    handled already, so a missing version below its first record is lost for good
    (``lost_before``); anyone else must stop at a gap, because the history may still be written.
    """

    states: tuple[AssetState, ...]
    lost_before: int = 0

    @classmethod
    def of(cls, states: Sequence[AssetState], lost_before: int = 0) -> VersionLog:
        by_version = {s.version: s for s in states}
        return cls(tuple(by_version[v] for v in sorted(by_version)), lost_before)

    def after(self, version: int) -> list[AssetState]:
        """The known states newer than ``version``, in order, up to the first gap that may still fill."""
        found: list[AssetState] = []
        expected = version + 1
        for state in self.states:
            if state.version <= version:
                continue
            if state.version > expected and state.version - 1 >= self.lost_before:
                break  # versions expected..state.version-1 may still arrive
            found.append(state)
            expected = state.version + 1
        return found


def at_snapshot(state: AssetState, record: SnapshotRecord, quality: Verdict | None = None) -> AssetState:
    """The state as a member judges ``record``: that snapshot as the newest (its schema id, commit kind), the
    asset-wide gates as they hold now (which schemas are approved, the asset's watermark, its backfill), and with
    ``quality`` the verdict of that snapshot's own quality checks in place of the newest ones."""
    update: dict[str, Any] = {
        "latest_snapshot_id": record.snapshot_id,
        "latest_snapshot_order": record.order,
        "latest_parent_snapshot_id": record.parent_snapshot_id,
        "latest_schema_id": record.schema_id if record.schema_id is not None else state.latest_schema_id,
        "latest_commit_time": record.commit_time,
        "latest_commit_kind": record.commit_kind,
        "latest_metadata_location": record.metadata_location,
        "latest_snapshot_watermark": record.watermark,
        "latest_data_changed": record.changes_data,
        # a watermark gate is the asset's: the newest of its pushed and snapshot watermarks, as it is now
        "latest_watermark": state.watermark,
    }
    if record.changes_data:
        update["latest_data"] = record
    if quality is not None:
        passed = quality is Verdict.PASSED
        failed = quality is Verdict.FAILED
        update["quality_passed_snapshot_id"] = record.snapshot_id if passed else None
        update["quality_passed_order"] = record.order if passed else None
        update["quality_failed_snapshot_id"] = record.snapshot_id if failed else None
        update["quality_failed_order"] = record.order if failed else None
    return state.model_copy(update=update)


def steps_by_snapshot(member: Member) -> bool:
    """Whether a member's versions are its table's snapshots, so EACH_VERSION steps it through the snapshot log and
    judges each snapshot's gates (quality check, schema status, watermark, backfill) as they hold for that snapshot.

    A ``tag`` member's version is the snapshot the tag names, and a ``manifest`` member's the spool manifest's:
    those step through the state's history; a windowed or coverage member through its windows."""
    c = member.condition
    return not (c.tag or c.manifest or c.window is not None or c.coverage is not None)


# What blocks a snapshot-stepping member for one snapshot: its own gate, judged for that snapshot.
GATES = frozenset(
    {
        Status.BLOCKED_BY_QUALITY,
        Status.BLOCKED_BY_SCHEMA,
        Status.BLOCKED_BY_WATERMARK,
        Status.BLOCKED_BY_BACKFILL,
        Status.BLOCKED_BY_CDC_LAG,
    }
)


def judged_per_snapshot(
    rule: Rule,
    group: Group,
    members: list[MemberEvaluation],
    cursor: GroupCursor | None,
    snapshots: Mapping[str, SnapshotLog],
) -> dict[int, PinnedInput]:
    """EACH_VERSION members blocked by a gate on the current state that step through their snapshot log from the
    cursor instead (index -> the version they last triggered with)."""
    if rule.policy.mode is not Mode.EACH_VERSION or group.window is not None or cursor is None:
        return {}
    found: dict[int, PinnedInput] = {}
    for i, (member, verdict) in enumerate(zip(group.members, members, strict=True)):
        last = cursor.pins.get(member.asset_key)
        if (
            verdict.status in GATES
            and steps_by_snapshot(member)
            and member.asset_key in snapshots
            and last is not None
            and last.snapshot_id is not None
        ):
            found[i] = last
    return found


def first_known(
    member: Member,
    current: PinnedInput,
    log: VersionLog | None,
    snapshots: SnapshotLog | None = None,
    states: Mapping[str, AssetState] | None = None,
) -> PinnedInput:
    """EACH_VERSION's first trigger: the oldest satisfying version this resolver saw arrive, else the current one."""
    state = (states or {}).get(member.asset_key)
    if snapshots is not None and state is not None and steps_by_snapshot(member):
        gated = member.condition.quality_status is not None
        for entry in snapshots.entries:
            quality = (entry.quality or Verdict.UNKNOWN) if gated else None
            chosen = select_member(member, at_snapshot(state, entry.record, quality))
            if chosen.pin is not None and chosen.pin.snapshot_id == entry.record.snapshot_id:
                return chosen.pin if chosen.pin.ordinal <= current.ordinal else current
        return current
    for state in log.after(-1) if log else ():
        chosen = select_member(member, state)
        if chosen.pin is not None:
            return chosen.pin
    return current


def next_of(
    member: Member,
    last: PinnedInput,
    states: Mapping[str, AssetState],
    logs: Mapping[str, VersionLog],
    snapshots: Mapping[str, SnapshotLog],
    now: int,
) -> PinnedInput | Gap | Held | None:
    """A member's next version after ``last``: through its snapshot log when its versions are snapshots, else
    through the known state history."""
    state = states.get(member.asset_key)
    log = snapshots.get(member.asset_key)
    if log is not None and state is not None and last.snapshot_id is not None and steps_by_snapshot(member):
        return _next_snapshot(member, last, state, log, now)
    return _next_version(member, last, logs.get(member.asset_key))


def _next_version(member: Member, last: PinnedInput, log: VersionLog | None) -> PinnedInput | None:
    """The first known version after ``last`` that satisfies the member's condition."""
    for state in log.after(last.state_version) if log else ():
        chosen = select_member(member, state)
        if chosen.pin is not None and chosen.pin.ordinal > last.ordinal:
            return chosen.pin
    return None


def _next_snapshot(
    member: Member, last: PinnedInput, state: AssetState, log: SnapshotLog, now: int
) -> PinnedInput | Gap | Held | None:
    """The first logged snapshot after ``last`` that is a version of the member: its pin, a gap before it, the
    gate that holds it, or None.

    Each snapshot is judged as it holds for that snapshot (:func:`at_snapshot`: its schema and watermark, its own
    quality verdict, the asset-wide gates as they are now). A snapshot that is no version of the member (a
    compaction it does not count, one below ``minSnapshotId``) is passed over; one whose gate does not pass holds
    the member there: the versions after it wait, in order, rather than run or be skipped."""
    assert last.snapshot_id is not None
    c = member.condition
    previous_id, previous_order = last.snapshot_id, last.ordinal[0]
    for entry in log.after(previous_order):
        record = entry.record
        if not follows(log.lineage, previous_id, previous_order, record):
            until = entry.recorded_at + log.settle_ms
            if until > now:
                return Gap(member.asset_key, previous_id, previous_order, record.snapshot_id, until)
        previous_id, previous_order = record.snapshot_id, record.order
        if (not c.include_compaction and not record.changes_data) or (
            c.min_snapshot_id is not None and record.order < c.min_snapshot_id
        ):
            continue  # not a version of this member
        quality = (entry.quality or Verdict.UNKNOWN) if c.quality_status else None
        chosen = select_member(member, at_snapshot(state, record, quality))
        if chosen.pin is not None and chosen.pin.snapshot_id == record.snapshot_id:
            return chosen.pin
        if chosen.status in GATES:
            return Held(record.snapshot_id, chosen.status, _held_reason(record.snapshot_id, chosen, quality))
    return None


def _held_reason(snapshot_id: int, chosen: MemberEvaluation, quality: Verdict | None) -> str:
    after = "the versions after it wait (EACH_VERSION runs each version, in order)"
    if chosen.status is Status.BLOCKED_BY_QUALITY and quality is Verdict.FAILED:
        return (
            f"snapshot {snapshot_id} failed its quality check; {after}. To go past it, disable the rule and "
            "enable it again with startFrom NEXT_CHANGE"
        )
    if chosen.status is Status.BLOCKED_BY_QUALITY:
        return f"snapshot {snapshot_id} has no quality verdict yet; it runs once its check passes, and {after}"
    return f"snapshot {snapshot_id}: {chosen.reason}; {after}"
