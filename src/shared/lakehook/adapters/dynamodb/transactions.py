"""Transactions: reading a cancelled TransactWriteItems (one reason per item, in request order), and independent
conditional writes made many to a transaction (:func:`write_each`)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

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
RETRIES = 4  # a throttled or conflicting write is made again this many times, backing off, before it raises
# Cancellation reasons that pass: a transaction cancelled for these (and failed conditions) only is made again later.
TRANSIENT = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", CONFLICT})


def write_each(
    client: Any, actions: Sequence[dict[str, Any]], sleep: Callable[[float], None] = time.sleep
) -> list[bool]:
    """Conditional writes (TransactWriteItems actions on items keyed ``PK``/``SK``), made in order, in transactions
    of up to :data:`MAX_TRANSACTION_ITEMS` (:func:`_one_transaction`; one action alone is the single conditional
    ``PutItem`` or ``DeleteItem`` it describes): per action, whether it was made (False: its condition failed). A
    transaction cancelled by failed conditions is made again without those actions (none of its actions was made);
    one a concurrent transaction conflicted with is made again action by action. What passes (a transaction
    cancelled by a throttle, a single write meeting another transaction: botocore retries neither) is made again
    after a jittered backoff, up to :data:`RETRIES` times, then raises (the caller's batch is retried). Each
    transaction carries a ``ClientRequestToken``, so an SDK retry of one that was made answers success instead of
    failed conditions (a single write retried so answers its condition failed: callers whose writes are idempotent,
    as facts, marks and logs are, need not tell).

    A transaction of n writes is one request where n single writes are n: what a batch of conditional writes costs
    in requests and time (DynamoDB bills each item of a transaction two write units, a single write one)."""
    made: dict[int, bool] = {}
    waiting = list(range(len(actions)))
    while waiting:
        chunk = _one_transaction(actions, waiting)
        failed = _retried(partial(_transact, client, [actions[i] for i in chunk]), sleep)
        for position, i in enumerate(chunk):
            if failed is None:  # a conflict with another transaction: each alone
                made[i] = not _retried(partial(_alone, client, actions[i]), sleep)
            elif not failed or position in failed:  # made, or its condition failed: the others go again
                made[i] = not failed
        waiting = [i for i in waiting if i not in made]
    return [made[i] for i in range(len(actions))]


class _Transient(Exception):
    """A write refused for a reason that passes (a throttle, another transaction on its item)."""

    def __init__(self, error: ClientError) -> None:
        super().__init__(str(error))
        self.error = error


_T = TypeVar("_T")


def _retried(call: Callable[[], _T], sleep: Callable[[float], None]) -> _T:
    """``call``, made again after a jittered backoff (50 ms, doubling) while it passes: :data:`RETRIES` times."""
    for attempt in range(RETRIES):
        try:
            return call()
        except _Transient:
            sleep(random.uniform(0, 0.05 * 2**attempt))  # jitter, not a secret
    try:
        return call()
    except _Transient as exc:
        raise exc.error from None


def retry_conflicts(call: Callable[[], _T], sleep: Callable[[float], None] = time.sleep) -> _T:
    """``call``, one single-item write, made again after a jittered backoff while another transaction holds its item
    (TransactionConflictException, which botocore does not retry), :data:`RETRIES` times, then raised."""

    def once() -> _T:
        try:
            return call()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionConflictException":
                raise _Transient(exc) from None
            raise

    return _retried(once, sleep)


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


def _transact(client: Any, actions: Sequence[dict[str, Any]]) -> set[int] | None:
    """One transaction: the positions whose condition failed (empty: it was made); None when a concurrent
    transaction conflicted with it (its actions are made alone); :class:`_Transient` when a throttle cancelled it;
    every other error raises. One action is made as the single conditional write it is (``PutItem`` or
    ``DeleteItem``: one write unit, not two)."""
    if len(actions) == 1:
        return _alone(client, actions[0])
    try:
        client.transact_write_items(TransactItems=list(actions), ClientRequestToken=uuid.uuid4().hex)
    except ClientError as exc:
        reasons = cancellation_reasons(exc)
        if reasons is None or len(reasons) != len(actions):
            raise
        codes = {reason_code(r) for r in reasons} - {"None"}
        if codes == {CONDITION_FAILED}:
            return {n for n, r in enumerate(reasons) if reason_code(r) == CONDITION_FAILED}
        if codes <= {CONDITION_FAILED, CONFLICT}:
            return None
        if codes <= TRANSIENT | {CONDITION_FAILED}:
            raise _Transient(exc) from None
        raise
    return set()


def _alone(client: Any, action: dict[str, Any]) -> set[int]:
    """One action as its own conditional write: {0} when its condition failed, else empty; :class:`_Transient` when
    another transaction holds its item."""
    [(kind, request)] = action.items()
    write = getattr(client, {"Put": "put_item", "Delete": "delete_item"}[kind])
    try:
        write(**request)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code == "ConditionalCheckFailedException":
            return {0}
        if code == "TransactionConflictException":
            raise _Transient(exc) from None
        raise
    return set()
