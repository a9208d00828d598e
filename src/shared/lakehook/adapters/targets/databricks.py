"""Databricks target (Jobs API 2.1): one job run per trigger key, through Databricks' own idempotency token.

As the Jobs API reference documents it (``docs.databricks.com/api/workspace/jobs``; the fake in
``tests/fakes/databricks.py`` answers so):

- Auth: ``tokenRef`` names a secret holding a personal access token (or an OAuth token) as text, or JSON
  ``{"token": ...}``; requests carry ``Authorization: Bearer <token>``. A 401 reads the secret again once (it may
  have been rotated); still refused, it is FATAL (``auth_failed``), as a 403 ``PERMISSION_DENIED`` is.
- Start: ``POST /api/2.1/jobs/run-now`` with ``{"job_id", "idempotency_token", "job_parameters"}``: the token is
  the trigger key's SHA-256 (64 hex characters, the token's limit), the job parameters ``lakehook_trigger_key`` and
  ``lakehook_payload`` (the invocation payload as JSON). 200 answers ``{"run_id", "number_in_job"}``.
- Idempotency: "If a run with the provided token already exists, the request does not create a new run but returns
  the ID of the existing run instead": a re-send, even a blind one after a lost answer, answers the same run, so
  this plug-in ``deduplicates``. It is also ``confirmable``: before a retry :meth:`find_run` pages through
  ``GET /api/2.1/jobs/runs/list?job_id&start_time_from`` (at most ``MAX_PAGES`` pages of 20) for a run whose
  ``lakehook_trigger_key`` job parameter is the key.
- Errors: the body is ``{"error_code", "message"}``. 400 ``INVALID_PARAMETER_VALUE`` (e.g. a job parameter the
  job does not take), 404 / 400 ``RESOURCE_DOES_NOT_EXIST`` (no such job) and 403 are FATAL; 429
  (``REQUEST_LIMIT_EXCEEDED``) and 503 ``TEMPORARILY_UNAVAILABLE`` retry (``Retry-After`` honoured), a 5xx
  ambiguous (confirmed before the re-send, and the token makes a re-send safe anyway).
- Run status: ``GET /api/2.1/jobs/runs/get?run_id``: ``state.life_cycle_state`` ``QUEUED``, ``PENDING``,
  ``BLOCKED``, ``WAITING_FOR_RETRY`` are ``queued``; ``RUNNING``, ``TERMINATING`` are ``running``; ``TERMINATED``,
  ``SKIPPED``, ``INTERNAL_ERROR`` have ended (the ``result_state`` and ``state_message`` in the detail).
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any, ClassVar

import requests

from lakehook.adapters.targets.deps import CachedSecrets, TargetDeps
from lakehook.adapters.targets.http import json_or_none, refuse_insecure, transport_outcome, with_bearer
from lakehook.domain.dispatch import Invocation, Outcome, OutcomeKind, TargetUnavailableError, http_outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import DatabricksJobTarget, TargetConfig
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.dispatch import TargetClient

JOBS = "/api/2.1/jobs"
KEY_PARAMETER = "lakehook_trigger_key"
PAYLOAD_PARAMETER = "lakehook_payload"
PAGE_SIZE = 20  # runs/list's default page (its documented bound is 25, or "less than 25" in the SDKs)
MAX_PAGES = 10
QUEUED = frozenset({"QUEUED", "PENDING", "BLOCKED", "WAITING_FOR_RETRY"})
RUNNING = frozenset({"RUNNING", "TERMINATING"})
FATAL_CODES = frozenset({"INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "PERMISSION_DENIED", "BAD_REQUEST"})


def idempotency_token(trigger_key: str) -> str:
    """The run-now idempotency token of a trigger key: its SHA-256 in hex, 64 characters (the token's limit)."""
    return hashlib.sha256(trigger_key.encode()).hexdigest()


def error_of(response: requests.Response) -> tuple[str, str]:
    """Databricks' ``error_code`` and ``message`` (empty when the body is not its error object)."""
    body = json_or_none(response)
    if not isinstance(body, dict):
        return "", ""
    code, message = body.get("error_code"), body.get("message")
    return (code if isinstance(code, str) else "", message if isinstance(message, str) else "")


def answer_outcome(response: requests.Response) -> Outcome:
    """The outcome of a run-now answer other than a run: FATAL for what a retry cannot change."""
    code, message = error_of(response)
    detail = f"{code}: {message}" if code else (message or response.text[:300])
    if response.status_code in (401, 403):
        return Outcome.fatal(f"HTTP {response.status_code}: {detail} (the token of tokenRef)", "auth_failed")
    if code in FATAL_CODES or response.status_code == 404:
        return Outcome.fatal(f"HTTP {response.status_code}: {detail}", (code or "not_found").lower())
    outcome = http_outcome(response.status_code, "", detail, response.headers.get("Retry-After"))
    if outcome.kind in (OutcomeKind.STARTED, OutcomeKind.ALREADY_STARTED):  # a 2xx without a run_id
        return Outcome.fatal(f"run-now answered HTTP {response.status_code} without a run_id", "no_run_id")
    return outcome


def key_of(run: Any) -> str:
    """The ``lakehook_trigger_key`` job parameter of a run (``""`` when it has none): the run's resolved
    ``job_parameters`` (``[{name, value, default}]``), else the ``overriding_parameters`` run-now gave it."""
    if not isinstance(run, dict):
        return ""
    for parameter in run.get("job_parameters") or []:
        if isinstance(parameter, dict) and parameter.get("name") == KEY_PARAMETER:
            return str(parameter.get("value") or parameter.get("default") or "")
    overriding = run.get("overriding_parameters")
    given = overriding.get("job_parameters") if isinstance(overriding, dict) else None
    return str(given.get(KEY_PARAMETER) or "") if isinstance(given, dict) else ""


class DatabricksTargetClient(TargetClient):
    """Job runs through the Databricks Jobs API 2.1."""

    type_name: ClassVar[str] = "databricks"
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = True
    # run-now's parameters are at most 10,000 bytes as JSON ("jar_params cannot exceed 10,000 bytes", the Jobs API's
    # parameter bound); the payload travels as a string inside them, its quotes escaped
    payload_limit: ClassVar[int] = 9 * 1024
    payload_quoted: ClassVar[bool] = True

    def __init__(self, secrets: CachedSecrets, session: requests.Session, url_policy: UrlPolicy | None = None):
        self._secrets = secrets
        self._session = session
        self._policy = url_policy or UrlPolicy()

    @classmethod
    def build(cls, deps: TargetDeps) -> DatabricksTargetClient:
        return cls(deps.cached_secrets, deps.session, url_policy=deps.policy)

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, DatabricksJobTarget)
        refused = refuse_insecure(config.host, self._policy)
        if refused is not None:
            return refused
        body = {
            "job_id": config.job_id,
            "idempotency_token": idempotency_token(invocation.trigger_key),
            "job_parameters": {
                KEY_PARAMETER: invocation.trigger_key,
                PAYLOAD_PARAMETER: json.dumps(invocation.payload(), separators=(",", ":"), sort_keys=True),
            },
        }
        try:
            answer = self._request(config, "POST", f"{config.host}{JOBS}/run-now", lookup=False, json=body)
        except requests.RequestException as exc:
            return transport_outcome(exc, "databricks")
        if isinstance(answer, Outcome):
            return answer
        started = json_or_none(answer)
        run_id = started.get("run_id") if isinstance(started, dict) else None
        if answer.status_code == 200 and isinstance(run_id, int) and not isinstance(run_id, bool):
            return Outcome.started(str(run_id))
        return answer_outcome(answer)

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, DatabricksJobTarget)
        self._dialable(config)
        query: dict[str, Any] = {"job_id": config.job_id, "start_time_from": not_before_ms, "limit": PAGE_SIZE}
        for _ in range(MAX_PAGES):
            page = self._look(config, "runs/list", query)
            for run in page.get("runs") or []:
                if key_of(run) == trigger_key and isinstance(run.get("run_id"), int):
                    return str(run["run_id"])
            token = page.get("next_page_token")
            if not page.get("has_more") or not isinstance(token, str):
                return None
            query = {**query, "page_token": token}
        raise TargetUnavailableError(f"more than {MAX_PAGES * PAGE_SIZE} runs of job {config.job_id} since the claim")

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        assert isinstance(config, DatabricksJobTarget)
        self._dialable(config)
        try:
            run = self._look(config, "runs/get", {"run_id": run_id})
        except NotFoundError:
            return None
        found = run.get("state")
        state: dict[str, Any] = found if isinstance(found, dict) else {}
        native = str(state.get("life_cycle_state") or "")
        if native in QUEUED:
            word = "queued"
        elif native in RUNNING:
            word = "running"
        else:
            word = (str(state.get("result_state") or native).lower() or "unknown")[:64]
        parts = [f"databricks: {native}"] + [str(state[k]) for k in ("result_state", "state_message") if state.get(k)]
        return RunState(state=word, detail=" - ".join(parts)[:500], checked_at=now_ms())

    # --- requests --------------------------------------------------------------------------------------

    def _dialable(self, config: DatabricksJobTarget) -> None:
        if refuse_insecure(config.host, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")

    def _look(self, config: DatabricksJobTarget, path: str, query: dict[str, Any]) -> dict[str, Any]:
        """A GET of the Jobs API; NotFoundError for RESOURCE_DOES_NOT_EXIST, TargetUnavailableError otherwise."""
        answer = self._request(config, "GET", f"{config.host}{JOBS}/{path}", lookup=True, params=query)
        assert not isinstance(answer, Outcome)
        code, message = error_of(answer)
        if code == "RESOURCE_DOES_NOT_EXIST" or answer.status_code == 404:
            raise NotFoundError(message or f"{path}: not found")
        body = json_or_none(answer)
        if answer.status_code != 200 or not isinstance(body, dict):
            raise TargetUnavailableError(f"GET {path} answered HTTP {answer.status_code} {code}".strip())
        return body

    def _token(self, config: DatabricksJobTarget, fresh: bool) -> str | Outcome:
        try:
            if fresh:
                self._secrets.forget(config.token_ref)
            text = self._secrets.get(config.token_ref).strip()
        except NotFoundError as exc:
            return Outcome.fatal(f"token (tokenRef): {exc}", "secret_missing")
        if text.startswith("{"):
            try:
                token = json.loads(text).get("token")
            except (ValueError, AttributeError):
                token = None
            if not isinstance(token, str) or not token:
                return Outcome.fatal(f"token {config.token_ref!r} is JSON without a 'token'", "secret_invalid")
            return token
        return text

    def _request(
        self, config: DatabricksJobTarget, method: str, url: str, lookup: bool, **kwargs: Any
    ) -> requests.Response | Outcome:
        """One request with the bearer token; a 401 reads the secret again once (it may have been rotated)."""
        token = partial(self._token, config)
        return with_bearer(self._session, token, (method, url, config.timeout_seconds), lookup, **kwargs)
