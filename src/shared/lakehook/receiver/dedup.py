"""Remembering trigger keys, so a run starts once per key however often it is delivered.

lakehook may deliver one trigger more than once: a retry after a timeout whose request did arrive, a
re-drive, a replayed webhook. A receiver answers the first delivery by starting the run, and every later
one without starting anything: with the first answer again (while it is remembered) or 409 while the
first is still being handled. A store makes that decision atomic across processes:

- :meth:`DedupStore.begin` records the key as in progress unless it is known, in one conditional write,
  and answers what was there before (None: this caller is first and must start the run).
- :meth:`DedupStore.finish` records the answer given (e.g. ``{"runId": ...}``), repeated to later deliveries.
- :meth:`DedupStore.release` forgets a key whose run did not start, so the next delivery tries again.

:class:`InMemoryDedupStore` is for one process (tests, a single worker); :class:`DynamoDBDedupStore`
shares the decision between processes and hosts through a DynamoDB table (boto3 client passed in).
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_TTL_SECONDS = 7 * 24 * 3600  # longer than lakehook retries a trigger by itself


@dataclass(frozen=True)
class Seen:
    """What a store knew of a key: still being handled (``answer`` None) or answered with ``answer``."""

    key: str
    answer: Mapping[str, Any] | None

    @property
    def in_progress(self) -> bool:
        return self.answer is None


class DedupStore(ABC):
    """Trigger keys seen by a receiver (see the module docstring)."""

    @abstractmethod
    def begin(self, key: str) -> Seen | None:
        """Record ``key`` as in progress unless known; None when this caller is the first."""

    @abstractmethod
    def finish(self, key: str, answer: Mapping[str, Any]) -> None:
        """Record the answer given for ``key`` (it is repeated to later deliveries)."""

    @abstractmethod
    def release(self, key: str) -> None:
        """Forget ``key`` (its run did not start): the next delivery starts it."""


class InMemoryDedupStore(DedupStore):
    """Keys in a dict behind a lock: one process only. Entries expire after ``ttl_seconds``."""

    def __init__(self, ttl_seconds: float = DEFAULT_TTL_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self._ttl = ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._items: dict[str, tuple[float, Mapping[str, Any] | None]] = {}

    def begin(self, key: str) -> Seen | None:
        now = self._clock()
        with self._lock:
            found = self._items.get(key)
            if found is not None and found[0] > now:
                return Seen(key, found[1])
            self._items[key] = (now + self._ttl, None)
            return None

    def finish(self, key: str, answer: Mapping[str, Any]) -> None:
        with self._lock:
            self._items[key] = (self._clock() + self._ttl, dict(answer))

    def release(self, key: str) -> None:
        with self._lock:
            self._items.pop(key, None)


class DynamoDBDedupStore(DedupStore):
    """Keys in a DynamoDB table, one item per key: ``begin`` is one conditional ``PutItem``
    (``attribute_not_exists``) that answers the existing item when the key is known
    (``ReturnValuesOnConditionCheckFailure=ALL_OLD``), so there is never a read-then-write race.

    ``client`` is a boto3 DynamoDB *client* (``boto3.client("dynamodb")``), passed in: this module imports
    no AWS SDK. The table needs a string partition key (``key_attribute``, default ``pk``); turn on TTL on
    ``expiresAt`` (epoch seconds) to let old keys go. An expired item that TTL has not deleted yet counts
    as absent.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        key_attribute: str = "pk",
        key_prefix: str = "lakehook-trigger#",
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._table = table_name
        self._key = key_attribute
        self._prefix = key_prefix
        self._ttl = ttl_seconds
        self._clock = clock

    def _item_key(self, key: str) -> dict[str, Any]:
        return {self._key: {"S": f"{self._prefix}{key}"}}

    def begin(self, key: str) -> Seen | None:
        now = int(self._clock())
        item = {**self._item_key(key), "state": {"S": "IN_PROGRESS"}, "expiresAt": {"N": str(now + self._ttl)}}
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#k) OR #e < :now",
                ExpressionAttributeNames={"#k": self._key, "#e": "expiresAt"},
                ExpressionAttributeValues={":now": {"N": str(now)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:  # botocore's ClientError, matched by its code: this module imports no SDK
            if _error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = getattr(exc, "response", {}).get("Item") or {}
            answer = old.get("answer", {}).get("S")
            return Seen(key, json.loads(answer) if answer else None)
        return None

    def finish(self, key: str, answer: Mapping[str, Any]) -> None:
        now = int(self._clock())
        self._client.put_item(
            TableName=self._table,
            Item={
                **self._item_key(key),
                "state": {"S": "ANSWERED"},
                "answer": {"S": json.dumps(dict(answer), sort_keys=True)},
                "expiresAt": {"N": str(now + self._ttl)},
            },
        )

    def release(self, key: str) -> None:
        self._client.delete_item(TableName=self._table, Key=self._item_key(key))


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None
