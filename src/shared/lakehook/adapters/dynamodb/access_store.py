"""DynamoDBAccessStore: one item per scoped token (``TOKEN#<id>`` / ``META``, listed through GSI1 ``TOKENS``)
and per role binding (``ROLEBINDING#<arn>`` / ``META``, GSI1 ``ROLE_BINDINGS``). A token item holds the token's
SHA-256, never the token."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import integral
from lakehook.adapters.dynamodb.registry import index_page
from lakehook.domain.access import Role, RoleBinding, Scope, ScopedToken
from lakehook.domain.errors import ConflictError
from lakehook.ports.access import AccessStore
from lakehook.ports.store import Page


class DynamoDBAccessStore(AccessStore):
    """Tokens and role bindings on the single table."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def put_token(self, token: ScopedToken) -> None:
        try:
            self._put_token(token)
        except ClientError as exc:
            if is_conditional_failure(exc):
                raise ConflictError(f"token {token.token_id} exists") from exc
            raise

    def _put_token(self, token: ScopedToken) -> None:
        self._table.put_item(
            Item={
                **keys.token_key(token.token_id),
                keys.ITEM_TYPE: "TOKEN",
                "tokenId": token.token_id,
                "tokenHash": token.token_hash,
                **_grant_attributes(token.role, token.scope, token.description),
                "createdAt": token.created_at,
                "GSI1PK": keys.TOKENS_INDEX_PK,
                "GSI1SK": token.token_id,
            },
            ConditionExpression="attribute_not_exists(PK)",
        )

    def get_token(self, token_id: str) -> ScopedToken | None:
        item = self._table.get_item(Key=keys.token_key(token_id), ConsistentRead=True).get("Item")
        return None if item is None else _token(item)

    def list_tokens(self, limit: int, next_token: str | None = None) -> Page[ScopedToken]:
        items, token = index_page(self._table, keys.TOKENS_INDEX_PK, limit, next_token)
        return Page([_token(i) for i in items], token)

    def revoke_token(self, token_id: str) -> bool:
        return self._delete(keys.token_key(token_id))

    def put_binding(self, binding: RoleBinding) -> bool:
        attributes = _grant_attributes(binding.role, binding.scope, binding.description)
        names = {f"#{name}": name for name in attributes}
        answer = self._table.update_item(
            Key=keys.role_binding_key(binding.principal),
            UpdateExpression="SET #type = :type, principalArn = :principal, "
            + ", ".join(f"#{name} = :{name}" for name in attributes)
            + ", createdAt = if_not_exists(createdAt, :created), GSI1PK = :index, GSI1SK = :principal",
            ExpressionAttributeNames={"#type": keys.ITEM_TYPE, **names},
            ExpressionAttributeValues={
                ":type": "ROLE_BINDING",
                ":principal": binding.principal,
                **{f":{name}": value for name, value in attributes.items()},
                ":created": binding.created_at,
                ":index": keys.ROLE_BINDINGS_INDEX_PK,
            },
            ReturnValues="ALL_OLD",
        )
        return "createdAt" not in answer.get("Attributes", {})

    def get_binding(self, principal: str) -> RoleBinding | None:
        item = self._table.get_item(Key=keys.role_binding_key(principal), ConsistentRead=True).get("Item")
        return None if item is None else _binding(item)

    def list_bindings(self, limit: int, next_token: str | None = None) -> Page[RoleBinding]:
        items, token = index_page(self._table, keys.ROLE_BINDINGS_INDEX_PK, limit, next_token)
        return Page([_binding(i) for i in items], token)

    def delete_binding(self, principal: str) -> bool:
        return self._delete(keys.role_binding_key(principal))

    def _delete(self, key: dict[str, str]) -> bool:
        return "Attributes" in self._table.delete_item(Key=key, ReturnValues="ALL_OLD")


def _grant_attributes(role: Role, scope: Scope, description: str | None) -> dict[str, Any]:
    return {
        "role": role.value,
        "rulePrefixes": list(scope.rules),
        "assetPrefixes": list(scope.assets),
        "description": description,
    }


def _scope(data: dict[str, Any]) -> Scope:
    return Scope(tuple(data.get("rulePrefixes") or ()), tuple(data.get("assetPrefixes") or ()))


def _token(item: dict[str, Any]) -> ScopedToken:
    data = integral(item)
    return ScopedToken(
        token_id=data["tokenId"],
        token_hash=data["tokenHash"],
        role=Role(data["role"]),
        scope=_scope(data),
        description=data.get("description"),
        created_at=data["createdAt"],
    )


def _binding(item: dict[str, Any]) -> RoleBinding:
    data = integral(item)
    return RoleBinding(
        principal=data["principalArn"],
        role=Role(data["role"]),
        scope=_scope(data),
        description=data.get("description"),
        created_at=data["createdAt"],
    )
