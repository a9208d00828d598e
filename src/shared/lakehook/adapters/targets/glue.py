"""AWS Glue target: ``StartJobRun`` of a job, the key and the payload as job arguments.

- Start: ``StartJobRun(JobName, Arguments)`` with the rule's ``arguments`` and two of lakehook's:
  ``--lakehook_trigger_key`` (the trigger key) and ``--lakehook_payload`` (the invocation payload as JSON). A
  Glue script reads them with ``getResolvedOptions(sys.argv, ["lakehook_trigger_key", "lakehook_payload"])``.
  The run id is the ``JobRunId``.
- Idempotency: Glue has none (no token, run ids are Glue's), so this plug-in is ``confirmable`` but does not
  ``deduplicate``: before any retry the dispatcher calls :meth:`GlueTargetClient.find_run`, which pages through
  ``GetJobRuns`` of the job for a run whose ``--lakehook_trigger_key`` argument is the key. It looks at most
  ``MAX_PAGES`` pages of 200 runs; a job with more runs than that cannot be confirmed, and the retry waits
  (RETRYABLE ``confirm_unavailable``) rather than risk a second run.
- Errors: ``ConcurrentRunsExceededException`` (the job's ``MaxConcurrentRuns`` reached) and throttling retry,
  not ambiguous; 5xx and read timeouts retry, ambiguous (confirmed before the re-send);
  ``EntityNotFoundException`` (no such job), validation and access errors are FATAL.
- Run status: ``GetJobRun`` (``STARTING``, ``WAITING`` are ``queued``; ``RUNNING``, ``STOPPING`` are ``running``;
  ``SUCCEEDED``, ``FAILED``, ``STOPPED``, ``TIMEOUT``, ``ERROR``, ``EXPIRED`` have ended).
"""

from __future__ import annotations

from typing import Any, ClassVar

from lakehook.adapters.targets.aws_jobs import AwsJobTargetClient, items
from lakehook.adapters.targets.aws_runs import ask_aws, run_state_of
from lakehook.domain.dispatch import Invocation
from lakehook.domain.targets import GlueJobTarget, TargetConfig
from lakehook.domain.triggers import RunState

KEY_ARGUMENT = "--lakehook_trigger_key"
PAYLOAD_ARGUMENT = "--lakehook_payload"
PAGE_SIZE = 200  # GetJobRuns' largest page
MAX_PAGES = 10
BUSY = frozenset({"ConcurrentRunsExceededException"})
QUEUED = frozenset({"STARTING", "WAITING"})
RUNNING = frozenset({"RUNNING", "STOPPING"})


def job_arguments(invocation: Invocation, config: GlueJobTarget) -> dict[str, str]:
    """The run's arguments: the rule's, then lakehook's key and payload (which the rule's cannot name)."""
    return {
        **(config.arguments or {}),
        KEY_ARGUMENT: invocation.trigger_key,
        PAYLOAD_ARGUMENT: invocation.body().decode(),
    }


class GlueTargetClient(AwsJobTargetClient):
    """Runs of a Glue job, confirmed by their ``--lakehook_trigger_key`` argument before any retry."""

    type_name: ClassVar[str] = "glue"
    service: ClassVar[str] = "glue"
    start_action: ClassVar[str] = "StartJobRun"
    run_id_field: ClassVar[str] = "JobRunId"
    busy: ClassVar[frozenset[str]] = BUSY
    default_max_pages: ClassVar[int] = MAX_PAGES
    deduplicates: ClassVar[bool] = False

    def _start(self, invocation: Invocation, config: TargetConfig) -> dict[str, Any]:
        assert isinstance(config, GlueJobTarget)
        answer: dict[str, Any] = self._client.start_job_run(
            JobName=config.job_name, Arguments=job_arguments(invocation, config)
        )
        return answer

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, GlueJobTarget)

        def ours(run: dict[str, Any]) -> str | None:
            return str(run["Id"]) if (run.get("Arguments") or {}).get(KEY_ARGUMENT) == trigger_key else None

        request = {"JobName": config.job_name, "MaxResults": PAGE_SIZE}
        return self._find_in_list("GetJobRuns", "get_job_runs", request, items("JobRuns"), ours, token_name="NextToken")

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The run's ``JobRunState`` (see the module docstring); None when Glue has no such run."""
        assert isinstance(config, GlueJobTarget)
        answer = ask_aws(
            "GetJobRun",
            lambda: self._client.get_job_run(JobName=config.job_name, RunId=run_id),
            missing=("EntityNotFoundException",),
        )
        if answer is None:
            return None
        return run_state_of("Glue", str(answer["JobRun"]["JobRunState"]), QUEUED, RUNNING)
