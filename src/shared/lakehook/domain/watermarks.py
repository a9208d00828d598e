"""The watermark store's records: a value per (namespace, asset key, key), compare-and-set by version."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakehook.domain.limits import NonNegativeLong

NAMESPACE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
KEY = re.compile(r"^[A-Za-z0-9_.:/=-]{1,256}$")
MAX_VALUE_BYTES = 64 * 1024  # well inside DynamoDB's 400 KB item limit


class WatermarkRecord(BaseModel):
    """One stored watermark. ``version`` increases by one on every write (the CAS token)."""

    model_config = ConfigDict(populate_by_name=True)

    namespace: str
    asset_key: str = Field(alias="assetKey")
    key: str
    value: Any
    version: int
    updated_at: int = Field(alias="updatedAt")


class WatermarkPut(BaseModel):
    """The body of ``PUT /watermarks``: set a value, optionally only if the version still matches."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    namespace: str = Field(pattern=NAMESPACE.pattern)
    asset_key: str = Field(alias="assetKey")
    key: str = Field(pattern=KEY.pattern)
    value: Any
    expected_version: NonNegativeLong | None = Field(
        default=None,
        alias="expectedVersion",
        description="compare-and-set: write only if the stored version is this (0 = must not exist yet)",
    )

    @field_validator("value")
    @classmethod
    def _json_value(cls, value: Any) -> Any:
        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except ValueError as exc:  # NaN or Infinity would be answered as invalid JSON
            raise ValueError("value must be JSON: NaN and Infinity are not allowed") from exc
        if len(text.encode()) > MAX_VALUE_BYTES:
            raise ValueError(f"value is larger than {MAX_VALUE_BYTES} bytes as JSON")
        return value
