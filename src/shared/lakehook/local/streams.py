"""Tail the table's DynamoDB stream and feed stream-triggered functions, as event source mappings would.

One reader thread reads the stream's new records (from moto's memory, or with GetRecords:
:mod:`lakehook.local.moto_streams`) and hands each record to every mapping whose
FilterCriteria match (non-matching records are dropped, as Lambda drops them). Each mapping (one per
function event) then runs on its own: with ``ParallelizationFactor`` N it has N lanes, each with its own
thread and one batch in flight; a record goes to the lane its item key (the record's ``Keys``) hashes to, so
one item's records are handled in order while different items' are handled concurrently, as Lambda
documents for DynamoDB streams (N = 1: one batch per shard at a time, in stream order). Per lane, records
are delivered in batches of BatchSize and on a failure redelivered from the first failed record
(ReportBatchItemFailures) or from the start of the batch, up to MaximumRetryAttempts; then the batch is
handed to the on-failure destination (here: logged and counted) and the lane moves on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from lakehook.local.filters import matches_any
from lakehook.local.invoker import LocalFunction
from lakehook.local.moto_streams import StreamReader
from lakehook.local.template import StreamSubscription

log = logging.getLogger("lakehook.local.streams")


@dataclass
class _Lane:
    """One concurrent batch of a mapping: its records in order, and its own retries."""

    pending: list[dict[str, Any]] = field(default_factory=list)
    in_flight: bool = False
    attempts: int = 0


@dataclass
class _Mapping:
    function: LocalFunction
    subscription: StreamSubscription
    lanes: list[_Lane] = field(default_factory=list)
    delivered: int = 0
    dropped_batches: list[list[dict[str, Any]]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    enabled: bool = True  # False: records queue up and no batch starts (UpdateEventSourceMapping Enabled=false)

    def __post_init__(self) -> None:
        self.lanes = [_Lane() for _ in range(self.subscription.parallelization_factor)]

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Every record not yet handled, lane by lane."""
        with self.cond:
            return [record for lane in self.lanes for record in lane.pending]

    def busy(self) -> bool:
        with self.cond:
            return any(lane.pending or lane.in_flight for lane in self.lanes)

    def add(self, record: dict[str, Any]) -> None:
        keys = json.dumps(record.get("dynamodb", {}).get("Keys", {}), sort_keys=True)
        lane = self.lanes[zlib.crc32(keys.encode()) % len(self.lanes)]
        with self.cond:
            lane.pending.append(record)
            self.cond.notify_all()


class StreamTailer:
    """A reader thread for the table's stream, and a thread per lane of every subscribed function's mapping."""

    def __init__(self, reader: StreamReader, functions: list[LocalFunction]) -> None:
        self._reader = reader
        self._interval = reader.poll_interval
        self.mappings = [_Mapping(fn, sub) for fn in functions for sub in fn.spec.streams]
        self._stop = threading.Event()
        self._wake = threading.Event()  # a lane finished a batch: its writes may be on the stream already
        self._threads: list[threading.Thread] = []
        self._cycle = 0
        self._idle_cycle = -1
        self._cond = threading.Condition()

    def start(self) -> None:
        if not self.mappings:
            return
        self._threads = [threading.Thread(target=self._run, name="lakehook-stream-reader", daemon=True)]
        for mapping in self.mappings:
            for index, lane in enumerate(mapping.lanes):
                name = f"lakehook-stream-{mapping.function.spec.name}-{index}"
                self._threads.append(threading.Thread(target=self._work, args=(mapping, lane), name=name, daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for mapping in self.mappings:
            with mapping.cond:
                mapping.cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=10)

    def enable(self, function_name: str, enabled: bool = True) -> list[dict[str, Any]]:
        """Let a function's mappings start batches or not (records still queue up); the records they hold."""
        held: list[dict[str, Any]] = []
        for mapping in self.mappings:
            if mapping.function.spec.name == function_name:
                with mapping.cond:
                    mapping.enabled = enabled
                    mapping.cond.notify_all()
                held += mapping.pending
        return held

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until a full poll, begun after this call with every lane idle, found nothing new."""
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
            # Idle is read before the poll: a lane that finished after it wrote its records before the poll.
            busy = any(m.busy() for m in self.mappings)
            try:
                fetched = self._fetch()
            except Exception:  # keep tailing: a broken poll must not end the local stack
                log.exception("stream reader cycle failed")
                fetched, busy = 0, True
            with self._cond:
                self._cycle += 1
                if fetched == 0 and not busy:
                    self._idle_cycle = self._cycle
                self._cond.notify_all()
            if fetched == 0 and not self._stop.is_set():
                self._wake.wait(self._interval)
                self._wake.clear()

    def _fetch(self) -> int:
        records = self._reader.read()
        for record in records:
            for mapping in self.mappings:
                if matches_any(record, mapping.subscription.filters):
                    mapping.add(record)
        return len(records)

    def _work(self, mapping: _Mapping, lane: _Lane) -> None:
        """One lane: wait for records, deliver a batch, settle it, again (one batch in flight at a time)."""
        batch_size = mapping.subscription.batch_size
        while not self._stop.is_set():
            with mapping.cond:
                while not (lane.pending and mapping.enabled) and not self._stop.is_set():
                    mapping.cond.wait(1.0)
                if self._stop.is_set():
                    return
                batch = lane.pending[:batch_size]
                lane.in_flight = True
            try:
                failed_from = self._invoke(mapping.function, batch, mapping.subscription.report_batch_item_failures)
                backoff = self._settle(mapping, lane, batch, failed_from)
            finally:
                with mapping.cond:
                    lane.in_flight = False
                self._wake.set()  # read the stream now: the next hop (e.g. resolver -> dispatcher) waits on it
            if backoff:
                self._stop.wait(backoff)

    @staticmethod
    def _settle(mapping: _Mapping, lane: _Lane, batch: list[dict[str, Any]], failed_from: int | None) -> float:
        """Move the lane past what was handled; the seconds to wait before redelivering (0: go on)."""
        sub = mapping.subscription
        with mapping.cond:
            if failed_from is None:
                del lane.pending[: len(batch)]
                lane.attempts = 0
                mapping.delivered += len(batch)
                return 0.0
            mapping.delivered += failed_from
            del lane.pending[:failed_from]
            lane.attempts += 1
            limit = sub.maximum_retry_attempts
            if limit is not None and limit >= 0 and lane.attempts > limit:
                dropped = lane.pending[: sub.batch_size]
                del lane.pending[: len(dropped)]
                mapping.dropped_batches.append(dropped)
                lane.attempts = 0
                log.error(
                    "stream batch sent to the on-failure destination: %s, %d records",
                    mapping.function.spec.name,
                    len(dropped),
                )
                return 0.0
            return min(2.0, 0.05 * 2.0**lane.attempts)

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
