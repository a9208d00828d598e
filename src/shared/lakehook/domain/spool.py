"""Spool manifests (replay gates, seed 003): the model, its JSON Schema, and what verifying one found.

A writer or extract job that spools its output to S3 seals it with a manifest: the snapshot it
extracted, the row count, the schema, every spooled object with its size and SHA-256, the
manifest's own SHA-256 (see :mod:`lakehook.wire.spool_format`), a status and a creation time.
``SEALED`` is written last, after every object; a job that fails writes ``INTERRUPTED``, which
blocks every rule that needs the asset until a sealed manifest replaces it.

Before a sealed manifest counts, lakehook verifies it (:class:`SpoolVerification`): the
checksum holds, the objects' row counts add up, and every object exists with the stated size
and SHA-256. Only then does it become a ``MANIFEST_SEALED`` event.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lakehook.domain.assets import validate_asset_key
from lakehook.domain.events import MAX_LONG, AssetEvent, EventType
from lakehook.domain.time import ms_to_iso, parse_instant_ms
from lakehook.wire.spool_format import (
    CHECKSUM_FIELD,
    INTERRUPTED,
    SEALED,
    canonical_json,
    manifest_checksum,
)

SHA256_PATTERN = r"^[0-9a-f]{64}$"
S3_URI_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+$"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
MAX_OBJECTS = 100_000
CHECKSUM_RULE = (
    "sha256: lowercase hex SHA-256 of the manifest without its sha256 member, serialized as canonical JSON: "
    "keys sorted by code point at every level, no whitespace, separators ',' and ':', non-ASCII characters "
    "escaped as \\uXXXX, integers only (Python: json.dumps(doc, sort_keys=True, separators=(',', ':')))"
)


class SpoolStatus(StrEnum):
    SEALED = SEALED  # every object is written; the manifest was written last
    INTERRUPTED = INTERRUPTED  # the job stopped part way; the spooled output must not be used


class SchemaField(BaseModel):
    """One column of the spooled rows."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=256)
    type: str = Field(min_length=1, max_length=2048, description="the writer's type name: long, string, decimal(10,2)")
    nullable: bool = True


class SpoolSchema(BaseModel):
    """The schema of the spooled rows, and the table schema id it was read with when there is one."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_id: int | None = Field(default=None, alias="schemaId", ge=0, le=MAX_LONG)
    fields: list[SchemaField] = Field(min_length=1, max_length=10_000)

    @field_validator("fields")
    @classmethod
    def _distinct(cls, fields: list[SchemaField]) -> list[SchemaField]:
        names = [f.name for f in fields]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"field names must be unique; {', '.join(twice)} appears twice")
        return fields

    def fingerprint(self) -> str:
        """SHA-256 of the columns (names, types, nullability) in order, ignoring the schema id."""
        columns = [[f.name, f.type, f.nullable] for f in self.fields]
        return hashlib.sha256(canonical_json(columns)).hexdigest()


class SpooledObject(BaseModel):
    """One spooled object: where it is, how big it is and its SHA-256."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    uri: str = Field(pattern=S3_URI_PATTERN, max_length=1100, description="s3://bucket/key")
    size: int = Field(ge=0, le=5 * 1024**4, description="bytes (S3 objects are at most 5 TiB)")
    sha256: str = Field(pattern=SHA256_PATTERN, description="SHA-256 of the object's bytes, lowercase hex")
    row_count: int | None = Field(default=None, alias="rowCount", ge=0, le=MAX_LONG)


class SpoolManifest(BaseModel):
    """A spool manifest: what a writer or extract job spooled to S3, sealed or interrupted."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        title="lakehook spool manifest",
        json_schema_extra={"$comment": CHECKSUM_RULE},
    )

    format_version: Literal[1] = Field(alias="formatVersion", description="the manifest format; always 1")
    asset_key: str = Field(alias="assetKey", description="the asset the spooled output belongs to")
    snapshot_id: int = Field(alias="snapshotId", ge=0, le=MAX_LONG, description="the snapshot the job extracted")
    row_count: int = Field(alias="rowCount", ge=0, le=MAX_LONG, description="rows in all objects together")
    table_schema: SpoolSchema = Field(alias="schema")
    objects: list[SpooledObject] = Field(max_length=MAX_OBJECTS)
    status: SpoolStatus
    created_at: str = Field(
        alias="createdAt", max_length=64, json_schema_extra={"format": "date-time"}, description="ISO 8601, UTC"
    )
    writer: str | None = Field(default=None, max_length=256, description="the job or run that wrote it")
    reason: str | None = Field(default=None, max_length=2048, description="why the job was interrupted")
    sha256: str = Field(pattern=SHA256_PATTERN, description=CHECKSUM_RULE)

    @field_validator("created_at", mode="before")
    @classmethod
    def _instant(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("createdAt must be an ISO 8601 timestamp in UTC, e.g. 2025-06-01T10:05:00Z")
        parse_instant_ms(value)
        return value  # kept as written: the checksum covers the text, not a normalised form

    @field_validator("asset_key")
    @classmethod
    def _key(cls, value: str) -> str:
        return validate_asset_key(value)

    @field_validator("objects")
    @classmethod
    def _distinct(cls, objects: list[SpooledObject]) -> list[SpooledObject]:
        seen: set[str] = set()
        for obj in objects:
            if obj.uri in seen:
                raise ValueError(f"object {obj.uri} is listed twice")
            seen.add(obj.uri)
        return objects

    @model_validator(mode="after")
    def _sealed_has_no_reason(self) -> SpoolManifest:
        if self.status is SpoolStatus.SEALED and self.reason is not None:
            raise ValueError("a SEALED manifest has no interruption reason")
        return self

    @property
    def total_bytes(self) -> int:
        return sum(o.size for o in self.objects)

    @property
    def created_at_ms(self) -> int:
        return parse_instant_ms(self.created_at)

    def to_document(self) -> dict[str, Any]:
        """The manifest as the JSON object a writer stores (nulls left out)."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


def seal_document(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its ``sha256`` member set to the checksum of the rest."""
    return {**document, CHECKSUM_FIELD: manifest_checksum(document)}


def spool_manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema published as ``docs/spool-manifest.schema.json``."""
    schema = SpoolManifest.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


# --- verification ---------------------------------------------------------------------------------


class VerificationStatus(StrEnum):
    VERIFIED = "VERIFIED"  # sealed, checksum holds, every object exists with its size and SHA-256
    INVALID = "INVALID"  # claims to be sealed (or cannot be read) but does not verify: never counts
    INTERRUPTED = "INTERRUPTED"  # the job says it stopped part way: blocks the asset's rules


class Problem(StrEnum):
    """Why a manifest is INVALID."""

    MANIFEST_MISSING = "MANIFEST_MISSING"
    MANIFEST_UNREADABLE = "MANIFEST_UNREADABLE"  # not JSON, not the schema, or too large
    MANIFEST_CHECKSUM = "MANIFEST_CHECKSUM"  # its sha256 member does not match its content
    ASSET_MISMATCH = "ASSET_MISMATCH"  # the manifest names another asset than the event that pointed at it
    ROW_COUNT = "ROW_COUNT"  # the objects' row counts do not add up to the manifest's
    OBJECT_MISSING = "OBJECT_MISSING"
    OBJECT_UNREADABLE = "OBJECT_UNREADABLE"  # in a bucket the verifier may not read (domain.spool_buckets)
    SIZE_MISMATCH = "SIZE_MISMATCH"  # truncated (smaller) or appended to (larger)
    SHA256_MISMATCH = "SHA256_MISMATCH"  # same size, other bytes: tampered or corrupted


@dataclass(frozen=True)
class ObjectProblem:
    """One thing wrong with a manifest: the object (or the manifest itself) and why."""

    uri: str
    problem: Problem
    detail: str


@dataclass(frozen=True)
class SpoolVerification:
    """What verifying one manifest found. ``problems`` is empty unless the status is INVALID."""

    manifest_uri: str
    status: VerificationStatus
    checked_at: int
    manifest: SpoolManifest | None = None
    problems: tuple[ObjectProblem, ...] = field(default=())

    @property
    def object_uri(self) -> str | None:
        """The first object (or the manifest) at fault, for INVALID."""
        return self.problems[0].uri if self.problems else None

    @property
    def reason(self) -> str | None:
        if self.status is VerificationStatus.INTERRUPTED:
            return self.manifest.reason if self.manifest and self.manifest.reason else "the writer was interrupted"
        return self.problems[0].detail if self.problems else None

    def event(self) -> AssetEvent | None:
        """The event to ingest: MANIFEST_SEALED when verified, MANIFEST_INTERRUPTED when interrupted.

        INVALID has none (nothing is sealed, and the asset is unknown when the manifest is
        unreadable); record :meth:`to_record` instead.
        """
        manifest = self.manifest
        if manifest is None or self.status is VerificationStatus.INVALID:
            return None
        verified = self.status is VerificationStatus.VERIFIED
        kind = EventType.MANIFEST_SEALED if verified else EventType.MANIFEST_INTERRUPTED
        payload: dict[str, Any] = {
            "manifestSha256": manifest.sha256,
            "objects": len(manifest.objects),
            "bytes": manifest.total_bytes,
            "verification": self.status.value,
            "checkedAt": ms_to_iso(self.checked_at),
        }
        if self.status is VerificationStatus.INTERRUPTED:
            payload["reason"] = (self.reason or "")[:2048]
        return AssetEvent.model_validate(
            {
                "eventType": kind,
                "assetKey": manifest.asset_key,
                "manifestUri": self.manifest_uri,
                "snapshotId": manifest.snapshot_id,
                "schemaId": manifest.table_schema.schema_id,
                "totalRecordCount": manifest.row_count,
                "commitTime": manifest.created_at_ms,
                "payload": payload,
            }
        )

    def to_record(self) -> dict[str, Any]:
        """What to keep about this verification (for INVALID: the object and the reason)."""
        record: dict[str, Any] = {
            "manifestUri": self.manifest_uri,
            "status": self.status.value,
            "checkedAt": ms_to_iso(self.checked_at),
            "object": self.object_uri,
            "reason": self.reason,
            "problems": [{"object": p.uri, "problem": p.problem.value, "reason": p.detail} for p in self.problems[:20]],
        }
        if self.manifest is not None:
            manifest = self.manifest
            record.update(assetKey=manifest.asset_key, snapshotId=manifest.snapshot_id, manifestSha256=manifest.sha256)
        return record
