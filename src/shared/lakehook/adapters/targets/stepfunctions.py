"""Step Functions target: ``StartExecution`` on a STANDARD state machine, named after the trigger key.

An execution name is unique per state machine for 90 days, which makes it the idempotency key:
``<readable part of the key>-<32 hex of SHA-256(key)>``, at most 80 characters of ``[A-Za-z0-9_-]``.

- A repeated ``StartExecution`` with the same name and input while the execution runs succeeds with the
  same ARN; with a different input (every attempt's payload carries its ``attempt``) or after it closed,
  the answer is ``ExecutionAlreadyExists``. That is confirmed with ``DescribeExecution``: the execution is
  ours when its input's hash without ``attempt`` equals ours (ALREADY_STARTED); otherwise the name is
  taken by another input (FATAL).
- Look-up before a retry: ``DescribeExecution`` of the execution ARN (``ExecutionDoesNotExist``: none).

EXPRESS state machines do not deduplicate execution names; use a STANDARD one.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import client_error_outcome, error_code, transport_outcome
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.domain.dispatch import Invocation, Outcome, TargetUnavailableError, payload_identity
from lakehook.domain.targets import StepFunctionsTarget, TargetConfig
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState
from lakehook.ports.dispatch import TargetClient

MAX_NAME = 80
HASH_CHARS = 32
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def execution_name(trigger_key: str) -> str:
    """``<key with unsafe characters as '-', cut>-<32 hex>``: distinct keys get distinct names, <= 80 chars."""
    digest = hashlib.sha256(trigger_key.encode()).hexdigest()[:HASH_CHARS]
    readable = _UNSAFE.sub("-", trigger_key)[: MAX_NAME - HASH_CHARS - 1].strip("-") or "lakehook"
    return f"{readable}-{digest}"


def execution_arn(state_machine_arn: str, name: str) -> str:
    """``arn:…:stateMachine:<sm>`` -> ``arn:…:execution:<sm>:<name>``."""
    prefix, _, machine = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{machine}:{name}"


class StepFunctionsTargetClient(TargetClient):
    """Executions of a STANDARD state machine."""

    type_name: ClassVar[str] = "stepfunctions"
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = True

    def __init__(self, client: Any) -> None:
        self._client = client

    @classmethod
    def build(cls, deps: TargetDeps) -> StepFunctionsTargetClient:
        return cls(deps.aws("stepfunctions"))

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, StepFunctionsTarget)
        name = execution_name(invocation.trigger_key)
        try:
            answer = self._client.start_execution(
                stateMachineArn=config.state_machine_arn, name=name, input=invocation.body().decode()
            )
        except ClientError as exc:
            if error_code(exc) == "ExecutionAlreadyExists":
                return self._confirm(invocation, config, name)
            return client_error_outcome(exc, "StartExecution")
        except BotoCoreError as exc:
            return transport_outcome(exc, "StartExecution")
        return Outcome.started(str(answer["executionArn"]))

    def _confirm(self, invocation: Invocation, config: StepFunctionsTarget, name: str) -> Outcome:
        try:
            found = self._describe(config, name)
        except TargetUnavailableError as exc:
            return Outcome.retryable(
                f"ExecutionAlreadyExists, and it could not be described: {exc}", "confirm_unavailable"
            )
        if found is None:
            return Outcome.retryable("ExecutionAlreadyExists, but it is not visible yet", "confirm_unavailable")
        arn, payload = found
        if payload is None or payload_identity(payload) != invocation.identity():
            return Outcome.fatal(f"execution {name!r} exists with another input", "execution_name_taken")
        return Outcome.already_started(arn)

    def _describe(self, config: StepFunctionsTarget, name: str) -> tuple[str, dict[str, Any] | None] | None:
        """(execution ARN, its input when it is a JSON object), or None when there is no such execution."""
        answer = self._execution(execution_arn(config.state_machine_arn, name))
        if answer is None:
            return None
        try:
            payload = json.loads(answer.get("input") or "null")
        except ValueError:
            payload = None
        return str(answer["executionArn"]), payload if isinstance(payload, dict) else None

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The execution's status as ``DescribeExecution`` answers it, in lower case (``running`` while it runs;
        ``succeeded``, ``failed``, ``timed_out``, ``aborted`` once it ended): a rule's ``maxInFlight`` frees the
        slot of an execution that ended without reporting it (docs/targets.md)."""
        answer = self._execution(run_id)
        return None if answer is None else RunState(state=str(answer["status"]).lower(), checked_at=now_ms())

    def _execution(self, arn: str) -> dict[str, Any] | None:
        """``DescribeExecution`` of ``arn``, or None when there is no such execution."""
        try:
            answer: dict[str, Any] = self._client.describe_execution(executionArn=arn)
        except ClientError as exc:
            if error_code(exc) == "ExecutionDoesNotExist":
                return None
            raise TargetUnavailableError(f"DescribeExecution: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise TargetUnavailableError(f"DescribeExecution: {type(exc).__name__}") from exc
        return answer

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, StepFunctionsTarget)
        found = self._describe(config, execution_name(trigger_key))
        if found is None:
            return None
        arn, payload = found
        # Only an execution whose input names this key is ours; another one makes start answer FATAL.
        return arn if payload is not None and payload.get("triggerKey") == trigger_key else None
