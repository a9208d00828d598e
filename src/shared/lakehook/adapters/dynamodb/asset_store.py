"""DynamoDBAssetStore: events by conditional put, state by one conditional update, a settled note per event (or the
record, settled, and the advance in one transaction of two writes), and the parts of a snapshot's touched partitions
past its event's bound by batched puts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.expressions import advance_update
from lakehook.adapters.dynamodb.pagination import decode_token, encode_token
from lakehook.adapters.dynamodb.state_items import asset_state_from_item, fields_of_item
from lakehook.adapters.dynamodb.transactions import (
    CONDITION_FAILED,
    cancellation_reasons,
    old_item,
    reason_code,
    retry_conflicts,
)
from lakehook.domain.errors import ValidationError
from lakehook.domain.event_range import EVERY_EVENT, EventRange
from lakehook.domain.events import AssetEvent, SourceType, event_json
from lakehook.domain.json_form import json_form
from lakehook.domain.snapshots import PartitionPart
from lakehook.domain.state import AssetState
from lakehook.domain.state_changes import Advance
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports import AssetStore, Page, RecordedEvent, Recording
from lakehook.ports.store import ChangeApplied, ChangeRefused, ChangeResult

_DESERIALIZER = TypeDeserializer()
_NEW_EVENT = "attribute_not_exists(PK)"
_SETTLED = "settled"  # on an event item: every step after its record finished (AssetStore.mark_settled)
PARTITIONS_ITEM = "PARTITIONS"  # the itemType of a part of a snapshot's touched partitions


class DynamoDBAssetStore(AssetStore):
    """The asset store on the single table. A novel event that settles with its advance costs one transaction of two
    writes and no read (``record_and_advance``); the step-by-step path three writes; a settled duplicate one."""

    def __init__(self, table: Any, retention_days: int = 30) -> None:
        self._table = table
        self._client = table.meta.client  # the resource's client: plain values in, as the table's
        self._name = table.name
        self._retention_seconds = retention_days * 86400

    def record_event(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording:
        item = self._event_item(event, source, received_at, producer_id)
        try:
            retry_conflicts(
                lambda: self._table.put_item(
                    Item=item,
                    ConditionExpression=_NEW_EVENT,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return _refused_recording(_old_item(exc), received_at)
            raise
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
        """One TransactWriteItems of two items: the event's record, settled, and its state's advance (two writes,
        no read; DynamoDB bills each item of a transaction two write units)."""
        item = {**self._event_item(event, source, received_at, producer_id), _SETTLED: True}
        update = advance_update(change, asset_key=event.asset_key, event_id=event.event_id, now_ms=received_at)
        record = {
            "TableName": self._name,
            "Item": item,
            "ConditionExpression": _NEW_EVENT,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        state = {
            "TableName": self._name,
            "Key": keys.state_key(event.asset_key),
            "UpdateExpression": update.expression(),
            "ConditionExpression": update.condition,
            "ExpressionAttributeNames": update.names,
            "ExpressionAttributeValues": update.values,
        }
        try:
            self._client.transact_write_items(TransactItems=[{"Put": record}, {"Update": state}])
        except ClientError as exc:
            reasons = cancellation_reasons(exc)
            if reasons is None or len(reasons) != 2:
                raise
            if reason_code(reasons[0]) == CONDITION_FAILED:  # recorded before: what the refused put hands back
                return _refused_recording(old_item(reasons[0]) or {}, received_at)
            # a cancelled transaction wrote nothing: the state refused it (ALREADY, STALE), another write held an
            # item, or a throttle (botocore does not retry a cancelled transaction): step by step, each request
            # with botocore's retries
            return None
        return Recording(True, received_at, settled=True)

    def _event_item(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None
    ) -> dict[str, Any]:
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
            "body": json.dumps(event_json(event), separators=(",", ":"), sort_keys=True),
            "GSI1PK": keys.events_index_pk(event.asset_key),
            "GSI1SK": keys.events_index_sk(received_at, event_id),
            keys.TTL_ATTRIBUTE: received_at // 1000 + self._retention_seconds,
        }
        if producer_id:
            item["producerId"] = producer_id
        order = event.snapshot_order
        if order is not None:  # a version range finds it (GSI2)
            item.update(GSI2PK=keys.events_index_pk(event.asset_key), GSI2SK=keys.events_version_sk(order, event_id))
        return item

    def mark_settled(self, event: AssetEvent) -> None:
        try:
            retry_conflicts(
                lambda: self._table.update_item(
                    Key=keys.event_key(event.asset_key, event.event_id),
                    UpdateExpression="SET #s = :t",
                    ConditionExpression="attribute_exists(PK)",  # never a bare item for a record that expired
                    ExpressionAttributeNames={"#s": _SETTLED},
                    ExpressionAttributeValues={":t": True},
                )
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise

    def apply_change(self, asset_key: str, change: Advance, marker: str, now_ms: int) -> ChangeResult:
        """One conditional UpdateItem; a failed condition hands back the item it saw (``ALL_OLD``), no read."""
        parts = advance_update(change, asset_key=asset_key, event_id=marker, now_ms=now_ms)
        try:
            retry_conflicts(  # an ingest's transaction (record_and_advance) may hold the state item a moment
                lambda: self._table.update_item(
                    Key=keys.state_key(asset_key),
                    UpdateExpression=parts.expression(),
                    ConditionExpression=parts.condition,
                    ExpressionAttributeNames=parts.names,
                    ExpressionAttributeValues=parts.values,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            return ChangeRefused(fields_of_item(_old_item(exc)))
        return ChangeApplied()

    def get_state(self, asset_key: str) -> AssetState | None:
        item = self._table.get_item(Key=keys.state_key(asset_key), ConsistentRead=True).get("Item")
        return None if item is None else asset_state_from_item(asset_key, item)

    def list_events(
        self, asset_key: str, limit: int, next_token: str | None = None, within: EventRange = EVERY_EVENT
    ) -> Page[RecordedEvent]:
        """One Query a page: of GSI1 by received time, or of GSI2 by snapshot order (a version range)."""
        index, (low, high) = _events_key_range(within)
        partition = keys.events_index_pk(asset_key)
        kwargs: dict[str, Any] = {
            "IndexName": index,
            "KeyConditionExpression": Key(f"{index}PK").eq(partition) & Key(f"{index}SK").between(low, high),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = _start_key(next_token, index, partition, within.scope())
        if start is not None and not low <= start[f"{index}SK"] <= high:
            raise ValidationError("nextToken belongs to another listing", field="nextToken")
        if start:
            kwargs["ExclusiveStartKey"] = start
        answer = _query_events(self._table, kwargs)
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
        last = answer.get("LastEvaluatedKey")
        scope = within.scope()
        return Page(items, encode_token({**last, _SCOPE: scope} if last and scope else last))

    def record_partition_parts(self, parts: Sequence[PartitionPart], recorded_at: int) -> None:
        """BatchWriteItem, 25 parts a request (boto3's batch writer sends unprocessed items again), not a conditional
        put per part: every delivery writes a part's same content (its expiry is its event's first recording's), so
        a put over it changes nothing, and only its first write is an INSERT, the one stream record that wakes the
        resolver (RESOLVER_FILTER_PATTERNS)."""
        if not parts:
            return
        expires_at = recorded_at // 1000 + self._retention_seconds
        with self._table.batch_writer(overwrite_by_pkeys=["PK", "SK"]) as batch:
            for part in parts:
                batch.put_item(Item=partition_part_item(part, expires_at))

    def partition_parts(self, asset_key: str, order: int) -> list[PartitionPart]:
        condition = Key("PK").eq(keys.asset_pk(asset_key)) & Key("SK").begins_with(keys.partition_parts_prefix(order))
        found: list[PartitionPart] = []
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, "ConsistentRead": True}
        while True:
            answer = self._table.query(**kwargs)
            found.extend(partition_part_of_item(item) for item in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                return found
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def partition_part_item(part: PartitionPart, expires_at: int) -> dict[str, Any]:
    """A part as stored: its keys and the snapshot record in one JSON ``body`` (one string attribute, as an event's)."""
    body: dict[str, Any] = {"snapshot": json_form(part.snapshot), "keys": list(part.keys)}
    if part.offset is not None and part.total is not None:
        body |= {"offset": part.offset, "total": part.total}  # read past by 0.1.0 (it reads snapshot and keys)
    return {
        **keys.partition_part_key(part.asset_key, part.snapshot.order, part.snapshot.snapshot_id, part.part),
        keys.ITEM_TYPE: PARTITIONS_ITEM,
        "assetKey": part.asset_key,
        "snapshotId": part.snapshot.snapshot_id,
        "part": part.part,
        "body": json.dumps(body, separators=(",", ":"), sort_keys=True),
        keys.TTL_ATTRIBUTE: expires_at,
    }


def partition_part_of_item(item: Mapping[str, Any]) -> PartitionPart:
    """A stored part (a ValueError, or a KeyError, when the item is none)."""
    body = json.loads(str(item["body"]))
    snapshot = SnapshotRecord.model_validate(body["snapshot"])
    offset, total = body.get("offset"), body.get("total")
    known = isinstance(offset, int) and isinstance(total, int)  # absent in a part of 0.1.0
    return PartitionPart.of(
        str(item["assetKey"]),
        snapshot,
        int(item["part"]),
        body["keys"],
        offset if known else None,
        total if known else None,
    )


_SCOPE = "range"  # in a page token of a ranged listing: the range it pages through


def _events_key_range(within: EventRange) -> tuple[str, tuple[str, str]]:
    """The index a listing reads and the sort keys of its range (both included)."""
    if within.by_version:
        return keys.GSI2, keys.events_version_range(*within.version_bounds)
    return keys.GSI1, keys.events_received_range(*within.received_bounds)


_NO_GSI2 = (
    f"this table has no index {keys.GSI2} (or it is still being built), which a version range (fromVersion/toVersion) "
    "reads: a stack on an ExistingTableStreamArn table needs it added to that table (docs/upgrade.md, 'The version "
    "index GSI2'); list by start/end meanwhile"
)


def _query_events(table: Any, kwargs: dict[str, Any]) -> Any:
    """The listing's Query; GSI2 missing or still backfilling (a table the stack did not create) is a ValidationError
    naming the index and its fix, not a 5xx. DynamoDB answers a ValidationException naming the index (moto a
    ResourceNotFoundException)."""
    try:
        return table.query(**kwargs)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        missing = error.get("Code") in {"ValidationException", "ResourceNotFoundException"}
        if kwargs["IndexName"] == keys.GSI2 and missing and "index" in str(error.get("Message", "")).lower():
            raise ValidationError(_NO_GSI2, field="fromVersion") from exc
        raise


def _start_key(token: str | None, index: str, partition: str, scope: str) -> dict[str, Any] | None:
    """The start key of a page token of this listing (its index, asset and range); a ValidationError otherwise."""
    expect: dict[str, str | None] = {"PK": None, "SK": None, f"{index}PK": partition, f"{index}SK": None}
    if scope:
        expect[_SCOPE] = scope
    start = decode_token(token, expect)
    if start is not None:
        start.pop(_SCOPE, None)
    return start


def _refused_recording(old: Mapping[str, Any], received_at: int) -> Recording:
    """What a refused record hands back: the first recording's time, its settled note and the partitions its event
    names, without a read."""
    first = old.get("receivedAt")
    at = received_at if first is None else int(first)
    return Recording(False, at, old.get(_SETTLED) is True, _recorded_partitions(old))


def _recorded_partitions(old: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The partition keys a stored event item's body names (its ``partitions``), None when it names none."""
    body = old.get("body")
    if not isinstance(body, str) or '"partitions"' not in body:
        return None
    found = json.loads(body).get("partitions")
    return tuple(found["keys"]) if isinstance(found, dict) else None


def _old_item(exc: ClientError) -> dict[str, Any]:
    """The item a failed condition saw (ReturnValuesOnConditionCheckFailure=ALL_OLD), as plain values."""
    raw: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
    return {name: _DESERIALIZER.deserialize(value) for name, value in raw.items()}
