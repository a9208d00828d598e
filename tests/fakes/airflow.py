"""A fake Airflow 3 API server: the parts of the public REST API v2 lakehook uses, with Airflow's answers.

- ``POST /auth/token`` with ``{"username", "password"}`` -> 201 ``{"access_token"}`` (401 on bad credentials).
- Every ``/api/v2`` call needs ``Authorization: Bearer <token>`` (401 ``{"detail": "Not authenticated"}``).
- ``POST /api/v2/dags/{dag_id}/dagRuns`` (TriggerDAGRunPostBody: ``logical_date`` must be present, may be
  null; unknown fields are refused with 422): 200 with a DAGRunResponse; 404 for an unknown DAG; 409 with
  Airflow's unique-constraint detail when ``dag_run_id`` exists for the DAG.
- ``GET /api/v2/dags/{dag_id}/dagRuns/{dag_run_id}``: 200 DAGRunResponse, or 404.

``runs`` counts runs created per ``conf.triggerKey``; ``script`` queues faults for the next trigger POSTs
(``"503"``, ``"503-after"``: creates the run then answers 503, ``"slow-after"``); ``expire_tokens()``
revokes every issued token.
"""

from __future__ import annotations

import secrets
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from tests.fakes.http_server import FakeServer, Handler, Request, Response

TRIGGER_FIELDS = {
    "dag_run_id",
    "data_interval_start",
    "data_interval_end",
    "logical_date",
    "run_after",
    "conf",
    "note",
    "partition_key",
}


class FakeAirflow(FakeServer):
    def __init__(self, users: dict[str, str], dags: set[str], slow_seconds: float = 1.0) -> None:
        super().__init__()
        self.users = users
        self.dags = dags
        self.slow_seconds = slow_seconds
        self.tokens: set[str] = set()
        self.token_requests = 0
        self.dag_runs: dict[tuple[str, str], dict[str, Any]] = {}
        self.runs: Counter[str] = Counter()
        self.script: list[str] = []

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("POST", "/auth/token"): self.create_token,
            ("POST", "/api/v2/dags/{dag_id}/dagRuns"): self.trigger_dag_run,
            ("GET", "/api/v2/dags/{dag_id}/dagRuns/{dag_run_id}"): self.get_dag_run,
        }

    def expire_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    def create_token(self, request: Request) -> Response:
        body = request.json() or {}
        with self.lock:
            self.token_requests += 1
            if self.users.get(str(body.get("username"))) != body.get("password"):
                return Response(401, {"detail": "Invalid credentials"})
            token = secrets.token_hex(16)
            self.tokens.add(token)
        return Response(201, {"access_token": token})

    def _authorized(self, request: Request) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        with self.lock:
            return scheme == "Bearer" and token in self.tokens

    def trigger_dag_run(self, request: Request) -> Response:
        if not self._authorized(request):
            return Response(401, {"detail": "Not authenticated"})
        dag_id = request.query["dag_id"]
        body = request.json()
        if not isinstance(body, dict) or "logical_date" not in body:
            return Response(
                422, {"detail": [{"type": "missing", "loc": ["body", "logical_date"], "msg": "Field required"}]}
            )
        extra = set(body) - TRIGGER_FIELDS
        if extra:
            return Response(
                422,
                {
                    "detail": [
                        {
                            "type": "extra_forbidden",
                            "loc": ["body", sorted(extra)[0]],
                            "msg": "Extra inputs are not permitted",
                        }
                    ]
                },
            )
        if dag_id not in self.dags:
            return Response(404, {"detail": f"DAG with dag_id: '{dag_id}' not found"})
        run_id = body.get("dag_run_id") or f"manual__{datetime.now(tz=UTC).isoformat()}"
        with self.lock:
            action = self.script.pop(0) if self.script else None
            if action == "503":
                return Response(503, {"detail": "Service Unavailable"})
            if (dag_id, run_id) in self.dag_runs:
                return Response(
                    409,
                    {
                        "detail": {
                            "reason": "Unique constraint violation",
                            "statement": "INSERT INTO dag_run (dag_id, run_id, ...) VALUES (?, ?, ...)",
                            "orig_error": "UNIQUE constraint failed: dag_run.dag_id, dag_run.run_id",
                        }
                    },
                )
            run = self._run(dag_id, run_id, body)
            self.dag_runs[(dag_id, run_id)] = run
            conf = body.get("conf") or {}
            self.runs[str(conf.get("triggerKey"))] += 1
        if action == "503-after":
            return Response(503, {"detail": "Service Unavailable"})
        return Response(200, run, delay=self.slow_seconds if action == "slow-after" else 0.0)

    def get_dag_run(self, request: Request) -> Response:
        if not self._authorized(request):
            return Response(401, {"detail": "Not authenticated"})
        dag_id, run_id = request.query["dag_id"], request.query["dag_run_id"]
        with self.lock:
            run = self.dag_runs.get((dag_id, run_id))
        if run is None:
            return Response(404, {"detail": f"The DagRun with dag_id: `{dag_id}` and run_id: `{run_id}` was not found"})
        return Response(200, run)

    def add_run(self, dag_id: str, run_id: str, conf: dict[str, Any]) -> None:
        """A run created by someone else (another tool, a person)."""
        with self.lock:
            self.dag_runs[(dag_id, run_id)] = self._run(dag_id, run_id, {"conf": conf, "logical_date": None})

    @staticmethod
    def _run(dag_id: str, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        now = datetime.now(tz=UTC).isoformat()
        return {
            "dag_run_id": run_id,
            "dag_id": dag_id,
            "logical_date": body.get("logical_date"),
            "queued_at": now,
            "start_date": None,
            "end_date": None,
            "duration": None,
            "data_interval_start": None,
            "data_interval_end": None,
            "run_after": now,
            "last_scheduling_decision": None,
            "run_type": "manual",
            "state": "queued",
            "triggered_by": "rest_api",
            "triggering_user_name": "lakehook",
            "conf": body.get("conf") or {},
            "note": body.get("note"),
            "dag_versions": [],
            "bundle_version": None,
            "dag_display_name": dag_id,
            "partition_key": None,
        }
