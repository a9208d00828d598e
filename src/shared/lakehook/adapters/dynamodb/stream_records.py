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
    if pk.startswith(_ASSET) and sk == keys.Sort.STATE:
        asset_key = pk[len(_ASSET) :]
        has_state = image.get(keys.ITEM_TYPE) == "STATE" and "version" in image
        try:
            return StateChange(asset_key, asset_state_from_item(asset_key, image) if has_state else None)
        except ValueError:  # a corrupted item: its rules read it again and fail alone, naming it
            logger.warning("state image does not parse", extra={"asset_key": asset_key}, exc_info=True)
            return StateChange(asset_key)
    if pk.startswith(_ASSET) and sk.startswith(keys.Prefix.EVENT) and image.get("eventType") == "SNAPSHOT_COMMITTED":
        try:
            event = AssetEvent.model_validate(json.loads(str(image["body"])))
        except ValueError:
            logger.warning("snapshot event does not parse", extra={"asset_key": pk[len(_ASSET) :]}, exc_info=True)
            return StateChange(pk[len(_ASSET) :])
        return StateChange(event.asset_key, snapshot=snapshot_record(event), partitions=event.partitions)
    if pk.startswith(_ASSET) and sk.startswith(keys.PARTS_PREFIX):
        if wrapped.event_name is not DynamoDBRecordEventName.INSERT:
            return None  # a part written again holds what its first write brought
        try:
            part = partition_part_of_item(image)
        except (ValueError, KeyError, TypeError):  # a corrupted item: every rule of the asset again, as for an event
            logger.warning("partition part does not parse", extra={"asset_key": pk[len(_ASSET) :]}, exc_info=True)
            return StateChange(pk[len(_ASSET) :])
        # a slice of the commit, as one carried over through the resolver's queue (usecases/resolve_continue.py)
        return StateChange(
            part.asset_key,
            snapshot=part.snapshot,
            partitions=part.partitions,
            partitions_only=True,
            offset=part.offset,
            total=part.total,
        )
    if pk.startswith(_TRIGGER) and sk == keys.CLAIM_SORT and image.get("status") == TriggerStatus.SUCCEEDED:
        old = body.old_image or {}
        if image.get("partition") and not image.get("inOrder"):
            return None  # a partition's run releases nothing unless its group runs each version in order (inOrder)
        if image.get(keys.RELEASES_NEXT) is not True:
            return None  # a run of a rule that is not EACH_VERSION releases nothing (the dispatcher noted none)
        if wrapped.event_name is DynamoDBRecordEventName.MODIFY and old.get("status") != TriggerStatus.SUCCEEDED:
            return Deferral(str(image["ruleId"]), str(image["groupId"]), 0)
        return None
    if pk.startswith(_ASSET) and sk == keys.RECHECK_SORT and image.get("status") == "DUE":
        return StateChange(pk[len(_ASSET) :])  # a recheck a failed batch left: every rule of the asset again
    if pk.startswith(_RULE) and sk.startswith(keys.DEFER_PREFIX) and image.get("status") == "DUE":
        return Deferral(pk[len(_RULE) :], sk[len(keys.DEFER_PREFIX) :], int(integral(image.get("dueAt", 0))))
    return None


def sequence_number(record: Mapping[str, Any]) -> str | None:
    """The record's stream sequence number: its identifier in a partial batch failure."""
    body = DynamoDBRecord(dict(getattr(record, "raw_event", record))).dynamodb
    return body.sequence_number if body is not None else None
