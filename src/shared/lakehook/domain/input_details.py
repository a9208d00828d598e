"""What a run is told about each pinned version beyond the version itself: the triggering event's details.

A pin names a version (a snapshot, a tag, a watermark). The event lakehook recorded for exactly that version (its
identity is (asset, type, version), :func:`lakehook.domain.events.event_identity`) carries the commit facts (the
commit kind, whether it changed data, its record counts, the partitions it touched) and the producer's free-form
``payload``. These details go into the run manifest and the invocation payload under the names the events API uses.

Where a pin covers several commits (a partition's newest commit, a window), the details are the pinned version's
only: the commit the pin names, not the ones before it. An event recorded first by a poll and pushed later keeps
what was recorded first (an event is written once), so a pushed ``payload`` reaches the run only when the push
recorded the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.partitions import partitions_json
from lakehook.domain.triggers import PinnedInput

EventRef = tuple[str, EventType, str]
"""(asset key, event type, version): the identity of the event that recorded a pinned version."""

DETAIL_FIELDS = (
    "commitKind",
    "dataChanged",
    "totalRecordCount",
    "deltaRecordCount",
    "changelogRecordCount",
    "partitions",
    "payload",
)
"""The details' names in a manifest input and an invocation input (the events API's names)."""


class InputDetails(BaseModel):
    """The pinned version's event, as a run reads it: commit facts and the producer's payload (None: not known)."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    commit_kind: str | None = Field(default=None, alias="commitKind")
    data_changed: bool | None = Field(default=None, alias="dataChanged")
    total_record_count: int | None = Field(default=None, alias="totalRecordCount")
    delta_record_count: int | None = Field(default=None, alias="deltaRecordCount")
    changelog_record_count: int | None = Field(default=None, alias="changelogRecordCount")
    partitions: dict[str, Any] | None = Field(default=None, description="{keys, count, truncated} as events answer")
    payload: dict[str, Any] | None = None

    @classmethod
    def of(cls, event: AssetEvent) -> InputDetails:
        return cls(
            commit_kind=event.commit_kind,
            data_changed=event.data_changed,
            total_record_count=event.total_record_count,
            delta_record_count=event.delta_record_count,
            changelog_record_count=event.changelog_record_count,
            partitions=partitions_json(event.partitions) if event.partitions is not None else None,
            payload=event.payload,
        )


def event_ref(pin: PinnedInput) -> EventRef | None:
    """The event that recorded the pinned version: its snapshot's commit, else its sealed spool manifest, else its tag,
    else its watermark."""
    if pin.snapshot_id is not None:
        return (pin.asset_key, EventType.SNAPSHOT_COMMITTED, str(pin.snapshot_id))
    if pin.manifest_uri is not None:
        return (pin.asset_key, EventType.MANIFEST_SEALED, pin.manifest_uri)
    if pin.tag is not None:
        return (pin.asset_key, EventType.TAG_CREATED, pin.tag)
    if pin.watermark is not None:
        return (pin.asset_key, EventType.WATERMARK_ADVANCED, str(pin.watermark))
    return None


def details_of(pins: tuple[PinnedInput, ...], events: Mapping[EventRef, AssetEvent]) -> list[InputDetails | None]:
    """Each pin's details, in the pins' order (None where its event is not recorded, or expired)."""
    found: list[InputDetails | None] = []
    for pin in pins:
        ref = event_ref(pin)
        event = events.get(ref) if ref is not None else None
        found.append(InputDetails.of(event) if event is not None else None)
    return found


def without_details(data: Mapping[str, Any]) -> dict[str, Any]:
    """An input's JSON without its details: what is left when the details go only in the manifest."""
    return {name: value for name, value in data.items() if name not in DETAIL_FIELDS}
