"""Producers: writer jobs that push events, each allowed a set of asset key prefixes."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakehook.domain.errors import ValidationError
from lakehook.domain.ids import PRODUCER_ID_PATTERN
from lakehook.domain.lineage import LineageMapping
from lakehook.domain.watermarks import NAMESPACE

PRODUCER_ID = re.compile(PRODUCER_ID_PATTERN)
# An EventBridge event's ``source`` as PutEvents accepts it from a customer (``aws.`` is AWS's own).
EVENT_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$")
ACCOUNT_ID = re.compile(r"^[0-9]{12}$")
MAX_WATERMARK_NAMESPACES = 20


class ProducerSpec(BaseModel):
    """The body of ``PUT /producers/{producerId}``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    asset_key_prefixes: list[str] = Field(alias="assetKeyPrefixes", min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=1024)
    lineage_datasets: list[LineageMapping] = Field(
        default_factory=list,
        alias="lineageDatasets",
        max_length=100,
        description="OpenLineage datasets to asset keys, first match wins (POST /api/v1/lineage)",
    )

    event_sources: list[str] = Field(
        default_factory=list,
        alias="eventSources",
        max_length=20,
        description="EventBridge sources (the PutEvents Source) whose 'Lakehook Asset Events' on the stack's bus "
        "are this producer's pushes; each source belongs to one producer",
    )
    lineage_bearer: bool = Field(
        default=False,
        alias="lineageBearer",
        description="whether POST /api/v1/lineage takes this producer's apiKey (its signing secret) as a plain "
        "bearer key, as OpenLineage's api_key auth sends it: a key that can be replayed at will by whoever sees "
        "it. Off by default: the producer signs its requests (X-Lakehook-Producer, X-Lakehook-Signature)",
    )

    bus_accounts: list[str] = Field(
        default_factory=list,
        alias="busAccounts",
        max_length=20,
        description="AWS accounts (12 digits) whose events on the stack's bus may carry this producer's "
        "eventSources: EventBridge sets an event's account to the account that put it, the source is the "
        "writer's choice; empty: the stack's own account only",
    )

    watermark_namespaces: list[str] = Field(
        default_factory=list,
        alias="watermarkNamespaces",
        max_length=MAX_WATERMARK_NAMESPACES,
        description="watermark namespaces this producer's signed requests may read and write (GET and PUT "
        "/watermarks): the scoped credential of a custom watcher (docs/sensors.md); empty: none",
    )

    @field_validator("watermark_namespaces")
    @classmethod
    def _namespaces(cls, value: list[str]) -> list[str]:
        for namespace in value:
            if not NAMESPACE.fullmatch(namespace):
                raise ValueError(
                    f"watermark namespace {namespace!r} must be 1-128 of letters, digits, '_', '.', ':', '-'"
                )
        if len(set(value)) != len(value):
            raise ValueError("watermarkNamespaces lists a namespace twice")
        return value

    @field_validator("bus_accounts")
    @classmethod
    def _accounts(cls, value: list[str]) -> list[str]:
        for account in value:
            if not ACCOUNT_ID.fullmatch(account):
                raise ValueError(f"bus account {account!r} must be a 12-digit AWS account id")
        if len(set(value)) != len(value):
            raise ValueError("busAccounts lists an account twice")
        return value

    @field_validator("event_sources")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        for source in value:
            if not EVENT_SOURCE.fullmatch(source) or source.lower().startswith("aws."):
                raise ValueError(
                    f"event source {source!r} must be 1-256 of letters, digits, '.', '_', '/', '-' and not start "
                    "with 'aws.' (AWS's own sources)"
                )
        if len(set(value)) != len(value):
            raise ValueError("eventSources lists a source twice")
        return value

    @field_validator("asset_key_prefixes")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        for prefix in value:
            if "://" not in prefix or len(prefix) > 512 or any(c.isspace() for c in prefix):
                raise ValueError(f"prefix {prefix!r} must start with <scheme>:// and have no spaces")
        return value


class Producer(BaseModel):
    """A registered producer. Its signing secret lives in the secret store, by reference."""

    model_config = ConfigDict(populate_by_name=True)

    producer_id: str = Field(alias="producerId")
    asset_key_prefixes: list[str] = Field(alias="assetKeyPrefixes")
    secret_ref: str = Field(alias="secretRef")
    description: str | None = None
    created_at: int = Field(alias="createdAt")
    updated_at: int = Field(alias="updatedAt")
    secret_version: int = Field(
        default=0, alias="secretVersion", description="counts secret rotations; a cached secret is used only at it"
    )
    lineage_datasets: list[LineageMapping] = Field(default_factory=list, alias="lineageDatasets")
    event_sources: list[str] = Field(default_factory=list, alias="eventSources")
    lineage_bearer: bool = Field(default=False, alias="lineageBearer")
    bus_accounts: list[str] = Field(default_factory=list, alias="busAccounts")
    watermark_namespaces: list[str] = Field(default_factory=list, alias="watermarkNamespaces")

    def may_use_watermarks(self, namespace: str) -> bool:
        """Whether this producer's signed requests may read and write the watermarks of ``namespace``."""
        return namespace in self.watermark_namespaces

    def takes_bus_events_from(self, account: str, stack_account: str | None) -> bool:
        """Whether an event EventBridge says ``account`` put may be this producer's: one of its
        ``busAccounts``, or with none listed the stack's own account (unknown: none)."""
        allowed = self.bus_accounts or ([stack_account] if stack_account else [])
        return account in allowed

    def may_write(self, asset_key: str) -> bool:
        """Whether this producer may write events about the asset.

        Prefixes match whole path segments: ``paimon://lake`` covers ``paimon://lake/db/t`` but not
        ``paimon://lakehouse/db/t``.
        """
        return any(_covers(prefix, asset_key) for prefix in self.asset_key_prefixes)


def _covers(prefix: str, asset_key: str) -> bool:
    if not asset_key.startswith(prefix):
        return False
    return len(asset_key) == len(prefix) or prefix.endswith("/") or asset_key[len(prefix)] == "/"


API_KEY_SEPARATOR = ":"  # never in a producer id, never in a generated secret (hex)


def api_key(producer_id: str, secret: str) -> str:
    """The bearer key of ``POST /api/v1/lineage``: the producer and its signing secret.

    Taken only from a producer registered with ``lineageBearer: true``. It grants what the producer's
    signatures grant (its prefixes), no more; rotating the secret rotates it.
    """
    return f"{producer_id}{API_KEY_SEPARATOR}{secret}"


def split_api_key(key: str) -> tuple[str, str] | None:
    producer_id, sep, secret = key.partition(API_KEY_SEPARATOR)
    if not sep or not secret or not PRODUCER_ID.fullmatch(producer_id):
        return None
    return producer_id, secret


def validate_producer_id(producer_id: str) -> str:
    """Answer the id if it is well formed, else raise ValidationError (a 400, not a 500)."""
    if not PRODUCER_ID.fullmatch(producer_id):
        raise ValidationError("producerId is 1-128 letters, digits, '_', '-' or '.'", field="producerId")
    return producer_id
