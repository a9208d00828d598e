"""A change of an asset's state, in the state's own terms: which fields it sets, and the guard that keeps it
advance-only ("only while the stored snapshot order is below 7", "only while the tag set lacks v1").

The use case decides a change (:func:`lakehook.domain.state.advance_for`) and hands it to the store, which applies it
as one conditional write (the DynamoDB adapter names the stored attributes and builds the expressions; the in-memory
fake evaluates the guard itself). When the guard fails, the store hands back the fields it saw, and
:func:`already_applied` tells the use case whether that state took exactly this change (ALREADY) or a newer one
(STALE).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class StateField(StrEnum):
    """A field of an asset's stored state that a change sets or guards on (``a.b``: field ``b`` of the map ``a``)."""

    LATEST_SNAPSHOT_ID = "latest_snapshot_id"
    LATEST_SNAPSHOT_ORDER = "latest_snapshot_order"
    LATEST_SCHEMA_ID = "latest_schema_id"
    LATEST_COMMIT_TIME = "latest_commit_time"
    LATEST_COMMIT_KIND = "latest_commit_kind"
    LATEST_SNAPSHOT_WATERMARK = "latest_snapshot_watermark"
    LATEST_PARENT_SNAPSHOT_ID = "latest_parent_snapshot_id"
    LATEST_SEQUENCE_NUMBER = "latest_sequence_number"
    LATEST_METADATA_LOCATION = "latest_metadata_location"
    LATEST_DATA_CHANGED = "latest_data_changed"
    LATEST_DATA = "latest_data"
    LATEST_DATA_ORDER = "latest_data.order"  # the order of the newest data-changing snapshot, inside LATEST_DATA
    LATEST_PARTITIONS = "latest_partitions"
    FIRST_SCHEMA_ID = "first_schema_id"
    SEEN_FROM_START = "seen_from_start"
    LATEST_WATERMARK = "latest_watermark"
    TAGS = "tags"
    TAG_LOG = "tag_log"
    TAG_REFS = "tag_refs"
    QUALITY_PASSED_SNAPSHOT_ID = "quality_passed_snapshot_id"
    QUALITY_PASSED_ORDER = "quality_passed_order"
    QUALITY_FAILED_SNAPSHOT_ID = "quality_failed_snapshot_id"
    QUALITY_FAILED_ORDER = "quality_failed_order"
    SCHEMA_APPROVED_ID = "schema_approved_id"
    SCHEMA_REJECTED_ID = "schema_rejected_id"
    BACKFILLS_STARTED = "backfills_started"
    BACKFILLS_COMPLETED = "backfills_completed"
    CDC_RECOVERED_WATERMARK = "cdc_recovered_watermark"
    MANIFEST_URI = "manifest_uri"
    MANIFEST_CLAIM = "manifest_claim"
    MANIFEST_STATUS = "manifest_status"
    MANIFEST_REASON = "manifest_reason"
    MANIFEST_OBJECT = "manifest_object"
    MANIFEST_SHA256 = "manifest_sha256"
    MANIFEST_ORDER = "manifest_order"
    MANIFEST_SNAPSHOT_ID = "manifest_snapshot_id"
    LAST_COVERAGE_EVENT_ID = "last_coverage_event_id"
    LAST_COVERAGE_START = "last_coverage_start"
    LAST_COVERAGE_END = "last_coverage_end"
    LAST_VERDICT_EVENT_ID = "last_verdict_event_id"
    CONFIRMED_SNAPSHOT_ID = "confirmed_snapshot_id"
    CONFIRMED_ORDER = "confirmed_order"
    CONFIRMED_TRIGGER_KEY = "confirmed_trigger_key"
    UNCONFIRMED_SNAPSHOT_ID = "unconfirmed_snapshot_id"
    UNCONFIRMED_ORDER = "unconfirmed_order"
    UNCONFIRMED_TRIGGER_KEY = "unconfirmed_trigger_key"
    UNCONFIRMED_REASON = "unconfirmed_reason"


Pairs = tuple[tuple[StateField, Any], ...]


# --- guards -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Below:
    """Holds while ``field`` is absent or strictly below ``value`` (a numeric version or an order key)."""

    field: StateField
    value: int | str


@dataclass(frozen=True)
class NotInSet:
    """Holds while the string set ``field`` does not contain ``value``."""

    field: StateField
    value: str


@dataclass(frozen=True)
class NotAllEqual:
    """Holds unless every ``field == value`` pair already holds."""

    pairs: Pairs


@dataclass(frozen=True)
class WhileEqual:
    """Holds while every ``pairs`` field equals its value and some ``changes`` field does not yet."""

    pairs: Pairs
    changes: Pairs


@dataclass(frozen=True)
class AllOf:
    """Holds while every guard holds; when it fails, the first guard says whether it was already applied."""

    guards: tuple[Below | NotInSet | NotAllEqual | WhileEqual, ...]


Guard = Below | NotInSet | NotAllEqual | WhileEqual | AllOf


@dataclass(frozen=True)
class Advance:
    """One advance-only change of an asset's state."""

    guard: Guard
    sets: dict[StateField, Any] = field(default_factory=dict)
    set_if_absent: dict[StateField, Any] = field(default_factory=dict)
    add_to_set: dict[StateField, str] = field(default_factory=dict)
    # fields a later step may move on (a manifest's verdict): not evidence that this advance was lost
    settled_later: frozenset[StateField] = frozenset()
    # when the guard failed, the state took exactly this version if these fields hold these values
    applied_if: Pairs = ()
    # when the guard failed for a newer state (the event is late, not a copy): what of it still applies
    late: Advance | None = None


# --- a refused change: already applied, or stale --------------------------------------------


def already_applied(seen: Mapping[StateField, Any], advance: Advance) -> bool:
    """When the guard failed on the state ``seen`` (plain values: numbers as int, sets as set): did that state
    already take exactly this change (a redelivery or a racing twin), rather than a newer one?"""
    if advance.applied_if:
        return all(seen.get(name) == value for name, value in advance.applied_if)
    guard = advance.guard.guards[0] if isinstance(advance.guard, AllOf) else advance.guard
    if isinstance(guard, Below):
        return seen.get(guard.field) == guard.value
    if isinstance(guard, NotInSet):  # a membership guard fails only when this very value is there
        return guard.value in (seen.get(guard.field) or ())
    # An equality guard also fails for a late event: only if the state holds what the event asks for was it
    # applied; otherwise the event is stale.
    return all(seen.get(name) == value for name, value in advance.sets.items() if name not in advance.settled_later)
