"""Ports of the foundation: events and asset state, registries, secrets, watermarks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import WatchEntry
from lakehook.domain.errors import NotFoundError
from lakehook.domain.event_range import EVERY_EVENT, EventRange
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import PartitionPart
from lakehook.domain.state import AssetState
from lakehook.domain.state_changes import Advance, StateField
from lakehook.domain.watermarks import WatermarkRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing; ``next_token`` is opaque and None on the last page. ``unreadable``: the stored items
    of this page that do not load (by id, with the reason), left out of ``items`` so the rest can be used."""

    items: list[T]
    next_token: str | None = None
    unreadable: dict[str, str] = field(default_factory=dict)


class AdvanceOutcome(StrEnum):
    ADVANCED = "ADVANCED"  # this call moved the state
    ALREADY = "ALREADY"  # the state already holds exactly this version (a redelivery or a racing twin)
    STALE = "STALE"  # the state holds a newer version; nothing written
    NO_STATE = "NO_STATE"  # the event type keeps no state here


@dataclass(frozen=True)
class ChangeApplied:
    """The store applied the change: its guard held."""


@dataclass(frozen=True)
class ChangeRefused:
    """The change's guard failed, so nothing was written; ``seen``: the state's fields as the failed condition saw
    them (no read: DynamoDB's ``ALL_OLD``), for the use case to decide ALREADY or STALE
    (:func:`lakehook.domain.state_changes.already_applied`)."""

    seen: Mapping[StateField, Any]


ChangeResult = ChangeApplied | ChangeRefused


@dataclass(frozen=True)
class Recording:
    """What recording an event found: whether it is new, when its identity was first recorded, and whether an
    earlier delivery finished ingesting it (then a redelivery has nothing left to do)."""

    novel: bool
    received_at: int  # a redelivery answers the first delivery's time: the time of an event that carries none
    settled: bool = False  # an earlier delivery finished every step after the record (see AssetStore.mark_settled)
    # a refused record: the partition keys the first recording's event names (None: it names none), so a poll of a
    # snapshot a push recorded first knows which of its own keys the push left out (docs/partitions.md#limits)
    partitions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RecordedEvent:
    """An event as stored: the event, where it came from and when."""

    event: AssetEvent
    source: SourceType
    received_at: int
    producer_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class AssetStore(ABC):
    """Events and advance-only asset state."""

    @abstractmethod
    def record_event(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording:
        """Record the event once; answer whether it is new and when its identity was first recorded.

        One conditional write and no read: a redelivery learns the first time, and the partition keys the first
        recording's event names, from the refused write.
        """

    def record_and_advance(
        self,
        event: AssetEvent,
        source: SourceType,
        received_at: int,
        producer_id: str | None = None,
        *,
        change: Advance,
    ) -> Recording | None:
        """Record a new event, already settled, and apply ``change`` (the advance the use case decided for it) to its
        asset's state, both or neither: the two writes of a novel event that needs no step between them
        (``IngestEvents``), no read.

        ``Recording(novel=True, settled=True)``: both written, the state ADVANCED. A refused record's ``Recording``
        (not novel), as ``record_event`` answers it: the event was recorded before, nothing written. None: nothing
        written for another reason (the state's guard refused the change, another write held an item, or this store
        has no such step), so the caller records and advances step by step.
        """
        return None

    @abstractmethod
    def mark_settled(self, event: AssetEvent) -> None:
        """Note on the recorded event that every step after its record finished (state advance, touches, requests).

        One write, the last of a delivery: a redelivery whose refused record sees the note stops there, so it
        costs that one refused write; without the note (the process died part way) it does every step again.
        """

    @abstractmethod
    def apply_change(self, asset_key: str, change: Advance, marker: str, now_ms: int) -> ChangeResult:
        """Apply a state change the use case decided, as one conditional write: ``ChangeApplied`` when its guard held
        (the state's version moves on by one, ``marker`` names its cause), else ``ChangeRefused`` with the fields the
        failed guard saw, nothing written. The store decides nothing: ALREADY, STALE and a late event's remainder
        are the use case's (``usecases.ingest_state``)."""

    @abstractmethod
    def get_state(self, asset_key: str) -> AssetState | None:
        """The asset's state, or None if no event ever moved it."""

    @abstractmethod
    def list_events(
        self, asset_key: str, limit: int, next_token: str | None = None, within: EventRange = EVERY_EVENT
    ) -> Page[RecordedEvent]:
        """The asset's recorded events ``within`` a range, newest first: by received time, or (a version range) by
        snapshot order, each page one key-range read of at most ``limit`` events; a token of another listing (another
        asset, another range) is a ValidationError naming ``nextToken``."""

    @abstractmethod
    def record_partition_parts(self, parts: Sequence[PartitionPart], recorded_at: int) -> None:
        """Record the parts of a snapshot's touched partitions beside its event, one item each (``recorded_at``:
        when the event's identity was first recorded, so a part expires with its event).

        Idempotent: a part written again holds the same content, and only a part's first write wakes the resolver
        (its INSERT stream record); ⌈parts/25⌉ batched writes on DynamoDB."""

    @abstractmethod
    def partition_parts(self, asset_key: str, order: int) -> list[PartitionPart]:
        """The recorded parts of the asset's snapshots at ``order``, by snapshot id and part."""


class AssetRegistry(ABC):
    """Registered assets and how to read them."""

    @abstractmethod
    def put_asset(self, asset: AssetRegistration, now_ms: int) -> bool:
        """Create or replace the registration. True if it was created."""

    @abstractmethod
    def get_asset(self, asset_key: str) -> AssetRegistration | None:
        """The registration, or None."""

    @abstractmethod
    def list_assets(self, limit: int, next_token: str | None = None) -> Page[AssetRegistration]:
        """Registered assets in key order."""

    @abstractmethod
    def assets_watching(self, watch_key: str) -> list[WatchEntry]:
        """The registered tables indexed under a watch key (see ``domain.commit_notices``), in one lookup."""


class ProducerRegistry(ABC):
    """Producers allowed to push, and their key prefixes."""

    @abstractmethod
    def put_producer(self, producer: Producer) -> bool:
        """Create or replace. True if it was created."""

    @abstractmethod
    def get_producer(self, producer_id: str) -> Producer | None:
        """The producer, or None."""

    @abstractmethod
    def event_source_owner(self, source: str) -> str | None:
        """The producer id an EventBridge source belongs to, or None."""

    @abstractmethod
    def claim_event_source(self, source: str, producer_id: str) -> None:
        """Make the source the producer's; ConflictError if another producer holds it."""

    @abstractmethod
    def release_event_source(self, source: str, producer_id: str) -> None:
        """Give the source up, if this producer holds it."""

    @abstractmethod
    def list_producers(self, limit: int, next_token: str | None = None) -> Page[Producer]:
        """Producers in id order."""


class SecretStore(ABC):
    """Secrets by reference (Secrets Manager on AWS)."""

    @abstractmethod
    def put_secret(self, name: str, value: str) -> str:
        """Create or overwrite the secret; answer its reference."""

    @abstractmethod
    def put_owned_secret(self, name: str, value: str, owner: str) -> str:
        """Create the secret marked as ``owner``'s, or overwrite one that carries that mark; answer its reference.

        Raises ConflictError, writing nothing, when a secret of that name exists that ``owner`` did not create
        (lakehook never overwrites a secret it did not make).
        """

    @abstractmethod
    def may_own_secret(self, name: str, owner: str) -> bool:
        """Whether ``put_owned_secret(name, …, owner)`` would write: no such secret, or one marked as owner's."""

    @abstractmethod
    def get_secret(self, ref: str) -> str:
        """The secret's current value. Raises NotFoundError."""

    def get_previous_secret(self, ref: str) -> str | None:
        """The value the secret had before its last rotation (Secrets Manager's AWSPREVIOUS), or None."""
        return None

    def secret_exists(self, ref: str) -> bool:
        """Whether the secret exists and can be read (False when it is scheduled for deletion).

        Raises AuthorizationError when lakehook is not allowed to read it. Stores that can tell without
        reading the value should override this; the default reads it.
        """
        try:
            self.get_secret(ref)
        except NotFoundError:
            return False
        return True


class WatermarkStore(ABC):
    """Persistent key/value per (namespace, asset key, key) with compare-and-set (seed 001)."""

    @abstractmethod
    def get(self, namespace: str, asset_key: str, key: str) -> WatermarkRecord | None:
        """The record, or None."""

    @abstractmethod
    def put(
        self, namespace: str, asset_key: str, key: str, value: Any, now_ms: int, expected_version: int | None = None
    ) -> WatermarkRecord:
        """Write the value. With ``expected_version`` (0 = absent) raise ConflictError if it moved."""

    @abstractmethod
    def delete(self, namespace: str, asset_key: str, key: str, expected_version: int | None = None) -> bool:
        """Delete; True if something was deleted. Raises ConflictError if the version moved."""

    @abstractmethod
    def list(self, namespace: str, asset_key: str) -> list[WatermarkRecord]:
        """Every key of one (namespace, asset)."""
