"""DynamoDBStateReader: member states and group cursors in one BatchGetItem round (strongly consistent)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get
from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.adapters.dynamodb.trigger_store import cursor_from_item
from lakehook.domain.errors import UnreadableItemError
from lakehook.domain.events import AssetEvent, EventType, event_identity
from lakehook.domain.input_details import EventRef
from lakehook.domain.state import AssetState, snapshot_record
from lakehook.domain.versions import SnapshotRecord, Verdict, quality_verdict
from lakehook.ports.rules import GroupRef, ResolutionInputs, StateReader

_ASSET = len(keys.asset_pk(""))
# What parsing a corrupted item raises (pydantic's ValidationError is a ValueError).
_UNPARSABLE = (ValueError, TypeError, LookupError, ArithmeticError)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


class DynamoDBStateReader(StateReader):
    """Reads in pages of 100 keys (DynamoDB's BatchGetItem limit), retrying UnprocessedKeys."""

    def __init__(self, table: Any) -> None:
        self._client = table.meta.client
        self._name = table.name

    def get_states(self, asset_keys: Collection[str]) -> dict[str, AssetState]:
        inputs = self.read(asset_keys, ())
        for asset_key, why in inputs.unreadable_states.items():
            raise UnreadableItemError(f"the stored state of {asset_key} does not parse: {why}")
        return inputs.states

    def read(self, asset_keys: Collection[str], cursors: Collection[GroupRef]) -> ResolutionInputs:
        wanted = [keys.state_key(k) for k in asset_keys] + [keys.cursor_key(r, g) for r, g in cursors]
        refs = {tuple(keys.cursor_key(r, g).values()): (r, g) for r, g in cursors}
        inputs = ResolutionInputs({}, {})
        for item in batch_get(self._client, self._name, wanted):
            try:
                if item["SK"] == keys.Sort.STATE:
                    asset_key = str(item["PK"])[_ASSET:]
                    inputs.states[asset_key] = asset_state_from_item(asset_key, item)
                else:
                    cursor = cursor_from_item(item)
                    inputs.cursors[(cursor.rule_id, cursor.group_id)] = cursor
            except _UNPARSABLE as exc:  # one corrupted item fails only the groups that need it
                if item["SK"] == keys.Sort.STATE:
                    inputs.unreadable_states[asset_key] = _describe(exc)
                else:
                    inputs.unreadable_cursors[refs[(item["PK"], item["SK"])]] = _describe(exc)
        return inputs

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

    def recorded_events(self, wanted: Collection[EventRef]) -> dict[EventRef, AssetEvent]:
        """One BatchGetItem (pages of 100 keys) of the events' items: their ids derive from asset, type and version."""
        ids = {event_identity(k, t, v): (k, t, v) for k, t, v in set(wanted)}
        event_keys = [keys.event_key(ref[0], event_id) for event_id, ref in ids.items()]
        found: dict[EventRef, AssetEvent] = {}
        for item in batch_get(self._client, self._name, event_keys):
            ref = ids.get(str(item.get("eventId")))
            if ref is not None:
                found[ref] = AssetEvent.model_validate(json.loads(item["body"]))
        return found

    def quality_verdicts(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], Verdict]:
        """One BatchGetItem (pages of 100 keys) of the snapshots' quality events: their ids derive from asset,
        verdict and snapshot id, so no index is needed; only the keys are read."""
        kinds = (EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED)
        ids = {event_identity(k, t, str(sid)): (k, sid, t) for k, sid in set(wanted) for t in kinds}
        event_keys = [keys.event_key(k, event_id) for event_id, (k, _, _) in ids.items()]
        checks: dict[tuple[str, int], set[EventType]] = {}
        for item in batch_get(self._client, self._name, event_keys, projection="PK, SK, eventId"):
            found = ids.get(str(item.get("eventId")))
            if found is not None:
                checks.setdefault((found[0], found[1]), set()).add(found[2])
        return {
            pair: quality_verdict(EventType.QUALITY_CHECK_PASSED in seen, EventType.QUALITY_CHECK_FAILED in seen)
            for pair, seen in checks.items()
        }
