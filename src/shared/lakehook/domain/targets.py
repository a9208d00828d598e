"""Target configurations: where a rule's run starts, one model per target type.

A rule's ``target`` is a JSON object whose ``type`` picks its model (:data:`RuleTarget`, a discriminated
union; unknown fields refused), so ``PUT /rules/{ruleId}`` refuses a bad target, naming the field, before
anything is claimed. URLs are checked against the stack's outbound policy (:mod:`lakehook.domain.url_policy`),
passed in the validation context by the write path (:func:`write_context`). The clients that start runs
are plug-ins in ``lakehook.adapters.targets``.

Adding a target type: one model here (and its entry in :data:`TARGET_CONFIGS` and :data:`TargetConfig`),
one client module and one registry entry in ``lakehook.adapters.targets``.

Credentials are never part of a config, only references to secrets (``secretRef``, ``credentialsRef``,
``tokenRef``, see :func:`secret_refs`): names (or ARNs) in the secret store, resolved by the one naming rule
of :class:`lakehook.domain.secret_names.SecretNames` (relative to the stack's prefix unless they start with
it), which must exist when the rule is written, read by the dispatcher when it starts a run.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    TypeAdapter,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic.json_schema import SkipJsonSchema

from lakehook.domain.errors import ValidationError
from lakehook.domain.secret_names import SECRET_REF_PATTERN
from lakehook.domain.url_policy import UrlPolicy, UrlRefusedError, parse_networks

SECRET_REF_WORDS = (
    "a secret's name, under the stack's prefix lakehook/<stack>/ unless it already starts with it, or its ARN"
)
MAX_TIMEOUT_SECONDS = 30.0
DEFAULT_TIMEOUT_SECONDS = 10.0
STATE_MACHINE_ARN_PATTERN = r"^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}$"
# A function name, name:qualifier, or (partial) ARN, as Lambda's Invoke accepts it.
FUNCTION_NAME_PATTERN = (
    r"^(arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:)?[A-Za-z0-9_-]{1,140}(:[A-Za-z0-9$_-]{1,128})?$"
)
EVENT_BUS_PATTERN = r"^(arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus/)?[A-Za-z0-9._/-]{1,256}$"
DAG_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,250}$"
# A Glue job's name as lakehook accepts it (Glue allows more; these are the characters an IAM ARN scopes plainly).
GLUE_JOB_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,255}$"
# A Glue job argument lakehook passes on: ``--name`` (the names a Glue script reads with getResolvedOptions).
GLUE_ARGUMENT_PATTERN = r"^--[A-Za-z0-9_.-]{1,126}$"
RESERVED_ARGUMENT_PREFIX = "--lakehook_"
MAX_GLUE_ARGUMENTS = 50
MAX_GLUE_ARGUMENT_VALUE = 4096
EMR_APPLICATION_ID_PATTERN = r"^[0-9a-z]{1,64}$"
BATCH_NAME = r"[A-Za-z0-9_-]{1,128}"
BATCH_QUEUE_PATTERN = rf"^(arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{{12}}:job-queue/)?{BATCH_NAME}$"
BATCH_DEFINITION_PATTERN = (
    rf"^(arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{{12}}:job-definition/)?{BATCH_NAME}(:[1-9]\d{{0,8}})?$"
)
ECS_NAME = r"[A-Za-z0-9_-]{1,255}"
ECS_CLUSTER_PATTERN = rf"^(arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{{12}}:cluster/)?{ECS_NAME}$"
ECS_TASK_DEFINITION_PATTERN = (
    rf"^(arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{{12}}:task-definition/)?{ECS_NAME}(:[1-9]\d{{0,8}})?$"
)
ROLE_ARN_PATTERN = r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"

# Validation context keys (``Model.model_validate(data, context=...)``): the write path passes the stack's
# URL policy; the read path of stored rules says so, and keeps a target that no longer validates.
_POLICY = "lakehook.urlPolicy"
_STORED = "lakehook.stored"
STORED_CONTEXT: dict[str, Any] = {_STORED: True}


def is_stored(context: object) -> bool:
    """Whether a validation context is the read path of stored rules (checks added later do not apply there)."""
    return isinstance(context, dict) and bool(context.get(_STORED))


_EVERY_NETWORK = parse_networks(["0.0.0.0/0", "::/0"])


def write_context(policy: UrlPolicy) -> dict[str, Any]:
    """The validation context of a write: target URLs are checked against ``policy``."""
    return {_POLICY: policy}


class InvalidTargetError(ValidationError, ValueError):
    """A rule's target does not match its type's schema."""


def check_target_url(url: str, policy: UrlPolicy | None = None) -> str:
    """The URL if ``policy`` allows it (see :mod:`lakehook.domain.url_policy`).

    Without a policy (a stored rule read back) only its form is checked: an absolute https URL, or http
    to a loopback host, without credentials; the stack's policy applies when it is written and dialled.
    """
    try:
        if policy is not None:
            return policy.check_url(url)
        return UrlPolicy(local_mode=True, allowed_networks=_EVERY_NETWORK).check_url(url)
    except UrlRefusedError as exc:
        raise ValueError(str(exc)) from exc


def _policy(info: ValidationInfo) -> UrlPolicy | None:
    context = info.context if isinstance(info.context, dict) else {}
    found = context.get(_POLICY)
    return found if isinstance(found, UrlPolicy) else None


class _Target(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class WebhookTarget(_Target):
    """POST of the invocation payload, HMAC-signed, with ``Idempotency-Key: <trigger key>``.

    The receiver must answer 409 (or repeat its first 2xx answer) for a key it has seen: that is
    what makes a retry after a timeout safe.
    """

    type: Literal["webhook"]
    url: str = Field(max_length=2048)
    secret_ref: str = Field(
        alias="secretRef", pattern=SECRET_REF_PATTERN, description=f"signing secret, {SECRET_REF_WORDS}"
    )
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        return check_target_url(value, _policy(info))


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
    credentials_ref: str = Field(alias="credentialsRef", pattern=SECRET_REF_PATTERN, description=SECRET_REF_WORDS)
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )
    dag_not_found_retry_seconds: int = Field(
        default=600,
        alias="dagNotFoundRetrySeconds",
        ge=0,
        le=86_400,
        description="how long Airflow's 404 for the DAG (being deployed, or failing to import) is retried "
        "after it was first seen, before the trigger is FAILED FINAL (0: at once)",
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        return check_target_url(value, _policy(info)).rstrip("/")


class DolphinSchedulerTarget(_Target):
    """DolphinScheduler's ``start-process-instance`` (3.2) or ``start-workflow-instance`` (3.3): the key
    and inputs travel as start parameters.

    ``baseUrl`` includes the context path (``https://ds.example.com/dolphinscheduler``); ``tokenRef``
    names a secret holding an access token (sent as the ``token`` header). ``apiVersion`` picks the API:
    ``auto`` tries 3.3's endpoint and falls back to 3.2's when it is not there (HTTP 404), remembered per
    ``baseUrl``.
    """

    type: Literal["dolphinscheduler"]
    base_url: str = Field(alias="baseUrl", max_length=2048)
    project_code: int = Field(alias="projectCode", gt=0)
    process_definition_code: int = Field(alias="processDefinitionCode", gt=0)
    token_ref: str = Field(alias="tokenRef", pattern=SECRET_REF_PATTERN, description=SECRET_REF_WORDS)
    worker_group: str = Field(default="default", alias="workerGroup", min_length=1, max_length=256)
    tenant_code: str | None = Field(default=None, alias="tenantCode", max_length=256)
    environment_code: int | None = Field(default=None, alias="environmentCode")
    failure_strategy: Literal["CONTINUE", "END"] = Field(default="CONTINUE", alias="failureStrategy")
    warning_type: Literal["NONE", "SUCCESS", "FAILURE", "ALL"] = Field(default="NONE", alias="warningType")
    priority: Literal["HIGHEST", "HIGH", "MEDIUM", "LOW", "LOWEST"] = "MEDIUM"
    api_version: Literal["auto", "3.2", "3.3"] = Field(
        default="auto",
        alias="apiVersion",
        description="3.2: start-process-instance; 3.3: start-workflow-instance; auto: 3.3's, else 3.2's on 404",
    )
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
    def _url(cls, value: str, info: ValidationInfo) -> str:
        return check_target_url(value, _policy(info)).rstrip("/")


class GlueJobTarget(_Target):
    """AWS Glue ``StartJobRun``: the key and the payload travel as job arguments (``--lakehook_trigger_key``,
    ``--lakehook_payload``). Glue has no idempotency token, so a retry is preceded by ``GetJobRuns``."""

    type: Literal["glue"]
    job_name: str = Field(alias="jobName", pattern=GLUE_JOB_NAME_PATTERN)
    arguments: dict[str, str] | None = Field(
        default=None,
        description=f"extra job arguments (at most {MAX_GLUE_ARGUMENTS}), each name '--' and letters, digits, "
        f"'_', '.', '-', none starting with {RESERVED_ARGUMENT_PREFIX!r}",
    )

    @field_validator("arguments")
    @classmethod
    def _arguments(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if len(value) > MAX_GLUE_ARGUMENTS:
            raise ValueError(f"at most {MAX_GLUE_ARGUMENTS} arguments, got {len(value)}")
        for name, given in value.items():
            if not re.fullmatch(GLUE_ARGUMENT_PATTERN, name):
                raise ValueError(f"argument {name!r} must match {GLUE_ARGUMENT_PATTERN}")
            if name.startswith(RESERVED_ARGUMENT_PREFIX):
                raise ValueError(f"argument {name!r}: names starting with {RESERVED_ARGUMENT_PREFIX!r} are lakehook's")
            if len(given) > MAX_GLUE_ARGUMENT_VALUE:
                raise ValueError(f"argument {name!r}: at most {MAX_GLUE_ARGUMENT_VALUE} characters")
        return value


class SparkSubmit(BaseModel):
    """An EMR Serverless Spark job: its entry point, arguments and ``spark-submit`` parameters, as the API has them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    entry_point: str = Field(alias="entryPoint", min_length=1, max_length=4096, description="e.g. s3://code/job.py")
    entry_point_arguments: list[str] | None = Field(
        default=None, alias="entryPointArguments", max_length=100, description="lakehook's two pairs follow these"
    )
    spark_submit_parameters: str | None = Field(
        default=None, alias="sparkSubmitParameters", min_length=1, max_length=102_400
    )


class EmrJobDriver(BaseModel):
    """The job driver: a Spark job (Hive's has no arguments to carry the payload, so it is not taken)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    spark_submit: SparkSubmit = Field(alias="sparkSubmit")


class EmrServerlessTarget(_Target):
    """EMR Serverless ``StartJobRun`` on an application with ``clientToken`` derived from the trigger key; the key and
    the payload follow the Spark job's entry point arguments. Before a retry ``ListJobRuns`` is looked through."""

    type: Literal["emrserverless"]
    application_id: str = Field(alias="applicationId", pattern=EMR_APPLICATION_ID_PATTERN)
    execution_role_arn: str = Field(alias="executionRoleArn", pattern=ROLE_ARN_PATTERN)
    job_driver: EmrJobDriver = Field(alias="jobDriver")
    execution_timeout_minutes: int | None = Field(
        default=None, alias="executionTimeoutMinutes", ge=5, le=1_000_000, description="EMR Serverless' default: 720"
    )


class BatchJobTarget(_Target):
    """AWS Batch ``SubmitJob`` of a container job: the key and the payload as environment variables of its container.
    Batch has no idempotency token, so a retry is preceded by ``ListJobs`` of the queue for the key-derived name."""

    type: Literal["batch"]
    job_queue: str = Field(alias="jobQueue", pattern=BATCH_QUEUE_PATTERN, description="the queue's name or ARN")
    job_definition: str = Field(
        alias="jobDefinition", pattern=BATCH_DEFINITION_PATTERN, description="name, name:revision or ARN"
    )


class AwsVpcConfiguration(BaseModel):
    """Where an ``awsvpc`` task's network interface goes (Fargate tasks need one), as ECS's API takes it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    subnets: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]] = Field(min_length=1, max_length=16)
    security_groups: list[Annotated[str, Field(pattern=r"^sg-[0-9a-f]{8,17}$")]] | None = Field(
        default=None, alias="securityGroups", max_length=5
    )
    assign_public_ip: Literal["ENABLED", "DISABLED"] = Field(default="DISABLED", alias="assignPublicIp")


class EcsNetworkConfiguration(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    awsvpc_configuration: AwsVpcConfiguration = Field(alias="awsvpcConfiguration")


class EcsTaskTarget(_Target):
    """ECS ``RunTask`` of one task with ``clientToken`` derived from the trigger key; the key and the payload are
    environment overrides of the named container. Before a retry ``ListTasks`` looks for the key-derived
    ``startedBy``."""

    type: Literal["ecs"]
    cluster: str = Field(pattern=ECS_CLUSTER_PATTERN, description="the cluster's name or ARN")
    task_definition: str = Field(
        alias="taskDefinition", pattern=ECS_TASK_DEFINITION_PATTERN, description="family, family:revision or ARN"
    )
    container_name: str = Field(
        alias="containerName", pattern=rf"^{ECS_NAME}$", description="the container that receives the payload"
    )
    launch_type: Literal["FARGATE", "EC2", "EXTERNAL"] | None = Field(default=None, alias="launchType")
    network_configuration: EcsNetworkConfiguration | None = Field(default=None, alias="networkConfiguration")


class DatabricksJobTarget(_Target):
    """Databricks Jobs API 2.1 ``run-now`` of a job: ``idempotency_token`` derived from the trigger key, the key and
    the payload as job parameters (``lakehook_trigger_key``, ``lakehook_payload``). ``tokenRef`` names a secret
    holding a personal access token (or OAuth token) as text, or JSON ``{"token": ...}``."""

    type: Literal["databricks"]
    host: str = Field(max_length=2048, description="the workspace URL, e.g. https://dbc-1234.cloud.databricks.com")
    job_id: StrictInt = Field(alias="jobId", gt=0, le=2**63 - 1, description="the job's id (an integer)")
    token_ref: str = Field(alias="tokenRef", pattern=SECRET_REF_PATTERN, description=SECRET_REF_WORDS)
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_TIMEOUT_SECONDS
    )

    @field_validator("host")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        return check_target_url(value, _policy(info)).rstrip("/")


TargetConfig = Annotated[
    WebhookTarget
    | StepFunctionsTarget
    | LambdaTarget
    | EventBridgeTarget
    | AirflowTarget
    | DolphinSchedulerTarget
    | GlueJobTarget
    | EmrServerlessTarget
    | BatchJobTarget
    | EcsTaskTarget
    | DatabricksJobTarget,
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
    "glue": GlueJobTarget,
    "emrserverless": EmrServerlessTarget,
    "batch": BatchJobTarget,
    "ecs": EcsTaskTarget,
    "databricks": DatabricksJobTarget,
}

_TARGET = TypeAdapter[TargetConfig](TargetConfig)


class UnusableTarget(BaseModel):
    """A stored target that does not validate (written before targets were validated on write, or under a
    policy since narrowed): the rule still loads and shows it as written; dispatch refuses it, FINAL."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: Any = None
    _problem: str = PrivateAttr(default="")

    @classmethod
    def of(cls, raw: dict[str, Any], problem: str) -> UnusableTarget:
        target = cls.model_validate(raw)
        target._problem = problem
        return target

    @property
    def problem(self) -> str:
        """Why it does not validate (``target.<field>: ...``)."""
        return self._problem


def _target_of_rule(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    if isinstance(value, _Target | UnusableTarget):
        return value
    try:
        return _TARGET.validate_python(value, context=info.context)
    except PydanticValidationError as exc:
        if is_stored(info.context) and isinstance(value, dict):
            return UnusableTarget.of(value, describe_target_error(exc))
        raise


RuleTarget = Annotated[TargetConfig | SkipJsonSchema[UnusableTarget], WrapValidator(_target_of_rule)]
"""A rule's ``target``: validated against its type's model (the JSON schema is the discriminated union);
only a stored rule read back may hold an :class:`UnusableTarget`."""


def describe_target_error(exc: PydanticValidationError) -> str:
    """One line naming each bad field as ``target.<field>``."""
    return "; ".join(f"{where}: {message}" for where, message in target_errors(exc))


def target_errors(exc: PydanticValidationError, prefix: tuple[str, ...] = ("target",)) -> list[tuple[str, str]]:
    """(field, message) per error, in the API's camelCase (the union's tag dropped from the location)."""
    return [name_target_error(error, [*prefix, *(str(p) for p in error["loc"])]) for error in exc.errors()]


def name_target_error(error: Any, loc: list[str]) -> tuple[str, str]:
    """The field and message of one pydantic error at ``loc`` (starting ``target``): ``target.url``, not
    ``target.webhook.url``; a missing or unknown ``type`` is named ``target.type``."""
    at = loc.index("target") + 1 if "target" in loc else 0
    if len(loc) > at and loc[at] in TARGET_CONFIGS:
        loc = loc[:at] + loc[at + 1 :]  # the discriminated union puts the tag first
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        loc = [*loc, "type"]
        got = error["input"].get("type") if isinstance(error.get("input"), dict) else None
        message = f"must be one of {', '.join(sorted(TARGET_CONFIGS))}, got {got!r}"
    elif error["type"] == "model_attributes_type" and len(loc) == at:
        message = "must be an object with a 'type'"
    return ".".join(loc), message


def secret_refs(target: TargetConfig) -> dict[str, str]:
    """The secrets a target names, by field (``secretRef`` -> name)."""
    found: dict[str, str] = {}
    for name, field in type(target).model_fields.items():
        value = getattr(target, name)
        if name.endswith("_ref") and isinstance(value, str):
            found[field.alias or name] = value
    return found


def validate_target(config: Any, policy: UrlPolicy | None = None) -> TargetConfig:
    """The typed configuration of a rule's ``target``; raises InvalidTargetError naming the field.

    With a ``policy`` its URLs must satisfy it (the write path); without one only their form is checked.
    InvalidTargetError is a ValueError, so a pydantic validator may call this directly.
    """
    if not isinstance(config, dict):
        raise InvalidTargetError("target must be an object with a 'type'", field="target")
    try:
        return _TARGET.validate_python(config, context=write_context(policy) if policy else None)
    except PydanticValidationError as exc:
        problems = target_errors(exc)
        message = "; ".join(f"{where}: {what}" for where, what in problems)
        raise InvalidTargetError(message, field=problems[0][0] if problems else "target") from exc
