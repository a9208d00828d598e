"""Fire the template's Schedule events at their rate, and drain SQS queues into their functions."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from lakehook.local.invoker import LocalFunction

LONG_POLL_SECONDS = 1  # an idle queue poller waits this long in ReceiveMessage

log = logging.getLogger("lakehook.local.schedules")


def scheduled_event(rule_name: str, detail: Any = None) -> dict[str, Any]:
    """An EventBridge 'Scheduled Event' as Lambda receives it."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:123456789012:rule/{rule_name}"],
        "detail": detail if detail is not None else {},
    }


class Scheduler:
    """One thread per schedule; ``every`` overrides every rate (``--poll-every``), and ``rates`` the rate of
    one function's schedules (by logical id), e.g. to replay minutes of re-drives in seconds in a test."""

    def __init__(
        self, functions: list[LocalFunction], every: float | None = None, rates: Mapping[str, float] | None = None
    ) -> None:
        self._jobs = [(fn, s) for fn in functions for s in fn.spec.schedules]
        self._every = every
        self._rates = dict(rates or {})
        unknown = self._rates.keys() - {fn.spec.name for fn, _ in self._jobs}
        if unknown:
            raise ValueError(f"no scheduled function named {sorted(unknown)}")
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.fired: dict[str, int] = {}

    def start(self) -> None:
        for fn, schedule in self._jobs:
            period = self._rates.get(fn.spec.name, self._every if self._every is not None else schedule.rate_seconds)
            thread = threading.Thread(
                target=self._loop,
                args=(fn, schedule.name, schedule.input, period),
                name=f"schedule-{schedule.name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def fire(self, function_name: str) -> int:
        """Run each schedule of one function once, now, in this thread (a test's "the schedule ticked")."""
        jobs = [(fn, s) for fn, s in self._jobs if fn.spec.name == function_name]
        if not jobs:
            raise ValueError(f"no scheduled function named {function_name!r}")
        for fn, schedule in jobs:
            self._tick(fn, schedule.name, schedule.input)
        return len(jobs)

    def _loop(self, fn: LocalFunction, name: str, raw_input: str | None, period: float) -> None:
        while not self._stop.wait(period):
            self._tick(fn, name, raw_input)

    def _tick(self, fn: LocalFunction, name: str, raw_input: str | None) -> None:
        event = json.loads(raw_input) if raw_input else scheduled_event(name)
        try:
            fn.invoke(event)
        except Exception:
            log.exception("scheduled function %s failed", fn.spec.name)
        self.fired[name] = self.fired.get(name, 0) + 1


class QueuePoller:
    """Deliver SQS messages to the function like an SQS event source mapping (partial batch failures)."""

    def __init__(self, sqs: Any, function: LocalFunction, queue_url: str, queue_arn: str, batch_size: int) -> None:
        self._sqs = sqs
        self._fn = function
        self._url = queue_url
        self._arn = queue_arn
        self._batch = min(batch_size, 10)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"sqs-{self._fn.spec.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                # Long polling, as Lambda's poller does: moto answers as soon as a message arrives, and an
                # idle queue costs one request a second instead of five.
                messages = self._sqs.receive_message(
                    QueueUrl=self._url,
                    MaxNumberOfMessages=self._batch,
                    WaitTimeSeconds=LONG_POLL_SECONDS,
                    AttributeNames=["All"],
                ).get("Messages", [])
            except Exception:
                log.exception("receive from %s failed", self._url)
                self._stop.wait(0.2)
                continue
            if not messages:
                continue
            records = [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": m.get("Attributes", {}),
                    "messageAttributes": {},
                    "md5OfBody": m.get("MD5OfBody"),
                    "eventSource": "aws:sqs",
                    "eventSourceARN": self._arn,
                    "awsRegion": "us-east-1",
                }
                for m in messages
            ]
            failed: set[str] = set()
            try:
                answer = self._fn.invoke({"Records": records})
                failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])}
            except Exception:
                log.exception("queue function %s failed", self._fn.spec.name)
                failed = {r["messageId"] for r in records}
            done = [
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]}
                for i, r in enumerate(records)
                if r["messageId"] not in failed
            ]
            if done:
                self._sqs.delete_message_batch(QueueUrl=self._url, Entries=done)
            if failed:
                time.sleep(0.2)
