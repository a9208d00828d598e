"""DynamoDBWatermarkStore: seed 001's asset watermarks, compare-and-set on a version number."""

from __future__ import annotations

import json
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.domain.errors import ConflictError
from lakehook.domain.watermarks import WatermarkRecord
from lakehook.ports import WatermarkStore


class DynamoDBWatermarkStore(WatermarkStore):
    """Values are stored as JSON text, so any JSON value round-trips exactly."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def get(self, namespace: str, asset_key: str, key: str) -> WatermarkRecord | None:
        item = self._table.get_item(Key=keys.watermark_key(namespace, asset_key, key), ConsistentRead=True).get("Item")
        return None if item is None else _record(item)

    def put(
        self, namespace: str, asset_key: str, key: str, value: Any, now_ms: int, expected_version: int | None = None
    ) -> WatermarkRecord:
        kwargs: dict[str, Any] = {
            "Key": keys.watermark_key(namespace, asset_key, key),
            "UpdateExpression": "SET #value = :value, #updated = :now, #ns = :ns, #asset = :asset, #key = :key, "
            "#type = :type ADD #version :one",
            "ExpressionAttributeNames": {
                "#value": "valueJson",
                "#updated": "updatedAt",
                "#ns": "namespace",
                "#asset": "assetKey",
                "#key": "wmKey",
                "#type": keys.ITEM_TYPE,
                "#version": "version",
            },
            "ExpressionAttributeValues": {
                ":value": json.dumps(value, separators=(",", ":")),
                ":now": now_ms,
                ":ns": namespace,
                ":asset": asset_key,
                ":key": key,
                ":type": "WATERMARK",
                ":one": 1,
            },
            "ReturnValues": "ALL_NEW",
        }
        if expected_version == 0:
            kwargs["ConditionExpression"] = "attribute_not_exists(PK)"
        elif expected_version is not None:
            kwargs["ConditionExpression"] = "#version = :expected"
            kwargs["ExpressionAttributeValues"][":expected"] = expected_version
        try:
            item = self._table.update_item(**kwargs)["Attributes"]
        except ClientError as exc:
            if is_conditional_failure(exc):
                raise ConflictError(
                    f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}"
                ) from exc
            raise
        return _record(item)

    def delete(self, namespace: str, asset_key: str, key: str, expected_version: int | None = None) -> bool:
        kwargs: dict[str, Any] = {"Key": keys.watermark_key(namespace, asset_key, key), "ReturnValues": "ALL_OLD"}
        if expected_version is not None:
            kwargs["ConditionExpression"] = "#version = :expected"
            kwargs["ExpressionAttributeNames"] = {"#version": "version"}
            kwargs["ExpressionAttributeValues"] = {":expected": expected_version}
        try:
            old = self._table.delete_item(**kwargs).get("Attributes")
        except ClientError as exc:
            if is_conditional_failure(exc):
                raise ConflictError(
                    f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}"
                ) from exc
            raise
        return old is not None

    def list(self, namespace: str, asset_key: str) -> list[WatermarkRecord]:
        items: list[WatermarkRecord] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.watermark_pk(namespace, asset_key)),
            "ConsistentRead": True,
        }
        while True:
            answer = self._table.query(**kwargs)
            items.extend(_record(i) for i in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                return items
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _record(item: dict[str, Any]) -> WatermarkRecord:
    return WatermarkRecord(
        namespace=item["namespace"],
        asset_key=item["assetKey"],
        key=item["wmKey"],
        value=json.loads(item["valueJson"]),
        version=int(item["version"]),
        updated_at=int(item["updatedAt"]),
    )
