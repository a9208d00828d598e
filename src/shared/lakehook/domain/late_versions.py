"""A late snapshot an EACH_VERSION group already ran past: it does not run for that group, and every answer says so.

EACH_VERSION runs the versions after the one a group last triggered with, in order. A snapshot that arrives (its
push is recorded) after the group ran a newer one (5 was claimed, then 3 is pushed: Hudi instant times and assets
of other formats have no lineage to wait on, a group's first trigger starts at the oldest snapshot it has seen, and
a Paimon, Delta or Iceberg gap is stepped over once it settled) can no longer run in order: running 3 after 5 would
break the order the rule promises. It is skipped: the push answers "version 3 arrived after 5 and will not run
for rule X" and records a SKIPPED trigger with that reason under the ``late`` marker (which moves no cursor), which
explain lists. A late snapshot the group has not passed when it arrives still runs, in order, however late the
resolver reads its stream record: the push notes it on the group's cursor, which the group's claims are
conditional on (:class:`lakehook.usecases.late_versions.LateSnapshotNotice`).

A snapshot may also have run before its push came: a ``QUALITY_CHECK_PASSED`` naming it is evidence enough for
``qualityStatus: PASSED`` to pin it (:class:`lakehook.domain.conditions.QualityPassed`), and the claim logs what it
pinned. Its push, later, is older than the state and than the group's cursor, yet it is no skip: it ran
(:class:`AlreadyRan`, "version 1 already triggered rule X"). The snapshot log is the asset's, not the group's: it
holding the snapshot says some group pinned it, and the group's own runs (:func:`ran_among`) say whether this one did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lakehook.domain.evaluation import steps_by_snapshot
from lakehook.domain.rules import Group, Mode, Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.domain.versions import SnapshotRecord

LATE_MARKER = "late"


@dataclass(frozen=True)
class LateVersion:
    """A snapshot of ``asset_key`` that an EACH_VERSION group passed before it was known: it will not run there."""

    rule: Rule
    group_id: str
    asset_key: str
    record: SnapshotRecord
    passed: PinnedInput  # the version the group had run (or started from) when this one arrived
    baseline: bool  # the group had only its startFrom NEXT_CHANGE starting point

    @property
    def reason(self) -> str:
        where = f"rule {self.rule.rule_id}"
        if len(self.rule.groups) > 1:
            where += f" (group {self.group_id})"
        version, passed = self.record.snapshot_id, self.passed.snapshot_id
        if self.baseline:
            return (
                f"version {version} is older than version {passed}, where {where} started (startFrom NEXT_CHANGE), "
                f"and will not run for {where}"
            )
        return f"version {version} arrived after {passed} and will not run for {where}"

    def trigger(self, cursor: GroupCursor, at: int) -> Trigger:
        """The SKIPPED trigger that records the skip; its key depends on the version only, so it is written once."""
        pin = PinnedInput(
            asset_key=self.asset_key,
            snapshot_id=self.record.snapshot_id,
            snapshot_order=self.record.order if self.record.order != self.record.snapshot_id else None,
            schema_id=self.record.schema_id,
            commit_time=self.record.commit_time,
            metadata_location=self.record.metadata_location,
            watermark=self.record.watermark,
        )
        return Trigger(
            trigger_key=trigger_key(
                self.rule.rule_id, self.group_id, [pin], None, cursor.replay_epoch, marker=LATE_MARKER
            ),
            rule_id=self.rule.rule_id,
            group_id=self.group_id,
            status=TriggerStatus.SKIPPED,
            inputs=(pin,),
            replay_epoch=cursor.replay_epoch,
            sequence=cursor.seq,
            created_at=at,
            updated_at=at,
            reason=self.reason,
        )


def late_in_partition(
    rule: Rule, group_id: str, partition: str, version: PinnedInput, passed: PinnedInput, cursor: GroupCursor, at: int
) -> Trigger:
    """The SKIPPED trigger that records a commit touching ``partition`` of an EACH_VERSION partitioned group that
    arrived after the partition ran a newer one (``passed``): it cannot run in order there any more. Its key is the
    version's and the partition's, so it is written once (a redelivered batch writes it again as it was)."""
    where = f"rule {rule.rule_id}" + (f" (group {group_id})" if len(rule.groups) > 1 else "")
    reason = (
        f"version {version.snapshot_id} of {version.asset_key} touched {partition} after {passed.snapshot_id} ran "
        f"for it and will not run for {where}"
    )
    return Trigger(
        trigger_key=trigger_key(
            rule.rule_id, group_id, [version], None, cursor.replay_epoch, marker=LATE_MARKER, partition=partition
        ),
        rule_id=rule.rule_id,
        group_id=group_id,
        status=TriggerStatus.SKIPPED,
        inputs=(version,),
        partition=partition,
        replay_epoch=cursor.replay_epoch,
        sequence=cursor.seq,
        created_at=at,
        updated_at=at,
        reason=reason,
    )


def is_late_skip(trigger: Trigger) -> bool:
    """Whether a trigger records a late version skipped (not a run, not a cursor move)."""
    return trigger.status is TriggerStatus.SKIPPED and f".{LATE_MARKER}." in trigger.trigger_key


def steps_through(rule: Rule, group: Group, asset_key: str, record: SnapshotRecord) -> bool:
    """Whether ``group`` runs the snapshots of ``asset_key`` one by one (an enabled EACH_VERSION rule, no window) and
    counts ``record`` as a version of its member (a compaction or one below minSnapshotId it passes over anyway). A
    partitioned group steps per partition: its resolver records a late commit per partition
    (:func:`late_in_partition`), not its push."""
    if not rule.enabled or rule.policy.mode is not Mode.EACH_VERSION or group.window is not None:
        return False
    if group.partition_by is not None:
        return False
    member = next((m for m in group.members if m.asset_key == asset_key), None)
    if member is None or not steps_by_snapshot(member):
        return False
    c = member.condition
    if not c.include_compaction and not record.changes_data:
        return False
    return c.min_snapshot_id is None or record.order >= c.min_snapshot_id


def passed_over(
    rule: Rule, group: Group, cursor: GroupCursor | None, record: SnapshotRecord, asset_key: str
) -> LateVersion | None:
    """The skip, when ``group`` steps through ``asset_key``'s snapshots and its cursor already holds a newer one of
    that asset; else None (the snapshot runs in order, or it is no version of the group)."""
    if cursor is None or cursor.seq == 0:
        return None  # the first trigger starts at the oldest snapshot seen: this one is among them
    last = cursor.pins.get(asset_key)
    if last is None or last.snapshot_id is None or last.ordinal[0] <= record.order:
        return None
    if not steps_through(rule, group, asset_key, record):
        return None
    return LateVersion(rule, group.group_id, asset_key, record, last, cursor.baseline)


@dataclass(frozen=True)
class AlreadyRan:
    """A late snapshot of ``asset_key`` that an EACH_VERSION group ran before its push came (its quality verdict
    named it), or that is the version its cursor holds without a run: it does not run there (again)."""

    rule: Rule
    group_id: str
    record: SnapshotRecord
    ran: bool  # False: the cursor holds this very version from a skip or a startFrom NEXT_CHANGE starting point
    baseline: bool

    @property
    def reason(self) -> str:
        where = f"rule {self.rule.rule_id}"
        if len(self.rule.groups) > 1:
            where += f" (group {self.group_id})"
        version = self.record.snapshot_id
        if self.ran:
            return f"version {version} already triggered {where}, before this push"
        if self.baseline:
            return f"version {version} is where {where} started (startFrom NEXT_CHANGE) and will not run for {where}"
        return f"version {version} is where {where} skipped to and will not run for {where}"


def reached(cursor: GroupCursor | None, record: SnapshotRecord, asset_key: str) -> bool:
    """Whether the group's cursor holds ``record`` or a newer snapshot of ``asset_key`` (after its first trigger)."""
    if cursor is None or cursor.seq == 0:
        return False
    last = cursor.pins.get(asset_key)
    return last is not None and last.snapshot_id is not None and last.ordinal[0] >= record.order


def already_ran(
    rule: Rule, group: Group, cursor: GroupCursor | None, record: SnapshotRecord, asset_key: str, ran: bool
) -> AlreadyRan | None:
    """What the push of a late ``record`` answers for a group that stepped through it without logging its push:
    it ran (``ran``: one of the group's runs pinned it, :func:`ran_among`), or the cursor holds exactly it without
    a run. None otherwise: it runs in order, it was passed over (:func:`passed_over`), or it is no version."""
    if not reached(cursor, record, asset_key) or not steps_through(rule, group, asset_key, record):
        return None
    assert cursor is not None
    if ran:
        return AlreadyRan(rule, group.group_id, record, ran=True, baseline=False)
    last = cursor.pins[asset_key]
    if last.snapshot_id == record.snapshot_id:
        return AlreadyRan(rule, group.group_id, record, ran=False, baseline=cursor.baseline)
    return None


def ran_among(triggers: Iterable[Trigger], group_id: str, asset_key: str, record: SnapshotRecord) -> bool | None:
    """Whether one of the group's runs pinned ``record``, from its rule's triggers newest first: True at the first
    run pinning it, False at a skip pinning it or at a claim (not a replay) pinning an older version of the asset
    (the group's claims are in order: the older ones pin older versions still), None if ``triggers`` end first."""
    for trigger in triggers:
        if trigger.group_id != group_id or is_late_skip(trigger):
            continue
        pin = next((p for p in trigger.inputs if p.asset_key == asset_key), None)
        if pin is None or pin.snapshot_id is None:
            continue
        if pin.snapshot_id == record.snapshot_id:
            return trigger.status is not TriggerStatus.SKIPPED
        if pin.ordinal[0] < record.order and trigger.replay_of is None:
            return False
    return None
