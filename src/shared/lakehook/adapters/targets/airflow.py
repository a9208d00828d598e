"""Airflow target (Airflow 3 REST API v2): one DAG run per trigger key.

As a real Airflow 3.3.2 answers (the fake in ``tests/fakes/airflow.py`` records each answer):

- Auth: ``credentialsRef`` names a secret holding ``{"username", "password"}`` (a JWT is fetched with
  ``POST /auth/token``, as Airflow 3's auth managers document) or ``{"token": ...}`` (a token issued
  beforehand). Requests carry ``Authorization: Bearer <token>``. The token is cached per process and
  fetched again (the secret re-read) once when Airflow refuses it: 401 for an expired token, and **403**
  ``Invalid JWT token`` for one signed with a key Airflow no longer has (the JWT secret rotated) or not yet
  valid (clock skew), so a warm dispatcher never keeps a bad token. Another 403 (no permission) is FINAL.
- Start: ``POST /api/v2/dags/{dag_id}/dagRuns`` with ``{"dag_run_id": "lakehook__<trigger key>",
  "logical_date": null, "conf": <invocation payload>, "note": ...}``. 200 is a new run.
- A 404 ``Dag with dag_id: ... not found`` is a DAG being deployed (unknown until the DAG processor parses
  its file) or failing to import: RETRYABLE for ``dagNotFoundRetrySeconds`` (default 600) after the first
  such answer, then FINAL. Any other 404 (a wrong ``baseUrl``) is FINAL.
- A paused DAG accepts the run (200) and leaves it ``queued`` until it is unpaused: after a start the DAG's
  ``is_paused`` is read (``GET /api/v2/dags/{dag_id}``) and the trigger's ``runState`` says so. Best effort:
  a failed read never fails the dispatch.
- Idempotency: the run id is unique per DAG, so a second POST answers 409. A 409 is confirmed with
  ``GET /api/v2/dags/{dag_id}/dagRuns/{dag_run_id}``: the run is ours when its ``conf.triggerKey`` is this
  key (ALREADY_STARTED); a run of that id with another key is a FATAL clash.
- Look-up before a retry: the same GET (404 means no run).
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any, ClassVar
from urllib.parse import quote

import requests

from lakehook.adapters.targets.deps import CachedSecrets, TargetDeps
from lakehook.adapters.targets.http import json_or_none, refuse_insecure, send, transport_outcome, with_bearer
from lakehook.domain.dispatch import Invocation, Outcome, OutcomeKind, TargetUnavailableError, http_outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import AirflowTarget, TargetConfig
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.dispatch import TargetClient

RUN_ID_PREFIX = "lakehook__"
INVALID_TOKEN_DETAIL = "Invalid JWT token"  # Airflow's 403 for a token signed with another key, or not yet valid
DAG_NOT_FOUND = "dag_not_found"


def dag_run_id_for(trigger_key: str) -> str:
    """The DAG run id of a trigger key: ASCII letters, digits, ``_ . -`` only, well under 250 characters."""
    return f"{RUN_ID_PREFIX}{trigger_key}"


def _dag_url(config: AirflowTarget) -> str:
    return f"{config.base_url}/api/v2/dags/{quote(config.dag_id, safe='')}"


def _runs_url(config: AirflowTarget) -> str:
    return f"{_dag_url(config)}/dagRuns"


def _detail(response: requests.Response) -> str:
    """Airflow's ``detail`` when it is a string (FastAPI's HTTPException body), else ``""``."""
    body = json_or_none(response)
    detail = body.get("detail") if isinstance(body, dict) else None
    return detail if isinstance(detail, str) else ""


def token_refused(response: requests.Response) -> bool:
    """Whether Airflow refused the token itself (so a fresh one may work): 401, or 403 ``Invalid JWT token``."""
    if response.status_code == 401:
        return True
    return response.status_code == 403 and _detail(response) == INVALID_TOKEN_DETAIL


def dag_not_found(response: requests.Response) -> bool:
    """Airflow's 404 for a DAG it does not know (not deployed yet, or failing to import)."""
    detail = _detail(response).lower()  # 3.3.2 says "Dag with dag_id: 'x' not found"; earlier 3.x "DAG with ..."
    return response.status_code == 404 and detail.startswith("dag with dag_id:") and detail.endswith("not found")


class AirflowTargetClient(TargetClient):
    """DAG runs through Airflow 3's public API."""

    type_name: ClassVar[str] = "airflow"
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = True

    def __init__(
        self,
        secrets: CachedSecrets,
        session: requests.Session,
        allow_insecure_loopback: bool = False,
        url_policy: UrlPolicy | None = None,
    ):
        self._secrets = secrets
        self._session = session
        self._policy = url_policy or UrlPolicy(local_mode=allow_insecure_loopback)
        self._tokens: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The DAG run as Airflow answers it now, with whether the DAG is paused (two GETs)."""
        assert isinstance(config, AirflowTarget)
        if refuse_insecure(config.base_url, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")
        run = self._get_run(config, run_id)
        return None if run is None else self._run_state(config, run)

    def retry_window_seconds(self, failure_code: str | None, config: TargetConfig) -> float | None:
        assert isinstance(config, AirflowTarget)
        return config.dag_not_found_retry_seconds if failure_code == DAG_NOT_FOUND else None

    @classmethod
    def build(cls, deps: TargetDeps) -> AirflowTargetClient:
        return cls(deps.cached_secrets, deps.session, url_policy=deps.policy)

    # --- auth ------------------------------------------------------------------------------------------

    def _token(self, config: AirflowTarget, fresh: bool = False) -> str | Outcome:
        cache_key = (config.base_url, config.credentials_ref)
        with self._lock:
            cached = None if fresh else self._tokens.get(cache_key)
        if cached:
            return cached
        credentials = self._credentials(config, fresh)
        if isinstance(credentials, Outcome):
            return credentials
        if isinstance(credentials, dict) and isinstance(credentials.get("token"), str):
            token: str = credentials["token"]
        elif isinstance(credentials, dict) and {"username", "password"} <= credentials.keys():
            exchanged = self._exchange(config, credentials["username"], credentials["password"])
            if isinstance(exchanged, Outcome):
                return exchanged
            token = exchanged
        else:
            return Outcome.fatal(
                f"credentials {config.credentials_ref!r} need username and password, or token", "secret_invalid"
            )
        with self._lock:
            self._tokens[cache_key] = token
        return token

    def _credentials(self, config: AirflowTarget, fresh: bool) -> Any:
        """The parsed credentials secret (read again when ``fresh``), or the FATAL outcome of a missing or non-JSON
        one."""
        try:
            if fresh:
                self._secrets.forget(config.credentials_ref)
            return json.loads(self._secrets.get(config.credentials_ref))
        except NotFoundError as exc:
            return Outcome.fatal(f"credentials (credentialsRef): {exc}", "secret_missing")
        except ValueError:
            return Outcome.fatal(f"credentials {config.credentials_ref!r} are not JSON", "secret_invalid")

    def _exchange(self, config: AirflowTarget, username: Any, password: Any) -> str | Outcome:
        """An access token for the username and password (``POST /auth/token``), or why there is none: a refused
        destination or a refusal FATAL, a transport failure or a retryable answer RETRYABLE (it has no side
        effects)."""
        try:
            answer = send(
                self._session,
                "POST",
                f"{config.base_url}/auth/token",
                config.timeout_seconds,
                json={"username": username, "password": password},
            )
        except requests.RequestException as exc:
            outcome = transport_outcome(exc, "airflow token")
            if outcome.kind is OutcomeKind.FATAL:
                return outcome  # a refused destination stays refused
            return Outcome.retryable(outcome.reason or "token", outcome.code or "transport")  # no side effects
        body = json_or_none(answer)
        if answer.status_code not in (200, 201) or not isinstance(body, dict) or "access_token" not in body:
            outcome = http_outcome(answer.status_code, "", answer.text)
            if outcome.succeeded:
                return Outcome.fatal("POST /auth/token answered without an access_token", "auth_failed")
            if outcome.kind is OutcomeKind.FATAL:
                return Outcome.fatal(f"POST /auth/token refused: {outcome.reason}", "auth_failed")
            return Outcome.retryable(f"POST /auth/token: {outcome.reason}", outcome.code or "auth")
        return str(body["access_token"])

    def _authorized(
        self, config: AirflowTarget, method: str, url: str, lookup: bool, **kwargs: Any
    ) -> requests.Response | Outcome:
        """One request with a bearer token; when Airflow refuses the token (401, or 403 ``Invalid JWT token``)
        it is fetched again once. A token still refused is dropped, so the next request starts afresh."""
        token = partial(self._token, config)
        request = (method, url, config.timeout_seconds)
        response = with_bearer(self._session, token, request, lookup, refused=token_refused, **kwargs)
        if isinstance(response, requests.Response) and token_refused(response):
            with self._lock:
                self._tokens.pop((config.base_url, config.credentials_ref), None)
        return response

    # --- the plug-in -----------------------------------------------------------------------------------

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, AirflowTarget)
        refused = refuse_insecure(config.base_url, self._policy)
        if refused is not None:
            return refused
        run_id = dag_run_id_for(invocation.trigger_key)
        body = {
            "dag_run_id": run_id,
            "logical_date": None,
            "conf": invocation.payload(),
            "note": f"lakehook trigger {invocation.trigger_key} (attempt {invocation.attempt})",
        }
        try:
            answer = self._authorized(config, "POST", _runs_url(config), lookup=False, json=body)
        except requests.RequestException as exc:
            return transport_outcome(exc, "airflow")
        if isinstance(answer, Outcome):
            return answer
        if answer.status_code == 409:
            return self._confirm_conflict(invocation.trigger_key, config, run_id)
        if dag_not_found(answer):
            return Outcome.retryable(
                f"HTTP 404: {_detail(answer)} (being deployed, or failing to import: see Airflow's import errors)",
                DAG_NOT_FOUND,
                retry_window_seconds=config.dag_not_found_retry_seconds,
            )
        started = json_or_none(answer)
        started_id = started.get("dag_run_id") if isinstance(started, dict) else None
        outcome = http_outcome(
            answer.status_code, str(started_id or run_id), answer.text, answer.headers.get("Retry-After")
        )
        if outcome.kind is OutcomeKind.STARTED and outcome.run_id is not None:
            return Outcome.started(outcome.run_id, self._run_state(config, started))
        return outcome

    def _run_state(self, config: AirflowTarget, run: Any) -> RunState | None:
        """The run's state as Airflow answered it, and whether the DAG is paused (then the run waits)."""
        state = run.get("state") if isinstance(run, dict) else None
        if not isinstance(state, str) or not state:
            return None
        paused: bool | None = None
        try:
            answer = self._authorized(config, "GET", _dag_url(config), lookup=True)
            dag = json_or_none(answer) if isinstance(answer, requests.Response) and answer.status_code == 200 else None
            paused = dag.get("is_paused") if isinstance(dag, dict) else None
        except TargetUnavailableError:
            paused = None  # best effort: the run exists whatever this look says
        detail = None
        if paused is True and state == "queued":
            detail = f"DAG {config.dag_id!r} is paused: the run stays queued until the DAG is unpaused"
        elif paused is None:
            detail = "could not read whether the DAG is paused"
        return RunState(state=state[:64], detail=detail, checked_at=now_ms())

    def _confirm_conflict(self, trigger_key: str, config: AirflowTarget, run_id: str) -> Outcome:
        try:
            run = self._get_run(config, run_id)
        except TargetUnavailableError as exc:
            # The run id exists; whose it is stays unknown until Airflow answers. Not ambiguous: a
            # re-send can only hit the same 409.
            return Outcome.retryable(f"409, and the run could not be read: {exc}", "confirm_unavailable")
        if run is None:
            return Outcome.retryable("409, but the run is not visible yet", "confirm_unavailable")
        found = _key_of(run)
        if found != trigger_key:
            return Outcome.fatal(f"dag_run_id {run_id!r} belongs to trigger {found!r}", "run_id_taken")
        return Outcome.already_started(run_id, self._run_state(config, run))

    def _get_run(self, config: AirflowTarget, run_id: str) -> dict[str, Any] | None:
        """The DAG run (a DAGRunResponse), or None when there is no run of that id."""
        url = f"{_runs_url(config)}/{quote(run_id, safe='')}"
        answer = self._authorized(config, "GET", url, lookup=True)
        assert not isinstance(answer, Outcome)
        if answer.status_code == 404:
            return None
        if answer.status_code != 200:
            raise TargetUnavailableError(f"GET dagRun answered {answer.status_code}")
        run = json_or_none(answer)
        return run if isinstance(run, dict) else {}

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, AirflowTarget)
        if refuse_insecure(config.base_url, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")
        run_id = dag_run_id_for(trigger_key)
        run = self._get_run(config, run_id)
        return run_id if run is not None and _key_of(run) == trigger_key else None


def _key_of(run: dict[str, Any]) -> str:
    """The trigger key in a run's conf (``""`` when it has none)."""
    conf = run.get("conf")
    key = conf.get("triggerKey") if isinstance(conf, dict) else None
    return str(key) if key else ""
