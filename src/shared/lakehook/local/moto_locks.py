"""Concurrency for moto's DynamoDB in the local stack: item locks, transaction conflicts, a short data latch.

moto's server handles each request on its own thread and its DynamoDB is not thread-safe: a conditional
write reads then writes, a transaction writes item by item and rolls back from a journal, the stream
numbers a record from the shard's length. This module makes requests overlap the way DynamoDB's do, and
no further (what it guarantees is written down in docs/local.md, "What the local DynamoDB guarantees"):

- **Item locks.** PutItem, UpdateItem, DeleteItem and GetItem hold the lock of their item (table and full
  key) for the whole action, from validating the request to building the answer: two requests on one item
  run one after the other, so a conditional update never loses another's write. A request waits for the
  lock (DynamoDB would reject a single-item write on an item an ongoing transaction holds with
  TransactionConflictException; waiting is what the SDK's retry would end in).
- **Transaction conflicts.** TransactWriteItems and TransactGetItems take every item's lock *without
  waiting*; where another request or transaction holds one, the transaction is cancelled with reason
  ``TransactionConflict`` for that item (``None`` for the others), as DynamoDB cancels a transaction that
  conflicts with an ongoing one or with a single-item write in progress.
- **The data latch.** moto's in-memory operation itself (the condition check and write of a single-item
  request, a whole transaction, a batch, a Query or Scan page, a stream read) runs under one process-wide
  re-entrant latch, held only for that operation: moto's table structures (the items by partition, the
  attribute index of :mod:`lakehook.local.moto_dynamodb`, the stream shard's records and their sequence
  numbers) are only changed by one thread at a time, and a reader never sees a transaction half-applied or
  a record a cancelled transaction appended. HTTP, request parsing and answer serialization run outside it.

It patches moto's request handlers (not its backend, which :mod:`lakehook.local.moto_dynamodb` adapts), so
it is process-wide and idempotent; :func:`install` is what ``LocalStack`` calls.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_SINGLE_ITEM = ("put_item", "update_item", "delete_item", "get_item")
_TRANSACTIONS = ("transact_write_items", "transact_get_items")
_STREAM_ACTIONS = ("describe_stream", "list_streams", "get_shard_iterator", "get_records")
_CONFLICT_MESSAGE = "Transaction is ongoing for the item"

latch = threading.RLock()  # moto's in-memory DynamoDB and stream structures: one operation at a time
_install_lock = threading.Lock()
_installed = False
conflicts = 0  # transactions cancelled with TransactionConflict since the process started (tests read it)


class ItemLocks:
    """One lock per item key, made on first use and dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locks: dict[str, list[Any]] = {}  # key -> [lock, holders and waiters]

    def acquire(self, key: str, *, blocking: bool) -> bool:
        with self._mutex:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        if entry[0].acquire(blocking=blocking):
            return True
        self._forget(key)
        return False

    def release(self, key: str) -> None:
        self._locks[key][0].release()
        self._forget(key)

    def _forget(self, key: str) -> None:
        with self._mutex:
            entry = self._locks[key]
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[key]

    def held(self) -> int:
        """How many keys are locked or waited for (0 once every request has finished)."""
        with self._mutex:
            return len(self._locks)


item_locks = ItemLocks()


class _LatchedBackend:
    """The DynamoDB backend as a handler sees it: every call runs under the latch."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._backend, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def latched(*args: Any, **kwargs: Any) -> Any:
            with latch:
                return value(*args, **kwargs)

        return latched


def item_key(backend: Any, table_name: str, key_or_item: dict[str, Any]) -> str | None:
    """The lock key of an item: its table and its full primary key (None when moto will refuse the request)."""
    try:
        table = backend.get_table(table_name)
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        key = {name: key_or_item[name] for name in names}
    except Exception:  # unknown table or a key attribute missing: moto answers its own error, nothing to lock
        return None
    return f"{table_name}\x00{json.dumps(key, sort_keys=True)}"


def _single_key(handler: Any) -> str | None:
    body = handler.body if isinstance(handler.body, dict) else {}
    target = body.get("Item") if "Item" in body else body.get("Key")
    if not isinstance(target, dict) or not isinstance(body.get("TableName"), str):
        return None
    return item_key(handler.dynamodb_backend, body["TableName"], target)


def _transaction_keys(handler: Any) -> list[str | None]:
    body = handler.body if isinstance(handler.body, dict) else {}
    keys: list[str | None] = []
    for entry in body.get("TransactItems") or []:
        action = next(iter(entry.values()), None) if isinstance(entry, dict) and len(entry) == 1 else None
        if not isinstance(action, dict) or not isinstance(action.get("TableName"), str):
            keys.append(None)
            continue
        target = action.get("Item") if "Item" in action else action.get("Key")
        keys.append(
            item_key(handler.dynamodb_backend, action["TableName"], target) if isinstance(target, dict) else None
        )
    return keys


@contextmanager
def _holding_all(keys: list[str | None]) -> Iterator[None]:
    """Every item's lock taken without waiting, or a TransactionCanceledException naming the conflicts."""
    from moto.dynamodb.exceptions import TransactionCanceledException

    taken: list[str] = []
    clashes: set[int] = set()
    for position, key in enumerate(keys):
        if key is None or key in taken:
            continue  # moto refuses a request naming one item twice (or naming none) with its own error
        if item_locks.acquire(key, blocking=False):
            taken.append(key)
        else:
            clashes.add(position)
    try:
        if clashes:
            _count_conflict()
            raise TransactionCanceledException(
                [
                    ("TransactionConflict", _CONFLICT_MESSAGE, None) if i in clashes else (None, None, None)
                    for i in range(len(keys))
                ]
            )
        yield
    finally:
        for key in taken:
            item_locks.release(key)


def _count_conflict() -> None:
    global conflicts
    with _install_lock:
        conflicts += 1


def _single_item(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(method)
    def locked(self: Any) -> Any:
        key = _single_key(self)
        if key is None:
            with latch:
                return method(self)
        item_locks.acquire(key, blocking=True)
        try:
            return method(self)  # moto's operation on the backend takes the latch (the latched backend)
        finally:
            item_locks.release(key)

    return locked


def _transaction(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(method)
    def locked(self: Any) -> Any:
        with _holding_all(_transaction_keys(self)), latch:
            return method(self)

    return locked


def _latched(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(method)
    def locked(self: Any) -> Any:
        with latch:
            return method(self)

    return locked


def install() -> None:
    """Put the item locks, transaction conflicts and latch in moto's DynamoDB and Streams handlers (once)."""
    global _installed
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    with _install_lock:
        if _installed:
            return
        backend_property = DynamoHandler.__dict__["dynamodb_backend"]
        DynamoHandler.dynamodb_backend = property(  # type: ignore[method-assign,assignment]
            lambda self: _LatchedBackend(backend_property.fget(self))
        )
        for name, value in list(DynamoHandler.__dict__.items()):
            if name.startswith("_") or name in ("call_action", "get_endpoint_name") or not callable(value):
                continue
            if name in _SINGLE_ITEM:
                setattr(DynamoHandler, name, _single_item(value))
            elif name in _TRANSACTIONS:
                setattr(DynamoHandler, name, _transaction(value))
            else:  # every other action (Query, Scan, batches, PartiQL, table management) under the latch
                setattr(DynamoHandler, name, _latched(value))
        for name in _STREAM_ACTIONS:
            setattr(DynamoDBStreamsHandler, name, _latched(getattr(DynamoDBStreamsHandler, name)))
        _installed = True


def installed() -> bool:
    return _installed
