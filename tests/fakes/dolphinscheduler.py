"""A fake DolphinScheduler API server (3.x): starting process instances and listing them.

- Every call needs the ``token`` header of an access token (HTTP 401 otherwise, as the login interceptor does).
- ``POST /dolphinscheduler/projects/{projectCode}/executors/start-process-instance`` (form fields;
  ``processDefinitionCode``, ``scheduleTime``, ``failureStrategy`` and ``warningType`` are required: HTTP 400
  without): ``{"code": 0, "msg": "success", "data": <trigger code>}``; an unknown project or definition is
  HTTP 200 with ``code`` 10018 / 50003. A start only queues a *command*: :meth:`run_master` turns queued
  commands into process instances, as the master does asynchronously.
- ``GET .../process-instances?processDefineCode=&startDate=&pageNo=&pageSize=`` -> ``data.totalList`` (newest
  first, ``totalPage``); with ``list_params=False`` the list leaves out ``commandParam``/``globalParams``.
- ``GET .../process-instances/{id}`` -> the instance, with ``commandParam`` (``{"StartParams": "<json>"}``)
  and ``globalParams`` (a JSON list of ``{prop, direct, type, value}``).

DolphinScheduler has no idempotency key: two starts are two instances; ``runs`` counts them per
``lakehook_trigger_key``. ``script`` queues faults for the next starts (``"500"``, ``"slow-after"``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.fakes.http_server import FakeServer, Handler, Request, Response

PREFIX = "/dolphinscheduler/projects/{projectCode}"
REQUIRED = ("processDefinitionCode", "scheduleTime", "failureStrategy", "warningType")


class FakeDolphinScheduler(FakeServer):
    def __init__(
        self, token: str, definitions: dict[int, set[int]], list_params: bool = True, slow_seconds: float = 1.0
    ) -> None:
        super().__init__()
        self.token = token
        self.definitions = definitions  # project code -> process definition codes
        self.list_params = list_params
        self.slow_seconds = slow_seconds
        self.commands: list[dict[str, Any]] = []
        self.instances: list[dict[str, Any]] = []
        self.script: list[str] = []
        self.now: Callable[[], datetime] = lambda: datetime.now(tz=UTC)

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("POST", f"{PREFIX}/executors/start-process-instance"): self.start,
            ("GET", f"{PREFIX}/process-instances"): self.list_instances,
            ("GET", f"{PREFIX}/process-instances/{{id}}"): self.get_instance,
        }

    @property
    def runs(self) -> Counter[str]:
        """Instances and queued commands per trigger key: every start that will become a run."""
        with self.lock:
            everything = [*self.instances, *self.commands]
            return Counter(json.loads(i["startParams"]).get("lakehook_trigger_key", "") for i in everything)

    def run_master(self) -> None:
        """Turn queued commands into process instances."""
        with self.lock:
            for command in self.commands:
                instance_id = len(self.instances) + 1
                params = json.loads(command["startParams"])
                self.instances.append(
                    {
                        "id": instance_id,
                        "name": f"dwd-{instance_id}-{command['time'].strftime('%Y%m%d%H%M%S%f')[:17]}",
                        "processDefinitionCode": command["code"],
                        "projectCode": command["project"],
                        "state": "RUNNING_EXECUTION",
                        "commandType": "START_PROCESS",
                        "startTime": command["time"].strftime("%Y-%m-%d %H:%M:%S"),
                        "commandParam": json.dumps({"StartParams": json.dumps(params)}),
                        "globalParams": json.dumps(
                            [{"prop": k, "direct": "IN", "type": "VARCHAR", "value": v} for k, v in params.items()]
                        ),
                        "startParams": command["startParams"],
                    }
                )
            self.commands.clear()

    def _denied(self, request: Request) -> Response | None:
        return None if request.headers.get("token") == self.token else Response(401, None)

    def start(self, request: Request) -> Response:
        denied = self._denied(request)
        if denied:
            return denied
        form = request.form()
        missing = [name for name in REQUIRED if name not in form]
        if missing:
            return Response(400, {"code": 10001, "msg": f"Required request parameter '{missing[0]}' is not present"})
        project = int(request.query["projectCode"])
        if project not in self.definitions:
            return Response(200, {"code": 10018, "msg": f"project {project} not found ", "data": None})
        code = int(form["processDefinitionCode"])
        if code not in self.definitions[project]:
            return Response(200, {"code": 50003, "msg": f"process definition {code} does not exist", "data": None})
        json.loads(form.get("startParams") or "{}")  # a malformed startParams is a server error in DolphinScheduler
        with self.lock:
            action = self.script.pop(0) if self.script else None
            if action == "500":
                return Response(500, {"code": 10000, "msg": "Internal Server Error"})
            trigger_code = 9_000_000 + len(self.commands) + len(self.instances)
            self.commands.append(
                {"project": project, "code": code, "time": self.now(), "startParams": form.get("startParams") or "{}"}
            )
        body = {"code": 0, "msg": "success", "data": trigger_code}
        return Response(200, body, delay=self.slow_seconds if action == "slow-after" else 0.0)

    def list_instances(self, request: Request) -> Response:
        denied = self._denied(request)
        if denied:
            return denied
        project = int(request.query["projectCode"])
        code = int(request.query.get("processDefineCode") or 0)
        page, size = int(request.query["pageNo"]), int(request.query["pageSize"])
        since = request.query.get("startDate")
        with self.lock:
            found = [
                i
                for i in reversed(self.instances)
                if i["projectCode"] == project
                and (not code or i["processDefinitionCode"] == code)
                and (not since or i["startTime"] >= since)
            ]
        chunk = found[(page - 1) * size : page * size]
        shown = [self._shown(i, self.list_params) for i in chunk]
        pages = max(1, -(-len(found) // size))
        return Response(
            200,
            {
                "code": 0,
                "msg": "success",
                "data": {
                    "totalList": shown,
                    "total": len(found),
                    "totalPage": pages,
                    "pageSize": size,
                    "currentPage": page,
                    "pageNo": page,
                },
            },
        )

    def get_instance(self, request: Request) -> Response:
        denied = self._denied(request)
        if denied:
            return denied
        wanted = int(request.query["id"])
        with self.lock:
            found = next((i for i in self.instances if i["id"] == wanted), None)
        if found is None:
            return Response(200, {"code": 10173, "msg": f"process instance {wanted} does not exist", "data": None})
        return Response(200, {"code": 0, "msg": "success", "data": self._shown(found, True)})

    @staticmethod
    def _shown(instance: dict[str, Any], with_params: bool) -> dict[str, Any]:
        hidden = {"startParams", "projectCode"} | (set() if with_params else {"commandParam", "globalParams"})
        return {k: v for k, v in instance.items() if k not in hidden}
