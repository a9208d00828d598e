"""EventBridge target: ``PutEvents`` of one entry to a named bus; ``detail`` is the invocation payload.

The entry: ``Source`` (default ``lakehook``), ``DetailType`` (default ``lakehook.trigger``), ``Detail`` =
the payload (so ``detail.triggerKey`` carries the key), ``EventBusName``. The run id is the event id.

``PutEvents`` can fail per entry while the call succeeds (``FailedEntryCount``): an entry failing with
``ThrottlingException`` or ``InternalFailure`` was not put and is retried; any other entry error
(``MalformedDetail``, ``AccessDeniedException``, ...) fails for good; a missing bus is FATAL.

EventBridge has no idempotency key and delivers to its targets at least once, so consumers deduplicate
on ``detail.triggerKey`` (the same for every attempt; ``detail.attempt`` is not): e.g. a Lambda rule
target with Powertools' idempotency on ``detail.triggerKey``, or a conditional write keyed by it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import client_error_outcome, transport_outcome
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.targets import EventBridgeTarget, TargetConfig
from lakehook.ports.dispatch import TargetClient

RETRYABLE_ENTRY_ERRORS = frozenset({"ThrottlingException", "InternalFailure", "InternalException"})


def entry_outcome(answer: dict[str, Any]) -> Outcome:
    """The outcome of a one-entry ``PutEvents`` answer: its entry's ``EventId``, or its ``ErrorCode``."""
    result = (answer.get("Entries") or [{}])[0]
    if int(answer.get("FailedEntryCount", 0)) == 0 and result.get("EventId"):
        return Outcome.started(f"event/{result['EventId']}")
    code = str(result.get("ErrorCode") or "Unknown")
    message = f"PutEvents entry failed: {code}: {str(result.get('ErrorMessage') or '')[:200]}"
    if code in RETRYABLE_ENTRY_ERRORS:
        # The entry was not put: nothing to confirm, so not ambiguous.
        return Outcome.retryable(message, "throttled" if code == "ThrottlingException" else "aws_entry_internal")
    return Outcome.fatal(message, f"aws_{code}"[:64])


class EventBridgeTargetClient(TargetClient):
    """Events on a bus; consumers deduplicate on ``detail.triggerKey``."""

    type_name: ClassVar[str] = "eventbridge"
    confirmable: ClassVar[bool] = False
    deduplicates: ClassVar[bool] = False

    def __init__(self, client: Any) -> None:
        self._client = client

    @classmethod
    def build(cls, deps: TargetDeps) -> EventBridgeTargetClient:
        return cls(deps.aws("events"))

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, EventBridgeTarget)
        entry = {
            "Source": config.source,
            "DetailType": config.detail_type,
            "Detail": invocation.body().decode(),
            "EventBusName": config.event_bus_name,
        }
        try:
            answer = self._client.put_events(Entries=[entry])
        except ClientError as exc:
            return client_error_outcome(exc, "PutEvents")
        except BotoCoreError as exc:
            return transport_outcome(exc, "PutEvents")
        return entry_outcome(answer)

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        return None  # events cannot be looked up; consumers deduplicate (see the module docstring)
