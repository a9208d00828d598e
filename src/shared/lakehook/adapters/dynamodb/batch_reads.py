"""BatchGetItem in pages of 100 keys, retrying UnprocessedKeys; plain <-> typed attribute values.

The client is the table resource's (``table.meta.client``): boto3 serializes its inputs and
deserializes its outputs, so requests and answers hold plain values. Only the items inside a
cancelled transaction's CancellationReasons arrive typed (see :func:`plain`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

BATCH_GET_LIMIT = 100  # keys per BatchGetItem request (DynamoDB's limit)
MAX_UNPROCESSED_ROUNDS = 8

_DESERIALIZER = TypeDeserializer()


class UnprocessedKeysError(RuntimeError):
    """DynamoDB kept answering UnprocessedKeys (throttling); the caller should retry later."""


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """DynamoDB attribute values -> plain values (numbers stay Decimal)."""
    return {k: _DESERIALIZER.deserialize(v) for k, v in item.items()}


def integral(value: Any) -> Any:
    """Decimal numbers (as boto3 and stream images hand them over) as int, recursively."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def batch_get(
    client: Any,
    table_name: str,
    keys: Sequence[Mapping[str, str]],
    consistent: bool = True,
    sleep: float = 0.05,
    projection: str | None = None,
) -> list[dict[str, Any]]:
    """Every item that exists among ``keys`` (``client`` is ``table.meta.client``), with only the ``projection``
    attributes when given (plain attribute names). Duplicated keys are read once."""
    unique = list({(k["PK"], k["SK"]): k for k in keys}.values())
    found: list[dict[str, Any]] = []
    for start in range(0, len(unique), BATCH_GET_LIMIT):
        chunk = [dict(k) for k in unique[start : start + BATCH_GET_LIMIT]]
        request: dict[str, Any] = {table_name: {"Keys": chunk, "ConsistentRead": consistent}}
        if projection is not None:
            request[table_name]["ProjectionExpression"] = projection
        for attempt in range(MAX_UNPROCESSED_ROUNDS):
            answer = client.batch_get_item(RequestItems=request)
            found.extend(answer.get("Responses", {}).get(table_name, []))
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(sleep * (2**attempt))
        else:
            raise UnprocessedKeysError(f"BatchGetItem left keys unprocessed after {MAX_UNPROCESSED_ROUNDS} rounds")
    return found
