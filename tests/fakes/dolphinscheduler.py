"""A fake DolphinScheduler API server, 3.2 or 3.3: starting workflow instances and listing them.

Each answer is the one the real server gives, read from its source at github.com/apache/dolphinscheduler:
3.2 is tag 3.2.2 (212af27cb757fccbe617c6ba4495ac96c757d0b1), 3.3 is branch dev
(7e0095dca198bfc50c59bbc10b3be5617d7b3229), both under ``dolphinscheduler-api/src/main/java/org/apache/
dolphinscheduler/api/``. The line cited beside each answer is where that answer comes from.

- Every call needs the ``token`` header of an access token: HTTP 401 with no body otherwise
  (``interceptor/LoginHandlerInterceptor.java`` lines 74, 81, 89: the interceptor runs before any handler,
  a missing path included).
- A path with no handler (3.3's start path on a 3.2 server, and the other way) is Spring Boot's HTTP 404
  with its error attributes as JSON.
- 3.2: ``POST .../executors/start-process-instance`` (``processDefinitionCode``); 3.3:
  ``POST .../executors/start-workflow-instance`` (``workflowDefinitionCode``). Every refusal is HTTP 200
  with a ``Result`` body (``utils/Result.java``: ``code``, ``msg``, ``data``, and ``success`` / ``failed``
  from its ``isSuccess()`` / ``isFailed()``). A 3.2 start only queues a *command*: :meth:`run_master` turns
  queued commands into instances, as the master does asynchronously; a 3.3 start answers the new instance's
  id, the master having made it (``executor/workflow/TriggerWorkflowExecutorDelegate.java`` line 55).
- ``GET .../process-instances?processDefineCode=`` (3.2) / ``.../workflow-instances?workflowDefinitionCode=``
  (3.3), with ``startDate``, ``pageNo``, ``pageSize`` -> ``data.totalList`` (newest first, ``totalPage``);
  with ``list_params=False`` the list leaves out ``commandParam``/``globalParams``.
- ``GET .../process-instances/{id}`` / ``.../workflow-instances/{id}`` -> the instance, with ``commandParam``
  (``{"StartParams": "<json>"}``) and ``globalParams`` (a JSON list of ``{prop, direct, type, value}``), and its
  ``state``: a ``WorkflowExecutionStatus`` name (``RUNNING_EXECUTION`` once the master made it;
  :meth:`set_state` moves it, as the master does: ``SUCCESS``, ``FAILURE``, ``STOP``, ``PAUSE``, ``WAIT_TO_RUN`` …);
  an unknown id is code 50001.

DolphinScheduler has no idempotency key: two starts are two instances; ``runs`` counts them per
``lakehook_trigger_key``. ``offline`` holds definition codes that are not online; ``masters`` is whether a
master is registered. ``script`` queues faults for the next starts: ``"500"`` (a gateway's HTTP 500 before
the server), ``"slow-after"`` (the start is done, the answer late), ``"db-error"`` (the command insert wrote
nothing: 3.2's START_PROCESS_INSTANCE_ERROR).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.fakes.http_server import FakeServer, Handler, Request, Response

PREFIX = "/dolphinscheduler/projects/{projectCode}"
START_ERROR = 50014  # Status.START_PROCESS_INSTANCE_ERROR (3.2.2 line 353) / START_WORKFLOW_INSTANCE_ERROR (dev 348)


def result(code: int, msg: str, data: Any = None) -> Response:
    """A ``Result`` as the controller answers it: always HTTP 200 (``@ResponseStatus(HttpStatus.OK)``)."""
    return Response(200, {"code": code, "msg": msg, "data": data, "success": code == 0, "failed": code != 0})


class FakeDolphinScheduler(FakeServer):
    def __init__(
        self,
        token: str,
        definitions: dict[int, set[int]],
        list_params: bool = True,
        slow_seconds: float = 1.0,
        version: str = "3.2",
    ) -> None:
        super().__init__()
        assert version in ("3.2", "3.3")
        self.token = token
        self.definitions = definitions  # project code -> workflow definition codes
        self.list_params = list_params
        self.slow_seconds = slow_seconds
        self.version = version
        self.offline: set[int] = set()
        self.masters = True
        self.commands: list[dict[str, Any]] = []
        self.instances: list[dict[str, Any]] = []
        self.script: list[str] = []
        self.now: Callable[[], datetime] = lambda: datetime.now(tz=UTC)

    @property
    def instances_path(self) -> str:
        return "workflow-instances" if self.version == "3.3" else "process-instances"

    def routes(self) -> dict[tuple[str, str], Handler]:
        start = "start-workflow-instance" if self.version == "3.3" else "start-process-instance"
        return {
            ("POST", f"{PREFIX}/executors/{start}"): self.start,
            ("GET", f"{PREFIX}/{self.instances_path}"): self.list_instances,
            ("GET", f"{PREFIX}/{self.instances_path}/{{id}}"): self.get_instance,
        }

    def dispatch(self, request: Request) -> Response:
        denied = self._denied(request)  # the login interceptor (pattern /**/*) runs before the 404
        if denied:
            return denied
        answer = super().dispatch(request)
        if answer.status == 404 and answer.body == {"detail": "Not Found"}:  # no handler: Spring Boot's /error
            stamp = self.now().strftime("%Y-%m-%dT%H:%M:%S.000+00:00")
            return Response(404, {"timestamp": stamp, "status": 404, "error": "Not Found", "path": request.path})
        return answer

    @property
    def runs(self) -> Counter[str]:
        """Instances and queued commands per trigger key: every start that will become a run."""
        with self.lock:
            everything = [*self.instances, *self.commands]
            return Counter(json.loads(i["startParams"]).get("lakehook_trigger_key", "") for i in everything)

    def run_master(self) -> None:
        """Turn queued commands into workflow instances."""
        with self.lock:
            for command in self.commands:
                self._instance(command)
            self.commands.clear()

    def set_state(self, instance_id: int, state: str) -> None:
        """Move an instance to a ``WorkflowExecutionStatus`` (the master's doing on a real server)."""
        with self.lock:
            found = next(i for i in self.instances if i["id"] == instance_id)
            found["state"] = state
            if state in ("SUCCESS", "FAILURE", "STOP", "PAUSE"):
                found["endTime"] = self.now().strftime("%Y-%m-%d %H:%M:%S")

    def _instance(self, command: dict[str, Any]) -> int:
        instance_id = len(self.instances) + 1
        params = json.loads(command["startParams"])
        self.instances.append(
            {
                "id": instance_id,
                "name": f"dwd-{instance_id}-{command['time'].strftime('%Y%m%d%H%M%S%f')[:17]}",
                ("workflowDefinitionCode" if self.version == "3.3" else "processDefinitionCode"): command["code"],
                "projectCode": command["project"],
                "state": "RUNNING_EXECUTION",
                "commandType": "START_PROCESS",
                "startTime": command["time"].strftime("%Y-%m-%d %H:%M:%S"),
                "commandParam": json.dumps({"StartParams": json.dumps(params)}),
                "globalParams": json.dumps(
                    [{"prop": k, "direct": "IN", "type": "VARCHAR", "value": v} for k, v in params.items()]
                ),
                "startParams": command["startParams"],
                "definition": command["code"],
            }
        )
        return instance_id

    def _denied(self, request: Request) -> Response | None:
        # LoginHandlerInterceptor.java lines 70-91: no token, or an unknown one -> 401, no body
        return None if request.headers.get("token") == self.token else Response(401, None)

    def _required(self, form: dict[str, str]) -> str | None:
        definition = "workflowDefinitionCode" if self.version == "3.3" else "processDefinitionCode"
        # 3.2.2 ExecutorController lines 140-146 / dev lines 135-141: @RequestParam without required=false
        for name in (definition, "scheduleTime", "failureStrategy", "warningType"):
            if name not in form:
                return name
        return None

    def _project_of(self, code: int) -> int | None:
        return next((project for project, codes in self.definitions.items() if code in codes), None)

    def start(self, request: Request) -> Response:
        form = request.form()
        missing = self._required(form)
        if missing:
            # MissingServletRequestParameterException reaches ApiExceptionHandler's Throwable handler with the
            # method's @ApiException: 3.2.2 ApiExceptionHandler line 52 (Result.error(st): the status's msg
            # only), dev line 52 (msg + ":" + the exception's message)
            if self.version == "3.2":
                return result(START_ERROR, "start process instance error")
            detail = f"Required request parameter '{missing}' for method parameter type long is not present"
            return result(START_ERROR, f"start workflow instance error:{detail}")
        project = int(request.query["projectCode"])
        code = int(form["workflowDefinitionCode" if self.version == "3.3" else "processDefinitionCode"])
        params = form.get("startParams") or "{}"
        json.loads(params)  # a malformed startParams is an exception in JSONUtils.toMap: answered 50014 too
        with self.lock:
            action = self.script.pop(0) if self.script else None
            if action == "500":
                return Response(500, {"code": 10000, "msg": "Internal Server Error"})
            refused = self._refusal(project, code, action)
            if refused is not None:
                return refused
            command = {"project": project, "code": code, "time": self.now(), "startParams": params}
            if self.version == "3.3":
                data: Any = [self._instance(command)]  # dev ExecutorController lines 174-175: [workflowInstanceId]
            else:
                data = 9_000_000 + len(self.commands) + len(self.instances)  # 3.2.2 line 281: the trigger code
                self.commands.append(command)
        delay = self.slow_seconds if action == "slow-after" else 0.0
        answer = result(0, "success", data)
        return Response(answer.status, answer.body, delay=delay)

    def _refusal(self, project: int, code: int, action: str | None) -> Response | None:
        owner = self._project_of(code)
        if self.version == "3.3":
            if owner is None:  # dev TriggerWorkflowRequestTransformer line 63: ServiceException(String) -> 10000
                return result(10000, f"Internal Server Error: Cannot find the workflow: {code}")
            if not self.masters:  # dev TriggerWorkflowExecutorDelegate line 46
                return result(10000, "Internal Server Error: no master server available")
            return None
        if owner is None:  # 3.2.2 ExecutorServiceImpl line 255: processDefinition.getVersion() on null -> NPE
            return result(START_ERROR, "start process instance error")
        if owner != project:  # 3.2.2 ExecutorServiceImpl line 328 (the project check's answer is ignored, l. 229)
            return result(50003, f"process definition {code} does not exist")
        if code in self.offline:  # 3.2.2 ExecutorServiceImpl line 333
            return result(50004, f"process definition {code} process version 1 not online")
        if not self.masters:  # 3.2.2 ExecutorServiceImpl line 297
            return result(10025, "master does not exist")
        if action == "db-error":  # 3.2.2 ExecutorServiceImpl line 286: the command insert wrote nothing
            return result(START_ERROR, "start process instance error")
        return None

    def list_instances(self, request: Request) -> Response:
        project = int(request.query["projectCode"])
        if project not in self.definitions:  # ProjectServiceImpl.checkProjectAndAuthThrowException (3.2.2 l. 235)
            return result(10190, "This project was not found. Please refresh page.")
        param = "workflowDefinitionCode" if self.version == "3.3" else "processDefineCode"
        code = int(request.query.get(param) or 0)
        page, size = int(request.query["pageNo"]), int(request.query["pageSize"])
        since = request.query.get("startDate")
        with self.lock:
            found = [
                i
                for i in reversed(self.instances)
                if i["projectCode"] == project
                and (not code or i["definition"] == code)
                and (not since or i["startTime"] >= since)
            ]
        chunk = found[(page - 1) * size : page * size]
        shown = [self._shown(i, self.list_params) for i in chunk]
        pages = max(1, -(-len(found) // size))
        data = {
            "totalList": shown,
            "total": len(found),
            "totalPage": pages,
            "pageSize": size,
            "currentPage": page,
            "pageNo": page,
        }
        return result(0, "success", data)

    def get_instance(self, request: Request) -> Response:
        wanted = int(request.query["id"])
        with self.lock:
            found = next((i for i in self.instances if i["id"] == wanted), None)
        if found is None:
            # 3.2.2 ProcessInstanceServiceImpl line 254 / dev WorkflowInstanceServiceImpl line 241
            kind = "workflow" if self.version == "3.3" else "process"
            return result(50001, f"{kind} instance {wanted} does not exist")
        return result(0, "success", self._shown(found, True))

    @staticmethod
    def _shown(instance: dict[str, Any], with_params: bool) -> dict[str, Any]:
        hidden = {"startParams", "projectCode", "definition"} | (
            set() if with_params else {"commandParam", "globalParams"}
        )
        return {k: v for k, v in instance.items() if k not in hidden}
