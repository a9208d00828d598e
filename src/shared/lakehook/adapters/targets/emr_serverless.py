"""EMR Serverless target: ``StartJobRun`` of a Spark job on an application, idempotent by ``clientToken``.

- Start: ``StartJobRun(applicationId, executionRoleArn, jobDriver, clientToken, name)``. The Spark job's
  ``entryPointArguments`` are the rule's followed by ``--lakehook_trigger_key <key> --lakehook_payload <json>``
  (``lakehook.receiver.from_job_arguments(sys.argv)`` reads them). The run id is the ``jobRunId``.
- Idempotency: ``clientToken`` is the first 64 hex digits of SHA-256(trigger key), the same for every attempt, so
  EMR Serverless answers a repeated start with the run it started (``deduplicates``). The job run's ``name`` is
  derived from the key too (as a Step Functions execution's), and before any retry the dispatcher looks it up with
  ``ListJobRuns`` created since the claim (``confirmable``).
- Errors: throttling retries; 5xx (``InternalServerException``) and timeouts retry as ambiguous;
  ``ResourceNotFoundException`` (no such application), ``ValidationException`` (a stopped application that does
  not auto-start, a bad driver), ``ConflictException`` and access errors are FATAL.
- Run status: ``GetJobRun`` (``SUBMITTED``, ``PENDING``, ``SCHEDULED``, ``QUEUED`` are ``queued``; ``RUNNING``,
  ``CANCELLING`` are ``running``; ``SUCCESS``, ``FAILED``, ``CANCELLED`` have ended).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from lakehook.adapters.targets.aws_jobs import AwsJobTargetClient, items
from lakehook.adapters.targets.aws_runs import ask_aws, client_token, run_state_of
from lakehook.adapters.targets.glue import KEY_ARGUMENT, PAYLOAD_ARGUMENT
from lakehook.adapters.targets.stepfunctions import execution_name
from lakehook.domain.dispatch import Invocation
from lakehook.domain.targets import EmrServerlessTarget, TargetConfig
from lakehook.domain.triggers import RunState

PAGE_SIZE = 50  # ListJobRuns' largest page
MAX_PAGES = 20
CLOCK_SKEW_MS = 300_000  # how far the service's createdAt may be before the claim's clock
QUEUED = frozenset({"SUBMITTED", "PENDING", "SCHEDULED", "QUEUED"})
RUNNING = frozenset({"RUNNING", "CANCELLING"})
NOT_FOUND = ("ResourceNotFoundException",)


def job_driver(invocation: Invocation, config: EmrServerlessTarget) -> dict[str, Any]:
    """The rule's Spark job with lakehook's two argument pairs after its own arguments."""
    spark = config.job_driver.spark_submit.model_dump(by_alias=True, exclude_none=True)
    spark["entryPointArguments"] = [
        *spark.get("entryPointArguments", []),
        KEY_ARGUMENT,
        invocation.trigger_key,
        PAYLOAD_ARGUMENT,
        invocation.body().decode(),
    ]
    return {"sparkSubmit": spark}


class EmrServerlessTargetClient(AwsJobTargetClient):
    """Spark job runs on an EMR Serverless application, one per ``clientToken``."""

    type_name: ClassVar[str] = "emrserverless"
    service: ClassVar[str] = "emr-serverless"
    start_action: ClassVar[str] = "StartJobRun"
    run_id_field: ClassVar[str] = "jobRunId"
    default_max_pages: ClassVar[int] = MAX_PAGES
    payload_limit: ClassVar[int] = 10 * 1024  # an entryPointArguments item: at most 10280 characters
    deduplicates: ClassVar[bool] = True

    def _start(self, invocation: Invocation, config: TargetConfig) -> dict[str, Any]:
        assert isinstance(config, EmrServerlessTarget)
        kwargs: dict[str, Any] = {
            "applicationId": config.application_id,
            "clientToken": client_token(invocation.trigger_key),
            "executionRoleArn": config.execution_role_arn,
            "jobDriver": job_driver(invocation, config),
            "name": execution_name(invocation.trigger_key),
        }
        if config.execution_timeout_minutes is not None:
            kwargs["executionTimeoutMinutes"] = config.execution_timeout_minutes
        answer: dict[str, Any] = self._client.start_job_run(**kwargs)
        return answer

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, EmrServerlessTarget)
        name = execution_name(trigger_key)
        since = datetime.fromtimestamp((not_before_ms - CLOCK_SKEW_MS) / 1000, tz=UTC)
        request = {"applicationId": config.application_id, "createdAtAfter": since, "maxResults": PAGE_SIZE}

        def ours(run: dict[str, Any]) -> str | None:
            return str(run["id"]) if run.get("name") == name else None

        # ResourceNotFoundException: no such application, so no run of it (moto answers so for one with no run)
        return self._find_in_list("ListJobRuns", "list_job_runs", request, items("jobRuns"), ours, missing=NOT_FOUND)

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The run's ``state`` (see the module docstring); None when the application has no such run."""
        assert isinstance(config, EmrServerlessTarget)
        answer = ask_aws(
            "GetJobRun",
            lambda: self._client.get_job_run(applicationId=config.application_id, jobRunId=run_id),
            missing=NOT_FOUND,
        )
        if answer is None:
            return None
        return run_state_of("EMR Serverless", str(answer["jobRun"]["state"]), QUEUED, RUNNING)
