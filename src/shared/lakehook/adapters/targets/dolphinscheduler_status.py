"""DolphinScheduler's result codes of a workflow start, as retryable or permanent, and its instance states, as
waiting or ended, read from its source.

Read at github.com/apache/dolphinscheduler: tag 3.2.2 (212af27cb757fccbe617c6ba4495ac96c757d0b1) for
``start-process-instance`` and branch dev (7e0095dca198bfc50c59bbc10b3be5617d7b3229, 2024-10-18, what 3.3
released from) for ``start-workflow-instance``; the codes are ``dolphinscheduler-api/.../api/enums/Status.java``
of both (the same numbers; 3.3 renamed PROCESS_* to WORKFLOW_*).

How a start fails there. Every answer of the controller is HTTP 200 with a ``Result`` body
(``{"code", "msg", "data"}``): ``ApiExceptionHandler`` turns a ``ServiceException`` into its own code and
any other exception (a missing or unparsable request parameter, a null definition, a database error) into
the code of the method's ``@ApiException``, START_PROCESS_INSTANCE_ERROR / START_WORKFLOW_INSTANCE_ERROR
(50014). Only the login interceptor answers otherwise (HTTP 401, no body), and an unmapped path is Spring's
HTTP 404.

- 3.2.2 ``ExecutorServiceImpl.execProcessInstance`` (lines 215-288): TASK_TIMEOUT_PARAMS_ERROR,
  TASK_PARALLELISM_PARAMS_ERROR, TENANT_NOT_EXIST, PROCESS_DEFINE_NOT_EXIST (the definition is in another
  project, line 328), PROCESS_DEFINE_NOT_RELEASE / SUB_PROCESS_DEFINE_NOT_RELEASE (50004, offline),
  START_NODE_NOT_EXIST_IN_LAST_PROCESS, SCHEDULE_TIME_NUMBER_EXCEED, MASTER_NOT_EXISTS (10025, line 297:
  checked before the command is created), and START_PROCESS_INSTANCE_ERROR when the command insert wrote
  nothing (line 286) or from any exception: an unknown definition code is a NullPointerException at line
  255, answered 50014 "start process instance error" with no detail. The project check's answer is ignored
  there (line 229), so an unknown project shows as 50003 or 50014.
- dev ``ExecutorController.triggerWorkflowDefinition`` (lines 130-175): an unknown definition is
  ``ServiceException("Cannot find the workflow: <code>")`` (``TriggerWorkflowRequestTransformer`` line 63),
  and no master / the master's refusal are ``ServiceException("no master server available")`` /
  ``("Trigger workflow failed: …")`` (``TriggerWorkflowExecutorDelegate`` lines 46, 53): all three
  INTERNAL_SERVER_ERROR_ARGS (10000, "Internal Server Error: {0}"), told apart by the message only.

So: a code that means the configuration or the definition is wrong is permanent; a missing master is
retryable and nothing was started; 50014 is retryable and *ambiguous* (it also covers a database failure
after the command was written), so the dispatcher looks for the instance before starting again. A code not
listed is permanent: DolphinScheduler has no idempotency key, and a retry of an unknown refusal could
start a second run.
The states of a workflow (process) instance, ``GET .../workflow-instances/{id}`` (3.3) or
``.../process-instances/{id}`` (3.2) -> ``data.state``: ``WorkflowExecutionStatus``
(``dolphinscheduler-common/.../common/enums/WorkflowExecutionStatus.java``), serialised by its name. Both versions:
SUBMITTED_SUCCESS, RUNNING_EXECUTION, READY_PAUSE, PAUSE, READY_STOP, STOP, FAILURE, SUCCESS, SERIAL_WAIT,
WAIT_TO_RUN; 3.2 also DELAY_EXECUTION, READY_BLOCK, BLOCK; dev also FAILOVER. ``isFinished()`` is SUCCESS, FAILURE,
STOP or PAUSE (a paused instance can be resumed, but DolphinScheduler counts it finished, and so does lakehook);
an instance in any other state, or one this client does not know, has not ended. An unknown instance id is
PROCESS_INSTANCE_NOT_EXIST / WORKFLOW_INSTANCE_NOT_EXIST (50001: 3.2.2 ProcessInstanceServiceImpl line 254, dev
WorkflowInstanceServiceImpl line 241).
"""

from __future__ import annotations

from dataclasses import dataclass

INTERNAL_SERVER_ERROR_ARGS = 10000
START_INSTANCE_ERROR = 50014  # START_PROCESS_INSTANCE_ERROR (3.2) / START_WORKFLOW_INSTANCE_ERROR (3.3)
UNKNOWN_WORKFLOW_MESSAGE = "Cannot find the workflow"  # dev TriggerWorkflowRequestTransformer line 63

RETRYABLE: dict[int, str] = {
    10025: "MASTER_NOT_EXISTS: no master is registered (checked before the command is written)",
}
AMBIGUOUS: dict[int, str] = {
    START_INSTANCE_ERROR: "START_PROCESS_INSTANCE_ERROR / START_WORKFLOW_INSTANCE_ERROR: an unexpected failure "
    "of the start, possibly after the command was written",
}
PERMANENT: dict[int, str] = {
    10001: "REQUEST_PARAMS_NOT_VALID_ERROR",
    10002: "TASK_TIMEOUT_PARAMS_ERROR",
    10010: "USER_NOT_EXIST",
    10017: "TENANT_NOT_EXIST",
    10018: "PROJECT_NOT_FOUND",
    10043: "USER_LOGIN_FAILURE",
    10181: "CURRENT_LOGIN_USER_TENANT_NOT_EXIST",
    10190: "PROJECT_NOT_EXIST",
    10207: "START_NODE_NOT_EXIST_IN_LAST_PROCESS",
    30001: "USER_NO_OPERATION_PERM",
    30002: "USER_NO_OPERATION_PROJECT_PERM",
    50003: "PROCESS_DEFINE_NOT_EXIST / WORKFLOW_DEFINITION_NOT_EXIST",
    50004: "PROCESS_DEFINE_NOT_RELEASE / WORKFLOW_DEFINITION_NOT_RELEASE: the definition is offline",
    50080: "TASK_PARALLELISM_PARAMS_ERROR",
    1400003: "SCHEDULE_TIME_NUMBER_EXCEED",
}


@dataclass(frozen=True)
class StartRefusal:
    """What a non-zero result code of a start means for the dispatcher."""

    retryable: bool
    ambiguous: bool
    meaning: str


def classify_start_code(code: object, message: str) -> StartRefusal:
    """The meaning of a start's non-zero ``code`` (with its ``msg``, which alone tells 3.3's 10000s apart)."""
    if not isinstance(code, int) or isinstance(code, bool):
        return StartRefusal(False, False, "not a DolphinScheduler result code")
    if code == INTERNAL_SERVER_ERROR_ARGS:
        if UNKNOWN_WORKFLOW_MESSAGE in message:
            return StartRefusal(False, False, "INTERNAL_SERVER_ERROR_ARGS: the workflow definition does not exist")
        return StartRefusal(True, False, "INTERNAL_SERVER_ERROR_ARGS: no master, or the master refused the trigger")
    if code in RETRYABLE:
        return StartRefusal(True, False, RETRYABLE[code])
    if code in AMBIGUOUS:
        return StartRefusal(True, True, AMBIGUOUS[code])
    return StartRefusal(False, False, PERMANENT.get(code, "a code this client does not know: not retried"))


INSTANCE_NOT_EXIST = 50001  # PROCESS_INSTANCE_NOT_EXIST (3.2) / WORKFLOW_INSTANCE_NOT_EXIST (3.3)
FINISHED_STATES = frozenset({"SUCCESS", "FAILURE", "STOP", "PAUSE"})  # WorkflowExecutionStatus.isFinished()
# not started yet: submitted, waiting behind a serial workflow, for a worker, or delayed (3.2)
QUEUED_STATES = frozenset({"SUBMITTED_SUCCESS", "SERIAL_WAIT", "WAIT_TO_RUN", "DELAY_EXECUTION"})


def run_state_word(state: str) -> str:
    """A DolphinScheduler instance state in lakehook's run-state words (``domain.triggers.RunState``): ``queued`` or
    ``running`` while it has not ended (any state this client does not know included: it keeps its run slot), else
    the finished state in lower case (``success``, ``failure``, ``stop``, ``pause``)."""
    if state in FINISHED_STATES:
        return state.lower()
    return "queued" if state in QUEUED_STATES else "running"
