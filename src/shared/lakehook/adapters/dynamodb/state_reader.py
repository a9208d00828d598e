"""DynamoDBStateReader: member states and group cursors in one BatchGetItem round (strongly consistent)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get
from lakehook.adapters.dynamodb.trigger_store import cursor_from_item
from lakehook.domain.events import AssetEvent, EventType, event_identity
from lakehook.domain.state import AssetState, snapshot_record
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.rules import GroupRef, ResolutionInputs, StateReader

_ASSET = len(keys.asset_pk(""))


class DynamoDBStateReader(StateReader):
    """Reads in pages of 100 keys (DynamoDB's BatchGetItem limit), retrying UnprocessedKeys."""

    def __init__(self, table: Any) -> None:
        self._client = table.meta.client
        self._name = table.name

    def get_states(self, asset_keys: Collection[str]) -> dict[str, AssetState]:
        return self.read(asset_keys, ()).states

    def read(self, asset_keys: Collection[str], cursors: Collection[GroupRef]) -> ResolutionInputs:
        wanted = [keys.state_key(k) for k in asset_keys] + [keys.cursor_key(r, g) for r, g in cursors]
        states: dict[str, AssetState] = {}
        found_cursors = {}
        for item in batch_get(self._client, self._name, wanted):
            if item["SK"] == keys.Sort.STATE:
                asset_key = str(item["PK"])[_ASSET:]
                states[asset_key] = AssetState.from_item(asset_key, item)
            else:
                cursor = cursor_from_item(item)
                found_cursors[(cursor.rule_id, cursor.group_id)] = cursor
        return ResolutionInputs(states, found_cursors)

    def snapshots(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], SnapshotRecord]:
        """One BatchGetItem of the snapshots' event items (their ids derive from asset and snapshot id)."""
        ids = {event_identity(k, EventType.SNAPSHOT_COMMITTED, str(sid)): (k, sid) for k, sid in set(wanted)}
        found: dict[tuple[str, int], SnapshotRecord] = {}
        event_keys = [keys.event_key(k, event_id) for event_id, (k, _) in ids.items()]
        for item in batch_get(self._client, self._name, event_keys):
            pair = ids.get(str(item.get("eventId")))
            if pair is not None:
                found[pair] = snapshot_record(AssetEvent.model_validate(json.loads(item["body"])))
        return found
