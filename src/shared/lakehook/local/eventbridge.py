"""EventBridge rules of the template on the local stack: moto matches the events, a thread invokes the function.

For each ``EventBridgeRule`` event of a function the runtime creates the rule on moto's bus with the
template's pattern and an SQS queue as its target: moto's own pattern matching (``prefix``, ``suffix``,
``wildcard``, ...) decides which events reach the function, for events put with ``PutEvents`` and for the
``Object Created`` events moto's S3 sends to EventBridge from a bucket with EventBridge notifications on.
The thread takes each event from the queue and invokes the function with it, once, as EventBridge invokes
a Lambda target (asynchronously, one event per invocation; a failed invocation is logged, as Lambda would
send it to the function's dead-letter queue).

moto (5.2) leaves the event's ``account`` out of what it delivers (its default input template omits it),
while EventBridge always sets it, to the account that put the event, and the bus ingest binds producers to
it (docs/event-bus.md). The delivery puts back what EventBridge would: the account of the rule's bus (moto
keeps one backend per account, and the rule, its bus and its queue live in the same one).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from lakehook.local.invoker import LocalFunction
from lakehook.local.schedules import LONG_POLL_SECONDS
from lakehook.local.template import RuleSubscription

log = logging.getLogger("lakehook.local")


class RuleDelivery:
    """One EventBridgeRule subscription: the moto rule, its queue target, and the thread that delivers."""

    def __init__(self, events: Any, sqs: Any, function: LocalFunction, rule: RuleSubscription) -> None:
        self._sqs = sqs
        self._fn = function
        self.rule = rule
        self.delivered = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        name = rule.name[:64]
        self._url = sqs.create_queue(QueueName=f"eventbridge-{name}"[:80])["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self._url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.account = arn.split(":")[4]  # arn:aws:sqs:<region>:<account>:<name>: the bus's account too
        events.put_rule(Name=name, EventPattern=json.dumps(rule.pattern), EventBusName=rule.bus, State="ENABLED")
        events.put_targets(Rule=name, EventBusName=rule.bus, Targets=[{"Id": "local-function", "Arn": arn}])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"eventbridge-{self.rule.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                # Long polling: a rule with nothing to deliver costs one request a second, not twenty.
                messages = self._sqs.receive_message(
                    QueueUrl=self._url, MaxNumberOfMessages=10, WaitTimeSeconds=LONG_POLL_SECONDS
                ).get("Messages", [])
            except Exception:
                log.exception("receive for rule %s failed", self.rule.name)
                self._stop.wait(0.05)
                continue
            if not messages:
                continue
            for message in messages:
                try:
                    self._fn.invoke(self._as_eventbridge_delivers(json.loads(message["Body"])))
                except Exception:
                    log.exception("function %s failed on an event of rule %s", self._fn.spec.name, self.rule.name)
                self.delivered += 1
            self._sqs.delete_message_batch(
                QueueUrl=self._url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )

    def _as_eventbridge_delivers(self, event: Any) -> Any:
        """The event with its ``account`` (see the module docstring); one that has it is left as it is."""
        if isinstance(event, dict) and "account" not in event:
            event = {**event, "account": self.account}
        return event
