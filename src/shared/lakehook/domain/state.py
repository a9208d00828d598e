"""Asset state: the advance-only source of truth, and how each event type moves it.

Each event type maps to an :class:`Advance`: a guard that holds only while the event is
newer than the state, and the attributes it sets. The DynamoDB adapter turns an Advance
into one conditional update; the in-memory store and the reference model apply it with
:func:`apply_advance`. Both therefore share one definition of "newer".

State only moves forward, field by field (``docs/architecture.md`` lists each field's order):
snapshots by their order in the table's history, quality verdicts by their snapshot's order,
watermarks and schema verdicts by their value, tags and backfills as sets that only grow, the
latest tag and the current manifest by an order key (:mod:`lakehook.domain.ordering`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.ordering import TagEntry, order_key
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.time import ms_to_iso
from lakehook.domain.versions import SnapshotRecord, Verdict, starts_history


class SchemaStatus(StrEnum):
    UNKNOWN = "UNKNOWN"
    COMPATIBLE = "COMPATIBLE"
    PENDING_APPROVAL = "PENDING_APPROVAL"
    REJECTED = "REJECTED"


class BackfillStatus(StrEnum):
    NONE = "NONE"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"


# --- guards -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Below:
    """Holds while ``attr`` is absent or strictly below ``value`` (a numeric version or an order key)."""

    attr: str
    value: int | str


@dataclass(frozen=True)
class NotInSet:
    """Holds while the string set ``attr`` does not contain ``value``."""

    attr: str
    value: str


@dataclass(frozen=True)
class NotAllEqual:
    """Holds unless every ``attr == value`` pair already holds."""

    pairs: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class WhileEqual:
    """Holds while every ``pairs`` attr equals its value and some ``changes`` attr does not yet."""

    pairs: tuple[tuple[str, Any], ...]
    changes: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class AllOf:
    """Holds while every guard holds; when it fails, the first guard says whether it was already applied."""

    guards: tuple[Below | NotInSet | NotAllEqual | WhileEqual, ...]


Guard = Below | NotInSet | NotAllEqual | WhileEqual | AllOf


class ManifestStatus(StrEnum):
    PENDING = "PENDING"  # claimed sealed (pushed or announced); counts once verified
    SEALED = "SEALED"  # verified: every object exists with its size and SHA-256, the checksum holds
    INVALID = "INVALID"  # claimed sealed, but verification found a missing, truncated or tampered object
    INTERRUPTED = "INTERRUPTED"  # the extract stopped part way: blocks downstream (the interruption guard)


@dataclass(frozen=True)
class Advance:
    """One advance-only change of an asset's state."""

    guard: Guard
    sets: dict[str, Any] = field(default_factory=dict)
    set_if_absent: dict[str, Any] = field(default_factory=dict)
    add_to_set: dict[str, str] = field(default_factory=dict)
    # attributes a later step may move on (a manifest's verdict): not evidence that this advance was lost
    settled_later: frozenset[str] = frozenset()
    # when the guard failed, the state took exactly this version if these attributes hold these values
    applied_if: tuple[tuple[str, Any], ...] = ()
    # when the guard failed for a newer state (the event is late, not a copy): what of it still applies
    late: Advance | None = None


def advance_for(event: AssetEvent, recorded_at: int = 0) -> Advance | None:
    """The state change an event asks for, or None when the type keeps no state here.

    ``recorded_at`` is when lakehook first recorded this event identity: the time of an event
    that carries no ``commitTime`` of its own (see :func:`lakehook.domain.ordering.order_key`).
    Each event type has its own rule in :data:`_ADVANCES`.
    """
    advance = _ADVANCES.get(event.event_type)
    return advance(event, recorded_at) if advance is not None else None


def _snapshot_committed(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.snapshot_id is not None and event.snapshot_order is not None
    sets: dict[str, Any] = {"latestSnapshotId": event.snapshot_id, "latestSnapshotOrder": event.snapshot_order}
    optional = {
        "latestSchemaId": event.schema_id,
        "latestCommitTime": event.commit_time,
        "latestCommitKind": event.commit_kind,
        "latestSnapshotWatermark": event.watermark,
        "latestParentSnapshotId": event.parent_snapshot_id,
        "latestSequenceNumber": event.sequence_number,
        "latestMetadataLocation": event.metadata_location,
    }
    sets.update({k: v for k, v in optional.items() if v is not None})
    record = snapshot_record(event)
    sets["latestDataChanged"] = record.changes_data  # always: a newer snapshot replaces an older one's "no"
    late = None
    if record.changes_data:  # a compaction keeps the newest data-changing snapshot (see versions.py)
        data = {"latestData": record.to_api(), "latestPartitions": latest_partitions_value(event, record.order)}
        sets.update(data)
        # A data snapshot that arrives after a newer compaction is still the newest data change.
        late = Advance(Below("latestData.order", record.order), sets=data)
    first: dict[str, Any] = {"firstSchemaId": event.schema_id} if event.schema_id is not None else {}
    # whether lakehook has seen the table from its first snapshot on (a first poll takes only the newest)
    first["seenFromStart"] = starts_history(event.asset_key, record)
    return Advance(Below("latestSnapshotOrder", event.snapshot_order), sets=sets, set_if_absent=first, late=late)


def _watermark_advanced(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.watermark is not None
    return Advance(Below("latestWatermark", event.watermark), sets={"latestWatermark": event.watermark})


def _tag_created(event: AssetEvent, recorded_at: int) -> Advance:
    # Tags only grow. The latest tag is the tag log's greatest order key, derived when read: a late
    # tag still joins the set (a `tag` condition needs it) without becoming the latest.
    assert event.tag is not None
    entry = TagEntry(order_key(event, recorded_at), event.tag, event.snapshot_id)
    refs = {"tags": event.tag, "tagLog": entry.encode()}
    if event.snapshot_id is not None:  # what a `tag` member pins
        refs["tagRefs"] = tag_ref(event.tag, event.snapshot_id, event.snapshot_order)
    return Advance(NotInSet("tags", event.tag), add_to_set=refs)


def _quality_verdict(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.snapshot_id is not None and event.snapshot_order is not None
    verdict = "qualityPassed" if event.event_type is EventType.QUALITY_CHECK_PASSED else "qualityFailed"
    return Advance(
        Below(f"{verdict}Order", event.snapshot_order),
        sets={f"{verdict}SnapshotId": event.snapshot_id, f"{verdict}Order": event.snapshot_order},
    )


def _schema_verdict(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.schema_id is not None
    attr = "schemaApprovedId" if event.event_type is EventType.SCHEMA_CHANGE_APPROVED else "schemaRejectedId"
    return Advance(Below(attr, event.schema_id), sets={attr: event.schema_id})


def _backfill_started(event: AssetEvent, recorded_at: int) -> Advance:
    # Backfills are two sets that only grow; the status is derived when read (RUNNING while a
    # started one has not completed). A late STARTED for a completed backfill never reopens it.
    assert event.backfill_id is not None
    return Advance(
        AllOf((NotInSet("backfillsStarted", event.backfill_id), NotInSet("backfillsCompleted", event.backfill_id))),
        add_to_set={"backfillsStarted": event.backfill_id},
    )


def _backfill_completed(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.backfill_id is not None
    return Advance(
        NotInSet("backfillsCompleted", event.backfill_id), add_to_set={"backfillsCompleted": event.backfill_id}
    )


def _cdc_lag_recovered(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.watermark is not None
    return Advance(Below("cdcRecoveredWatermark", event.watermark), sets={"cdcRecoveredWatermark": event.watermark})


def _manifest_claim(event: AssetEvent, recorded_at: int) -> Advance:
    # A SEALED event is the writer's claim: the manifest counts only once verified (see
    # verification_advance). An INTERRUPTED one blocks at once: blocking is the safe side.
    claim = "SEALED" if event.event_type is EventType.MANIFEST_SEALED else "INTERRUPTED"
    status = ManifestStatus.PENDING if claim == "SEALED" else ManifestStatus.INTERRUPTED
    sets: dict[str, Any] = {
        "manifestUri": event.manifest_uri,
        "manifestClaim": claim,
        "manifestStatus": status.value,
        "manifestReason": None,
        "manifestObject": None,
        "manifestSha256": None,  # the verifier records the hash it verified
    }
    # The current manifest is the one with the greatest order key; on a tie in time an
    # interruption outranks a seal (blocking is the safe side).
    key = order_key(event, recorded_at, rank=0 if claim == "SEALED" else 1)
    sets["manifestOrder"] = key
    sets["manifestSnapshotId"] = event.snapshot_id
    return Advance(
        Below("manifestOrder", key),
        sets=sets,
        settled_later=frozenset({"manifestStatus", "manifestReason", "manifestObject", "manifestSha256"}),
        applied_if=(("manifestUri", event.manifest_uri), ("manifestClaim", claim)),
    )


def _interval_covered(event: AssetEvent, recorded_at: int) -> Advance:
    # The merged intervals live in their own coverage items (the ingest path adds them first);
    # the state is only touched so its stream record wakes the resolver. Guarded on the event,
    # so a redelivery touches it again (harmless) and a crash between the two is finished.
    assert event.interval is not None
    event_id = event.event_id
    return Advance(
        NotAllEqual((("lastCoverageEventId", event_id),)),
        sets={
            "lastCoverageEventId": event_id,
            "lastCoverageStart": event.interval.start,
            "lastCoverageEnd": event.interval.end,
        },
    )


# One rule per event type: how it moves the state forward.
_ADVANCES: dict[EventType, Callable[[AssetEvent, int], Advance]] = {
    EventType.SNAPSHOT_COMMITTED: _snapshot_committed,
    EventType.WATERMARK_ADVANCED: _watermark_advanced,
    EventType.TAG_CREATED: _tag_created,
    EventType.QUALITY_CHECK_PASSED: _quality_verdict,
    EventType.QUALITY_CHECK_FAILED: _quality_verdict,
    EventType.SCHEMA_CHANGE_APPROVED: _schema_verdict,
    EventType.SCHEMA_CHANGE_REJECTED: _schema_verdict,
    EventType.BACKFILL_STARTED: _backfill_started,
    EventType.BACKFILL_COMPLETED: _backfill_completed,
    EventType.CDC_LAG_RECOVERED: _cdc_lag_recovered,
    EventType.MANIFEST_SEALED: _manifest_claim,
    EventType.MANIFEST_INTERRUPTED: _manifest_claim,
    EventType.INTERVAL_COVERED: _interval_covered,
}


def verdict_touch(event: AssetEvent) -> Advance:
    """A quality verdict on a snapshot older than the state's newest verdict leaves those as they are (STALE), but
    touches the state so that its stream record wakes the resolver: an EACH_VERSION rule judges each snapshot by
    its own checks and may be waiting for exactly this one. Guarded on the event, so a redelivery writes nothing
    unless another late verdict touched the state since (then it wakes the resolver once more, harmlessly)."""
    assert event.event_type in (EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED)
    return Advance(NotAllEqual((("lastVerdictEventId", event.event_id),)), sets={"lastVerdictEventId": event.event_id})


def snapshot_record(event: AssetEvent) -> SnapshotRecord:
    """What the state and the history keep of a SNAPSHOT_COMMITTED event's snapshot."""
    assert event.snapshot_id is not None and event.snapshot_order is not None
    return SnapshotRecord(
        snapshot_id=event.snapshot_id,
        order=event.snapshot_order,
        parent_snapshot_id=event.parent_snapshot_id,
        schema_id=event.schema_id,
        commit_time=event.commit_time,
        commit_kind=event.commit_kind,
        metadata_location=event.metadata_location,
        watermark=event.watermark,
        data_changed=event.data_changed,
    )


def latest_partitions_value(event: AssetEvent, order: int) -> dict[str, Any] | None:
    """What ``latestPartitions`` holds after a data-changing snapshot: the partitions it touched, with its id and
    order; None (stored as null) when it names none, so an older snapshot's partitions never pass for its own."""
    if event.partitions is None:
        return None
    return {**event.partitions.to_api(), "snapshotId": event.snapshot_id, "order": order}


class LatestPartitions(TouchedPartitions):
    """The partitions the newest data-changing snapshot touched (``latestData``), and which snapshot that is."""

    snapshot_id: int = Field(alias="snapshotId")
    order: int

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def tag_ref(tag: str, snapshot_id: int, order: int | None) -> str:
    """A tag and the snapshot it names, as one member of the state's ``tagRefs`` string set."""
    return f"{snapshot_id}:{'' if order is None else order}:{tag}"


def verification_advance(
    manifest_uri: str,
    verified: bool,
    reason: str | None = None,
    object_uri: str | None = None,
    sha256: str | None = None,
) -> Advance:
    """The verdict on a claimed-sealed manifest: SEALED with the SHA-256 of the manifest verified, or INVALID
    with the object and the reason.

    Applies only while that very manifest is the asset's claimed-sealed one, so a late verdict on an
    older manifest never overwrites a newer manifest's status. A manifest rewritten at the same URI and
    verified again moves the hash on (a trigger pins the hash, so its replay sees the rewrite).
    """
    status = ManifestStatus.SEALED if verified else ManifestStatus.INVALID
    changes: tuple[tuple[str, Any], ...] = (("manifestStatus", status.value),)
    if verified and sha256 is not None:
        changes += (("manifestSha256", sha256),)
    return Advance(
        WhileEqual((("manifestUri", manifest_uri), ("manifestClaim", "SEALED")), changes),
        sets={
            "manifestStatus": status.value,
            "manifestReason": None if verified else (reason or "it failed verification")[:2048],
            "manifestObject": None if verified else object_uri,
            "manifestSha256": sha256 if verified else None,
        },
    )


def _comparable(value: Any) -> int | str:
    """A stored version as the guard compares it: a number (a store may hand back a decimal type) or a key."""
    return value if isinstance(value, str) else int(value)


def _at(state: dict[str, Any], path: str) -> Any:
    """An attribute, or a field of a map attribute (``latestData.order``), or None."""
    value: Any = state
    for name in path.split("."):
        value = value.get(name) if isinstance(value, dict) else None
    return value


def guard_holds(state: dict[str, Any], guard: Guard) -> bool:
    """Whether the guard holds on a state given as its stored attributes."""
    if isinstance(guard, AllOf):
        return all(guard_holds(state, g) for g in guard.guards)
    if isinstance(guard, Below):
        current = _at(state, guard.attr)
        if current is None:
            return True
        mine, theirs = guard.value, _comparable(current)
        # as DynamoDB: a number and a string never compare, so the condition fails
        return type(theirs) is type(mine) and theirs < mine  # type: ignore[operator]
    if isinstance(guard, NotInSet):
        return guard.value not in set(state.get(guard.attr) or ())
    if isinstance(guard, WhileEqual):
        return all(state.get(a) == v for a, v in guard.pairs) and not all(state.get(a) == v for a, v in guard.changes)
    return not all(state.get(attr) == value for attr, value in guard.pairs)


def already_applied(state: dict[str, Any], advance: Advance) -> bool:
    """When the guard failed: did the state already take exactly this version (not a newer one)?"""
    guard = advance.guard
    if advance.applied_if:
        return all(state.get(attr) == value for attr, value in advance.applied_if)
    if isinstance(guard, AllOf):
        first = guard.guards[0]
        return not guard_holds(state, first) and already_applied(state, Advance(first, advance.sets))
    if isinstance(guard, Below):
        current = _at(state, guard.attr)
        return current is not None and _comparable(current) == guard.value
    if isinstance(guard, NotInSet):
        return True  # a set membership guard fails only when this very value is there
    # An equality guard also fails for a late event (BACKFILL_STARTED after that backfill completed):
    # only if the state holds what the event asks for was it applied; otherwise the event is stale.
    return all(state.get(attr) == value for attr, value in advance.sets.items() if attr not in advance.settled_later)


def apply_advance(state: dict[str, Any], advance: Advance, *, event_id: str, now_ms: int) -> dict[str, Any] | None:
    """The new stored state, or None when the guard fails (the event is older than the state)."""
    if not guard_holds(state, advance.guard):
        return None
    new = dict(state)
    new.update(advance.sets)
    for attr, value in advance.set_if_absent.items():
        new.setdefault(attr, value)
    for attr, value in advance.add_to_set.items():
        new[attr] = set(new.get(attr) or ()) | {value}
    new["version"] = int(new.get("version", 0)) + 1
    new["updatedAt"] = now_ms
    new["lastEventId"] = event_id
    return new


# --- the read model -------------------------------------------------------------------------


class AssetState(BaseModel):
    """The state of one asset as the resolver and the API read it."""

    model_config = ConfigDict(populate_by_name=True)

    asset_key: str = Field(alias="assetKey")
    version: int = 0
    latest_snapshot_id: int | None = Field(default=None, alias="latestSnapshotId")
    latest_snapshot_order: int | None = Field(
        default=None, alias="latestSnapshotOrder", description="the snapshot's place in history (see AssetEvent)"
    )
    latest_sequence_number: int | None = Field(default=None, alias="latestSequenceNumber")
    latest_schema_id: int | None = Field(default=None, alias="latestSchemaId")
    latest_commit_time: int | None = Field(default=None, alias="latestCommitTime")
    latest_commit_kind: str | None = Field(default=None, alias="latestCommitKind")
    latest_parent_snapshot_id: int | None = Field(default=None, alias="latestParentSnapshotId")
    latest_snapshot_watermark: int | None = Field(default=None, alias="latestSnapshotWatermark")
    latest_watermark: int | None = Field(default=None, alias="latestWatermark")
    first_schema_id: int | None = Field(default=None, alias="firstSchemaId")
    latest_metadata_location: str | None = Field(default=None, alias="latestMetadataLocation")
    latest_data_changed: bool | None = Field(
        default=None, alias="latestDataChanged", description="whether the newest snapshot changed data"
    )
    seen_from_start: bool | None = Field(
        default=None,
        alias="seenFromStart",
        description="whether the first snapshot lakehook recorded was the table's first (None: not known)",
    )
    latest_data: SnapshotRecord | None = Field(
        default=None, alias="latestData", description="the newest snapshot that changed data (not a compaction)"
    )
    latest_partitions: LatestPartitions | None = Field(
        default=None,
        alias="latestPartitions",
        description="the partitions latestData touched (None: unpartitioned, or its event named none)",
    )
    tags: set[str] = Field(default_factory=set)
    tag_refs: set[str] = Field(default_factory=set, alias="tagRefs", description="'<snapshotId>:<order>:<tag>'")
    latest_tag: str | None = Field(default=None, alias="latestTag")
    latest_tag_snapshot_id: int | None = Field(default=None, alias="latestTagSnapshotId")
    quality_passed_snapshot_id: int | None = Field(default=None, alias="qualityPassedSnapshotId")
    quality_failed_snapshot_id: int | None = Field(default=None, alias="qualityFailedSnapshotId")
    quality_passed_order: int | None = Field(default=None, alias="qualityPassedOrder")
    quality_failed_order: int | None = Field(default=None, alias="qualityFailedOrder")
    schema_approved_id: int | None = Field(default=None, alias="schemaApprovedId")
    schema_rejected_id: int | None = Field(default=None, alias="schemaRejectedId")
    backfill_id: str | None = Field(default=None, alias="backfillId")
    backfill_status: BackfillStatus = Field(default=BackfillStatus.NONE, alias="backfillStatus")
    cdc_recovered_watermark: int | None = Field(default=None, alias="cdcRecoveredWatermark")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")
    manifest_status: str | None = Field(default=None, alias="manifestStatus")
    manifest_snapshot_id: int | None = Field(default=None, alias="manifestSnapshotId")
    manifest_reason: str | None = Field(default=None, alias="manifestReason")
    manifest_object: str | None = Field(default=None, alias="manifestObject")
    manifest_sha256: str | None = Field(
        default=None, alias="manifestSha256", description="the SHA-256 of the manifest verified (SEALED only)"
    )
    # the newest data commit that confirmed the run which wrote it (domain.confirmation): confirmationStatus members
    confirmed_snapshot_id: int | None = Field(default=None, alias="confirmedSnapshotId")
    confirmed_order: int | None = Field(default=None, alias="confirmedOrder")
    confirmed_trigger_key: str | None = Field(default=None, alias="confirmedTriggerKey")
    # the newest data commit that carried a trigger key and confirmed nothing, and why (explain names them)
    unconfirmed_snapshot_id: int | None = Field(default=None, alias="unconfirmedSnapshotId")
    unconfirmed_order: int | None = Field(default=None, alias="unconfirmedOrder")
    unconfirmed_trigger_key: str | None = Field(default=None, alias="unconfirmedTriggerKey")
    unconfirmed_reason: str | None = Field(default=None, alias="unconfirmedReason")
    last_coverage_start: int | None = Field(default=None, alias="lastCoverageStart")
    last_coverage_end: int | None = Field(default=None, alias="lastCoverageEnd")
    updated_at: int | None = Field(default=None, alias="updatedAt")
    last_event_id: str | None = Field(default=None, alias="lastEventId")

    @property
    def latest_record(self) -> SnapshotRecord | None:
        """The newest snapshot, as a record (None before the first snapshot)."""
        if self.latest_snapshot_id is None:
            return None
        return SnapshotRecord(
            snapshot_id=self.latest_snapshot_id,
            order=self.latest_snapshot_order if self.latest_snapshot_order is not None else self.latest_snapshot_id,
            parent_snapshot_id=self.latest_parent_snapshot_id,
            schema_id=self.latest_schema_id,
            commit_time=self.latest_commit_time,
            commit_kind=self.latest_commit_kind,
            metadata_location=self.latest_metadata_location,
            watermark=self.latest_snapshot_watermark,
            data_changed=self.latest_data_changed,
        )

    def tag_snapshot(self, tag: str) -> tuple[int, int | None] | None:
        """The snapshot a tag names and its order when known; None if the tag carried no snapshot."""
        for ref in self.tag_refs:
            snapshot, order, name = ref.split(":", 2)
            if name == tag:
                return int(snapshot), int(order) if order else None
        return None

    @property
    def watermark(self) -> int | None:
        """The effective watermark: the newest of pushed watermarks and snapshot watermarks."""
        values = [w for w in (self.latest_watermark, self.latest_snapshot_watermark) if w is not None]
        return max(values) if values else None

    @property
    def schema_status(self) -> SchemaStatus:
        """Derived: a table's first schema, and any approved one, count as compatible."""
        latest = self.latest_schema_id
        if latest is None:
            return SchemaStatus.UNKNOWN
        rejected = self.schema_rejected_id
        approved = self.schema_approved_id
        if rejected is not None and rejected >= latest and (approved is None or approved < rejected):
            return SchemaStatus.REJECTED
        accepted = [s for s in (self.first_schema_id, self.schema_approved_id) if s is not None]
        if accepted and max(accepted) >= latest:
            return SchemaStatus.COMPATIBLE
        return SchemaStatus.PENDING_APPROVAL

    def quality_of(self, record: SnapshotRecord) -> Verdict | None:
        """The verdict on one snapshot when the state alone tells it (it holds the newest PASSED and the newest
        FAILED snapshot), else None: the snapshot's own quality events tell."""
        if self.quality_failed_snapshot_id == record.snapshot_id:
            return Verdict.FAILED
        if self.quality_passed_snapshot_id == record.snapshot_id:
            failed = self.quality_failed_order
            failed = failed if failed is not None else self.quality_failed_snapshot_id
            if failed is None or failed < record.order:
                return Verdict.PASSED  # the newest failure is older than this snapshot: none failed it
        return None

    @property
    def quality_status(self) -> str:
        """UNKNOWN, PASSED or FAILED for the latest snapshot."""
        latest = self.latest_snapshot_id
        if latest is not None and self.quality_failed_snapshot_id == latest:
            return "FAILED"
        if latest is not None and self.quality_passed_snapshot_id == latest:
            return "PASSED"
        return "UNKNOWN"

    def to_api(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, mode="json", exclude_none=True)
        data["tags"] = sorted(self.tags)
        data.pop("tagRefs", None)
        data["watermark"] = self.watermark
        parts = self.latest_partitions
        if parts is not None:  # unrecorded keys only when there are some, as an event's partitions say it
            data["latestPartitions"] = {**parts.to_api(), "snapshotId": parts.snapshot_id, "order": parts.order}
        data["schemaStatus"] = self.schema_status.value
        data["qualityStatus"] = self.quality_status
        if self.updated_at is not None:
            data["updatedAt"] = ms_to_iso(self.updated_at)
        return data
