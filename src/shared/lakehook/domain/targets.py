"""Target configurations: where a rule's run starts, one model per target type.

A rule keeps ``target`` as a JSON object with a ``type``; :func:`validate_target` checks it against
that type's model (unknown fields refused), so ``PUT /rules/{ruleId}`` can refuse a bad target before
anything is claimed. The clients that start runs are plug-ins in ``lakehook.adapters.targets``.

Adding a target type: one model here (and its entry in :data:`TARGET_CONFIGS` and :data:`TargetConfig`),
one client module and one registry entry in ``lakehook.adapters.targets``.

Credentials are never part of a config, only references to secrets (``secretRef``, ``credentialsRef``,
``tokenRef``): names in the secret store, read by the dispatcher when it starts a run.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import ValidationError

MAX_TIMEOUT_SECONDS = 30.0
DEFAULT_TIMEOUT_SECONDS = 10.0
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
# Secrets Manager names: letters, digits and /_+=.@- (up to 512 characters).
SECRET_REF_PATTERN = r"^[A-Za-z0-9/_+=.@-]{1,512}$"
STATE_MACHINE_ARN_PATTERN = r"^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}$"
# A function name, name:qualifier, or (partial) ARN, as Lambda's Invoke accepts it.
FUNCTION_NAME_PATTERN = (
    r"^(arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:)?[A-Za-z0-9_-]{1,140}(:[A-Za-z0-9$_-]{1,128})?$"
)
EVENT_BUS_PATTERN = r"^(arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus/)?[A-Za-z0-9._/-]{1,256}$"
DAG_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,250}$"


class InvalidTargetError(ValidationError, ValueError):
    """A rule's target does not match its type's schema."""


def is_loopback_host(host: str | None) -> bool:
    """Whether the host is this machine: ``localhost`` or a loopback address."""
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_target_url(url: str) -> str:
    """An absolute https URL, or http to a loopback host (local mode decides at dispatch); no credentials."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("must be an absolute https:// URL")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials; put them in the secret store and reference them")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ValueError("plain http is allowed only to a loopback host (local mode); use https")
    if any(c.isspace() for c in url) or parts.fragment:
        raise ValueError("must not contain spaces or a #fragment")
    return url


class _Target(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    def to_api(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


class WebhookTarget(_Target):
    """POST of the invocation payload, HMAC-signed, with ``Idempotency-Key: <trigger key>``.

    The receiver must answer 409 (or repeat its first 2xx answer) for a key it has seen: that is
    what makes a retry after a timeout safe.
    """

    type: Literal["webhook"]
    url: str = Field(max_length=2048)
    secret_ref: str = Field(alias="secretRef", pattern=SECRET_REF_PATTERN, description="signing secret, by name")
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_target_url(value)


class StepFunctionsTarget(_Target):
    """``StartExecution`` on a STANDARD state machine, the execution named after the trigger key."""

    type: Literal["stepfunctions"]
    state_machine_arn: str = Field(alias="stateMachineArn", pattern=STATE_MACHINE_ARN_PATTERN)


class LambdaTarget(_Target):
    """An asynchronous (``Event``) invoke; the consumer deduplicates on ``triggerKey``."""

    type: Literal["lambda"]
    function_name: str = Field(alias="functionName", pattern=FUNCTION_NAME_PATTERN)
    qualifier: str | None = Field(default=None, pattern=r"^[A-Za-z0-9$_-]{1,128}$")


class EventBridgeTarget(_Target):
    """``PutEvents`` to a named bus; the detail is the invocation payload (consumers deduplicate on it)."""

    type: Literal["eventbridge"]
    event_bus_name: str = Field(alias="eventBusName", pattern=EVENT_BUS_PATTERN)
    source: str = Field(default="lakehook", min_length=1, max_length=256, pattern=r"^[A-Za-z0-9._-]+$")
    detail_type: str = Field(default="lakehook.trigger", alias="detailType", min_length=1, max_length=128)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("sources starting with 'aws.' are reserved for AWS services")
        return value


class AirflowTarget(_Target):
    """Airflow 3 REST: a DAG run whose ``dag_run_id`` is derived from the trigger key.

    ``credentialsRef`` names a secret holding JSON ``{"username": ..., "password": ...}`` (a token is
    fetched from ``POST /auth/token``) or ``{"token": ...}`` (a token issued beforehand).
    """

    type: Literal["airflow"]
    base_url: str = Field(
        alias="baseUrl", max_length=2048, description="the API server, e.g. https://airflow.example.com"
    )
    dag_id: str = Field(alias="dagId", pattern=DAG_ID_PATTERN)
    credentials_ref: str = Field(alias="credentialsRef", pattern=SECRET_REF_PATTERN)
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_target_url(value).rstrip("/")


class DolphinSchedulerTarget(_Target):
    """DolphinScheduler's ``start-process-instance``: the key and inputs travel as start parameters.

    ``baseUrl`` includes the context path (``https://ds.example.com/dolphinscheduler``); ``tokenRef``
    names a secret holding an access token (sent as the ``token`` header).
    """

    type: Literal["dolphinscheduler"]
    base_url: str = Field(alias="baseUrl", max_length=2048)
    project_code: int = Field(alias="projectCode", gt=0)
    process_definition_code: int = Field(alias="processDefinitionCode", gt=0)
    token_ref: str = Field(alias="tokenRef", pattern=SECRET_REF_PATTERN)
    worker_group: str = Field(default="default", alias="workerGroup", min_length=1, max_length=256)
    tenant_code: str | None = Field(default=None, alias="tenantCode", max_length=256)
    environment_code: int | None = Field(default=None, alias="environmentCode")
    failure_strategy: Literal["CONTINUE", "END"] = Field(default="CONTINUE", alias="failureStrategy")
    warning_type: Literal["NONE", "SUCCESS", "FAILURE", "ALL"] = Field(default="NONE", alias="warningType")
    priority: Literal["HIGHEST", "HIGH", "MEDIUM", "LOW", "LOWEST"] = "MEDIUM"
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )
    settle_seconds: int = Field(
        default=120,
        alias="settleSeconds",
        ge=0,
        le=3600,
        description="how long a started command may take to appear as a process instance; no retry before",
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_target_url(value).rstrip("/")


TargetConfig = Annotated[
    WebhookTarget | StepFunctionsTarget | LambdaTarget | EventBridgeTarget | AirflowTarget | DolphinSchedulerTarget,
    Field(discriminator="type"),
]
"""Any target's configuration, discriminated by ``type`` (what a rule's ``target`` parses into)."""

TARGET_CONFIGS: dict[str, type[_Target]] = {
    "webhook": WebhookTarget,
    "stepfunctions": StepFunctionsTarget,
    "lambda": LambdaTarget,
    "eventbridge": EventBridgeTarget,
    "airflow": AirflowTarget,
    "dolphinscheduler": DolphinSchedulerTarget,
}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def validate_target(config: dict[str, Any]) -> TargetConfig:
    """The typed configuration of a rule's ``target``; raises InvalidTargetError naming the field.

    InvalidTargetError is a ValueError, so a pydantic validator (the rule's) may call this directly.
    """
    if not isinstance(config, dict):
        raise InvalidTargetError("target must be an object with a 'type'", field="target")
    kind = config.get("type")
    model = TARGET_CONFIGS.get(kind) if isinstance(kind, str) and _NAME.match(kind) else None
    if model is None:
        known = ", ".join(sorted(TARGET_CONFIGS))
        raise InvalidTargetError(f"target.type must be one of {known}, got {kind!r}", field="target.type")
    try:
        return model.model_validate(config)  # type: ignore[return-value]
    except PydanticValidationError as exc:
        problems = []
        first: str | None = None
        for error in exc.errors():
            where = ".".join(str(p) for p in ("target", *error["loc"]))
            first = first or where
            problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
        raise InvalidTargetError("; ".join(problems), field=first) from exc
