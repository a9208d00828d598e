"""DynamoDBRuleStore: a rule item plus a reverse-index item per member asset, written in one transaction.

The reverse-index item ``ASSET#<assetKey>`` / ``RULE#<ruleId>`` carries a copy of the rule, so the
resolver gets every rule of a changed asset, ready to evaluate, from one (paginated) Query. A put
reads the current revision, then writes rule and index in one transaction conditional on that
revision, so two racing puts never leave index items of a rule version that lost.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError
from pydantic import ValidationError as PydanticValidationError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get
from lakehook.adapters.dynamodb.pagination import decode_token, encode_token
from lakehook.adapters.dynamodb.transactions import is_retryable_cancel
from lakehook.domain.errors import ConflictError
from lakehook.domain.rules import Rule
from lakehook.observability import logger
from lakehook.ports.rules import RuleError, RuleStore, StoredRule, UnreadableRuleError
from lakehook.ports.store import Page

PUT_ATTEMPTS = 4


def rule_items(
    rule: Rule, revision: int, created_at: int, updated_at: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The rule item and its reverse-index items (one per member asset, each with a copy of the rule)."""
    body = rule.to_json()
    meta = {
        **keys.rule_meta_key(rule.rule_id),
        keys.ITEM_TYPE: "RULE",
        "ruleId": rule.rule_id,
        "body": body,
        "assetKeys": json.dumps(rule.asset_keys),
        "revision": revision,
        "createdAt": created_at,
        "updatedAt": updated_at,
        "GSI1PK": keys.RULES_INDEX_PK,
        "GSI1SK": rule.rule_id,
    }
    index = [
        {
            **keys.rule_index_key(k, rule.rule_id),
            keys.ITEM_TYPE: "RULE_INDEX",
            "ruleId": rule.rule_id,
            "body": body,
            "revision": revision,
        }
        for k in rule.asset_keys
    ]
    return meta, index


class DynamoDBRuleStore(RuleStore):
    """Rules on the single table, with their reverse index."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def put_rule(self, rule: Rule, now_ms: int) -> StoredRule:
        for _ in range(PUT_ATTEMPTS):
            old = self._meta(rule.rule_id)
            revision = int(old["revision"]) + 1 if old else 1
            created = int(old["createdAt"]) if old else now_ms
            stale = set(json.loads(old["assetKeys"])) - set(rule.asset_keys) if old else set()
            meta, index = rule_items(rule, revision, created, now_ms)
            put_meta: dict[str, Any] = {"TableName": self._name, "Item": meta}
            if old is None:
                put_meta["ConditionExpression"] = "attribute_not_exists(PK)"
            else:
                put_meta["ConditionExpression"] = "revision = :revision"
                put_meta["ExpressionAttributeValues"] = {":revision": int(old["revision"])}
            items: list[dict[str, Any]] = [{"Put": put_meta}]
            items += [{"Put": {"TableName": self._name, "Item": item}} for item in index]
            for asset_key in sorted(stale):
                items.append({"Delete": {"TableName": self._name, "Key": keys.rule_index_key(asset_key, rule.rule_id)}})
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if is_retryable_cancel(exc):
                    continue  # a racing put or delete won; read again and retry
                raise
            return StoredRule(rule, revision, created, now_ms)
        raise ConflictError(f"rule {rule.rule_id!r} is being changed concurrently; try again")

    def get_rule(self, rule_id: str) -> StoredRule | None:
        item = self._meta(rule_id)
        return None if item is None else _stored(item)

    def get_rules(self, rule_ids: Collection[str]) -> dict[str, Rule]:
        items = batch_get(self._client, self._name, [keys.rule_meta_key(i) for i in rule_ids])
        return {str(i["ruleId"]): Rule.from_stored(i["body"]) for i in items}

    def list_rules(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        kwargs: dict[str, Any] = {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.RULES_INDEX_PK),
            "Limit": limit,
        }
        # a token of another listing is a 400, never a malformed start key (a 500)
        start = decode_token(next_token, {"PK": None, "SK": None, "GSI1PK": keys.RULES_INDEX_PK, "GSI1SK": None})
        if start:
            kwargs["ExclusiveStartKey"] = start
        answer = self._table.query(**kwargs)
        items: list[StoredRule] = []
        unreadable: dict[str, str] = {}
        for item in answer.get("Items", []):
            try:
                items.append(_stored(item))
            except UnreadableRuleError as exc:  # one rule that does not load hides no other
                unreadable[exc.rule_id] = exc.reason
                logger.error("stored rule unreadable", extra={"rule_id": exc.rule_id, "reason": exc.reason})
        return Page(items, encode_token(answer.get("LastEvaluatedKey")), unreadable)

    def delete_rule(self, rule_id: str) -> bool:
        for _ in range(PUT_ATTEMPTS):
            old = self._meta(rule_id)
            if old is None:
                return False
            items: list[dict[str, Any]] = [
                {
                    "Delete": {
                        "TableName": self._name,
                        "Key": keys.rule_meta_key(rule_id),
                        "ConditionExpression": "revision = :revision",
                        "ExpressionAttributeValues": {":revision": int(old["revision"])},
                    }
                }
            ]
            for asset_key in json.loads(old["assetKeys"]):
                index_key = keys.rule_index_key(asset_key, rule_id)
                items.append({"Delete": {"TableName": self._name, "Key": index_key}})
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if is_retryable_cancel(exc):
                    continue
                raise
            return True
        raise ConflictError(f"rule {rule_id!r} is being changed concurrently; try again")

    def rules_for_asset(self, asset_key: str) -> list[Rule]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.asset_pk(asset_key)) & Key("SK").begins_with(keys.RULE_PREFIX),
            "ConsistentRead": True,
            "ProjectionExpression": "body",
        }
        rules: list[Rule] = []
        while True:
            answer = self._table.query(**kwargs)
            rules.extend(Rule.from_stored(i["body"]) for i in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                return rules
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]

    def record_error(self, rule_id: str, error: RuleError) -> None:
        value: dict[str, Any] = {"message": error.message, "at": error.at}
        if error.group_id is not None:
            value["groupId"] = error.group_id
        try:
            self._table.update_item(
                Key=keys.rule_meta_key(rule_id),
                UpdateExpression="SET lastError = :error",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":error": value},
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise  # else: the rule was deleted meanwhile

    def clear_error(self, rule_id: str, group_id: str) -> None:
        try:
            self._table.update_item(
                Key=keys.rule_meta_key(rule_id),
                UpdateExpression="REMOVE lastError",
                ConditionExpression="lastError.groupId = :group",
                ExpressionAttributeValues={":group": group_id},
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise  # else: no error of that group to clear

    def _meta(self, rule_id: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._table.get_item(Key=keys.rule_meta_key(rule_id), ConsistentRead=True).get(
            "Item"
        )
        return item


def _stored(item: dict[str, Any]) -> StoredRule:
    try:
        rule = Rule.from_stored(item["body"])
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        reason = repr(exc)
        if isinstance(exc, PydanticValidationError):
            first = exc.errors()[0]
            reason = f"{'.'.join(str(p) for p in first['loc']) or 'body'}: {first['msg']}"
        raise UnreadableRuleError(str(item.get("ruleId")), reason) from exc
    error = item.get("lastError")
    return StoredRule(
        rule=rule,
        revision=int(item["revision"]),
        created_at=int(item["createdAt"]),
        updated_at=int(item["updatedAt"]),
        last_error=RuleError(str(error["message"]), int(error["at"]), error.get("groupId")) if error else None,
    )
