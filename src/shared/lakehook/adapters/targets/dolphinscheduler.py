"""DolphinScheduler target: start a workflow instance with the trigger key among the start parameters.

- Start: ``POST {baseUrl}/projects/{projectCode}/executors/start-workflow-instance`` (3.3) or
  ``.../start-process-instance`` (3.2), form-encoded, header ``token: <access token>``, with the definition
  code (3.3: ``workflowDefinitionCode``, 3.2: ``processDefinitionCode``), ``scheduleTime`` (empty: a plain
  start), ``failureStrategy``, ``warningType``, the priority (3.3: ``workflowInstancePriority``, 3.2:
  ``processInstancePriority``), ``workerGroup``, ``execType=START_PROCESS`` and ``startParams``: a JSON
  object of strings, ``lakehook_trigger_key``, ``lakehook_rule_id``, ``lakehook_group_id``,
  ``lakehook_manifest_uri``, ``lakehook_attempt`` and ``lakehook_payload`` (the whole invocation payload as
  JSON). Declare them as IN global parameters of the workflow to use them in tasks. A replay's choices
  (docs/targets.md): each of its ``variables`` is a start parameter of its own name, and its ``startFrom``, a
  task code, is ``startNodeList`` (with ``taskDependType=TASK_POST``: that task and what follows it run) and
  ``lakehook_start_from``.
- Which API: the target's ``apiVersion``. ``auto`` sends 3.3's request first; a 3.2 server has no such
  path and answers HTTP 404 (nothing started), and then 3.2's is sent. The version that answered is
  remembered per ``baseUrl`` for the client's life (a cached version that answers 404, after an upgrade,
  is tried the other way again).
- Answers: DolphinScheduler wraps results as ``{"code": 0, "msg": "success", "data": ...}``, HTTP 200 even
  for a refusal; a non-zero ``code`` is classified from DolphinScheduler's source
  (:mod:`lakehook.adapters.targets.dolphinscheduler_status`): a wrong definition, project, tenant or
  permission is FATAL, a missing master RETRYABLE, an unexpected start error RETRYABLE and ambiguous. HTTP
  5xx and 429 retry. ``data`` is the new instance ids (3.3: ``[id]``) or the trigger code (3.2); the run id
  is ``workflow-instance/<id>`` (3.3) or ``process-instance/<id>`` (3.2) when known.
- DolphinScheduler has no idempotency key: starting twice starts two instances. So before any retry the
  dispatcher looks (:meth:`find_run`): ``GET {baseUrl}/projects/{projectCode}/workflow-instances``
  (3.3, ``workflowDefinitionCode``) or ``.../process-instances`` (3.2, ``processDefineCode``) for the
  definition, started since the claim (a day of slack for the server's time zone), page by page, and
  each instance's ``commandParam`` / ``globalParams`` (from the list, else from ``GET .../{id}``) is
  searched for ``lakehook_trigger_key``. A start is a command that the master turns into an instance
  asynchronously, so no look happens before ``settleSeconds`` after the previous attempt (the dispatcher
  waits instead of re-sending).
- Run status (:meth:`run_state`, for ``maxInFlight``): ``GET {baseUrl}/projects/{projectCode}/workflow-instances/{id}``
  (3.3) or ``.../process-instances/{id}`` (3.2), the instance's ``state``: queued or running until DolphinScheduler
  counts it finished (SUCCESS, FAILURE, STOP, PAUSE; :mod:`lakehook.adapters.targets.dolphinscheduler_status`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import requests

from lakehook.adapters.targets.deps import CachedSecrets, TargetDeps
from lakehook.adapters.targets.dolphinscheduler_status import INSTANCE_NOT_EXIST, classify_start_code, run_state_word
from lakehook.adapters.targets.http import ask, json_or_none, refuse_insecure, send, transport_outcome
from lakehook.domain.dispatch import Invocation, Outcome, OutcomeKind, TargetUnavailableError, http_outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import DolphinSchedulerTarget, TargetConfig
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import RunState
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.dispatch import TargetClient

KEY_PARAM = "lakehook_trigger_key"
PAGE_SIZE = 50
MAX_PAGES = 20
SEARCH_SLACK = timedelta(days=1)


@dataclass(frozen=True)
class ApiVersion:
    """The paths and parameter names of one DolphinScheduler API version."""

    name: str
    start_path: str
    definition_param: str
    priority_param: str
    instances_path: str
    list_definition_param: str
    run_prefix: str


V3_3 = ApiVersion(  # dev ExecutorController line 130, WorkflowInstanceController line 70
    "3.3",
    "executors/start-workflow-instance",
    "workflowDefinitionCode",
    "workflowInstancePriority",
    "workflow-instances",
    "workflowDefinitionCode",
    "workflow-instance",
)
V3_2 = ApiVersion(  # 3.2.2 ExecutorController line 134, ProcessInstanceController line 70
    "3.2",
    "executors/start-process-instance",
    "processDefinitionCode",
    "processInstancePriority",
    "process-instances",
    "processDefineCode",
    "process-instance",
)
VERSIONS = {v.name: v for v in (V3_3, V3_2)}
START_FROM_PARAM = "lakehook_start_from"


def start_params(invocation: Invocation) -> dict[str, str]:
    """The start parameters (DolphinScheduler takes a JSON object of strings). A replay's ``variables`` are start
    parameters of their own names, overriding the workflow's global parameters of those names (a string as it is,
    any other scalar as JSON); its ``startFrom`` (a task code) is ``lakehook_start_from`` too."""
    payload = invocation.payload()
    chosen = invocation.variables or {}
    variables = {name: value if isinstance(value, str) else json.dumps(value) for name, value in chosen.items()}
    if invocation.start_from is not None:
        variables[START_FROM_PARAM] = invocation.start_from
    return {
        **variables,  # names never start with lakehook_ (domain.replay_choices): ours below cannot be overridden
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


def _run_id(data: Any, trigger_key: str, api: ApiVersion) -> str:
    if isinstance(data, list) and data and isinstance(data[0], int) and not isinstance(data[0], bool):
        return f"{api.run_prefix}/{data[0]}"
    if isinstance(data, int) and not isinstance(data, bool):
        return f"trigger/{data}"
    return trigger_key


class DolphinSchedulerTargetClient(TargetClient):
    """Workflow (3.3) or process (3.2) instances through DolphinScheduler's REST API."""

    type_name: ClassVar[str] = "dolphinscheduler"
    payload_limit: ClassVar[int] = 32 * 1024  # the start parameters are kept in one TEXT column (64 KiB on MySQL)
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
        self._detected: dict[str, ApiVersion] = {}  # baseUrl -> the version that answered (apiVersion auto)

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
            return Outcome.fatal(f"token (tokenRef): {exc}", "secret_missing")

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        assert isinstance(config, DolphinSchedulerTarget)
        refused = refuse_insecure(config.base_url, self._policy)
        if refused is not None:
            return refused
        headers = self._headers(config)
        if isinstance(headers, Outcome):
            return headers
        form: dict[str, Any] = {
            "scheduleTime": "",
            "failureStrategy": config.failure_strategy,
            "warningType": config.warning_type,
            "workerGroup": config.worker_group,
            "execType": "START_PROCESS",
            "taskDependType": "TASK_POST",
            "startParams": json.dumps(start_params(invocation), separators=(",", ":")),
            "dryRun": 0,
        }
        if invocation.start_from is not None:  # a task code (checked when the replay was asked for)
            form["startNodeList"] = invocation.start_from
        if config.tenant_code:
            form["tenantCode"] = config.tenant_code
        if config.environment_code is not None:
            form["environmentCode"] = config.environment_code

        def start_with(api: ApiVersion) -> requests.Response:
            named = {api.definition_param: config.process_definition_code, api.priority_param: config.priority}
            url = f"{config.base_url}/projects/{config.project_code}/{api.start_path}"
            return send(self._session, "POST", url, config.timeout_seconds, data={**form, **named}, headers=headers)

        try:
            api, answer = self._negotiated(config, start_with)
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
        code = result.get("code")
        if code != 0:
            message = str(result.get("msg"))
            refusal = classify_start_code(code, message)
            reason = f"DolphinScheduler {api.name} refused: code {code}: {message} ({refusal.meaning})"
            if refusal.retryable:
                return Outcome.retryable(reason, f"ds_{code}", ambiguous=refusal.ambiguous)
            return Outcome.fatal(reason, f"ds_{code}")
        return Outcome.started(_run_id(result.get("data"), invocation.trigger_key, api))

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """The instance's state as ``GET .../workflow-instances/{id}`` (3.3) or ``.../process-instances/{id}`` (3.2)
        answers it, in run-state words (:func:`run_state_word`; ``detail`` names DolphinScheduler's own): a rule's
        ``maxInFlight`` frees the slot of an instance that ended without reporting it. None for an instance the
        server does not have, and for a 3.2 start whose instance is not known yet (``trigger/<code>``: a queued
        command, which the run id names until a look-up finds its instance)."""
        assert isinstance(config, DolphinSchedulerTarget)
        prefix, _, instance = run_id.partition("/")
        api = next((v for v in VERSIONS.values() if v.run_prefix == prefix), None)
        if api is None or not instance.isdigit():
            return None
        if refuse_insecure(config.base_url, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")
        headers = self._headers(config)
        if isinstance(headers, Outcome):
            raise TargetUnavailableError(headers.reason or "no token")
        url = f"{config.base_url}/projects/{config.project_code}/{api.instances_path}/{instance}"
        answer = ask(self._session, "GET", url, config.timeout_seconds, headers=headers)
        result = json_or_none(answer)
        if answer.status_code == 200 and isinstance(result, dict) and result.get("code") == INSTANCE_NOT_EXIST:
            return None
        data = self._data(answer)
        state = data.get("state") if isinstance(data, dict) else None
        if not isinstance(state, str) or not state:
            raise TargetUnavailableError(f"{api.instances_path}/{instance} answered without a state")
        return RunState(state=run_state_word(state), detail=f"DolphinScheduler state {state}", checked_at=now_ms())

    def _negotiated(
        self, config: DolphinSchedulerTarget, call: Callable[[ApiVersion], requests.Response]
    ) -> tuple[ApiVersion, requests.Response]:
        """``call`` with the target's API version; with ``auto``, the remembered one (else 3.3) first and
        the other on HTTP 404, the only answer that says the path is not there (so nothing was started)."""
        if config.api_version != "auto":
            api = VERSIONS[config.api_version]
            return api, call(api)
        first = self._detected.get(config.base_url, V3_3)
        order = [first, V3_2 if first is V3_3 else V3_3]
        for api in order:
            answer = call(api)
            if answer.status_code == 404 and api is not order[-1]:
                continue
            if answer.status_code != 404 and isinstance(json_or_none(answer), dict):
                self._detected[config.base_url] = api  # a DolphinScheduler answer: this version is there
            return api, answer
        raise AssertionError("unreachable: the last version's answer is returned")

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        assert isinstance(config, DolphinSchedulerTarget)
        if refuse_insecure(config.base_url, self._policy) is not None:
            raise TargetUnavailableError("the target's URL is not allowed")
        headers = self._headers(config)
        if isinstance(headers, Outcome):
            raise TargetUnavailableError(headers.reason or "no token")
        since = datetime.fromtimestamp(not_before_ms / 1000, tz=UTC) - SEARCH_SLACK

        def page_of(api: ApiVersion, page: int) -> requests.Response:
            params = {
                api.list_definition_param: config.process_definition_code,
                "pageNo": page,
                "pageSize": PAGE_SIZE,
                "startDate": since.strftime("%Y-%m-%d %H:%M:%S"),
            }
            url = f"{config.base_url}/projects/{config.project_code}/{api.instances_path}"
            return ask(self._session, "GET", url, config.timeout_seconds, params=params, headers=headers)

        api, first = self._negotiated(config, lambda api: page_of(api, 1))
        base = f"{config.base_url}/projects/{config.project_code}/{api.instances_path}"
        for page in range(1, MAX_PAGES + 1):
            data = self._data(first if page == 1 else page_of(api, page))
            instances = _listed_instances(data, api)
            found = self._carrying(instances, trigger_key, base, config, headers)
            if found is not None:
                return f"{api.run_prefix}/{found.get('id')}"
            if _last_page(data, instances, page):
                return None
        raise TargetUnavailableError(f"more than {MAX_PAGES * PAGE_SIZE} instances to search; narrow settleSeconds")

    def _carrying(
        self,
        instances: list[Any],
        trigger_key: str,
        base: str,
        config: DolphinSchedulerTarget,
        headers: dict[str, str],
    ) -> dict[str, Any] | None:
        """The first instance of a page whose parameters carry the trigger key, if any."""
        for instance in instances:
            if isinstance(instance, dict) and self._instance_carries(instance, trigger_key, base, config, headers):
                return instance
        return None

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


def _listed_instances(data: Any, api: ApiVersion) -> list[Any]:
    """A page's process instances (``totalList``); TargetUnavailableError when the answer has none."""
    instances = data.get("totalList") if isinstance(data, dict) else None
    if not isinstance(instances, list):
        raise TargetUnavailableError(f"{api.instances_path} answered without totalList")
    return instances


def _last_page(data: Any, instances: list[Any], page: int) -> bool:
    """Whether no page follows: this one is empty or the last of ``totalPage``."""
    total_pages = data.get("totalPage") if isinstance(data, dict) else None
    return not instances or (isinstance(total_pages, int) and page >= total_pages)
