"""DynamoDB registries for assets and producers."""

from __future__ import annotations

import json
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.pagination import decode_token, encode_token
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import WatchEntry, watch_entries
from lakehook.domain.errors import ConflictError
from lakehook.domain.producers import Producer
from lakehook.ports import AssetRegistry, Page, ProducerRegistry


class DynamoDBAssetRegistry(AssetRegistry):
    """Asset registrations: one META item per asset, listed through GSI1."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def put_asset(self, asset: AssetRegistration, now_ms: int) -> bool:
        item = {
            **keys.asset_meta_key(asset.asset_key),
            keys.ITEM_TYPE: "ASSET",
            "assetKey": asset.asset_key,
            "format": asset.format.value,
            "body": json.dumps(asset.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True),
            "updatedAt": now_ms,
            "GSI1PK": keys.ASSETS_INDEX_PK,
            "GSI1SK": asset.asset_key,
        }
        old = self._table.put_item(Item=item, ReturnValues="ALL_OLD").get("Attributes")
        self._index(asset, None if old is None else AssetRegistration.model_validate(json.loads(old["body"])))
        return old is None

    def _index(self, asset: AssetRegistration, previous: AssetRegistration | None) -> None:
        """Keep the commit-notice index in step with the registration: a write per watch key that changed.

        Written after the registration: a crash in between leaves a table un-indexed (re-PUT it; the poll
        schedule still covers it) or a stale entry (a notice then polls a table needlessly), never a lost event.
        """
        entries = watch_entries(asset)
        before = watch_entries(previous) if previous is not None else {}
        for watch, entry in entries.items():
            if before.get(watch) != entry:
                self._table.put_item(
                    Item={
                        **keys.watch_key(watch, asset.asset_key),
                        keys.ITEM_TYPE: "WATCH",
                        "assetKey": asset.asset_key,
                        "catalogType": entry.catalog_type,
                        "region": entry.region,
                        "account": entry.account,
                    }
                )
        for watch in before.keys() - entries.keys():
            self._table.delete_item(Key=keys.watch_key(watch, asset.asset_key))

    def assets_watching(self, watch_key: str) -> list[WatchEntry]:
        pk = f"{keys.Prefix.WATCH}{watch_key}"
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {"KeyConditionExpression": Key("PK").eq(pk)}
        while True:  # one page in practice: a table is registered under a handful of asset keys at most
            answer = self._table.query(**request)
            items.extend(answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return [
            WatchEntry(
                asset_key=str(i["assetKey"]),
                catalog_type=str(i.get("catalogType", "")),
                region=str(i.get("region", "")),
                account=str(i.get("account", "")),
            )
            for i in items
        ]

    def get_asset(self, asset_key: str) -> AssetRegistration | None:
        item = self._table.get_item(Key=keys.asset_meta_key(asset_key), ConsistentRead=True).get("Item")
        return None if item is None else AssetRegistration.model_validate(json.loads(item["body"]))

    def list_assets(self, limit: int, next_token: str | None = None) -> Page[AssetRegistration]:
        items, token = index_page(self._table, keys.ASSETS_INDEX_PK, limit, next_token)
        return Page([AssetRegistration.model_validate(json.loads(i["body"])) for i in items], token)


class DynamoDBProducerRegistry(ProducerRegistry):
    """Producers: one item each; the secret itself lives in the SecretStore."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def put_producer(self, producer: Producer) -> bool:
        item = {
            **keys.producer_key(producer.producer_id),
            keys.ITEM_TYPE: "PRODUCER",
            "body": producer.model_dump_json(by_alias=True),
            "GSI1PK": keys.PRODUCERS_INDEX_PK,
            "GSI1SK": producer.producer_id,
        }
        old = self._table.put_item(Item=item, ReturnValues="ALL_OLD").get("Attributes")
        return old is None

    def get_producer(self, producer_id: str) -> Producer | None:
        item = self._table.get_item(Key=keys.producer_key(producer_id), ConsistentRead=True).get("Item")
        return None if item is None else Producer.model_validate_json(item["body"])

    def event_source_owner(self, source: str) -> str | None:
        item = self._table.get_item(Key=keys.event_source_key(source), ConsistentRead=True).get("Item")
        return None if item is None else str(item["producerId"])

    def claim_event_source(self, source: str, producer_id: str) -> None:
        try:
            self._table.put_item(
                Item={**keys.event_source_key(source), keys.ITEM_TYPE: "EVENT_SOURCE", "producerId": producer_id},
                ConditionExpression="attribute_not_exists(PK) OR producerId = :me",
                ExpressionAttributeValues={":me": producer_id},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            owner = self.event_source_owner(source)
            raise ConflictError(f"event source {source!r} belongs to producer {owner!r}") from exc

    def release_event_source(self, source: str, producer_id: str) -> None:
        try:
            self._table.delete_item(
                Key=keys.event_source_key(source),
                ConditionExpression="producerId = :me",
                ExpressionAttributeValues={":me": producer_id},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def list_producers(self, limit: int, next_token: str | None = None) -> Page[Producer]:
        """Through GSI1 ``PRODUCERS``: a producer written before the index entry existed is listed once it is
        written again (any ``PUT /producers/{id}``)."""
        items, token = index_page(self._table, keys.PRODUCERS_INDEX_PK, limit, next_token)
        return Page([Producer.model_validate_json(i["body"]) for i in items], token)


def index_page(
    table: Any, index_pk: str, limit: int, next_token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the items under ``index_pk`` in GSI1, in GSI1SK order, and the next page's token."""
    kwargs: dict[str, Any] = {
        "IndexName": keys.GSI1,
        "KeyConditionExpression": Key("GSI1PK").eq(index_pk),
        "Limit": limit,
    }
    start = decode_token(next_token, {"PK": None, "SK": None, "GSI1PK": index_pk, "GSI1SK": None})
    if start:
        kwargs["ExclusiveStartKey"] = start
    answer = table.query(**kwargs)
    return list(answer.get("Items", [])), encode_token(answer.get("LastEvaluatedKey"))
