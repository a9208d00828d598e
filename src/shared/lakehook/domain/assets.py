"""Assets: the key grammar, formats, and how an asset is registered."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.notice_state import check_interval
from lakehook.domain.secret_names import ssm_secret_name

MAX_ASSET_KEY_LENGTH = 512
_SCHEME = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<rest>.+)$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_$.=-]+$")
_GENERIC = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces


class AssetFormat(StrEnum):
    ICEBERG = "iceberg"
    PAIMON = "paimon"
    DELTA = "delta"
    HUDI = "hudi"
    CUSTOM = "custom"


TABLE_FORMATS = {AssetFormat.ICEBERG, AssetFormat.PAIMON, AssetFormat.DELTA, AssetFormat.HUDI}
CATALOG_FORMATS = {AssetFormat.ICEBERG, AssetFormat.PAIMON}  # read through a catalog: the source names a table
PATH_FORMATS = {AssetFormat.DELTA, AssetFormat.HUDI}  # read from the table's own log: the source names a location
_LOCATION = re.compile(
    r"^(?:s3a?://[a-z0-9][a-z0-9.-]{1,62}[a-z0-9](?:/[^\x00-\x1f\x7f]*)?|file:///[^\x00-\x1f\x7f]*|/[^\x00-\x1f\x7f]*)$"
)


def validate_asset_key(key: str) -> str:
    """Answer the key if it is well formed, else raise ValueError saying what is wrong.

    Table formats use ``<format>://<catalog>/<database>/<table>``; any other scheme
    (``s3://bucket/prefix``, ``custom://…``) is a generic asset.
    """
    if not isinstance(key, str):
        raise ValueError("assetKey must be a string")
    if len(key) > MAX_ASSET_KEY_LENGTH:
        raise ValueError(f"assetKey is longer than {MAX_ASSET_KEY_LENGTH} characters")
    match = _SCHEME.fullmatch(key)  # not match(): '$' would let a trailing newline through
    if not match:
        raise ValueError("assetKey must look like <scheme>://<path>, e.g. iceberg://glue/db/table")
    scheme, rest = match.group("scheme"), match.group("rest")
    if scheme in TABLE_FORMATS:
        parts = rest.split("/")
        if len(parts) != 3 or not all(_SEGMENT.fullmatch(p) for p in parts):
            raise ValueError(f"a {scheme} assetKey is {scheme}://<catalog>/<database>/<table>")
        return key
    if not _GENERIC.fullmatch(rest) or "//" in rest or rest.startswith("/"):
        raise ValueError("assetKey has spaces, control characters or empty path segments")
    return key


def asset_scheme(key: str) -> str:
    """The scheme of a valid asset key (``iceberg``, ``paimon``, ``s3``, ``custom`` …)."""
    return key.split("://", 1)[0]


# Property names that carry credentials. Their values must be references, never secrets.
_SECRET_NAME = re.compile(r"(secret|password|token|credential|session|private[-_.]?key|access[-_.]?key)", re.I)
SECRETS_MANAGER = "secretsmanager:"  # ``secretsmanager:<ref>[#field]``: ref by the stack's naming rule (SecretNames)
SECRET_REFERENCE_PREFIXES = (SECRETS_MANAGER, "ssm:")


def referenced_secret(value: str) -> str | None:
    """The Secrets Manager secret a property value reaches when a poller resolves it, if any:
    ``secretsmanager:<name>[#field]``, or ``ssm:/aws/reference/secretsmanager/<name>`` (SSM reads the
    Secrets Manager secret). The prefix is matched in any case, the ``#field`` suffix dropped."""
    text = value.strip()
    kind, sep, reference = text.partition(":")
    if not sep:
        return None
    name = reference.partition("#")[0]
    if kind.casefold() == "secretsmanager":
        return name
    if kind.casefold() == "ssm":
        return ssm_secret_name(name)
    return None


class AssetSource(BaseModel):
    """How a poller reads the asset: a pyiceberg catalog or a pypaimon warehouse and a table in it (Iceberg,
    Paimon), or the location of a table that carries its own log (Delta ``_delta_log/``, Hudi ``.hoodie/``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    catalog: str = Field(
        min_length=1,
        max_length=128,
        description="catalog name (pyiceberg keys SQL catalogs by it); for Delta and Hudi a label for messages",
    )
    properties: dict[str, str] = Field(
        default_factory=dict,
        description="pyiceberg catalog properties, pypaimon options, or Delta / Hudi storage options "
        "(AWS_REGION, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID as a secret reference …)",
    )
    table: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_$-]+\.[A-Za-z0-9_$-]+$",
        description="database.table (Iceberg, Paimon)",
    )
    location: str | None = Field(
        default=None,
        max_length=1024,
        pattern=_LOCATION.pattern,
        description="the table's root (Delta, Hudi): an absolute local path, file:///…, or s3://bucket/prefix",
    )
    time_zone: str | None = Field(
        default=None,
        alias="timeZone",
        max_length=64,
        description="Hudi: the IANA zone (e.g. Europe/Berlin) the writer's instant times are in, when the "
        "table's hoodie.table.timeline.timezone is LOCAL (Hudi's default) or unset; default UTC",
    )

    def referenced_secrets(self) -> dict[str, str]:
        """The Secrets Manager secrets the properties reach, by property name."""
        found = {name: referenced_secret(value) for name, value in self.properties.items()}
        return {name: secret for name, secret in found.items() if secret is not None}

    @property
    def table_name(self) -> str:
        """``database.table`` for a catalog format, else the location (what messages name the table by)."""
        return self.table or self.location or ""

    @field_validator("time_zone")
    @classmethod
    def _an_iana_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"timeZone {value!r} is not an IANA time zone (e.g. UTC, Europe/Berlin)") from None
        return value

    @field_validator("properties")
    @classmethod
    def _credentials_are_references(cls, value: dict[str, str]) -> dict[str, str]:
        for name, prop in value.items():
            if _SECRET_NAME.search(name) and not str(prop).startswith(SECRET_REFERENCE_PREFIXES):
                raise ValueError(
                    f"property {name!r} looks like a credential; store it in Secrets Manager or SSM and pass "
                    f"'secretsmanager:<name>' or 'ssm:<name>' instead of the value"
                )
        return value


class AssetRegistration(BaseModel):
    """A registered asset. One without a source is push-only."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    asset_key: str = Field(alias="assetKey")
    format: AssetFormat
    source: AssetSource | None = None
    description: str | None = Field(default=None, max_length=1024)
    max_age_seconds: int | None = Field(
        default=None,
        alias="maxAgeSeconds",
        ge=60,
        le=366 * 86_400,
        description="overdue after this long without a new snapshot (explain, the overdue metric and alarm)",
    )
    poll_interval_seconds: int | None = Field(
        default=None,
        alias="pollIntervalSeconds",
        description="how often the schedule polls this table while its commit notices do not arrive (whole "
        "minutes, 60 to 86400); default the stack's PollIntervalSeconds. While notices arrive it is polled only "
        "as a safety net (NoticeSafetyNetSeconds), docs/commit-notices.md",
    )

    @field_validator("asset_key")
    @classmethod
    def _key(cls, value: str) -> str:
        return validate_asset_key(value)

    @field_validator("poll_interval_seconds", mode="before")
    @classmethod
    def _an_interval(cls, value: Any) -> Any:
        return None if value is None else check_interval(value, "pollIntervalSeconds")

    @model_validator(mode="after")
    def _format_matches_scheme(self) -> AssetRegistration:
        scheme = asset_scheme(self.asset_key)
        if self.format in TABLE_FORMATS and scheme != self.format.value:
            raise ValueError(f"format {self.format.value!r} needs an assetKey starting with {self.format.value}://")
        if self.format is AssetFormat.CUSTOM and scheme in TABLE_FORMATS:
            raise ValueError(f"an assetKey starting with {scheme}:// has format {scheme!r}, not 'custom'")
        if self.source is not None:
            self._source_matches_format(self.source)
        return self

    def _source_matches_format(self, source: AssetSource) -> None:
        """A source fits the format: none for a custom asset, a table for a catalog format, a location for a path
        format, a timeZone only for hudi."""
        if self.format is AssetFormat.CUSTOM:
            raise ValueError("a custom asset has no source to poll; omit 'source'")
        if self.format in CATALOG_FORMATS:
            if source.table is None:
                raise ValueError(f"a {self.format.value} source names its 'table' (database.table)")
            if source.location is not None:
                raise ValueError(f"a {self.format.value} source is read through its catalog; omit 'location'")
        if source.time_zone is not None and self.format is not AssetFormat.HUDI:
            raise ValueError(
                f"timeZone is for hudi sources (whose instant times carry no zone); a {self.format.value} "
                f"source records epoch times: omit it"
            )
        if self.format in PATH_FORMATS:
            if source.location is None:
                raise ValueError(f"a {self.format.value} source names the table's 'location' (a path or s3://…)")
            if source.table is not None:
                raise ValueError(f"a {self.format.value} source is read from its location; omit 'table'")

    @model_validator(mode="after")
    def _interval_for_a_polled_table(self) -> AssetRegistration:
        if self.poll_interval_seconds is not None and (self.source is None or self.format not in TABLE_FORMATS):
            raise ValueError("pollIntervalSeconds is for a table with a source to poll; omit it")
        return self
