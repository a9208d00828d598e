"""Asset state: the advance-only source of truth, and how each event type moves it.

Each event type maps to an :class:`~lakehook.domain.state_changes.Advance` over the state's typed fields
(:class:`~lakehook.domain.state_changes.StateField`): a guard that holds only while the event is newer than the
state, and the fields it sets. The use case decides it here and hands it to the store, which applies it (the
DynamoDB adapter as one conditional update, the in-memory fake by evaluating the guard).

State only moves forward, field by field (``docs/architecture.md`` lists each field's order):
snapshots by their order in the table's history, quality verdicts by their snapshot's order,
watermarks and schema verdicts by their value, tags and backfills as sets that only grow, the
latest tag and the current manifest by an order key (:mod:`lakehook.domain.ordering`).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.json_form import json_form
from lakehook.domain.ordering import TagEntry, order_key
from lakehook.domain.partitions import TouchedPartitions, partitions_json
from lakehook.domain.state_changes import Advance, AllOf, Below, NotAllEqual, NotInSet, Pairs, StateField, WhileEqual
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


class ManifestStatus(StrEnum):
    PENDING = "PENDING"  # claimed sealed (pushed or announced); counts once verified
    SEALED = "SEALED"  # verified: every object exists with its size and SHA-256, the checksum holds
    INVALID = "INVALID"  # claimed sealed, but verification found a missing, truncated or tampered object
    INTERRUPTED = "INTERRUPTED"  # the extract stopped part way: blocks downstream (the interruption guard)


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
    sets: dict[StateField, Any] = {
        StateField.LATEST_SNAPSHOT_ID: event.snapshot_id,
        StateField.LATEST_SNAPSHOT_ORDER: event.snapshot_order,
    }
    optional = {
        StateField.LATEST_SCHEMA_ID: event.schema_id,
        StateField.LATEST_COMMIT_TIME: event.commit_time,
        StateField.LATEST_COMMIT_KIND: event.commit_kind,
        StateField.LATEST_SNAPSHOT_WATERMARK: event.watermark,
        StateField.LATEST_PARENT_SNAPSHOT_ID: event.parent_snapshot_id,
        StateField.LATEST_SEQUENCE_NUMBER: event.sequence_number,
        StateField.LATEST_METADATA_LOCATION: event.metadata_location,
    }
    sets.update({k: v for k, v in optional.items() if v is not None})
    record = snapshot_record(event)
    sets[StateField.LATEST_DATA_CHANGED] = record.changes_data  # always: a newer snapshot replaces an older one's "no"
    late = None
    if record.changes_data:  # a compaction keeps the newest data-changing snapshot (see versions.py)
        data = {
            StateField.LATEST_DATA: json_form(record),
            StateField.LATEST_PARTITIONS: latest_partitions_value(event, record.order),
        }
        sets.update(data)
        # A data snapshot that arrives after a newer compaction is still the newest data change.
        late = Advance(Below(StateField.LATEST_DATA_ORDER, record.order), sets=data)
    first: dict[StateField, Any] = {StateField.FIRST_SCHEMA_ID: event.schema_id} if event.schema_id is not None else {}
    # whether lakehook has seen the table from its first snapshot on (a first poll takes only the newest)
    first[StateField.SEEN_FROM_START] = starts_history(event.asset_key, record)
    return Advance(
        Below(StateField.LATEST_SNAPSHOT_ORDER, event.snapshot_order), sets=sets, set_if_absent=first, late=late
    )


def _watermark_advanced(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.watermark is not None
    watermark = StateField.LATEST_WATERMARK
    return Advance(Below(watermark, event.watermark), sets={watermark: event.watermark})


def _tag_created(event: AssetEvent, recorded_at: int) -> Advance:
    # Tags only grow. The latest tag is the tag log's greatest order key, derived when read: a late
    # tag still joins the set (a `tag` condition needs it) without becoming the latest.
    assert event.tag is not None
    entry = TagEntry(order_key(event, recorded_at), event.tag, event.snapshot_id)
    refs = {StateField.TAGS: event.tag, StateField.TAG_LOG: entry.encode()}
    if event.snapshot_id is not None:  # what a `tag` member pins
        refs[StateField.TAG_REFS] = tag_ref(event.tag, event.snapshot_id, event.snapshot_order)
    return Advance(NotInSet(StateField.TAGS, event.tag), add_to_set=refs)


def _quality_verdict(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.snapshot_id is not None and event.snapshot_order is not None
    passed = event.event_type is EventType.QUALITY_CHECK_PASSED
    snapshot = StateField.QUALITY_PASSED_SNAPSHOT_ID if passed else StateField.QUALITY_FAILED_SNAPSHOT_ID
    order = StateField.QUALITY_PASSED_ORDER if passed else StateField.QUALITY_FAILED_ORDER
    return Advance(Below(order, event.snapshot_order), sets={snapshot: event.snapshot_id, order: event.snapshot_order})


def _schema_verdict(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.schema_id is not None
    approved = event.event_type is EventType.SCHEMA_CHANGE_APPROVED
    verdict = StateField.SCHEMA_APPROVED_ID if approved else StateField.SCHEMA_REJECTED_ID
    return Advance(Below(verdict, event.schema_id), sets={verdict: event.schema_id})


def _backfill_started(event: AssetEvent, recorded_at: int) -> Advance:
    # Backfills are two sets that only grow; the status is derived when read (RUNNING while a
    # started one has not completed). A late STARTED for a completed backfill never reopens it.
    assert event.backfill_id is not None
    started, completed = StateField.BACKFILLS_STARTED, StateField.BACKFILLS_COMPLETED
    return Advance(
        AllOf((NotInSet(started, event.backfill_id), NotInSet(completed, event.backfill_id))),
        add_to_set={started: event.backfill_id},
    )


def _backfill_completed(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.backfill_id is not None
    completed = StateField.BACKFILLS_COMPLETED
    return Advance(NotInSet(completed, event.backfill_id), add_to_set={completed: event.backfill_id})


def _cdc_lag_recovered(event: AssetEvent, recorded_at: int) -> Advance:
    assert event.watermark is not None
    recovered = StateField.CDC_RECOVERED_WATERMARK
    return Advance(Below(recovered, event.watermark), sets={recovered: event.watermark})


# what the verifier sets on a claimed-sealed manifest (verification_advance)
_VERDICT_FIELDS = frozenset(
    {StateField.MANIFEST_STATUS, StateField.MANIFEST_REASON, StateField.MANIFEST_OBJECT, StateField.MANIFEST_SHA256}
)


def _manifest_claim(event: AssetEvent, recorded_at: int) -> Advance:
    # A SEALED event is the writer's claim: the manifest counts only once verified (see
    # verification_advance). An INTERRUPTED one blocks at once: blocking is the safe side.
    claim = "SEALED" if event.event_type is EventType.MANIFEST_SEALED else "INTERRUPTED"
    status = ManifestStatus.PENDING if claim == "SEALED" else ManifestStatus.INTERRUPTED
    sets: dict[StateField, Any] = {
        StateField.MANIFEST_URI: event.manifest_uri,
        StateField.MANIFEST_CLAIM: claim,
        StateField.MANIFEST_STATUS: status.value,
        StateField.MANIFEST_REASON: None,
        StateField.MANIFEST_OBJECT: None,
        StateField.MANIFEST_SHA256: None,  # the verifier records the hash it verified
    }
    # The current manifest is the one with the greatest order key; on a tie in time an
    # interruption outranks a seal (blocking is the safe side).
    key = order_key(event, recorded_at, rank=0 if claim == "SEALED" else 1)
    sets[StateField.MANIFEST_ORDER] = key
    sets[StateField.MANIFEST_SNAPSHOT_ID] = event.snapshot_id
    return Advance(
        Below(StateField.MANIFEST_ORDER, key),
        sets=sets,
        settled_later=_VERDICT_FIELDS,
        applied_if=((StateField.MANIFEST_URI, event.manifest_uri), (StateField.MANIFEST_CLAIM, claim)),
    )


def _interval_covered(event: AssetEvent, recorded_at: int) -> Advance:
    # The merged intervals live in their own coverage items (the ingest path adds them first);
    # the state is only touched so its stream record wakes the resolver. Guarded on the event,
    # so a redelivery touches it again (harmless) and a crash between the two is finished.
    assert event.interval is not None
    event_id = event.event_id
    return Advance(
        NotAllEqual(((StateField.LAST_COVERAGE_EVENT_ID, event_id),)),
        sets={
            StateField.LAST_COVERAGE_EVENT_ID: event_id,
            StateField.LAST_COVERAGE_START: event.interval.start,
            StateField.LAST_COVERAGE_END: event.interval.end,
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
    touched = StateField.LAST_VERDICT_EVENT_ID
    return Advance(NotAllEqual(((touched, event.event_id),)), sets={touched: event.event_id})


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
    return {**partitions_json(event.partitions), "snapshotId": event.snapshot_id, "order": order}


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
    changes: Pairs = ((StateField.MANIFEST_STATUS, status.value),)
    if verified and sha256 is not None:
        changes += ((StateField.MANIFEST_SHA256, sha256),)
    return Advance(
        WhileEqual(((StateField.MANIFEST_URI, manifest_uri), (StateField.MANIFEST_CLAIM, "SEALED")), changes),
        sets={
            StateField.MANIFEST_STATUS: status.value,
            StateField.MANIFEST_REASON: None if verified else (reason or "it failed verification")[:2048],
            StateField.MANIFEST_OBJECT: None if verified else object_uri,
            StateField.MANIFEST_SHA256: sha256 if verified else None,
        },
    )


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
