"""InMemoryAssetStore: events and advance-only asset state in dictionaries (thread-safe: every read and write holds
the store's lock)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lakehook.adapters.dynamodb.state_items import asset_state_from_item, fields_of_item
from lakehook.adapters.memory.paging import page_of
from lakehook.adapters.memory.state_conditions import apply_advance
from lakehook.domain.event_range import EVERY_EVENT, EventRange
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.snapshots import PartitionPart
from lakehook.domain.state import AssetState
from lakehook.domain.state_changes import Advance
from lakehook.ports.store import (
    AssetStore,
    ChangeApplied,
    ChangeRefused,
    ChangeResult,
    Page,
    RecordedEvent,
    Recording,
)


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
        self.event_pages = 0  # the pages of events listed

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
        self,
        event: AssetEvent,
        source: SourceType,
        received_at: int,
        producer_id: str | None = None,
        *,
        change: Advance,
    ) -> Recording | None:
        with self._lock:  # both or neither, as DynamoDB's transaction
            refused = self._refused(event.event_id)
            if refused is not None:
                return refused
            old = self.states.get(event.asset_key, {})
            new = apply_advance(old, change, event_id=event.event_id, now_ms=received_at)
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

    def apply_change(self, asset_key: str, change: Advance, marker: str, now_ms: int) -> ChangeResult:
        with self._lock:
            old = self.states.get(asset_key, {})
            new = apply_advance(old, change, event_id=marker, now_ms=now_ms)
            if new is None:
                return ChangeRefused(fields_of_item(old))
            self.states[asset_key] = new
            return ChangeApplied()

    def get_state(self, asset_key: str) -> AssetState | None:
        with self._lock:
            item = self.states.get(asset_key)
        return None if item is None else asset_state_from_item(asset_key, item)

    def list_events(
        self, asset_key: str, limit: int, next_token: str | None = None, within: EventRange = EVERY_EVENT
    ) -> Page[RecordedEvent]:
        with self._lock:
            self.event_pages += 1  # one key-range read a page, as DynamoDB's Query
            mine = [e for e in self.events.values() if e.event.asset_key == asset_key]
        mine = [e for e in mine if within.holds(e.event, e.received_at)]
        if within.by_version:
            mine.sort(key=lambda e: (e.event.snapshot_order or 0, e.event.event_id), reverse=True)
        else:
            mine.sort(key=lambda e: (e.received_at, e.event.event_id), reverse=True)
        scope = f":{within.scope()}" if within.scope() else ""
        return page_of(mine, limit, next_token, f"events:{asset_key}{scope}")

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
