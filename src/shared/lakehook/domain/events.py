"""Asset events: evidence about an asset, identified by (asset, type, version)."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.assets import validate_asset_key
from lakehook.domain.json_input import json_depth
from lakehook.domain.limits import (
    MAX_LONG,
    MAX_PAYLOAD_BYTES,
    MAX_PAYLOAD_DEPTH,
    MIN_LONG,
    EpochMillis,
    Long,
    NonNegativeLong,
)
from lakehook.domain.partitions import PartitionKeyError, TouchedPartitions, canonical_partition_key, partitions_json
from lakehook.domain.time import instant_from_json, ms_to_iso

__all__ = ["MAX_LONG", "MAX_PAYLOAD_BYTES", "MIN_LONG"]  # re-exported: older imports read them from here


class EventType(StrEnum):
    SNAPSHOT_COMMITTED = "SNAPSHOT_COMMITTED"
    WATERMARK_ADVANCED = "WATERMARK_ADVANCED"
    TAG_CREATED = "TAG_CREATED"
    QUALITY_CHECK_PASSED = "QUALITY_CHECK_PASSED"
    QUALITY_CHECK_FAILED = "QUALITY_CHECK_FAILED"
    SCHEMA_CHANGE_APPROVED = "SCHEMA_CHANGE_APPROVED"
    SCHEMA_CHANGE_REJECTED = "SCHEMA_CHANGE_REJECTED"
    BACKFILL_STARTED = "BACKFILL_STARTED"
    BACKFILL_COMPLETED = "BACKFILL_COMPLETED"
    CDC_LAG_RECOVERED = "CDC_LAG_RECOVERED"
    MANIFEST_SEALED = "MANIFEST_SEALED"
    MANIFEST_INTERRUPTED = "MANIFEST_INTERRUPTED"
    INTERVAL_COVERED = "INTERVAL_COVERED"


class SourceType(StrEnum):
    PUSH = "PUSH"
    POLL = "POLL"
    COMPENSATION = "COMPENSATION"
    RUN_COMPLETION = "RUN_COMPLETION"
    VERIFICATION = "VERIFICATION"  # the spool verifier, recording a manifest S3 announced
    LINEAGE = "LINEAGE"  # an OpenLineage RunEvent's output (POST /api/v1/lineage)
    EVENTBRIDGE = "EVENTBRIDGE"  # a producer's "Lakehook Asset Events" put on the stack's event bus


class IngestStatus(StrEnum):
    ACCEPTED = "ACCEPTED"  # new evidence, and the asset state moved (or already held it)
    DUPLICATE = "DUPLICATE"  # this event identity was recorded before
    STALE = "STALE"  # new evidence, recorded, but older than the state: the state does not roll back
    REJECTED = "REJECTED"  # invalid or not allowed; nothing recorded


# The field that carries an event's version, per type: the version is part of its identity.
VERSION_FIELDS: dict[EventType, tuple[str, ...]] = {
    EventType.SNAPSHOT_COMMITTED: ("snapshot_id",),
    EventType.WATERMARK_ADVANCED: ("watermark",),
    EventType.TAG_CREATED: ("tag",),
    EventType.QUALITY_CHECK_PASSED: ("snapshot_id",),
    EventType.QUALITY_CHECK_FAILED: ("snapshot_id",),
    EventType.SCHEMA_CHANGE_APPROVED: ("schema_id",),
    EventType.SCHEMA_CHANGE_REJECTED: ("schema_id",),
    EventType.BACKFILL_STARTED: ("backfill_id",),
    EventType.BACKFILL_COMPLETED: ("backfill_id",),
    EventType.CDC_LAG_RECOVERED: ("watermark",),
    EventType.MANIFEST_SEALED: ("manifest_uri",),
    EventType.MANIFEST_INTERRUPTED: ("manifest_uri",),
    EventType.INTERVAL_COVERED: ("interval",),
}

_ALIASES = {
    "snapshot_id": "snapshotId",
    "schema_id": "schemaId",
    "watermark": "watermark",
    "tag": "tag",
    "backfill_id": "backfillId",
    "manifest_uri": "manifestUri",
    "interval": "interval",
}


class Interval(BaseModel):
    """A half-open interval ``[start, end)`` in epoch milliseconds (ISO 8601 or epoch ms on input)."""

    model_config = ConfigDict(extra="forbid")

    start: EpochMillis
    end: EpochMillis

    @field_validator("start", "end", mode="before")
    @classmethod
    def _instant(cls, value: object) -> int:
        return instant_from_json(value)

    @model_validator(mode="after")
    def _ordered(self) -> Interval:
        if self.end <= self.start:
            raise ValueError("interval end must be after its start")
        return self


class AssetEvent(BaseModel):
    """One piece of evidence about an asset. Its identity is derived from (asset, type, version).

    Every number has a range, checked here once (the API, the poller and the OpenAPI document share it):
    ids, sequence numbers and counts are JSON integers within a signed 64-bit long (ids and counts of
    rows not negative); instants are epoch milliseconds within 1970 … 9999 (or ISO 8601 strings).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    event_type: EventType = Field(alias="eventType")
    asset_key: str = Field(alias="assetKey")
    snapshot_id: NonNegativeLong | None = Field(default=None, alias="snapshotId")
    parent_snapshot_id: NonNegativeLong | None = Field(default=None, alias="parentSnapshotId")
    sequence_number: NonNegativeLong | None = Field(default=None, alias="sequenceNumber")
    schema_id: NonNegativeLong | None = Field(default=None, alias="schemaId")
    watermark: EpochMillis | None = Field(default=None, description="epoch milliseconds")
    commit_kind: str | None = Field(default=None, alias="commitKind", max_length=64)
    commit_time: EpochMillis | None = Field(default=None, alias="commitTime", description="epoch milliseconds")
    commit_user: str | None = Field(default=None, alias="commitUser", max_length=256)
    commit_identifier: Long | None = Field(default=None, alias="commitIdentifier")
    total_record_count: NonNegativeLong | None = Field(default=None, alias="totalRecordCount")
    # Paimon's delta count is added minus deleted rows: a snapshot that deletes more is negative.
    delta_record_count: Long | None = Field(default=None, alias="deltaRecordCount")
    changelog_record_count: NonNegativeLong | None = Field(default=None, alias="changelogRecordCount")
    schema_changed: bool | None = Field(default=None, alias="schemaChanged")
    data_changed: bool | None = Field(
        default=None,
        alias="dataChanged",
        description="false: the commit changed no rows (a rewrite, an overwrite or delete that matched nothing), "
        "whatever its commitKind; absent: the commitKind decides",
    )
    tag: str | None = Field(default=None, min_length=1, max_length=256)
    backfill_id: str | None = Field(default=None, alias="backfillId", min_length=1, max_length=256)
    interval: Interval | None = None
    partition_key: str | None = Field(
        default=None,
        alias="partitionKey",
        max_length=512,
        description="SNAPSHOT_COMMITTED: the one partition the commit touched (a canonical key, docs/partitions.md); "
        "INTERVAL_COVERED: the partition the interval covers",
    )
    partitions: TouchedPartitions | None = Field(
        default=None,
        description="SNAPSHOT_COMMITTED: the partitions the commit touched, as a list of canonical keys "
        "(at most 1000) or as lakehook answers them ({keys, count, truncated}); absent: not known or unpartitioned",
    )
    manifest_uri: str | None = Field(default=None, alias="manifestUri", max_length=1024)
    metadata_location: str | None = Field(
        default=None,
        alias="metadataLocation",
        min_length=1,
        max_length=2048,
        description="Iceberg: the metadata.json that holds this snapshot, pinned in run manifests",
    )
    payload: dict[str, Any] | None = None

    @field_validator("asset_key")
    @classmethod
    def _key(cls, value: str) -> str:
        return validate_asset_key(value)

    @field_validator("watermark", "commit_time", mode="before")
    @classmethod
    def _instant(cls, value: object) -> object:
        return None if value is None else instant_from_json(value)

    @field_validator("payload")
    @classmethod
    def _payload_size(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        depth = json_depth(value)
        if depth > MAX_PAYLOAD_DEPTH:
            raise ValueError(f"payload nests {depth} levels; the limit is {MAX_PAYLOAD_DEPTH}")
        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except ValueError as exc:  # NaN or Infinity: not JSON, so not answerable later
            raise ValueError("payload must be JSON: NaN and Infinity are not allowed") from exc
        if len(text.encode()) > MAX_PAYLOAD_BYTES:
            raise ValueError(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
        return value

    @field_validator("manifest_uri")
    @classmethod
    def _manifest_uri(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("s3://"):
            raise ValueError("manifestUri must be an s3:// URI")
        return value

    @model_validator(mode="before")
    @classmethod
    def _one_partition(cls, data: Any) -> Any:
        """A snapshot's ``partitionKey`` is the one partition it touched: canonical, and one of ``partitions``."""
        if not isinstance(data, dict) or data.get("eventType") != EventType.SNAPSHOT_COMMITTED.value:
            return data
        field = "partitionKey" if "partitionKey" in data else "partition_key"
        key = data.get(field)
        if not isinstance(key, str):
            return data
        try:
            canonical = canonical_partition_key(key)
        except PartitionKeyError as exc:
            raise ValueError(f"partitionKey: {exc}") from exc
        updated = {**data, field: canonical}
        if updated.get("partitions") is None:
            updated["partitions"] = [canonical]
        return updated

    @model_validator(mode="after")
    def _partition_in_partitions(self) -> AssetEvent:
        if self.partitions is not None and self.event_type is not EventType.SNAPSHOT_COMMITTED:
            raise ValueError(f"partitions is only for SNAPSHOT_COMMITTED, not {self.event_type.value}")
        named = self.partitions
        key = self.partition_key
        if key is not None and named is not None and not named.truncated and key not in named.keys:
            raise ValueError("partitionKey must be one of partitions")
        return self

    @model_validator(mode="after")
    def _has_version(self) -> AssetEvent:
        for name in VERSION_FIELDS[self.event_type]:
            if getattr(self, name) is None:
                raise ValueError(f"{_ALIASES[name]} is required for {self.event_type.value}")
        if self.event_type in ORDERED_SNAPSHOT_TYPES and self.snapshot_order is None:
            raise ValueError(
                f"sequenceNumber (or commitTime for a format-v1 table) is required for {self.event_type.value} "
                "on an iceberg asset: Iceberg snapshot ids are random, so lakehook orders snapshots by sequence number"
            )
        return self

    @property
    def snapshot_order(self) -> int | None:
        """Where the event's snapshot sits in its table's history; later snapshots have larger orders.

        Paimon (and generic) snapshot ids count up, so the id is the order. Iceberg snapshot ids are
        random 64-bit numbers: the order is the sequence number (format v2), or the commit time for a
        format-v1 table, whose sequence numbers are all 0.
        """
        if self.snapshot_id is None:
            return None
        if not self.asset_key.startswith("iceberg://"):
            return self.snapshot_id
        if self.sequence_number:
            return self.sequence_number
        return self.commit_time

    @property
    def version(self) -> str:
        """The version that, with asset and type, identifies this event."""
        if self.event_type is EventType.INTERVAL_COVERED:
            assert self.interval is not None
            part = f"@{self.partition_key}" if self.partition_key else ""
            return f"{self.interval.start}-{self.interval.end}{part}"
        (name,) = VERSION_FIELDS[self.event_type]
        return str(getattr(self, name))

    @property
    def event_id(self) -> str:
        """Stable identity: a poll and a push of the same snapshot share it."""
        return event_identity(self.asset_key, self.event_type, self.version)


def event_json(event: AssetEvent) -> dict[str, Any]:
    """The event as pushed, the form :class:`AssetEvent` parses (camelCase, no nulls): what its record stores and
    ``GET /assets/events`` answers. Its interval in ISO 8601 and its partitions as
    :func:`lakehook.domain.partitions.partitions_json` (``json_form`` would write epoch milliseconds and empty
    counts, the form a completion's canonical outlets keep)."""
    data = event.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"interval", "partitions"})
    if event.partitions is not None:
        data["partitions"] = partitions_json(event.partitions)
    if event.interval is not None:
        data["interval"] = {"start": ms_to_iso(event.interval.start), "end": ms_to_iso(event.interval.end)}
    return data


# Event types whose state guard compares snapshots by their order in the table's history.
ORDERED_SNAPSHOT_TYPES = frozenset(
    {EventType.SNAPSHOT_COMMITTED, EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED}
)


def event_identity(asset_key: str, event_type: EventType, version: str) -> str:
    """The event id: a hash of (asset, type, version), short enough to read in logs."""
    digest = hashlib.sha256(f"{asset_key}\x00{event_type.value}\x00{version}".encode()).hexdigest()
    return digest[:32]


class PushEnvelope(BaseModel):
    """The body of ``POST /asset-events``: one event or ``{"events": [...]}``.

    Items are validated one by one (a bad item is REJECTED, the others still count); the
    route enforces the per-push limit from the settings.
    """

    model_config = ConfigDict(extra="forbid")

    events: list[Any] = Field(min_length=1)


class EventResult(BaseModel):
    """What happened to one pushed event."""

    model_config = ConfigDict(populate_by_name=True)

    event_id: str | None = Field(default=None, alias="eventId")
    status: IngestStatus
    reason: str | None = None
    index: int | None = None


EventStatusLiteral = Literal["ACCEPTED", "DUPLICATE", "STALE", "REJECTED"]
