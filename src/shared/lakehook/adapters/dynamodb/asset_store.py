"""DynamoDBAssetStore: events by conditional put, state by one conditional update, a settled note per event."""

from __future__ import annotations

import json
from typing import Any

from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.expressions import advance_update
from lakehook.adapters.dynamodb.pagination import decode_token, encode_token
from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.state import Advance, AssetState, advance_for, already_applied
from lakehook.ports import AdvanceOutcome, AssetStore, Page, RecordedEvent, Recording

_DESERIALIZER = TypeDeserializer()
_SETTLED = "settled"  # on an event item: every step after its record finished (AssetStore.mark_settled)


class DynamoDBAssetStore(AssetStore):
    """The asset store on the single table. A novel event costs three writes and no read; a settled duplicate one."""

    def __init__(self, table: Any, retention_days: int = 30) -> None:
        self._table = table
        self._retention_seconds = retention_days * 86400

    def record_event(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording:
        event_id = event.event_id
        item: dict[str, Any] = {
            **keys.event_key(event.asset_key, event_id),
            keys.ITEM_TYPE: "EVENT",
            "eventId": event_id,
            "eventType": event.event_type.value,
            "assetKey": event.asset_key,
            "eventVersion": event.version,
            "source": source.value,
            "receivedAt": received_at,
            "body": json.dumps(event.to_api(), separators=(",", ":"), sort_keys=True),
            "GSI1PK": keys.events_index_pk(event.asset_key),
            "GSI1SK": keys.events_index_sk(received_at, event_id),
            keys.TTL_ATTRIBUTE: received_at // 1000 + self._retention_seconds,
        }
        if producer_id:
            item["producerId"] = producer_id
        try:
            self._table.put_item(
                Item=item, ConditionExpression="attribute_not_exists(PK)", ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                # the refused put hands back the first recording: its time and its settled note, without a read
                old = _old_item(exc)
                first = old.get("receivedAt")
                return Recording(False, received_at if first is None else int(first), old.get(_SETTLED) is True)
            raise
        return Recording(True, received_at)

    def mark_settled(self, event: AssetEvent) -> None:
        try:
            self._table.update_item(
                Key=keys.event_key(event.asset_key, event.event_id),
                UpdateExpression="SET #s = :t",
                ConditionExpression="attribute_exists(PK)",  # never a bare item for a record that expired meanwhile
                ExpressionAttributeNames={"#s": _SETTLED},
                ExpressionAttributeValues={":t": True},
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise

    def advance_state(self, event: AssetEvent, now_ms: int, recorded_at: int | None = None) -> AdvanceOutcome:
        advance = advance_for(event, now_ms if recorded_at is None else recorded_at)
        if advance is None:
            return AdvanceOutcome.NO_STATE
        return self.apply_advance(event.asset_key, advance, event.event_id, now_ms)

    def apply_advance(self, asset_key: str, advance: Advance, marker: str, now_ms: int) -> AdvanceOutcome:
        parts = advance_update(advance, asset_key=asset_key, event_id=marker, now_ms=now_ms)
        try:
            self._table.update_item(
                Key=keys.state_key(asset_key),
                UpdateExpression=parts.expression(),
                ConditionExpression=parts.condition,
                ExpressionAttributeNames=parts.names,
                ExpressionAttributeValues=parts.values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            old = _old_item(exc)
            if already_applied(old, advance):
                return AdvanceOutcome.ALREADY
            if advance.late is not None:  # a late event: what of it still applies (its own guard)
                self.apply_advance(asset_key, advance.late, marker, now_ms)
            return AdvanceOutcome.STALE
        return AdvanceOutcome.ADVANCED

    def get_state(self, asset_key: str) -> AssetState | None:
        item = self._table.get_item(Key=keys.state_key(asset_key), ConsistentRead=True).get("Item")
        return None if item is None else asset_state_from_item(asset_key, item)

    def list_events(self, asset_key: str, limit: int, next_token: str | None = None) -> Page[RecordedEvent]:
        kwargs: dict[str, Any] = {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.events_index_pk(asset_key)),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = decode_token(
            next_token, {"PK": None, "SK": None, "GSI1PK": keys.events_index_pk(asset_key), "GSI1SK": None}
        )
        if start:
            kwargs["ExclusiveStartKey"] = start
        answer = self._table.query(**kwargs)
        items = [
            RecordedEvent(
                event=AssetEvent.model_validate(json.loads(item["body"])),
                source=SourceType(item["source"]),
                received_at=int(item["receivedAt"]),
                producer_id=item.get("producerId"),
                extra={"eventId": item["eventId"]},
            )
            for item in answer.get("Items", [])
        ]
        return Page(items, encode_token(answer.get("LastEvaluatedKey")))


def _old_item(exc: ClientError) -> dict[str, Any]:
    """The item a failed condition saw (ReturnValuesOnConditionCheckFailure=ALL_OLD), as plain values."""
    raw: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
    return {name: _DESERIALIZER.deserialize(value) for name, value in raw.items()}
