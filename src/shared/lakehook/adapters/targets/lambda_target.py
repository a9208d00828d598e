"""Lambda target: an asynchronous invoke (``InvocationType=Event``) whose payload carries ``triggerKey``.

Lambda queues the event and answers 202; the run id is the invocation's request id (the function
sees it as ``context.aws_request_id``). Lambda offers no idempotency key and no look-up, so this
plug-in is neither ``confirmable`` nor ``deduplicates``: after a timeout whose request may have
arrived, the dispatcher invokes again. Lambda's own asynchronous delivery is at least once, too.

How a consumer deduplicates: key the work on ``event["triggerKey"]``, the same on every attempt of one
trigger (``attempt`` is not). Either wrap the handler with Powertools' idempotency utility,

    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer, IdempotencyConfig, idempotent)

    persistence = DynamoDBPersistenceLayer(table_name="my-idempotency-table")
    config = IdempotencyConfig(event_key_jmespath="triggerKey", expires_after_seconds=7 * 24 * 3600)

    @idempotent(persistence_store=persistence, config=config)
    def handler(event, context): ...

or make the run's first write conditional on the key (``attribute_not_exists`` on an item keyed by
``triggerKey``) and return early when it exists. Either way a second delivery does nothing.

Errors: throttling (``TooManyRequestsException``, ``EC2ThrottledException``, ``ResourceNotReadyException``)
and 5xx retry; ``ResourceNotFoundException``, validation and access errors fail for good.
"""

from __future__ import annotations

from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import client_error_outcome, transport_outcome
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.targets import LambdaTarget, TargetConfig
from lakehook.ports.dispatch import TargetClient


class LambdaTargetClient(TargetClient):
    """Asynchronous invokes; consumers deduplicate on ``triggerKey``."""

    type_name: ClassVar[str] = "lambda"
    confirmable: ClassVar[bool] = False
    deduplicates: ClassVar[bool] = False

    def __init__(self, client: Any) -> None:
        self._client = client

    @classmethod
    def build(cls, deps: TargetDeps) -> LambdaTargetClient:
        return cls(deps.aws("lambda"))

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, LambdaTarget)
        kwargs: dict[str, Any] = {
            "FunctionName": config.function_name,
            "InvocationType": "Event",
            "Payload": invocation.body(),
        }
        if config.qualifier:
            kwargs["Qualifier"] = config.qualifier
        try:
            answer = self._client.invoke(**kwargs)
        except ClientError as exc:
            return client_error_outcome(exc, "Invoke")
        except BotoCoreError as exc:
            return transport_outcome(exc, "Invoke")
        status = int(answer.get("StatusCode", 0))
        if status != 202:
            return Outcome.retryable(f"Invoke answered {status}, not 202", f"lambda_{status}", ambiguous=True)
        request_id = answer.get("ResponseMetadata", {}).get("RequestId") or invocation.trigger_key
        return Outcome.started(f"lambda/{request_id}")

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        return None  # Lambda cannot be asked; consumers deduplicate (see the module docstring)
