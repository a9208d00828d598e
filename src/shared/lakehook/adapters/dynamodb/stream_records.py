"""Turn a DynamoDB stream record into what the resolver acts on: a state change, a due deferral, or nothing.

Records arrive as Lambda hands them over (typed attribute values); Powertools' DynamoDBRecord
deserializes the images (numbers as Decimal). These wake the resolver (see ``RESOLVER_FILTER_PATTERNS``): an
asset's STATE item written, a deferral (or an asset recheck) marked DUE, a SNAPSHOT_COMMITTED event item
recorded (the snapshot log of EACH_VERSION), a part of a snapshot's touched partitions recorded (the keys past its
event's bound: a slice of the commit), and a trigger turned SUCCEEDED whose success releases its group's next version
(``releasesNext``, EACH_VERSION). Anything
else, including other event items and the keys-only first INSERT moto emits for an update that
creates an item, is recognized by its keys, so the decision does not depend on the filter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.asset_store import PARTITIONS_ITEM, partition_part_of_item
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.domain.events import AssetEvent
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import TriggerStatus
from lakehook.observability import logger
from lakehook.ports.rules import Deferral, StateChange

# FilterCriteria of the resolver's DynamoDB event source (template.yaml takes them as JSON strings).
RESOLVER_FILTER_PATTERNS: list[dict[str, Any]] = [
    {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": {"itemType": {"S": ["STATE"]}}}},
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"itemType": {"S": ["DEFERRAL"]}, "status": {"S": ["DUE"]}}}},
    # every recorded snapshot, a STALE (older than the state) one too: EACH_VERSION logs it
    {
        "eventName": ["INSERT"],
        "dynamodb": {"NewImage": {"itemType": {"S": ["EVENT"]}, "eventType": {"S": ["SNAPSHOT_COMMITTED"]}}},
    },
    # a part of a commit's touched partitions past its event's bound, when first written (a rewrite is no news)
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"itemType": {"S": [PARTITIONS_ITEM]}}}},
    # a trigger that just SUCCEEDED releases its EACH_VERSION group's next version (head of line; a partition's run
    # only when it is in order, ``inOrder``): the dispatcher notes ``releasesNext`` on those alone, so a run of any
    # other rule starts with the dispatcher's requests only (its SUCCEEDED never reaches the resolver)
    {
        "eventName": ["MODIFY"],
        "dynamodb": {
            "NewImage": {
                "itemType": {"S": ["TRIGGER"]},
                "status": {"S": ["SUCCEEDED"]},
                keys.RELEASES_NEXT: {"BOOL": [True]},
            },
            "OldImage": {"status": {"S": [{"anything-but": ["SUCCEEDED"]}]}},
        },
    },
]

_ASSET = keys.asset_pk("")
_RULE = keys.RULE_PREFIX
_TRIGGER = keys.TRIGGER_PREFIX


def resolver_input(record: Mapping[str, Any]) -> StateChange | Deferral | None:
    """What the record asks of the resolver, if anything."""
    wrapped = DynamoDBRecord(dict(getattr(record, "raw_event", record)))
    body = wrapped.dynamodb
    if body is None or wrapped.event_name is DynamoDBRecordEventName.REMOVE:
        return None
    pk, sk = str(body.keys.get("PK", "")), str(body.keys.get("SK", ""))
    image = body.new_image or {}
    if pk.startswith(_ASSET):
        return _asset_input(wrapped.event_name, pk[len(_ASSET) :], sk, image)
    if pk.startswith(_TRIGGER) and sk == keys.CLAIM_SORT and image.get("status") == TriggerStatus.SUCCEEDED:
        return _released_group(wrapped.event_name, image, body.old_image or {})
    if pk.startswith(_RULE) and sk.startswith(keys.DEFER_PREFIX) and image.get("status") == "DUE":
        return Deferral(pk[len(_RULE) :], sk[len(keys.DEFER_PREFIX) :], int(integral(image.get("dueAt", 0))))
    return None


def _asset_input(
    event_name: DynamoDBRecordEventName | None, asset_key: str, sk: str, image: dict[str, Any]
) -> StateChange | None:
    """What an item of an asset's partition asks: its state written, a snapshot recorded, a part of a commit's
    partitions recorded, or a recheck a failed batch left (every rule of the asset again)."""
    if sk == keys.Sort.STATE:
        return _state_written(asset_key, image)
    if sk.startswith(keys.Prefix.EVENT) and image.get("eventType") == "SNAPSHOT_COMMITTED":
        return _snapshot_recorded(asset_key, image)
    if sk.startswith(keys.PARTS_PREFIX):
        if event_name is not DynamoDBRecordEventName.INSERT:
            return None  # a part written again holds what its first write brought
        return _partition_part_recorded(asset_key, image)
    if sk == keys.RECHECK_SORT and image.get("status") == "DUE":
        return StateChange(asset_key)
    return None


def _state_written(asset_key: str, image: dict[str, Any]) -> StateChange:
    """The asset's STATE item as written (None for a keys-only image)."""
    has_state = image.get(keys.ITEM_TYPE) == "STATE" and "version" in image
    try:
        return StateChange(asset_key, asset_state_from_item(asset_key, image) if has_state else None)
    except ValueError:  # a corrupted item: its rules read it again and fail alone, naming it
        logger.warning("state image does not parse", extra={"asset_key": asset_key}, exc_info=True)
        return StateChange(asset_key)


def _snapshot_recorded(asset_key: str, image: dict[str, Any]) -> StateChange:
    """A SNAPSHOT_COMMITTED event item: the snapshot (and its partitions) for the snapshot log of EACH_VERSION."""
    try:
        event = AssetEvent.model_validate(json.loads(str(image["body"])))
    except ValueError:
        logger.warning("snapshot event does not parse", extra={"asset_key": asset_key}, exc_info=True)
        return StateChange(asset_key)
    return StateChange(event.asset_key, snapshot=snapshot_record(event), partitions=event.partitions)


def _partition_part_recorded(asset_key: str, image: dict[str, Any]) -> StateChange:
    """A part of a snapshot's touched partitions: a slice of the commit, as one carried over through the
    resolver's queue (usecases/resolve_continue.py)."""
    try:
        part = partition_part_of_item(image)
    except (ValueError, KeyError, TypeError):  # a corrupted item: every rule of the asset again, as for an event
        logger.warning("partition part does not parse", extra={"asset_key": asset_key}, exc_info=True)
        return StateChange(asset_key)
    return StateChange(
        part.asset_key,
        snapshot=part.snapshot,
        partitions=part.partitions,
        partitions_only=True,
        offset=part.offset,
        total=part.total,
    )


def _released_group(
    event_name: DynamoDBRecordEventName | None, image: dict[str, Any], old: dict[str, Any]
) -> Deferral | None:
    """A trigger turned SUCCEEDED: its EACH_VERSION group's next version is due now, if its success releases it."""
    if image.get("partition") and not image.get("inOrder"):
        return None  # a partition's run releases nothing unless its group runs each version in order (inOrder)
    if image.get(keys.RELEASES_NEXT) is not True:
        return None  # a run of a rule that is not EACH_VERSION releases nothing (the dispatcher noted none)
    if event_name is DynamoDBRecordEventName.MODIFY and old.get("status") != TriggerStatus.SUCCEEDED:
        return Deferral(str(image["ruleId"]), str(image["groupId"]), 0)
    return None


def sequence_number(record: Mapping[str, Any]) -> str | None:
    """The record's stream sequence number: its identifier in a partial batch failure."""
    body = DynamoDBRecord(dict(getattr(record, "raw_event", record))).dynamodb
    return body.sequence_number if body is not None else None
