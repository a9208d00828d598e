"""Amazon ECS target: ``RunTask`` of one task, idempotent by ``clientToken``, the key and the payload as
environment overrides of the rule's container.

- Start: ``RunTask(cluster, taskDefinition, count=1, clientToken, startedBy, launchType, networkConfiguration,
  overrides.containerOverrides=[{name: containerName, environment: [LAKEHOOK_TRIGGER_KEY, LAKEHOOK_PAYLOAD]}])``
  (``lakehook.receiver.from_environment(os.environ)`` reads them). The run id is the task's ARN. ECS answers 200
  with no task and ``failures`` when it could not place one (no capacity, say): nothing started, RETRYABLE.
- Idempotency: ``clientToken`` is 64 hex digits of SHA-256(key), the same for every attempt (``deduplicates``);
  ``startedBy`` is ``lakehook-<execution name of the key>``, and before any retry the dispatcher looks for a task
  of the cluster started by it (``ListTasks``, desired status ``RUNNING``, then ``STOPPED``; ECS lists a stopped
  task for at least an hour).
- Errors: throttling retries; ``ServerException`` (5xx) and timeouts retry as ambiguous; ``ClientException``,
  ``InvalidParameterException`` (overrides above 8 KiB among them), ``ClusterNotFoundException``, access errors are
  FATAL.
- Run status: ``DescribeTasks``' ``lastStatus`` (``PROVISIONING``, ``PENDING``, ``ACTIVATING`` are ``queued``;
  ``RUNNING``, ``DEACTIVATING``, ``STOPPING``, ``DEPROVISIONING`` are ``running``; ``STOPPED`` has ended).
"""

from __future__ import annotations

from typing import Any, ClassVar

from lakehook.adapters.targets.aws_jobs import AwsJobTargetClient
from lakehook.adapters.targets.aws_runs import ask_aws, client_token, run_environment, run_name, run_state_of
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.targets import EcsTaskTarget, TargetConfig
from lakehook.domain.triggers import RunState

PAGE_SIZE = 100  # ListTasks' largest page
MAX_PAGES = 5
QUEUED = frozenset({"PROVISIONING", "PENDING", "ACTIVATING"})
RUNNING = frozenset({"RUNNING", "DEACTIVATING", "STOPPING", "DEPROVISIONING"})


def run_task_request(invocation: Invocation, config: EcsTaskTarget) -> dict[str, Any]:
    """The ``RunTask`` request of one attempt (the same but for the payload's ``attempt`` on every attempt)."""
    request: dict[str, Any] = {
        "cluster": config.cluster,
        "taskDefinition": config.task_definition,
        "count": 1,
        "clientToken": client_token(invocation.trigger_key),
        "startedBy": run_name(invocation.trigger_key),
        "overrides": {
            "containerOverrides": [{"name": config.container_name, "environment": run_environment(invocation)}]
        },
    }
    if config.launch_type is not None:
        request["launchType"] = config.launch_type
    if config.network_configuration is not None:
        request["networkConfiguration"] = config.network_configuration.model_dump(by_alias=True, exclude_none=True)
    return request


class EcsTargetClient(AwsJobTargetClient):
    """One ECS task per trigger key."""

    type_name: ClassVar[str] = "ecs"
    service: ClassVar[str] = "ecs"
    start_action: ClassVar[str] = "RunTask"
    default_max_pages: ClassVar[int] = MAX_PAGES
    payload_limit: ClassVar[int] = 7 * 1024  # RunTask overrides: 8 KiB in all, the key and names included
    payload_quoted: ClassVar[bool] = True  # an environment variable's value in the request's JSON
    deduplicates: ClassVar[bool] = True

    def _start(self, invocation: Invocation, config: TargetConfig) -> dict[str, Any]:
        assert isinstance(config, EcsTaskTarget)
        answer: dict[str, Any] = self._client.run_task(**run_task_request(invocation, config))
        return answer

    def _started(self, answer: dict[str, Any]) -> Outcome:
        """The task's ARN; no task (ECS could not place one) is RETRYABLE ``ecs_not_placed``."""
        tasks = answer.get("tasks") or []
        if not tasks:
            failures = "; ".join(
                f"{f.get('reason')} {f.get('detail') or ''}".strip() for f in answer.get("failures", [])
            )
            return Outcome.retryable(f"RunTask placed no task: {failures or 'no reason given'}"[:500], "ecs_not_placed")
        return Outcome.started(str(tasks[0]["taskArn"]))

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, EcsTaskTarget)
        for desired in ("RUNNING", "STOPPED"):
            request = {
                "cluster": config.cluster,
                "startedBy": run_name(trigger_key),
                "desiredStatus": desired,
                "maxResults": PAGE_SIZE,
            }
            found = self._find_in_list("ListTasks", "list_tasks", request, _tasks, _arn)
            if found is not None:
                return found
        return None

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The task's ``lastStatus`` (see the module docstring); None when ECS has no such task."""
        assert isinstance(config, EcsTaskTarget)
        answer = ask_aws("DescribeTasks", lambda: self._client.describe_tasks(cluster=config.cluster, tasks=[run_id]))
        tasks = (answer or {}).get("tasks") or []
        return run_state_of("ECS", str(tasks[0]["lastStatus"]), QUEUED, RUNNING) if tasks else None


def _tasks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """``ListTasks`` answers task ARNs."""
    return [{"taskArn": arn} for arn in answer.get("taskArns", [])]


def _arn(task: dict[str, Any]) -> str | None:
    """Every task ``ListTasks`` answers for the key's ``startedBy`` is the key's."""
    return str(task["taskArn"])
