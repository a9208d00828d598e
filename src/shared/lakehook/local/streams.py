"""Tail the table's DynamoDB stream and feed stream-triggered functions, as an event source mapping would.

Per subscription (one per function event): records are filtered by FilterCriteria (non-matching
records are dropped, as Lambda drops them), delivered in order in batches of BatchSize, and on a
failure redelivered from the first failed record (ReportBatchItemFailures) or from the start of
the batch, up to MaximumRetryAttempts; then the batch is handed to the on-failure destination
(here: logged and counted) and the shard moves on.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lakehook.local.filters import matches_any
from lakehook.local.invoker import LocalFunction
from lakehook.local.template import StreamSubscription

log = logging.getLogger("lakehook.local.streams")


@dataclass
class _Mapping:
    function: LocalFunction
    subscription: StreamSubscription
    pending: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    delivered: int = 0
    dropped_batches: list[list[dict[str, Any]]] = field(default_factory=list)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, set):
        return [_jsonable(v) for v in value]
    return value


class StreamTailer:
    """One thread tailing every shard of the table's stream for every subscribed function."""

    def __init__(
        self, streams_client: Any, stream_arn: str, functions: list[LocalFunction], poll_interval: float = 0.1
    ) -> None:
        self._client = streams_client
        self._arn = stream_arn
        self._interval = poll_interval
        self.mappings = [_Mapping(fn, sub) for fn in functions for sub in fn.spec.streams]
        self._iterators: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cycle = 0
        self._idle_cycle = -1
        self._cond = threading.Condition()

    def start(self) -> None:
        if not self.mappings:
            return
        self._thread = threading.Thread(target=self._run, name="lakehook-stream-tailer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until a full poll found nothing new and nothing pending (or the timeout passes)."""
        if not self.mappings:
            return True
        deadline = time.monotonic() + timeout
        with self._cond:
            start = self._cycle
            while not (self._idle_cycle > start + 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                fetched = self._fetch()
                busy = self._deliver()
            except Exception:  # keep tailing: a broken poll must not end the local stack
                log.exception("stream tailer cycle failed")
                fetched, busy = 0, True
            with self._cond:
                self._cycle += 1
                if fetched == 0 and not busy:
                    self._idle_cycle = self._cycle
                self._cond.notify_all()
            if fetched == 0 and not busy:
                self._stop.wait(self._interval)

    def _fetch(self) -> int:
        shards = self._client.describe_stream(StreamArn=self._arn)["StreamDescription"].get("Shards", [])
        count = 0
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._client.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self._iterators[shard_id]
            if iterator is None:
                continue
            answer = self._client.get_records(ShardIterator=iterator, Limit=1000)
            self._iterators[shard_id] = answer.get("NextShardIterator")
            for raw in answer.get("Records", []):
                record = _jsonable(raw)
                record["eventSourceARN"] = self._arn
                count += 1
                for mapping in self.mappings:
                    if matches_any(record, mapping.subscription.filters):
                        mapping.pending.append(record)
        return count

    def _deliver(self) -> bool:
        """Deliver one batch per mapping; True while anything is still pending."""
        for mapping in self.mappings:
            if mapping.pending:
                self._deliver_one(mapping)
        return any(m.pending for m in self.mappings)

    def _deliver_one(self, mapping: _Mapping) -> None:
        sub = mapping.subscription
        batch = mapping.pending[: sub.batch_size]
        failed_from = self._invoke(mapping.function, batch, sub.report_batch_item_failures)
        if failed_from is None:
            mapping.pending = mapping.pending[len(batch) :]
            mapping.attempts = 0
            mapping.delivered += len(batch)
            return
        mapping.delivered += failed_from
        mapping.pending = mapping.pending[failed_from:]
        mapping.attempts += 1
        limit = sub.maximum_retry_attempts
        if limit is not None and limit >= 0 and mapping.attempts > limit:
            dropped = mapping.pending[: sub.batch_size]
            mapping.pending = mapping.pending[len(dropped) :]
            mapping.dropped_batches.append(dropped)
            mapping.attempts = 0
            log.error(
                "stream batch sent to the on-failure destination: %s, %d records",
                mapping.function.spec.name,
                len(dropped),
            )
        else:
            time.sleep(min(2.0, 0.05 * 2**mapping.attempts))

    @staticmethod
    def _invoke(function: LocalFunction, batch: list[dict[str, Any]], partial: bool) -> int | None:
        """Index of the first record to redeliver, or None when the batch succeeded."""
        try:
            answer = function.invoke({"Records": batch})
        except Exception:
            log.exception("stream function %s failed; the batch will be retried", function.spec.name)
            return 0
        if not partial or not isinstance(answer, dict):
            return None
        failures = [f.get("itemIdentifier") for f in answer.get("batchItemFailures") or []]
        if not failures:
            return None
        sequence = [r.get("dynamodb", {}).get("SequenceNumber") for r in batch]
        positions = [sequence.index(f) for f in failures if f in sequence]
        return min(positions) if positions else 0
