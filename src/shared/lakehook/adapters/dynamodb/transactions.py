"""Reading a cancelled TransactWriteItems: one reason per item, in request order."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lakehook.adapters.dynamodb.batch_reads import plain

CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"


def cancellation_reasons(exc: ClientError) -> list[dict[str, Any]] | None:
    """The per-item reasons of a TransactionCanceledException, or None for any other error."""
    if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return None
    return [dict(r) for r in exc.response.get("CancellationReasons") or []]


def reason_code(reason: dict[str, Any]) -> str:
    """The code of one item's reason ("None" when that item was fine)."""
    return str(reason.get("Code") or "None")


def old_item(reason: dict[str, Any]) -> dict[str, Any] | None:
    """The item a failed condition saw (ReturnValuesOnConditionCheckFailure=ALL_OLD), as plain values."""
    item = reason.get("Item")
    return plain(item) if item else None


def is_retryable_cancel(exc: ClientError) -> bool:
    """Cancelled only because a condition failed or another transaction touched the same items."""
    reasons = cancellation_reasons(exc)
    if reasons is None:
        return False
    codes = {reason_code(r) for r in reasons} - {"None"}
    return bool(codes) and codes <= {CONDITION_FAILED, CONFLICT}
