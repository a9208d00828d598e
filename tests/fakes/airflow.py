"""A fake Airflow 3 API server: the parts of the public REST API v2 lakehook uses, answering as Airflow does.

Checked against a real Apache Airflow 3.3.2 (SimpleAuthManager; ``/work/shared/tools/airflow-real``), whose
exact answers these are:

- ``POST /auth/token`` with ``{"username", "password"}`` -> 201 ``{"access_token"}``; bad credentials -> 401
  ``{"detail": "Invalid credentials"}``.
- ``/api/v2`` without ``Authorization: Bearer`` (or with another scheme) -> 401 ``{"detail": "Not authenticated"}``.
  A token past its ``exp`` -> 401 ``{"detail": "Token Expired"}``. A token signed with a key the server no
  longer has (the JWT secret rotated), one not yet valid (``nbf``/``iat`` in the future: a clock skew) or not a
  JWT at all -> **403** ``{"detail": "Invalid JWT token"}`` (not 401). ``expire_tokens()`` and ``rotate_key()``
  put every issued token in those states.
- ``POST /api/v2/dags/{dag_id}/dagRuns`` (TriggerDAGRunPostBody: ``logical_date`` must be present, may be null;
  unknown fields 422): 200 with a DAGRunResponse whose ``state`` is ``queued``. An unknown DAG (never deployed,
  still being deployed: it becomes known ~8 s after its file lands, at the next DAG-folder refresh; or failing to
  import, listed in ``/api/v2/importErrors``) -> 404 ``{"detail": "Dag with dag_id: '<id>' not found"}``. A
  ``dag_run_id`` that exists for the DAG -> 409 with the database's unique-constraint detail (statement and
  error hidden). A PAUSED DAG still answers 200 and the run stays ``queued`` until it is unpaused (still
  queued after 12 s; success 2 s after the unpause). A DAG deployed later starts paused (``deploy()``).
- ``GET /api/v2/dags/{dag_id}/dagRuns/{dag_run_id}``: 200 DAGRunResponse, or 404 ``The DagRun with dag_id:
  `<dag>` and run_id: `<run>` was not found`` (also for an unknown DAG).
- ``GET /api/v2/dags/{dag_id}``: 200 with ``is_paused`` (among others), or 404 ``The Dag with ID: `<id>` was
  not found``. ``PATCH /api/v2/dags/{dag_id}`` ``{"is_paused": bool}`` -> 200.

``runs`` counts runs created per ``conf.triggerKey``; ``script`` queues faults for the next trigger POSTs
(``"503"``, ``"503-after"``: creates the run then answers 503, ``"slow-after"``).
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
NOT_AUTHENTICATED = Response(401, {"detail": "Not authenticated"})
TOKEN_EXPIRED = Response(401, {"detail": "Token Expired"})
INVALID_JWT = Response(403, {"detail": "Invalid JWT token"})


class FakeAirflow(FakeServer):
    def __init__(
        self, users: dict[str, str], dags: set[str], slow_seconds: float = 1.0, paused: set[str] | None = None
    ) -> None:
        super().__init__()
        self.users = users
        self.dags = dags
        self.paused: set[str] = set(paused or ())
        self.slow_seconds = slow_seconds
        self.tokens: set[str] = set()  # valid
        self.expired: set[str] = set()  # past their exp
        self.token_requests = 0
        self.answers: list[Response] = []  # every answer, in order
        self.dag_runs: dict[tuple[str, str], dict[str, Any]] = {}
        self.runs: Counter[str] = Counter()
        self.script: list[str] = []

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("POST", "/auth/token"): self.create_token,
            ("POST", "/api/v2/dags/{dag_id}/dagRuns"): self.trigger_dag_run,
            ("GET", "/api/v2/dags/{dag_id}/dagRuns/{dag_run_id}"): self.get_dag_run,
            ("GET", "/api/v2/dags/{dag_id}"): self.get_dag,
            ("PATCH", "/api/v2/dags/{dag_id}"): self.patch_dag,
        }

    def dispatch(self, request: Request) -> Response:
        response = super().dispatch(request)
        with self.lock:
            self.answers.append(response)
        return response

    # --- what a test does to the server ------------------------------------------------------------------

    def expire_tokens(self) -> None:
        """Every issued token passes its ``exp`` (401 Token Expired)."""
        with self.lock:
            self.expired |= self.tokens
            self.tokens.clear()

    def rotate_key(self) -> None:
        """The JWT secret changes: every issued token is signed with a key the server no longer has (403)."""
        with self.lock:
            self.tokens.clear()
            self.expired.clear()

    def deploy(self, dag_id: str, paused: bool = True) -> None:
        """A DAG file was parsed: the DAG is known now, paused as new DAGs are by default."""
        with self.lock:
            self.dags.add(dag_id)
            if paused:
                self.paused.add(dag_id)

    def add_run(self, dag_id: str, run_id: str, conf: dict[str, Any]) -> None:
        """A run created by someone else (another tool, a person)."""
        with self.lock:
            self.dag_runs[(dag_id, run_id)] = self._run(dag_id, run_id, {"conf": conf, "logical_date": None})

    # --- the API ---------------------------------------------------------------------------------------------

    def create_token(self, request: Request) -> Response:
        body = request.json() or {}
        with self.lock:
            self.token_requests += 1
            if self.users.get(str(body.get("username"))) != body.get("password"):
                return Response(401, {"detail": "Invalid credentials"})
            token = secrets.token_hex(16)
            self.tokens.add(token)
        return Response(201, {"access_token": token})

    def _refused(self, request: Request) -> Response | None:
        """The answer to a request that is not authenticated, else None."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not token:
            return NOT_AUTHENTICATED
        with self.lock:
            if token in self.tokens:
                return None
            return TOKEN_EXPIRED if token in self.expired else INVALID_JWT

    def trigger_dag_run(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
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
        with self.lock:
            known = dag_id in self.dags
        if not known:
            return Response(404, {"detail": f"Dag with dag_id: '{dag_id}' not found"})
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
                            "statement": "hidden",
                            "orig_error": "hidden",
                            "message": "Serious error when handling your request. Check logs for more details - "
                            f"you will find it in api server when you look for ID {secrets.token_urlsafe(6)[:8]}",
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
        refused = self._refused(request)
        if refused is not None:
            return refused
        dag_id, run_id = request.query["dag_id"], request.query["dag_run_id"]
        with self.lock:
            run = self.dag_runs.get((dag_id, run_id))
            if run is not None and run["state"] == "queued" and dag_id not in self.paused:
                # No scheduler here: a run of an active DAG has finished by the time it is read again (the real
                # server ran it to success about 2 s after its DAG was unpaused).
                run = self.dag_runs[(dag_id, run_id)] = {**run, "state": "success"}
        if run is None:
            return Response(404, {"detail": f"The DagRun with dag_id: `{dag_id}` and run_id: `{run_id}` was not found"})
        return Response(200, run)

    def get_dag(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        dag_id = request.query["dag_id"]
        with self.lock:
            if dag_id not in self.dags:
                return Response(404, {"detail": f"The Dag with ID: `{dag_id}` was not found"})
            return Response(200, self._dag(dag_id))

    def patch_dag(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        dag_id = request.query["dag_id"]
        body = request.json() or {}
        with self.lock:
            if dag_id not in self.dags:
                return Response(404, {"detail": f"The Dag with ID: `{dag_id}` was not found"})
            if body.get("is_paused") is True:
                self.paused.add(dag_id)
            elif body.get("is_paused") is False:
                self.paused.discard(dag_id)
            return Response(200, self._dag(dag_id))

    def _dag(self, dag_id: str) -> dict[str, Any]:
        return {
            "dag_id": dag_id,
            "dag_display_name": dag_id,
            "is_paused": dag_id in self.paused,
            "is_stale": False,
            "has_import_errors": False,
            "fileloc": f"/opt/airflow/dags/{dag_id}.py",
            "tags": [],
        }

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
            "partition_date": None,
        }
