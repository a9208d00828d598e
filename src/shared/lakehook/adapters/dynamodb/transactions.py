"""Transactions: reading a cancelled TransactWriteItems (one reason per item, in request order), and independent
conditional writes made many to a transaction (:func:`write_each`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
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


MAX_TRANSACTION_ITEMS = 100  # DynamoDB's limit of actions in one TransactWriteItems


def write_each(client: Any, actions: Sequence[dict[str, Any]]) -> list[bool]:
    """Conditional writes (TransactWriteItems actions on items keyed ``PK``/``SK``), made in order, in transactions
    of up to :data:`MAX_TRANSACTION_ITEMS` (:func:`_one_transaction`; one action alone is the single conditional
    ``PutItem`` or ``DeleteItem`` it describes): per action, whether it was made (False: its condition failed). A
    transaction cancelled by failed conditions is made again without those actions (none of its actions was made);
    one a concurrent transaction conflicted with is made again action by action, where any error but a failed
    condition raises (the caller's batch is retried). Each transaction carries a ``ClientRequestToken``, so an SDK
    retry of one that was made answers success instead of failed conditions (a single write retried so answers its
    condition failed: callers whose writes are idempotent, as facts, marks and logs are, need not tell).

    A transaction of n writes is one request where n single writes are n: what a batch of conditional writes costs
    in requests and time (DynamoDB bills each item of a transaction two write units, a single write one)."""
    made: dict[int, bool] = {}
    waiting = list(range(len(actions)))
    while waiting:
        chunk = _one_transaction(actions, waiting)
        failed = _transact(client, [actions[i] for i in chunk], retry_alone=len(chunk) > 1)
        for position, i in enumerate(chunk):
            if failed is None:  # a conflict with another transaction: each alone
                made[i] = not _transact(client, [actions[i]], retry_alone=False)
            elif not failed or position in failed:  # made, or its condition failed: the others go again
                made[i] = not failed
        waiting = [i for i in waiting if i not in made]
    return [made[i] for i in range(len(actions))]


def _one_transaction(actions: Sequence[dict[str, Any]], waiting: Sequence[int]) -> list[int]:
    """The first of ``waiting`` (positions in ``actions``) one transaction makes: in order, at most
    :data:`MAX_TRANSACTION_ITEMS`, up to the first naming an item already in it (one transaction names an item once;
    the later write of an item is made after the earlier one)."""
    chunk: list[int] = []
    items: set[tuple[Any, Any]] = set()
    for i in waiting:
        action = next(iter(actions[i].values()))
        key = action.get("Key") or action["Item"]
        item = (key["PK"], key["SK"])
        if item in items or len(chunk) == MAX_TRANSACTION_ITEMS:
            break
        chunk.append(i)
        items.add(item)
    return chunk


def _transact(client: Any, actions: Sequence[dict[str, Any]], *, retry_alone: bool) -> set[int] | None:
    """One transaction: the positions whose condition failed (empty: it was made); None when a concurrent
    transaction conflicted with it and ``retry_alone`` (else that raises, as every other error does). One action is
    made as the single conditional write it is (``PutItem`` or ``DeleteItem``: one write unit, not two)."""
    if len(actions) == 1:
        return _alone(client, actions[0])
    try:
        client.transact_write_items(TransactItems=list(actions), ClientRequestToken=uuid.uuid4().hex)
    except ClientError as exc:
        reasons = cancellation_reasons(exc)
        if reasons is None or len(reasons) != len(actions):
            raise
        codes = [reason_code(r) for r in reasons]
        if set(codes) <= {"None", CONDITION_FAILED} and CONDITION_FAILED in codes:
            return {n for n, code in enumerate(codes) if code == CONDITION_FAILED}
        if retry_alone and set(codes) <= {"None", CONDITION_FAILED, CONFLICT}:
            return None
        raise
    return set()


def _alone(client: Any, action: dict[str, Any]) -> set[int]:
    """One action as its own conditional write: {0} when its condition failed, else empty."""
    [(kind, request)] = action.items()
    write = getattr(client, {"Put": "put_item", "Delete": "delete_item"}[kind])
    try:
        write(**request)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return {0}
        raise
    return set()
