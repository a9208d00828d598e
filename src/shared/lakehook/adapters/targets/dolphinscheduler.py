"""DolphinScheduler target: ``start-process-instance`` with the trigger key among the start parameters.

- Start: ``POST {baseUrl}/projects/{projectCode}/executors/start-process-instance`` (form-encoded, header
  ``token: <access token>``) with ``processDefinitionCode``, ``scheduleTime`` (empty: a plain start),
  ``failureStrategy``, ``warningType``, ``processInstancePriority``, ``workerGroup``, ``execType=START_PROCESS``
  and ``startParams``: a JSON object of strings, ``lakehook_trigger_key``, ``lakehook_rule_id``,
  ``lakehook_group_id``, ``lakehook_manifest_uri``, ``lakehook_attempt`` and ``lakehook_payload`` (the whole
  invocation payload as JSON). Declare them as IN global parameters of the workflow to use them in tasks.
- Answers: DolphinScheduler wraps results as ``{"code": 0, "msg": "success", "data": ...}``; ``code`` other
  than 0 is a refusal (FATAL); HTTP 5xx and 429 retry. ``data`` is the new instance ids (3.2+) or a trigger
  code; the run id is ``process-instance/<id>`` when known.
- DolphinScheduler has no idempotency key: starting twice starts two instances. So before any retry the
  dispatcher looks (:meth:`find_run`): ``GET {baseUrl}/projects/{projectCode}/process-instances`` for the
  definition, started since the claim (a day of slack for the server's time zone), page by page, and
  each instance's ``commandParam`` / ``globalParams`` (from the list, else from
  ``GET .../process-instances/{id}``) is searched for ``lakehook_trigger_key``. A start is a command that
  the master turns into an instance asynchronously, so no look happens before ``settleSeconds`` after
  the previous attempt (the dispatcher waits instead of re-sending).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import requests

from lakehook.adapters.targets.deps import CachedSecrets, TargetDeps
from lakehook.adapters.targets.http import ask, json_or_none, refuse_insecure, send, transport_outcome
from lakehook.domain.dispatch import Invocation, Outcome, OutcomeKind, TargetUnavailableError, http_outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import DolphinSchedulerTarget, TargetConfig
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.dispatch import TargetClient

KEY_PARAM = "lakehook_trigger_key"
PAGE_SIZE = 50
MAX_PAGES = 20
SEARCH_SLACK = timedelta(days=1)


def start_params(invocation: Invocation) -> dict[str, str]:
    """The start parameters (DolphinScheduler takes a JSON object of strings)."""
    payload = invocation.payload()
    return {
        KEY_PARAM: invocation.trigger_key,
        "lakehook_rule_id": invocation.rule_id,
        "lakehook_group_id": invocation.group_id,
        "lakehook_manifest_uri": invocation.manifest_uri,
        "lakehook_attempt": str(invocation.attempt),
        "lakehook_payload": json.dumps(payload, separators=(",", ":"), sort_keys=True),
    }


def _parsed(value: Any) -> Any:
    """JSON inside strings, unwrapped (commandParam holds StartParams as a JSON string)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _parsed(json.loads(value))
        except ValueError:
            return value
    if isinstance(value, dict):
        return {k: _parsed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_parsed(v) for v in value]
    return value


def carries_key(params: Any, trigger_key: str) -> bool:
    """Whether parameters (a map, a list of ``{prop, value}``, or JSON of either, nested) hold our key."""
    value = _parsed(params)
    if isinstance(value, dict):
        if value.get(KEY_PARAM) == trigger_key:
            return True
        if value.get("prop") == KEY_PARAM and value.get("value") == trigger_key:
            return True
        return any(carries_key(v, trigger_key) for v in value.values())
    if isinstance(value, list):
        return any(carries_key(v, trigger_key) for v in value)
    return False


def _run_id(data: Any, trigger_key: str) -> str:
    if isinstance(data, list) and data and isinstance(data[0], int):
        return f"process-instance/{data[0]}"
    if isinstance(data, int) and not isinstance(data, bool):
        return f"trigger/{data}"
    return trigger_key


class DolphinSchedulerTargetClient(TargetClient):
    """Process instances through DolphinScheduler's REST API."""

    type_name: ClassVar[str] = "dolphinscheduler"
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = False

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

    @classmethod
    def build(cls, deps: TargetDeps) -> DolphinSchedulerTargetClient:
        return cls(deps.cached_secrets, deps.session, url_policy=deps.policy)

    def settle_seconds(self, config: TargetConfig) -> float:
        assert isinstance(config, DolphinSchedulerTarget)
        return float(config.settle_seconds)

    def _headers(self, config: DolphinSchedulerTarget) -> dict[str, str] | Outcome:
        try:
            return {"token": self._secrets.get(config.token_ref), "Accept": "application/json"}
        except NotFoundError as exc:
            return Outcome.fatal(f"token {config.token_ref!r} does not exist: {exc}", "secret_missing")

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, DolphinSchedulerTarget)
        refused = refuse_insecure(config.base_url, self._policy)
        if refused is not None:
            return refused
        headers = self._headers(config)
        if isinstance(headers, Outcome):
            return headers
        form: dict[str, Any] = {
            "processDefinitionCode": config.process_definition_code,
            "scheduleTime": "",
            "failureStrategy": config.failure_strategy,
            "warningType": config.warning_type,
            "processInstancePriority": config.priority,
            "workerGroup": config.worker_group,
            "execType": "START_PROCESS",
            "taskDependType": "TASK_POST",
            "startParams": json.dumps(start_params(invocation), separators=(",", ":")),
            "dryRun": 0,
        }
        if config.tenant_code:
            form["tenantCode"] = config.tenant_code
        if config.environment_code is not None:
            form["environmentCode"] = config.environment_code
        url = f"{config.base_url}/projects/{config.project_code}/executors/start-process-instance"
        try:
            answer = send(self._session, "POST", url, config.timeout_seconds, data=form, headers=headers)
        except requests.RequestException as exc:
            return transport_outcome(exc, "dolphinscheduler")
        if answer.status_code in (401, 403):
            self._secrets.forget(config.token_ref)
        result = json_or_none(answer)
        outcome = http_outcome(
            answer.status_code, invocation.trigger_key, answer.text, answer.headers.get("Retry-After")
        )
        if outcome.kind is OutcomeKind.ALREADY_STARTED:  # DolphinScheduler has no such answer; never trust it
            return Outcome.retryable("HTTP 409 from DolphinScheduler", "http_409", ambiguous=True)
        if not outcome.succeeded:
            return outcome
        if not isinstance(result, dict) or "code" not in result:
            return Outcome.retryable("answer is not a DolphinScheduler result", "bad_answer", ambiguous=True)
        if result.get("code") != 0:
            return Outcome.fatal(
                f"DolphinScheduler refused: code {result.get('code')}: {result.get('msg')}", f"ds_{result.get('code')}"
            )
        return Outcome.started(_run_id(result.get("data"), invocation.trigger_key))

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, DolphinSchedulerTarget)
        if refuse_insecure(config.base_url, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")
        headers = self._headers(config)
        if isinstance(headers, Outcome):
            raise TargetUnavailableError(headers.reason or "no token")
        since = datetime.fromtimestamp(not_before_ms / 1000, tz=UTC) - SEARCH_SLACK
        base = f"{config.base_url}/projects/{config.project_code}/process-instances"
        for page in range(1, MAX_PAGES + 1):
            params = {
                "processDefineCode": config.process_definition_code,
                "pageNo": page,
                "pageSize": PAGE_SIZE,
                "startDate": since.strftime("%Y-%m-%d %H:%M:%S"),
            }
            data = self._data(ask(self._session, "GET", base, config.timeout_seconds, params=params, headers=headers))
            instances = data.get("totalList") if isinstance(data, dict) else None
            if not isinstance(instances, list):
                raise TargetUnavailableError("process-instances answered without totalList")
            for instance in instances:
                if isinstance(instance, dict) and self._instance_carries(instance, trigger_key, base, config, headers):
                    return f"process-instance/{instance.get('id')}"
            total_pages = data.get("totalPage") if isinstance(data, dict) else None
            if not instances or (isinstance(total_pages, int) and page >= total_pages):
                return None
        raise TargetUnavailableError(f"more than {MAX_PAGES * PAGE_SIZE} instances to search; narrow settleSeconds")

    def _instance_carries(
        self,
        instance: dict[str, Any],
        trigger_key: str,
        base: str,
        config: DolphinSchedulerTarget,
        headers: dict[str, str],
    ) -> bool:
        fields = [instance.get("commandParam"), instance.get("globalParams")]
        if all(f is None for f in fields) and instance.get("id") is not None:
            detail = self._data(
                ask(self._session, "GET", f"{base}/{instance['id']}", config.timeout_seconds, headers=headers)
            )
            if isinstance(detail, dict):
                fields = [detail.get("commandParam"), detail.get("globalParams")]
        return any(carries_key(f, trigger_key) for f in fields if f is not None)

    @staticmethod
    def _data(answer: requests.Response) -> Any:
        if answer.status_code != 200:
            raise TargetUnavailableError(f"DolphinScheduler answered HTTP {answer.status_code}")
        result = json_or_none(answer)
        if not isinstance(result, dict) or result.get("code") != 0:
            code = result.get("code") if isinstance(result, dict) else None
            raise TargetUnavailableError(f"DolphinScheduler answered code {code}")
        return result.get("data")
