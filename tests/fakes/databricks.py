"""A fake Databricks workspace: the Jobs API 2.1 calls the ``databricks`` target makes, answered as documented.

Sources (each answer below is the documented one):

- ``POST /api/2.1/jobs/run-now`` (docs.databricks.com/api/workspace/jobs/runnow): body ``job_id``,
  ``idempotency_token`` ("If a run with the provided token already exists, the request does not create a new run
  but returns the ID of the existing run instead ... This token must have at most 64 characters"),
  ``job_parameters`` (a map of strings); 200 ``{"run_id", "number_in_job"}``.
- ``GET /api/2.1/jobs/runs/list`` (.../jobs/listruns): ``job_id``, ``start_time_from`` ("runs that started at or
  after this value"), ``limit`` (default 20, at most 25), ``page_token``; newest first; ``{"runs", "has_more",
  "next_page_token"}``. A run carries ``job_parameters`` as ``[{"name", "default", "value"}]`` and its ``state``
  (``life_cycle_state``, ``result_state``, ``state_message``).
- ``GET /api/2.1/jobs/runs/get`` (.../jobs/getrun): ``run_id``; the run.
- Errors (docs.databricks.com/api/workspace "Errors"): the body is ``{"error_code", "message"}``: 400
  ``INVALID_PARAMETER_VALUE`` (a token over 64 characters, a limit out of range, a parameter the job does not
  define), 400 ``RESOURCE_DOES_NOT_EXIST`` for a job or run id that does not exist (``"Job 123 does not exist."``),
  403 ``PERMISSION_DENIED``, 429 ``REQUEST_LIMIT_EXCEEDED`` with ``Retry-After``, 503 ``TEMPORARILY_UNAVAILABLE``;
  a missing or wrong bearer token 401 (``UNAUTHENTICATED``, the SDKs' error for the status).

``script`` queues faults for the next run-now calls: ``"429"``, ``"503"``, ``"500-after"`` (the run is started,
then a 500 answers: the ambiguous case), ``"denied"``. ``runs`` counts the runs started per idempotency token.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.fakes.http_server import FakeServer, Request, Response

JOBS = "/api/2.1/jobs"


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(status, {"error_code": code, "message": message}, headers or {})


class FakeDatabricks(FakeServer):
    def __init__(self, token: str, jobs: dict[int, list[str]] | None = None, clock: Any = None) -> None:
        super().__init__()
        self.token = token
        self.jobs = jobs if jobs is not None else {42: ["lakehook_trigger_key", "lakehook_payload"]}
        self.runs_by_id: dict[int, dict[str, Any]] = {}
        self.by_token: dict[str, int] = {}
        self.runs: Counter[str] = Counter()
        self.script: list[str] = []
        self.now = clock or (lambda: 1_750_000_000_000)
        self._next = 1000

    def routes(self) -> dict[tuple[str, str], Any]:
        return {
            ("POST", f"{JOBS}/run-now"): self.run_now,
            ("GET", f"{JOBS}/runs/list"): self.list_runs,
            ("GET", f"{JOBS}/runs/get"): self.get_run,
        }

    def dispatch(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        return super().dispatch(request)

    def set_state(self, run_id: int, life_cycle: str, result: str | None = None, message: str = "") -> None:
        with self.lock:
            self.runs_by_id[run_id]["state"] = {
                "life_cycle_state": life_cycle,
                **({"result_state": result} if result else {}),
                "state_message": message,
            }

    def run_now(self, request: Request) -> Response:
        body = request.json()
        fault = self.script.pop(0) if self.script else ""
        if fault == "429":
            return error(429, "REQUEST_LIMIT_EXCEEDED", "Too many requests.", {"Retry-After": "2"})
        if fault == "503":
            return error(503, "TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable.")
        if fault == "denied":
            return error(403, "PERMISSION_DENIED", "User does not have permission to run this job.")
        job_id, token = body.get("job_id"), body.get("idempotency_token")
        if not isinstance(job_id, int) or job_id not in self.jobs:
            return error(400, "RESOURCE_DOES_NOT_EXIST", f"Job {job_id} does not exist.")
        if token is not None and (not isinstance(token, str) or len(token) > 64):
            return error(400, "INVALID_PARAMETER_VALUE", "Idempotency token must have at most 64 characters.")
        parameters = body.get("job_parameters") or {}
        unknown = sorted(set(parameters) - set(self.jobs[job_id]))
        if unknown:
            return error(400, "INVALID_PARAMETER_VALUE", f"Job parameter(s) {unknown} are not defined in job {job_id}.")
        with self.lock:
            if token in self.by_token:
                run_id = self.by_token[token]
            else:
                run_id = self._start(job_id, parameters)
                self.runs[str(token)] += 1
                if token is not None:
                    self.by_token[token] = run_id
        if fault == "500-after":
            return error(500, "INTERNAL_ERROR", "Internal error.")
        return Response(200, {"run_id": run_id, "number_in_job": run_id})

    def _start(self, job_id: int, parameters: dict[str, str]) -> int:
        self._next += 1
        self.runs_by_id[self._next] = {
            "job_id": job_id,
            "run_id": self._next,
            "number_in_job": self._next,
            "start_time": self.now(),
            "job_parameters": [{"name": n, "default": "", "value": v} for n, v in sorted(parameters.items())],
            "overriding_parameters": {"job_parameters": dict(parameters)},
            "state": {"life_cycle_state": "QUEUED", "state_message": "Waiting for a cluster."},
        }
        return self._next

    def list_runs(self, request: Request) -> Response:
        limit = int(request.query.get("limit", "20"))
        if not 0 < limit <= 25:
            return error(400, "INVALID_PARAMETER_VALUE", "limit must be greater than 0 and at most 25.")
        job_id = int(request.query["job_id"])
        since = int(request.query.get("start_time_from", "0"))
        with self.lock:
            runs = [r for r in self.runs_by_id.values() if r["job_id"] == job_id and r["start_time"] >= since]
        runs.sort(key=lambda r: (r["start_time"], r["run_id"]), reverse=True)
        offset = int(request.query.get("page_token") or 0)
        page = runs[offset : offset + limit]
        more = offset + limit < len(runs)
        answer: dict[str, Any] = {"runs": page, "has_more": more}
        if more:
            answer["next_page_token"] = str(offset + limit)
        return Response(200, answer)

    def get_run(self, request: Request) -> Response:
        run_id = request.query.get("run_id", "")
        with self.lock:
            run = self.runs_by_id.get(int(run_id)) if run_id.isdigit() else None
        if run is None:
            return error(400, "RESOURCE_DOES_NOT_EXIST", f"Run {run_id} does not exist.")
        return Response(200, run)
