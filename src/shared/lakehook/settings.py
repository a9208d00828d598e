"""Settings: the one place that reads the environment (prefix ``LAKEHOOK_``).

A plain pydantic model that reads the environment as pydantic-settings' ``BaseSettings`` did for these
fields (every one a scalar): ``LAKEHOOK_<FIELD>``, matched case-insensitively, its string value validated
like any input; keyword arguments win over the environment, the environment over the defaults, and the
defaults are validated too. pydantic-settings is not used: importing it (its sources for dotenv, secrets,
CLI, cloud vaults) cost every function about a third of what its own code took at import (docs/packaging.md).
"""

from __future__ import annotations

import os
from functools import cached_property, lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.notice_state import PollCadence, stack_cadence
from lakehook.domain.secret_names import ProducerSecrets, SecretNames
from lakehook.domain.spool_buckets import ReadableSpool, bucket_names
from lakehook.domain.url_policy import UrlPolicy, parse_networks

ENV_PREFIX = "LAKEHOOK_"


def _from_environment(fields: Any) -> dict[str, str]:
    """The fields set in the environment (``LAKEHOOK_<FIELD>``, any case), as their raw strings."""
    prefix = ENV_PREFIX.lower()
    found = {key.lower(): value for key, value in os.environ.items() if key.lower().startswith(prefix)}
    return {name: found[prefix + name.lower()] for name in fields if prefix + name.lower() in found}


class Settings(BaseModel):
    """Everything a function or the local runtime is configured with."""

    model_config = ConfigDict(extra="ignore", validate_default=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**_from_environment(type(self).model_fields), **values})

    table_name: str = Field(default="lakehook", description="the single DynamoDB table")
    bucket_name: str = Field(default="lakehook-manifests", description="bucket for run and spool manifests")
    region: str = Field(default="us-east-1")
    endpoint_url: str | None = Field(default=None, description="AWS endpoint override (the local moto server)")
    admin_token: str | None = Field(
        default=None, description="local mode: management routes take 'Authorization: Bearer <token>'"
    )
    event_retention_days: int = Field(default=30, ge=1, le=3650, description="raw events expire by TTL after this")
    signature_tolerance_seconds: int = Field(default=300, ge=1)
    max_body_bytes: int = Field(default=1024 * 1024)
    max_events_per_push: int = Field(default=100, ge=1, le=1000)
    producer_cache_seconds: float = Field(
        default=30.0,
        ge=0,
        description="how long a producer's secret is cached per process; a rotation through lakehook applies at "
        "once (the producer's secretVersion is read on every request), a secret edited in Secrets Manager "
        "directly within this time",
    )
    producer_registration_seconds: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="how long a warm function keeps a producer's registration it read (its prefixes and secret "
        "version): a push then reads nothing, and a prefix change, a rotation's end of the old secret or a "
        "deletion applies within this time (a rotation's new secret at once); 0 reads it on every request",
    )
    completion_key_secret: str | None = Field(
        default=None,
        description="the secret (name or ARN) holding the key completion tokens are made with; "
        "unset: invocations carry no completion token",
    )
    secret_prefix: str = Field(
        default="lakehook/",
        description="Secrets Manager name prefix of the secrets targets and asset sources name (lakehook/<stack>/)",
    )
    producer_secret_prefix: str = Field(
        default="lakehook-producers/",
        description="Secrets Manager name prefix of producer signing secrets (lakehook-producers/<stack>/): "
        "only the producer routes use it, no target or asset source may name a secret under it",
    )
    coverage_per_partition: bool = Field(
        default=True,
        description="keep each INTERVAL_COVERED event's interval under its partitionKey too (CoveragePerPartition), "
        "so GET /assets/coverage?partitionKey= answers that partition's coverage; false: the key is a label only",
    )
    compensation_grace_seconds: float = Field(
        default=300.0,
        ge=0,
        le=86_400,
        description="the scheduled compensation leaves a snapshot younger than this to the poll (every minute): "
        "only one that push and poll both missed is recorded as COMPENSATION and counted as missed",
    )
    poll_interval_seconds: int = Field(
        default=60,
        description="how often the schedule polls a table whose commit notices do not arrive, unless its "
        "registration says (PollIntervalSeconds; whole minutes)",
    )
    notice_safety_net_seconds: int = Field(
        default=3_600,
        description="how often the schedule polls a table whose commit notices arrive (NoticeSafetyNetSeconds)",
    )
    notice_quiet_seconds: int = Field(
        default=86_400,
        description="a table with no commit notice for this long falls back to its fast poll (NoticeQuietSeconds)",
    )
    poll_snapshot_limit: int = Field(
        default=500,
        ge=1,
        le=10_000,
        description="the most snapshots one poll of one table ingests; the rest follow on its next poll "
        "(PollSnapshotLimit)",
    )
    poll_tables_per_message: int = Field(
        default=10,
        ge=1,
        le=100,
        description="how many tables the poll planner puts in one poll message, polled by one worker invocation "
        "(PollTablesPerMessage)",
    )
    push_enabled: bool = Field(
        default=True,
        description="whether POST /asset-events takes pushed events (PushReceiver); false: it answers 403 and "
        "events come by polling, the event bus and lineage only",
    )
    unbound_iam_identity: str = Field(
        default="AUTO",
        pattern="^(AUTO|ADMIN|READ_ONLY|DENY)$",
        description="what an IAM identity with no role binding may do (UnboundIamIdentity): AUTO is ADMIN while the "
        "table holds no role binding and refused once one exists; ADMIN, READ_ONLY, or DENY",
    )
    stage: str = Field(default="local")
    poll_queue_url: str | None = Field(default=None, description="SQS queue the poll planner fills for the workers")
    resolver_queue_url: str | None = Field(
        default=None, description="SQS queue of the resolver's work past one invocation's bound (resolve_continue.py)"
    )
    spool_verify_queue_url: str | None = Field(
        default=None, description="SQS queue of pushed MANIFEST_SEALED events for the spool verifier"
    )
    warehouse_bucket_name: str | None = Field(
        default=None, description="the warehouse bucket (WarehouseBucketName): the spool verifier may read it"
    )
    spool_bucket_arns: str = Field(
        default="",
        description="comma-separated ARNs of the other buckets the spool verifier may read (SpoolBucketArns); "
        "on a deployed stack a pushed manifest elsewhere is refused",
    )
    allow_insecure_loopback_targets: bool = Field(
        default=False, description="local mode only: plain-http webhook / Airflow / DolphinScheduler on loopback"
    )
    target_allowed_networks: str = Field(
        default="",
        description="comma-separated CIDR networks (private ranges) webhook / Airflow / DolphinScheduler targets "
        "and asset source endpoints may reach; link-local, metadata and (outside local mode) loopback addresses "
        "stay refused",
    )
    dispatch_attempts: int = Field(default=3, ge=1, le=10, description="attempts per dispatcher invocation")
    dispatch_total_attempts: int = Field(default=10, ge=1, le=100, description="attempts before a claim FAILs")
    # Backoff (full jitter): attempt n waits up to min(max, base * 2**(n-1)). The defaults suit real targets;
    # tests on the local stack scale them down (with the re-drive schedule) to replay an outage in seconds.
    dispatch_retry_base_seconds: float = Field(
        default=0.5, ge=0, le=60, description="first backoff between attempts within one dispatcher invocation"
    )
    dispatch_retry_max_seconds: float = Field(
        default=8.0, ge=0, le=60, description="longest backoff within one dispatcher invocation"
    )
    dispatch_redrive_base_seconds: float = Field(
        default=30.0, ge=0, le=3600, description="first backoff before the compensator re-drives a FAILED claim"
    )
    dispatch_redrive_max_seconds: float = Field(
        default=900.0, ge=0, le=86400, description="longest backoff before a re-drive"
    )
    dispatch_lease_seconds: int = Field(default=300, ge=30, description="a dispatcher's hold on a claim")
    dispatch_stuck_after_seconds: int = Field(default=600, ge=60, description="TRIGGERING longer than this is stuck")

    @model_validator(mode="after")
    def _backoffs_ordered(self) -> Settings:
        for name in ("dispatch_retry", "dispatch_redrive"):
            if getattr(self, f"{name}_base_seconds") > getattr(self, f"{name}_max_seconds"):
                raise ValueError(f"{name}_base_seconds must not exceed {name}_max_seconds")
        return self

    @model_validator(mode="after")
    def _producer_secrets_apart(self) -> Settings:
        # Apart from the target and source secrets' prefix, or IAM could not tell them apart.
        producers, targets = self.producer_secret_prefix.casefold(), self.secret_prefix.casefold()
        if not producers.strip("/") or producers.startswith(targets) or targets.startswith(producers):
            raise ValueError(
                f"producer_secret_prefix {self.producer_secret_prefix!r} must be a prefix of its own, outside "
                f"secret_prefix {self.secret_prefix!r} and not containing it"
            )
        return self

    @field_validator("target_allowed_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        parse_networks(value.split(","))
        return value

    @field_validator("spool_bucket_arns")
    @classmethod
    def _spool_buckets(cls, value: str) -> str:
        bucket_names(value)
        return value

    @property
    def local_mode(self) -> bool:
        """The local stack: management by a bearer token (no IAM), targets on loopback over plain http."""
        return bool(self.admin_token) or self.allow_insecure_loopback_targets

    @cached_property
    def poll_cadence(self) -> PollCadence:
        """Rounded up to whole minutes, the quiet time at least the safety net (``stack_cadence``)."""
        return stack_cadence(self.poll_interval_seconds, self.notice_safety_net_seconds, self.notice_quiet_seconds)

    @cached_property
    def secret_names(self) -> SecretNames:
        """How a secret reference (a target's ``secretRef``, a source's ``secretsmanager:``) becomes a name."""
        return SecretNames(self.secret_prefix)

    @cached_property
    def readable_spool(self) -> ReadableSpool | None:
        """Where the spool verifier may read pushed manifests; None on the local stack (it reads any bucket)."""
        if self.local_mode:
            return None
        return ReadableSpool.of(self.bucket_name, self.warehouse_bucket_name, self.spool_bucket_arns)

    @cached_property
    def producer_secrets(self) -> ProducerSecrets:
        """The producer signing secrets' namespace (and the names it reserves)."""
        return ProducerSecrets.of(self.producer_secret_prefix, self.secret_prefix)

    @cached_property
    def url_policy(self) -> UrlPolicy:
        """Where targets may send requests (checked when a rule is written and again when a run starts)."""
        return UrlPolicy.of(self.local_mode, self.target_allowed_networks.split(","))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process (cached; tests call ``get_settings.cache_clear()``)."""
    return Settings()
