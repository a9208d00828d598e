"""DynamoDBDeferralStore: ``RULE#<ruleId>`` / ``DEFER#<groupId>``, found by due time through GSI1.

A pending deferral is indexed under GSI1 ``DEFERRED`` / ``<dueAt>#<ruleId>#<groupId>``. The sweep
marks a due one ``status = DUE`` and drops it from the index in one conditional update; that
MODIFY record is what the resolver's FilterCriteria lets through. An asset recheck
(``ASSET#<assetKey>`` / ``RECHECK``, left by a failed resolver batch) is the same kind of item,
so one sweep and one filter serve both.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.ports.rules import AssetRecheck, Deferral, DeferralStore

PENDING = "PENDING"
DUE = "DUE"


class DynamoDBDeferralStore(DeferralStore):
    """One deferral item per group: a later request overwrites an earlier one."""

    def __init__(self, table: Any, retention_days: int = 7) -> None:
        self._table = table
        self._retention_seconds = retention_days * 86400

    def defer(self, deferral: Deferral) -> None:
        self._table.put_item(
            Item={
                **keys.deferral_key(deferral.rule_id, deferral.group_id),
                keys.ITEM_TYPE: "DEFERRAL",
                "ruleId": deferral.rule_id,
                "groupId": deferral.group_id,
                "dueAt": deferral.due_at,
                "status": PENDING,
                "GSI1PK": keys.DEFERRED_INDEX_PK,
                "GSI1SK": keys.deferred_index_sk(deferral.due_at, deferral.rule_id, deferral.group_id),
                keys.TTL_ATTRIBUTE: deferral.due_at // 1000 + self._retention_seconds,
            }
        )

    def recheck(self, asset_keys: Collection[str], due_at: int) -> None:
        with self._table.batch_writer() as batch:
            for asset_key in sorted(set(asset_keys)):
                batch.put_item(
                    Item={
                        **keys.recheck_key(asset_key),
                        keys.ITEM_TYPE: "DEFERRAL",
                        "assetKey": asset_key,
                        "dueAt": due_at,
                        "status": PENDING,
                        "GSI1PK": keys.DEFERRED_INDEX_PK,
                        "GSI1SK": keys.deferred_index_sk(due_at, "ASSET", asset_key),
                        keys.TTL_ATTRIBUTE: due_at // 1000 + self._retention_seconds,
                    }
                )

    def due(self, now_ms: int, limit: int) -> list[Deferral | AssetRecheck]:
        answer = self._table.query(
            IndexName=keys.GSI1,
            KeyConditionExpression=Key("GSI1PK").eq(keys.DEFERRED_INDEX_PK) & Key("GSI1SK").lte(f"{now_ms:015d}~"),
            Limit=limit,
        )
        return [
            AssetRecheck(str(i["assetKey"]), int(i["dueAt"]))
            if "assetKey" in i
            else Deferral(str(i["ruleId"]), str(i["groupId"]), int(i["dueAt"]))
            for i in answer.get("Items", [])
        ]

    def mark_due(self, deferral: Deferral | AssetRecheck, now_ms: int) -> bool:
        if isinstance(deferral, AssetRecheck):
            key = keys.recheck_key(deferral.asset_key)
        else:
            key = keys.deferral_key(deferral.rule_id, deferral.group_id)
        try:
            self._table.update_item(
                Key=key,
                UpdateExpression="SET #status = :due, markedAt = :now REMOVE GSI1PK, GSI1SK",
                ConditionExpression="dueAt = :at AND #status = :pending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":due": DUE, ":now": now_ms, ":at": deferral.due_at, ":pending": PENDING},
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True
