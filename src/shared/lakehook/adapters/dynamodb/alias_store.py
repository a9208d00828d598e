"""DynamoDBAliasStore: one item per alias, ``ALIAS#<name>`` / ``META``, listed through GSI1 ``ALIASES``.

A put keeps the creation time with ``if_not_exists`` in one UpdateItem (no read first); the old item
says whether it was created.
"""

from __future__ import annotations

from typing import Any

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.adapters.dynamodb.registry import index_page
from lakehook.domain.aliases import Alias
from lakehook.ports.aliases import AliasStore
from lakehook.ports.store import Page


class DynamoDBAliasStore(AliasStore):
    """Aliases on the single table."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def put_alias(self, alias: Alias) -> bool:
        answer = self._table.update_item(
            Key=keys.alias_key(alias.name),
            UpdateExpression=(
                "SET #type = :type, #name = :name, assetKeys = :keys, description = :description, "
                "createdAt = if_not_exists(createdAt, :created), updatedAt = :updated, GSI1PK = :index, GSI1SK = :name"
            ),
            ExpressionAttributeNames={"#type": keys.ITEM_TYPE, "#name": "name"},
            ExpressionAttributeValues={
                ":type": "ALIAS",
                ":name": alias.name,
                ":keys": list(alias.asset_keys),
                ":description": alias.description,
                ":created": alias.created_at,
                ":updated": alias.updated_at,
                ":index": keys.ALIASES_INDEX_PK,
            },
            ReturnValues="ALL_OLD",
        )
        return "createdAt" not in answer.get("Attributes", {})

    def get_alias(self, name: str) -> Alias | None:
        item = self._table.get_item(Key=keys.alias_key(name), ConsistentRead=True).get("Item")
        return None if item is None else _alias(item)

    def list_aliases(self, limit: int, next_token: str | None = None) -> Page[Alias]:
        items, token = index_page(self._table, keys.ALIASES_INDEX_PK, limit, next_token)
        return Page([_alias(i) for i in items], token)


def _alias(item: dict[str, Any]) -> Alias:
    data = integral(item)
    return Alias(
        name=data["name"],
        asset_keys=tuple(data.get("assetKeys") or ()),
        description=data.get("description"),
        created_at=data["createdAt"],
        updated_at=data["updatedAt"],
    )
