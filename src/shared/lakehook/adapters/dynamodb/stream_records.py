"""Turn a DynamoDB stream record into what the resolver acts on: a state change, a due deferral, or nothing.

Records arrive as Lambda hands them over (typed attribute values); Powertools' DynamoDBRecord
deserializes the images (numbers as Decimal). Only two kinds wake the resolver (see
``RESOLVER_FILTER_PATTERNS``): an asset's STATE item written, and a deferral (or an asset recheck) marked DUE. Anything
else, including event items and the keys-only first INSERT moto emits for an update that
creates an item, is recognized by its keys, so the decision does not depend on the filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.domain.state import AssetState
from lakehook.ports.rules import Deferral, StateChange

# FilterCriteria of the resolver's DynamoDB event source (template.yaml takes them as JSON strings).
RESOLVER_FILTER_PATTERNS: list[dict[str, Any]] = [
    {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": {"itemType": {"S": ["STATE"]}}}},
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"itemType": {"S": ["DEFERRAL"]}, "status": {"S": ["DUE"]}}}},
]

_ASSET = keys.asset_pk("")
_RULE = keys.RULE_PREFIX


def resolver_input(record: Mapping[str, Any]) -> StateChange | Deferral | None:
    """What the record asks of the resolver, if anything."""
    wrapped = DynamoDBRecord(dict(getattr(record, "raw_event", record)))
    body = wrapped.dynamodb
    if body is None or wrapped.event_name is DynamoDBRecordEventName.REMOVE:
        return None
    pk, sk = str(body.keys.get("PK", "")), str(body.keys.get("SK", ""))
    image = body.new_image or {}
    if pk.startswith(_ASSET) and sk == keys.Sort.STATE:
        asset_key = pk[len(_ASSET) :]
        has_state = image.get(keys.ITEM_TYPE) == "STATE" and "version" in image
        return StateChange(asset_key, AssetState.from_item(asset_key, image) if has_state else None)
    if pk.startswith(_ASSET) and sk == keys.RECHECK_SORT and image.get("status") == "DUE":
        return StateChange(pk[len(_ASSET) :])  # a recheck a failed batch left: every rule of the asset again
    if pk.startswith(_RULE) and sk.startswith(keys.DEFER_PREFIX) and image.get("status") == "DUE":
        return Deferral(pk[len(_RULE) :], sk[len(keys.DEFER_PREFIX) :], int(integral(image.get("dueAt", 0))))
    return None


def sequence_number(record: Mapping[str, Any]) -> str | None:
    """The record's stream sequence number: its identifier in a partial batch failure."""
    body = DynamoDBRecord(dict(getattr(record, "raw_event", record))).dynamodb
    return body.sequence_number if body is not None else None
