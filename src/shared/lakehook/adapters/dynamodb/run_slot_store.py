"""DynamoDBRunSlotStore: one item per run-slot scope, ``RULE#<ruleId>`` / ``SLOTS#<scope>`` (see ``keys``).

The item holds the scope's :class:`~lakehook.domain.run_slots.RunSlots` (``holders``, ``queue``) and ``version``.
Every change is one conditional write on the version read (``PutItem`` or, once nothing is in flight or waiting,
``DeleteItem``), so two dispatchers never both take the last slot: the second one's condition fails, and it reads
again. An item made anew (the scope was emptied and deleted) starts at a random version, never at one a stale read
may hold (:func:`lakehook.domain.run_slots.fresh_version`): a write based on a read from before the delete fails.
While the item exists it is on GSI1 ``RUN_SLOTS`` / scope id, where the compensator finds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.domain.run_slots import QueuePlace, RunSlots, SlotScope, fresh_version
from lakehook.ports.dispatch import RunSlotStore

ITEM_TYPE = "RUN_SLOTS"


def slots_item(slots: RunSlots) -> dict[str, Any]:
    """The stored shape of a scope's slots: ``holders`` {key: ms}, ``queue`` [{key, createdAt, sequence}]."""
    return {
        "holders": dict(slots.holders),
        "queue": [{"key": p.trigger_key, "createdAt": p.created_at, "sequence": p.sequence} for p in slots.queue],
    }


def slots_from_item(item: Mapping[str, Any]) -> RunSlots:
    holders = {str(k): int(v) for k, v in (item.get("holders") or {}).items()}
    queue = sorted(QueuePlace(int(p["createdAt"]), int(p["sequence"]), str(p["key"])) for p in item.get("queue") or ())
    return RunSlots(holders, tuple(queue))


class DynamoDBRunSlotStore(RunSlotStore):
    def __init__(self, table: Any) -> None:
        self._table = table

    def read(self, scope: SlotScope) -> tuple[RunSlots, int]:
        key = keys.run_slots_key(scope.rule_id, scope.partition)
        item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
        if item is None:
            return RunSlots(), 0
        data = integral(dict(item))
        return slots_from_item(data), int(data.get("version", 0))

    def write(self, scope: SlotScope, slots: RunSlots, version: int) -> bool:
        key = keys.run_slots_key(scope.rule_id, scope.partition)
        if version == 0:
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(PK)"}
        else:
            condition = {"ConditionExpression": "version = :v", "ExpressionAttributeValues": {":v": version}}
        try:
            if slots.empty:
                if version != 0:
                    self._table.delete_item(Key=key, **condition)
                return True
            item = {
                **key,
                keys.ITEM_TYPE: ITEM_TYPE,
                "ruleId": scope.rule_id,
                "version": version + 1 if version else fresh_version(),
                "GSI1PK": keys.RUN_SLOTS_INDEX_PK,
                "GSI1SK": scope.scope_id,
                **slots_item(slots),
            }
            if scope.partition is not None:
                item["partition"] = scope.partition
            self._table.put_item(Item=item, **condition)
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def of_rule(self, rule_id: str) -> list[tuple[SlotScope, RunSlots]]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.rule_pk(rule_id)) & Key("SK").begins_with(keys.SLOTS_PREFIX),
            "ConsistentRead": True,
        }
        found: list[tuple[SlotScope, RunSlots]] = []
        while True:
            answer = self._table.query(**kwargs)
            for item in answer.get("Items", []):
                data = integral(dict(item))
                found.append((SlotScope(rule_id, data.get("partition")), slots_from_item(data)))
            if "LastEvaluatedKey" not in answer:
                return found
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]

    def scopes(self, limit: int) -> list[SlotScope]:
        found: list[SlotScope] = []
        kwargs: dict[str, Any] = {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.RUN_SLOTS_INDEX_PK),
        }
        while len(found) < limit:
            answer = self._table.query(**kwargs)
            found.extend(SlotScope(str(i["ruleId"]), i.get("partition")) for i in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return found[:limit]
