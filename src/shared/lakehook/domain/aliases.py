"""Aliases: a name that resolves to concrete assets (seed 002, Airflow's AssetAlias).

An event sent through an alias (``"alias": "<name>"`` instead of ``"assetKey"``) is recorded once per
concrete asset the alias resolves to, so each of those assets' state moves and their rules wake.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakehook.domain.assets import validate_asset_key
from lakehook.domain.errors import ValidationError
from lakehook.domain.ids import ALIAS_NAME_PATTERN

ALIAS_NAME = re.compile(ALIAS_NAME_PATTERN)
MAX_ALIAS_ASSETS = 100


def validate_alias_name(name: str) -> str:
    """The name if it is 1..128 letters, digits, ``_``, ``.`` or ``-``; else ValidationError."""
    if not isinstance(name, str) or not ALIAS_NAME.fullmatch(name):
        raise ValidationError("alias name must be 1 to 128 letters, digits, '_', '.' or '-'", field="name")
    return name


class AliasSpec(BaseModel):
    """The body of ``PUT /aliases/{name}``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    asset_keys: list[str] = Field(alias="assetKeys", min_length=1, max_length=MAX_ALIAS_ASSETS)
    description: str | None = Field(default=None, max_length=1024)

    @field_validator("asset_keys")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(validate_asset_key(k) for k in value))


class Alias(BaseModel):
    """A stored alias."""

    model_config = ConfigDict(frozen=True)

    name: str
    asset_keys: tuple[str, ...]
    description: str | None = None
    created_at: int
    updated_at: int
