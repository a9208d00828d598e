"""In-memory fakes of the ports, for unit tests and the reference model (never in a Lambda layer: see
src/shared/Makefile). Thread-safe: every read and write of a fake's state holds that fake's lock."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import WatchEntry, watch_entries
from lakehook.domain.errors import ConflictError, NotFoundError, ValidationError
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import PartitionPart, PollStatus
from lakehook.domain.state import Advance, AssetState, advance_for, already_applied, apply_advance
from lakehook.domain.watermarks import WatermarkRecord
from lakehook.ports import (
    AdvanceOutcome,
    AssetRegistry,
    AssetStore,
    Page,
    ProducerRegistry,
    RecordedEvent,
    Recording,
    SecretStore,
    WatermarkStore,
)
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.queue import WorkQueue


def _page(items: list[Any], limit: int, next_token: str | None, listing: str = "") -> Page[Any]:
    """One page of ``items``; the token names its ``listing`` (an asset's events, a rule's triggers), so a token of
    another listing is refused as the DynamoDB adapters refuse it (their start key names the partition)."""
    if not next_token:
        start = 0
    else:
        scope, _, offset = next_token.rpartition("~")
        if not (offset.isascii() and offset.isdigit()):  # as the DynamoDB adapter: a foreign token is a 400
            raise ValidationError("nextToken is not a token this API issued", field="nextToken")
        if scope != listing:
            raise ValidationError("nextToken belongs to another listing", field="nextToken")
        start = int(offset)
    end = start + limit
    return Page(items[start:end], f"{listing}~{end}" if end < len(items) else None)


class InMemoryAssetStore(AssetStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: dict[str, RecordedEvent] = {}
        self.states: dict[str, dict[str, Any]] = {}
        self.settled: set[str] = set()
        # parts of snapshots' touched partitions by (asset, order, snapshot id, part), and each part as first written:
        # what the table's stream hands the resolver (an INSERT; a part written again is no record)
        self.parts: dict[tuple[str, int, int, int], PartitionPart] = {}
        self.inserted_parts: list[PartitionPart] = []

    def record_event(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording:
        with self._lock:
            refused = self._refused(event.event_id)
            if refused is not None:
                return refused
            self.events[event.event_id] = RecordedEvent(
                event, source, received_at, producer_id, {"eventId": event.event_id}
            )
            return Recording(True, received_at)

    def record_and_advance(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording | None:
        advance = advance_for(event, received_at)
        with self._lock:  # both or neither, as DynamoDB's transaction
            refused = self._refused(event.event_id)
            if refused is not None:
                return refused
            old = self.states.get(event.asset_key, {})
            new = None if advance is None else apply_advance(old, advance, event_id=event.event_id, now_ms=received_at)
            if new is None:
                return None
            self.states[event.asset_key] = new
            self.events[event.event_id] = RecordedEvent(
                event, source, received_at, producer_id, {"eventId": event.event_id}
            )
            self.settled.add(event.event_id)
            return Recording(True, received_at, settled=True)

    def _refused(self, event_id: str) -> Recording | None:
        """What a refused record answers (None: the event is new); the caller holds the lock."""
        first = self.events.get(event_id)
        if first is None:
            return None
        named = first.event.partitions
        return Recording(False, first.received_at, event_id in self.settled, None if named is None else named.keys)

    def mark_settled(self, event: AssetEvent) -> None:
        with self._lock:
            if event.event_id in self.events:  # as DynamoDB's attribute_exists: an expired record stays expired
                self.settled.add(event.event_id)

    def advance_state(self, event: AssetEvent, now_ms: int, recorded_at: int | None = None) -> AdvanceOutcome:
        advance = advance_for(event, now_ms if recorded_at is None else recorded_at)
        if advance is None:
            return AdvanceOutcome.NO_STATE
        return self.apply_advance(event.asset_key, advance, event.event_id, now_ms)

    def apply_advance(self, asset_key: str, advance: Advance, marker: str, now_ms: int) -> AdvanceOutcome:
        with self._lock:
            old = self.states.get(asset_key, {})
            new = apply_advance(old, advance, event_id=marker, now_ms=now_ms)
            if new is None:
                if already_applied(old, advance):
                    return AdvanceOutcome.ALREADY
                late = advance.late and apply_advance(old, advance.late, event_id=marker, now_ms=now_ms)
                if late:
                    self.states[asset_key] = late
                return AdvanceOutcome.STALE
            self.states[asset_key] = new
            return AdvanceOutcome.ADVANCED

    def get_state(self, asset_key: str) -> AssetState | None:
        with self._lock:
            item = self.states.get(asset_key)
        return None if item is None else asset_state_from_item(asset_key, item)

    def list_events(self, asset_key: str, limit: int, next_token: str | None = None) -> Page[RecordedEvent]:
        with self._lock:
            mine = [e for e in self.events.values() if e.event.asset_key == asset_key]
        mine.sort(key=lambda e: (e.received_at, e.event.event_id), reverse=True)
        return _page(mine, limit, next_token, f"events:{asset_key}")

    def record_partition_parts(self, parts: Sequence[PartitionPart], recorded_at: int) -> None:
        with self._lock:
            for part in parts:
                key = (part.asset_key, max(part.snapshot.order, 0), part.snapshot.snapshot_id, part.part)
                if key not in self.parts:
                    self.inserted_parts.append(part)
                self.parts[key] = part

    def partition_parts(self, asset_key: str, order: int) -> list[PartitionPart]:
        with self._lock:
            return [self.parts[k] for k in sorted(self.parts) if k[:2] == (asset_key, max(order, 0))]


class InMemoryAssetRegistry(AssetRegistry):
    def __init__(self) -> None:
        self.assets: dict[str, AssetRegistration] = {}
        self._lock = threading.Lock()

    def put_asset(self, asset: AssetRegistration, now_ms: int) -> bool:
        with self._lock:  # created is decided and written at once, as DynamoDB's conditional put does
            created = asset.asset_key not in self.assets
            self.assets[asset.asset_key] = asset
            return created

    def get_asset(self, asset_key: str) -> AssetRegistration | None:
        with self._lock:
            return self.assets.get(asset_key)

    def list_assets(self, limit: int, next_token: str | None = None) -> Page[AssetRegistration]:
        with self._lock:
            ordered = [self.assets[k] for k in sorted(self.assets)]
        return _page(ordered, limit, next_token, "assets")

    def assets_watching(self, watch_key: str) -> list[WatchEntry]:
        with self._lock:
            registered = list(self.assets.values())
        return sorted(
            (entry for asset in registered for key, entry in watch_entries(asset).items() if key == watch_key),
            key=lambda e: e.asset_key,
        )


class InMemoryProducerRegistry(ProducerRegistry):
    def __init__(self) -> None:
        self.producers: dict[str, Producer] = {}
        self.sources: dict[str, str] = {}
        self._lock = threading.Lock()

    def put_producer(self, producer: Producer) -> bool:
        with self._lock:
            created = producer.producer_id not in self.producers
            self.producers[producer.producer_id] = producer
            return created

    def get_producer(self, producer_id: str) -> Producer | None:
        with self._lock:
            return self.producers.get(producer_id)

    def event_source_owner(self, source: str) -> str | None:
        with self._lock:
            return self.sources.get(source)

    def claim_event_source(self, source: str, producer_id: str) -> None:
        with self._lock:  # decided and written at once, as DynamoDB's conditional put does
            owner = self.sources.setdefault(source, producer_id)
        if owner != producer_id:
            raise ConflictError(f"event source {source!r} belongs to producer {owner!r}")

    def release_event_source(self, source: str, producer_id: str) -> None:
        with self._lock:
            if self.sources.get(source) == producer_id:
                del self.sources[source]

    def list_producers(self, limit: int, next_token: str | None = None) -> Page[Producer]:
        with self._lock:
            ordered = [self.producers[k] for k in sorted(self.producers)]
        return _page(ordered, limit, next_token, "producers")


class InMemorySecretStore(SecretStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.secrets: dict[str, str] = {}
        self.owners: dict[str, str] = {}
        self.previous: dict[str, str] = {}  # as Secrets Manager's AWSPREVIOUS: the value before the last overwrite

    def _write(self, name: str, value: str) -> None:
        if name in self.secrets:
            self.previous[name] = self.secrets[name]
        self.secrets[name] = value

    def put_secret(self, name: str, value: str) -> str:
        with self._lock:
            self._write(name, value)
        return name

    def may_own_secret(self, name: str, owner: str) -> bool:
        with self._lock:
            return name not in self.secrets or self.owners.get(name) == owner

    def put_owned_secret(self, name: str, value: str, owner: str) -> str:
        with self._lock:
            if name in self.secrets and self.owners.get(name) != owner:
                raise ConflictError(f"secret {name!r} already exists and lakehook did not create it for {owner}")
            self._write(name, value)
            self.owners[name] = owner
        return name

    def get_secret(self, ref: str) -> str:
        with self._lock:
            found = self.secrets.get(ref)
        if found is None:
            raise NotFoundError(f"secret {ref!r} does not exist")
        return found

    def get_previous_secret(self, ref: str) -> str | None:
        with self._lock:
            return self.previous.get(ref) if ref in self.secrets else None


class InMemoryWatermarkStore(WatermarkStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[tuple[str, str, str], WatermarkRecord] = {}

    def get(self, namespace: str, asset_key: str, key: str) -> WatermarkRecord | None:
        with self._lock:
            return self.records.get((namespace, asset_key, key))

    def put(
        self, namespace: str, asset_key: str, key: str, value: Any, now_ms: int, expected_version: int | None = None
    ) -> WatermarkRecord:
        with self._lock:
            old = self.records.get((namespace, asset_key, key))
            current = old.version if old else 0
            if expected_version is not None and expected_version != current:
                raise ConflictError(f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}")
            record = WatermarkRecord(
                namespace=namespace, asset_key=asset_key, key=key, value=value, version=current + 1, updated_at=now_ms
            )
            self.records[(namespace, asset_key, key)] = record
            return record

    def delete(self, namespace: str, asset_key: str, key: str, expected_version: int | None = None) -> bool:
        with self._lock:
            old = self.records.get((namespace, asset_key, key))
            if expected_version is not None and (old is None or old.version != expected_version):
                raise ConflictError(f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}")
            return self.records.pop((namespace, asset_key, key), None) is not None

    def list(self, namespace: str, asset_key: str) -> list[WatermarkRecord]:
        with self._lock:
            ordered = sorted(self.records.items())
        return [r for (ns, ak, _), r in ordered if ns == namespace and ak == asset_key]


class InMemoryPollStatusStore(PollStatusStore):
    def __init__(self) -> None:
        self.statuses: dict[str, PollStatus] = {}
        self._lock = threading.Lock()

    def get(self, asset_key: str) -> PollStatus | None:
        with self._lock:
            return self.statuses.get(asset_key)

    def put(self, status: PollStatus) -> None:
        with self._lock:
            self.statuses[status.asset_key] = status


class InMemoryWorkQueue(WorkQueue):
    """A work queue (the poll queue, the verification queue) as a list of the messages sent, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []

    def send(self, messages: list[dict[str, Any]]) -> int:
        with self._lock:
            self.messages.extend(messages)
        return len(messages)
