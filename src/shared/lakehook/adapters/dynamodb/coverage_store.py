"""DynamoDBCoverageStore: coverage as day segments, each a conditional write on its version.

One item per (asset, scope, UTC day) holds that day's merged spans, varint-encoded
(:func:`~lakehook.domain.coverage.encode_segment`). Adding an interval reads the days it touches
(one GetItem, or BatchGetItem for several), unites the piece in memory and writes the segment
back on the condition that its version has not moved. A writer that loses gets the winner's
item back (``ReturnValuesOnConditionCheckFailure=ALL_OLD``), unites again and retries without
a second read, so concurrent writers never lose an interval. A query is one Query over the
days asked for (a month is 31 small items).
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.domain.coverage import (
    Span,
    clip,
    decode_segment,
    encode_segment,
    join_sorted,
    merge,
    segment_label,
    segment_of_label,
    segments_between,
    split_by_segment,
)
from lakehook.domain.errors import ConflictError
from lakehook.ports.coverage import CoverageStore

ITEM_TYPE = "COVERAGE"
READ_BATCH = 100  # days read per BatchGetItem (its limit)
UNPROCESSED_ROUNDS = 8
_DESERIALIZER = TypeDeserializer()


@dataclass(frozen=True)
class _Segment:
    """One stored day: its spans and the version a write must find to replace it (0: absent)."""

    day: int
    spans: list[Span]
    version: int = 0


class DynamoDBCoverageStore(CoverageStore):
    """Coverage on the single table. An add costs one read and one conditional write per day touched."""

    def __init__(self, table: Any, max_attempts: int = 50, backoff_seconds: float = 0.002) -> None:
        self._table = table
        self._max_attempts = max_attempts
        self._backoff = backoff_seconds
        self._lock = threading.Lock()
        self.conflicts = 0  # lost conditional writes, retried; an operator's view of contention

    # --- writes -------------------------------------------------------------------------------

    def add(self, asset_key: str, span: Span, now_ms: int, partition_key: str | None = None) -> bool:
        return self.add_many(asset_key, [span], now_ms, partition_key)

    def add_many(self, asset_key: str, spans: Iterable[Span], now_ms: int, partition_key: str | None = None) -> bool:
        by_day: dict[int, list[Span]] = defaultdict(list)
        for span in spans:
            for day, piece in split_by_segment(span):
                by_day[day].append(piece)
        days = sorted(by_day)
        seen: dict[int, _Segment] = {}
        for first in range(0, len(days), READ_BATCH):
            seen.update(self._read(asset_key, partition_key, days[first : first + READ_BATCH]))
        changed = False
        for day in days:
            segment = seen.get(day) or _Segment(day, [])
            changed |= self._add_pieces(asset_key, partition_key, segment, by_day[day], now_ms)
        return changed

    def _add_pieces(
        self, asset_key: str, partition_key: str | None, segment: _Segment, pieces: list[Span], now_ms: int
    ) -> bool:
        for attempt in range(self._max_attempts):
            spans = merge([*segment.spans, *pieces])
            if spans == segment.spans:
                return False  # already covered: no write, so no stream record either
            item = self._item(asset_key, partition_key, segment.day, spans, segment.version + 1, now_ms)
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(PK)"}
                if segment.version == 0
                else {
                    "ConditionExpression": "#version = :seen",
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": {":seen": segment.version},
                }
            )
            try:
                self._table.put_item(Item=item, ReturnValuesOnConditionCheckFailure="ALL_OLD", **condition)
                return True
            except ClientError as exc:
                if not is_conditional_failure(exc):
                    raise
                with self._lock:
                    self.conflicts += 1
                segment = self._winner(exc, asset_key, partition_key, segment.day)
            if attempt >= 2:  # a hot day: spread the retries out a little
                time.sleep(random.uniform(0, self._backoff * attempt))
        raise ConflictError(
            f"coverage of {asset_key} on {segment_label(segment.day)} kept changing; gave up after "
            f"{self._max_attempts} attempts"
        )

    def _winner(self, exc: ClientError, asset_key: str, partition_key: str | None, day: int) -> _Segment:
        """The segment that beat us, from the failed write's ALL_OLD image (or one consistent read)."""
        raw: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
        if raw:
            return _segment({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()}, day)
        return self._read(asset_key, partition_key, [day]).get(day) or _Segment(day, [])

    def _item(
        self, asset_key: str, partition_key: str | None, day: int, spans: list[Span], version: int, now_ms: int
    ) -> dict[str, Any]:
        label = segment_label(day)
        item: dict[str, Any] = {
            **keys.coverage_key(asset_key, partition_key, label),
            keys.ITEM_TYPE: ITEM_TYPE,
            "assetKey": asset_key,
            "day": label,
            "spans": Binary(encode_segment(spans, day)),
            "spanCount": len(spans),
            "coveredMs": sum(s.length for s in spans),
            "version": version,
            "updatedAt": now_ms,
        }
        if partition_key is not None:
            item["partitionKey"] = partition_key
        return item

    # --- reads ----------------------------------------------------------------------------------

    def _read(self, asset_key: str, partition_key: str | None, days: list[int]) -> dict[int, _Segment]:
        """The stored segments of those days (strongly consistent): GetItem for one, BatchGetItem for more."""
        if len(days) == 1:
            key = keys.coverage_key(asset_key, partition_key, segment_label(days[0]))
            item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
            return {} if item is None else {days[0]: _segment(item, days[0])}
        wanted = [keys.coverage_key(asset_key, partition_key, segment_label(d)) for d in days]
        by_sk = {k["SK"]: d for k, d in zip(wanted, days, strict=True)}
        return {by_sk[i["SK"]]: _segment(i, by_sk[i["SK"]]) for i in self._batch_get(wanted)}

    def _batch_get(self, wanted: list[dict[str, str]]) -> list[dict[str, Any]]:
        """One BatchGetItem (at most 100 keys), retrying unprocessed keys.

        Through the table's own client, which (de)serializes plain values like the Table does.
        """
        request: dict[str, Any] = {self._table.name: {"Keys": wanted, "ConsistentRead": True}}
        found: list[dict[str, Any]] = []
        for attempt in range(UNPROCESSED_ROUNDS):
            answer = self._table.meta.client.batch_get_item(RequestItems=request)
            found += answer.get("Responses", {}).get(self._table.name, [])
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                return found
            time.sleep(self._backoff * 2**attempt)
        raise ConflictError(f"BatchGetItem left coverage days unread after {UNPROCESSED_ROUNDS} rounds (throttled)")

    def spans(self, asset_key: str, start: int, end: int, partition_key: str | None = None) -> list[Span]:
        days = segments_between(start, end)
        if not days:
            return []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": keys.asset_pk(asset_key),
                ":first": keys.coverage_sk(partition_key, segment_label(days[0])),
                ":last": keys.coverage_sk(partition_key, segment_label(days[-1])),
            },
            "ProjectionExpression": "#day, spans",
            "ExpressionAttributeNames": {"#day": "day"},
            "ConsistentRead": True,
        }
        stored: list[Span] = []
        while True:
            answer = self._table.query(**kwargs)
            for item in answer.get("Items", []):
                day = segment_of_label(item["day"])
                stored.extend(_segment(item, day).spans)
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        # Days come in order; merging unites spans that meet at midnight.
        return clip(join_sorted(stored), start, end)


def _segment(item: dict[str, Any], day: int) -> _Segment:
    raw = item.get("spans")
    data = bytes(raw) if raw is not None else b""  # boto3's Binary converts with bytes()
    return _Segment(day, decode_segment(data, day), int(item.get("version", 0)))
