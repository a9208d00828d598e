"""A member's condition as a list of small rules, one class per condition kind.

:func:`lakehook.domain.evaluation.select_member` starts from the asset's newest snapshot (:meth:`Chosen.newest`)
and hands it to each rule of the member, in :data:`PRECEDENCE` order. A rule either narrows the version to pin
(the newest snapshot that passed its quality check, the snapshot a tag names, …) or blocks the member with the
explain status and reason a person reads; the first block wins, so the order is the precedence of the reasons.
A rule is built only for a condition that asks for it (``of`` answers None otherwise).

Adding a condition is one class here (``of``, ``evaluate``), its place in :data:`PRECEDENCE`, and one test in
``tests/unit/test_conditions.py``. ``coverage`` is not a rule of this list: it is judged against the merged
intervals, not the state, by the group's window step (:mod:`lakehook.domain.evaluation`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lakehook.domain.rules import Member
from lakehook.domain.state import AssetState, BackfillStatus, SchemaStatus
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.versions import SnapshotRecord


@dataclass(frozen=True)
class Chosen:
    """The version a member would pin so far, and what is known of it (schema, commit time, metadata location).

    Snapshots are compared by their order in the table's history (Paimon: the id; Iceberg: the sequence number,
    since its ids are random), and told apart by id."""

    snapshot_id: int | None
    order: int | None
    record: SnapshotRecord | None

    @classmethod
    def newest(cls, state: AssetState) -> Chosen:
        record = state.latest_record
        return cls(record.snapshot_id if record else None, record.order if record else None, record)

    @property
    def known(self) -> SnapshotRecord | None:
        """The record of the chosen snapshot itself, when the state still has it."""
        record = self.record
        return record if record is not None and record.snapshot_id == self.snapshot_id else None


@dataclass(frozen=True)
class Blocked:
    """Why the member pins nothing: the explain status and its reason."""

    status: Status
    reason: str


class MemberCondition(ABC):
    """One kind of condition: narrows the version to pin, or blocks the member."""

    @classmethod
    @abstractmethod
    def of(cls, member: Member) -> MemberCondition | None:
        """This rule for the member, or None when its condition does not ask for it."""

    @abstractmethod
    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        """The version to pin once this rule holds (``chosen`` or a narrower one), or why the member is blocked."""

    def shows(self, state: AssetState) -> dict[str, Any]:
        """What explain adds to the member's ``current`` for this rule."""
        return {}

    def note(self, state: AssetState, chosen: Chosen) -> str | None:
        """The reason a READY member carries when it pins something other than the newest snapshot."""
        return None


def history_order(snapshot_id: int | None, order: int | None) -> int | None:
    """A snapshot's place in its table's history; states written before orders were kept use the id."""
    return order if order is not None else snapshot_id


def known_record(state: AssetState, snapshot_id: int | None) -> SnapshotRecord | None:
    """What the state still knows of a snapshot that is not necessarily the newest."""
    for record in (state.latest_record, state.latest_data):
        if record is not None and snapshot_id is not None and record.snapshot_id == snapshot_id:
            return record
    return None


def manifest_reason(state: AssetState) -> str:
    """Why the asset's spool manifest does not count (yet): its status and, when known, the reason."""
    uri, status = state.manifest_uri, state.manifest_status
    if uri is None or status is None:
        return "no spool manifest has been reported for this asset"
    if status == "INTERRUPTED":
        return f"manifest {uri} is INTERRUPTED: the extract stopped part way; a sealed manifest must replace it"
    if status == "INVALID":
        return f"manifest {uri} is INVALID: {state.manifest_reason or 'it failed verification'}"
    return f"manifest {uri} is {status}: it counts once verified"


# --- the rules, in PRECEDENCE order ----------------------------------------------------------------


@dataclass(frozen=True)
class DataChange(MemberCondition):
    """``includeCompaction`` unset or false: a compaction changes no data, so the newest snapshot that did is the
    version. When lakehook knows of none there is no version, whether no snapshot has changed data (lakehook saw the
    table from its first snapshot on: a Delta table created empty, then only altered) or lakehook began reading the
    table at a compaction or other maintenance commit (a first poll takes only the newest snapshot): a maintenance
    commit never counts as data, first seen or not, so the member waits for the next data commit."""

    @classmethod
    def of(cls, member: Member) -> DataChange | None:
        return None if member.condition.include_compaction else cls()

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        record, data = chosen.record, state.latest_data
        if record is None or record.changes_data:
            return chosen
        if data is not None:
            return Chosen(data.snapshot_id, data.order, data)
        if state.seen_from_start:
            reason = f"no snapshot has changed data yet (snapshot {record.snapshot_id} changed none)"
        else:
            kind = f" ({record.commit_kind})" if record.commit_kind else ""
            reason = (
                f"no data commit recorded yet: snapshot {record.snapshot_id}{kind} changed no data (a compaction or "
                "other maintenance commit), and lakehook began reading the table after its last data commit; the "
                "next data commit is the first version"
            )
        return Blocked(Status.BLOCKED_BY_SNAPSHOT, reason)

    def shows(self, state: AssetState) -> dict[str, Any]:
        data = state.latest_data  # the newest snapshot is a compaction: show the data snapshot pinned instead
        newest = state.latest_record
        if newest is not None and not newest.changes_data and data is not None:
            return {"dataSnapshotId": data.snapshot_id}
        return {}


@dataclass(frozen=True)
class SpooledSnapshot(MemberCondition):
    """``manifest: SEALED`` on an asset that commits no table snapshot: the extract's snapshot is its version."""

    @classmethod
    def of(cls, member: Member) -> SpooledSnapshot | None:
        return cls() if member.condition.manifest else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen:
        spooled = state.manifest_snapshot_id
        if state.latest_snapshot_id is None and spooled is not None:
            return Chosen(spooled, spooled, chosen.record)
        return chosen


@dataclass(frozen=True)
class QualityPassed(MemberCondition):
    """``qualityStatus: PASSED``: the newest snapshot whose quality check passed, never a newer failed or
    unchecked one."""

    @classmethod
    def of(cls, member: Member) -> QualityPassed | None:
        return cls() if member.condition.quality_status else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        passed, failed = state.quality_passed_snapshot_id, state.quality_failed_snapshot_id
        if passed is None:
            why = f"; snapshot {failed} failed" if failed is not None else ""
            return Blocked(Status.BLOCKED_BY_QUALITY, f"no snapshot has passed its quality check{why}")
        if failed == passed:
            return Blocked(Status.BLOCKED_BY_QUALITY, f"snapshot {passed} passed a quality check and then failed one")
        return Chosen(passed, history_order(passed, state.quality_passed_order), known_record(state, passed))

    def note(self, state: AssetState, chosen: Chosen) -> str | None:
        latest = state.latest_snapshot_id
        latest_order = history_order(latest, state.latest_snapshot_order)
        if latest_order is None or chosen.order is None or latest_order <= chosen.order:
            return None
        verdict = "failed its check" if state.quality_failed_snapshot_id == latest else "no passing check yet"
        return f"pins snapshot {chosen.snapshot_id}, the newest that passed; snapshot {latest} has {verdict}"


@dataclass(frozen=True)
class SnapshotRequired(MemberCondition):
    """``snapshotRequired`` (the default, except for spooled assets): some snapshot must be there to pin."""

    @classmethod
    def of(cls, member: Member) -> SnapshotRequired | None:
        return cls() if member.condition.snapshot_required else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if chosen.snapshot_id is None:
            return Blocked(Status.BLOCKED_BY_SNAPSHOT, "no snapshot committed yet")
        return chosen


@dataclass(frozen=True)
class MinSnapshotId(MemberCondition):
    """``minSnapshotId``: the version's place in history is at least the floor. With ``qualityStatus`` as well, a
    table that reached the floor but whose newest passing snapshot is below it is blocked by quality."""

    floor: int
    quality_gated: bool = False

    @classmethod
    def of(cls, member: Member) -> MinSnapshotId | None:
        c = member.condition
        return None if c.min_snapshot_id is None else cls(c.min_snapshot_id, bool(c.quality_status))

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        candidate, floor = chosen.snapshot_id, self.floor
        if candidate is None:
            return Blocked(Status.BLOCKED_BY_SNAPSHOT, "no snapshot committed yet")
        if chosen.order is None or chosen.order >= floor:
            return chosen
        latest = state.latest_snapshot_id
        latest_order = history_order(latest, state.latest_snapshot_order)
        if self.quality_gated and latest_order is not None and latest_order >= floor:
            return Blocked(
                Status.BLOCKED_BY_QUALITY,
                f"snapshot {latest} reached minSnapshotId {floor}, "
                f"but the newest snapshot that passed its quality check is {candidate}",
            )
        return Blocked(Status.BLOCKED_BY_SNAPSHOT, f"snapshot {candidate} is below minSnapshotId {floor}")


@dataclass(frozen=True)
class SchemaCompatible(MemberCondition):
    """``schemaStatus: COMPATIBLE``: the newest schema is the table's first one or an approved change."""

    @classmethod
    def of(cls, member: Member) -> SchemaCompatible | None:
        return cls() if member.condition.schema_status else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        status = state.schema_status
        if status is not SchemaStatus.COMPATIBLE:
            return Blocked(Status.BLOCKED_BY_SCHEMA, f"schema {state.latest_schema_id} is {status.value}")
        return chosen


@dataclass(frozen=True)
class TaggedSnapshot(MemberCondition):
    """``tag``: the tag must exist, and the snapshot it names is the version, so the group fires once per tag,
    not on every later snapshot. ``ids_ordered``: the table's snapshot ids are its order (not Iceberg's)."""

    tag: str
    ids_ordered: bool = True

    @classmethod
    def of(cls, member: Member) -> TaggedSnapshot | None:
        tag = member.condition.tag
        return None if not tag else cls(tag, not member.asset_key.startswith("iceberg://"))

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if self.tag not in state.tags:
            return Blocked(Status.BLOCKED_BY_TAG, f"tag {self.tag!r} does not exist yet")
        tagged = state.tag_snapshot(self.tag)
        snapshot_id, order = tagged if tagged is not None else (None, None)
        record = known_record(state, snapshot_id)
        if record is not None:
            order = record.order
        elif snapshot_id is not None and order is None and self.ids_ordered:
            order = snapshot_id
        return Chosen(snapshot_id, order, record)


@dataclass(frozen=True)
class ConfirmedInput(MemberCondition):
    """``confirmationStatus: CONFIRMED``: the version pinned is the newest commit that confirmed the run which wrote it
    (it carried the trigger key of a rule listing the table among its outlets, and changed data:
    :mod:`lakehook.domain.confirmation`). A later commit that confirmed nothing (a foreign writer, a run that has not
    been confirmed yet) blocks the member until a confirmed one follows; the reason names the last confirmed run."""

    @classmethod
    def of(cls, member: Member) -> ConfirmedInput | None:
        return cls() if member.condition.confirmation_status else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        confirmed = state.confirmed_snapshot_id
        if confirmed is not None and confirmed == chosen.snapshot_id:
            return chosen
        if confirmed is None:
            last = "no commit of this table has confirmed a run yet"
        else:
            last = f"the last confirmed one is snapshot {confirmed}, written by trigger {state.confirmed_trigger_key}"
        if state.unconfirmed_snapshot_id is not None and state.unconfirmed_snapshot_id == chosen.snapshot_id:
            why = f"its commit carried trigger {state.unconfirmed_trigger_key}, which it does not confirm: "
            why += state.unconfirmed_reason or "unknown"
        else:
            why = "its commit carried no trigger key that confirmed one, or the confirmation is not recorded yet"
        return Blocked(
            Status.BLOCKED_BY_CONFIRMATION,
            f"snapshot {chosen.snapshot_id} was not written by a confirmed run ({why}); {last}",
        )

    def shows(self, state: AssetState) -> dict[str, Any]:
        if state.confirmed_snapshot_id is None:
            return {}
        return {"confirmedSnapshotId": state.confirmed_snapshot_id, "confirmedTriggerKey": state.confirmed_trigger_key}


@dataclass(frozen=True)
class ManifestSealed(MemberCondition):
    """``manifest: SEALED``: a verified, sealed spool manifest; a pending, INTERRUPTED or INVALID one blocks."""

    @classmethod
    def of(cls, member: Member) -> ManifestSealed | None:
        return cls() if member.condition.manifest else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if state.manifest_status != "SEALED":
            return Blocked(Status.BLOCKED_BY_MANIFEST, manifest_reason(state))
        return chosen


@dataclass(frozen=True)
class BackfillCompleted(MemberCondition):
    """``backfillStatus: COMPLETED``: waits while the asset's backfill runs, or until one has completed."""

    @classmethod
    def of(cls, member: Member) -> BackfillCompleted | None:
        return cls() if member.condition.backfill_status else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if state.backfill_status is BackfillStatus.COMPLETED:
            return chosen
        why = (
            f"backfill {state.backfill_id} is running; waiting for it to complete"
            if state.backfill_status is BackfillStatus.RUNNING
            else "no backfill has completed yet"
        )
        return Blocked(Status.BLOCKED_BY_BACKFILL, why)


@dataclass(frozen=True)
class WatermarkAtLeast(MemberCondition):
    """``watermarkAtLeast`` an instant: the asset's watermark (pushed or a snapshot's) has reached it."""

    floor: int

    @classmethod
    def of(cls, member: Member) -> WatermarkAtLeast | None:
        floor = member.condition.watermark_floor
        return None if floor is None else cls(floor)

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        watermark = state.watermark
        if watermark is None or watermark < self.floor:
            have = "no watermark yet" if watermark is None else f"watermark {ms_to_iso(watermark)}"
            return Blocked(Status.BLOCKED_BY_WATERMARK, f"{have}; needs {ms_to_iso(self.floor)}")
        return chosen


@dataclass(frozen=True)
class WatermarkWindow(MemberCondition):
    """``watermarkAtLeast`` a window: the member needs a watermark at all; which window it closed is the group's
    window step."""

    @classmethod
    def of(cls, member: Member) -> WatermarkWindow | None:
        return cls() if member.condition.window is not None else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if state.watermark is None:
            return Blocked(Status.BLOCKED_BY_WATERMARK, "no watermark yet")
        return chosen


def cdc_seen(state: AssetState) -> str:
    """What explain says lakehook has seen of the asset's CDC recovery."""
    recovered = state.cdc_recovered_watermark
    if recovered is None:
        return "no CDC_LAG_RECOVERED reported yet"
    return f"the CDC source caught up to {ms_to_iso(recovered)}"


@dataclass(frozen=True)
class CdcRecoveredAtLeast(MemberCondition):
    """``cdcRecoveredTo`` an instant: the asset's CDC source reported (``CDC_LAG_RECOVERED``) that it has caught up
    to at least that instant, i.e. the table holds every source change before it."""

    floor: int

    @classmethod
    def of(cls, member: Member) -> CdcRecoveredAtLeast | None:
        floor = member.condition.cdc_floor
        return None if floor is None else cls(floor)

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        recovered = state.cdc_recovered_watermark
        if recovered is None or recovered < self.floor:
            return Blocked(Status.BLOCKED_BY_CDC_LAG, f"{cdc_seen(state)}; needs {ms_to_iso(self.floor)}")
        return chosen

    def shows(self, state: AssetState) -> dict[str, Any]:
        return cdc_shown(state)


@dataclass(frozen=True)
class CdcRecoveredWindow(MemberCondition):
    """``cdcRecoveredTo: window``: the member needs a CDC recovery at all; whether it reached the end of the window
    the group runs for is the group's window step (:mod:`lakehook.domain.windows`)."""

    @classmethod
    def of(cls, member: Member) -> CdcRecoveredWindow | None:
        return cls() if member.condition.cdc_window else None

    def evaluate(self, state: AssetState, chosen: Chosen) -> Chosen | Blocked:
        if state.cdc_recovered_watermark is None:
            return Blocked(Status.BLOCKED_BY_CDC_LAG, f"{cdc_seen(state)}; needs the end of the window it runs for")
        return chosen

    def shows(self, state: AssetState) -> dict[str, Any]:
        return cdc_shown(state)


def cdc_shown(state: AssetState) -> dict[str, Any]:
    """The CDC recovery watermark in explain's ``current`` (absent until one was reported)."""
    recovered = state.cdc_recovered_watermark
    return {} if recovered is None else {"cdcRecoveredWatermark": recovered}


# The order the rules run in: the version is narrowed first (data changes, the spooled snapshot, the newest
# passing check), then the first rule that blocks names the member's status. A tag's snapshot replaces the version
# after minSnapshotId was checked, as it always has.
PRECEDENCE: tuple[type[MemberCondition], ...] = (
    DataChange,
    SpooledSnapshot,
    QualityPassed,
    SnapshotRequired,
    MinSnapshotId,
    SchemaCompatible,
    TaggedSnapshot,
    ConfirmedInput,
    ManifestSealed,
    BackfillCompleted,
    WatermarkAtLeast,
    WatermarkWindow,
    CdcRecoveredAtLeast,
    CdcRecoveredWindow,
)


@lru_cache(maxsize=4096)
def conditions_of(member: Member) -> tuple[MemberCondition, ...]:
    """The rules a member's condition asks for, in precedence order (members are frozen: built once each)."""
    return tuple(rule for kind in PRECEDENCE if (rule := kind.of(member)) is not None)
