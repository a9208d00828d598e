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

from lakehook.adapters.targets.aws_jobs import AwsJobTargetClient, items
from lakehook.adapters.targets.aws_runs import ask_aws, run_environment, run_name, run_state_of
from lakehook.domain.dispatch import Invocation
from lakehook.domain.targets import BatchJobTarget, TargetConfig
from lakehook.domain.triggers import RunState

PAGE_SIZE = 100
MAX_PAGES = 20
QUEUED = frozenset({"SUBMITTED", "PENDING", "RUNNABLE", "STARTING"})
RUNNING = frozenset({"RUNNING"})


class BatchTargetClient(AwsJobTargetClient):
    """Container jobs on a Batch queue, confirmed by their key-derived name before any retry."""

    type_name: ClassVar[str] = "batch"
    service: ClassVar[str] = "batch"
    start_action: ClassVar[str] = "SubmitJob"
    run_id_field: ClassVar[str] = "jobId"
    default_max_pages: ClassVar[int] = MAX_PAGES
    payload_limit: ClassVar[int] = 29 * 1024  # SubmitJob: a job's payload is at most 30 KiB
    payload_quoted: ClassVar[bool] = True  # an environment variable's value in the request's JSON
    deduplicates: ClassVar[bool] = False

    def _start(self, invocation: Invocation, config: TargetConfig) -> dict[str, Any]:
        assert isinstance(config, BatchJobTarget)
        answer: dict[str, Any] = self._client.submit_job(
            jobName=run_name(invocation.trigger_key),
            jobQueue=config.job_queue,
            jobDefinition=config.job_definition,
            containerOverrides={"environment": run_environment(invocation)},
        )
        return answer

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, BatchJobTarget)
        name = run_name(trigger_key)
        request = {
            "jobQueue": config.job_queue,
            "filters": [{"name": "JOB_NAME", "values": [name]}],
            "maxResults": PAGE_SIZE,
        }

        def ours(job: dict[str, Any]) -> str | None:
            return str(job["jobId"]) if job.get("jobName") == name else None

        return self._find_in_list("ListJobs", "list_jobs", request, items("jobSummaryList"), ours)

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The job's ``status`` (see the module docstring); None when Batch has no such job."""
        answer = ask_aws("DescribeJobs", lambda: self._client.describe_jobs(jobs=[run_id])) or {}
        jobs = answer.get("jobs") or []
        return run_state_of("Batch", str(jobs[0]["status"]), QUEUED, RUNNING) if jobs else None
