"""AWS Batch target: ``SubmitJob`` of a container job, the key and the payload in its container's environment.

- Start: ``SubmitJob(jobName, jobQueue, jobDefinition, containerOverrides.environment)`` with
  ``LAKEHOOK_TRIGGER_KEY`` and ``LAKEHOOK_PAYLOAD`` (the payload as JSON; ``lakehook.receiver.from_environment``
  reads it). The job name is ``lakehook-`` and the Step Functions execution name of the key (distinct keys, distinct
  names, at most 89 characters of ``[A-Za-z0-9_-]``). The run id is the ``jobId``.
- Idempotency: Batch has none (no token; names need not be unique), so this plug-in is ``confirmable`` but does not
  ``deduplicate``: before any retry the dispatcher calls ``ListJobs`` of the queue filtered by that job name (with a
  filter Batch lists jobs of every status), up to ``MAX_PAGES`` pages; more cannot be confirmed and the retry waits.
- Errors: throttling retries; ``ServerException`` (5xx) and timeouts retry as ambiguous; ``ClientException`` (no
  such queue or definition, a bad override) and access errors are FATAL.
- Run status: ``DescribeJobs`` (``SUBMITTED``, ``PENDING``, ``RUNNABLE``, ``STARTING`` are ``queued``; ``RUNNING`` is
  ``running``; ``SUCCEEDED``, ``FAILED`` have ended).
"""

from __future__ import annotations

from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import client_error_outcome, transport_outcome
from lakehook.adapters.targets.aws_runs import (
    LazyClient,
    ask_aws,
    find_in_pages,
    run_environment,
    run_name,
    run_state_of,
)
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.targets import BatchJobTarget, TargetConfig
from lakehook.domain.triggers import RunState
from lakehook.ports.dispatch import TargetClient

PAGE_SIZE = 100
MAX_PAGES = 20
QUEUED = frozenset({"SUBMITTED", "PENDING", "RUNNABLE", "STARTING"})
RUNNING = frozenset({"RUNNING"})


class BatchTargetClient(TargetClient):
    """Container jobs on a Batch queue, confirmed by their key-derived name before any retry."""

    type_name: ClassVar[str] = "batch"
    payload_limit: ClassVar[int] = 29 * 1024  # SubmitJob: a job's payload is at most 30 KiB
    payload_quoted: ClassVar[bool] = True  # an environment variable's value in the request's JSON
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = False

    def __init__(self, client: Any, max_pages: int = MAX_PAGES) -> None:
        self._client = client
        self._max_pages = max_pages

    @classmethod
    def build(cls, deps: TargetDeps) -> BatchTargetClient:
        return cls(LazyClient(lambda: deps.aws("batch")))

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, BatchJobTarget)
        try:
            answer = self._client.submit_job(
                jobName=run_name(invocation.trigger_key),
                jobQueue=config.job_queue,
                jobDefinition=config.job_definition,
                containerOverrides={"environment": run_environment(invocation)},
            )
        except ClientError as exc:
            return client_error_outcome(exc, "SubmitJob")
        except BotoCoreError as exc:
            return transport_outcome(exc, "SubmitJob")
        return Outcome.started(str(answer["jobId"]))

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, BatchJobTarget)
        name = run_name(trigger_key)

        def page(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
            kwargs: dict[str, Any] = {
                "jobQueue": config.job_queue,
                "filters": [{"name": "JOB_NAME", "values": [name]}],
                "maxResults": PAGE_SIZE,
            }
            if token:
                kwargs["nextToken"] = token
            answer = ask_aws("ListJobs", lambda: self._client.list_jobs(**kwargs)) or {}
            return list(answer.get("jobSummaryList", [])), answer.get("nextToken")

        def ours(job: dict[str, Any]) -> str | None:
            return str(job["jobId"]) if job.get("jobName") == name else None

        return find_in_pages("ListJobs", page, ours, self._max_pages)

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The job's ``status`` (see the module docstring); None when Batch has no such job."""
        answer = ask_aws("DescribeJobs", lambda: self._client.describe_jobs(jobs=[run_id])) or {}
        jobs = answer.get("jobs") or []
        return run_state_of("Batch", str(jobs[0]["status"]), QUEUED, RUNNING) if jobs else None
