"""How a partitioned group names its partitions, and how a member's partition keys map onto them.

A group with ``partitionBy: ["dt"]`` runs once per partition key of those fields (``dt=2026-12-01``). Each
partitioned member says, per group field, which of its own partition fields holds the value (``field``, by default
the same name) and to which time grain the value is cut (``grain``): ``hour=2026-12-01-10`` → ``dt=2026-12-01``
with ``{"dt": {"field": "hour", "grain": "day"}}``. A member's fields the group does not name are dropped (a
commit touching ``dt=2026-12-01/region=eu`` is one of ``dt=2026-12-01``). See docs/partitions.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakehook.domain.partitions import PartitionKeyError, format_partition_key, parse_partition_key

MAX_PARTITION_FIELDS = 4
MAX_PARTITION_FIELD_LENGTH = 128


class Grain(StrEnum):
    """A time grain, as the values Iceberg's transforms (and most writers) give it: ``2026``, ``2026-12``,
    ``2026-12-01``, ``2026-12-01-10``."""

    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    HOUR = "hour"


# The text of a value at each grain; a value of a finer grain starts with its coarser grains' text.
_GRAIN_FORMS: dict[Grain, re.Pattern[str]] = {
    Grain.YEAR: re.compile(r"^\d{4}$"),
    Grain.MONTH: re.compile(r"^\d{4}-(0[1-9]|1[0-2])$"),
    Grain.DAY: re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"),
    Grain.HOUR: re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])-([01]\d|2[0-3])$"),
}
_GRAIN_LENGTH = {Grain.YEAR: 4, Grain.MONTH: 7, Grain.DAY: 10, Grain.HOUR: 13}


def grain_of(value: str) -> Grain | None:
    """The grain a value is written at, or None when it is no time value."""
    return next((g for g, form in _GRAIN_FORMS.items() if form.match(value)), None)


def cut_to_grain(value: str, grain: Grain) -> str | None:
    """``value`` cut to ``grain`` (``2026-12-01-10`` to day is ``2026-12-01``); None when the value is no time value
    or is coarser than ``grain`` (a month cannot name a day)."""
    found = grain_of(value)
    if found is None or _GRAIN_LENGTH[found] < _GRAIN_LENGTH[grain]:
        return None
    return value[: _GRAIN_LENGTH[grain]]


def _field_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_PARTITION_FIELD_LENGTH:
        raise ValueError(f"{what} must be a partition field name of 1 to {MAX_PARTITION_FIELD_LENGTH} characters")
    if "/" in value or "=" in value:
        raise ValueError(f"{what} {value[:40]!r} is one partition field name, without '/' or '='")
    return value


class FieldSource(BaseModel):
    """Where one group field's value comes from in a member's partition key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str | None = Field(
        default=None, description="the member's own partition field holding the value (default: the same name)"
    )
    grain: Grain | None = Field(
        default=None,
        description="cut a time value to this grain (hour, day, month, year): hour=2026-12-01-10 is day 2026-12-01",
    )

    @field_validator("field")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _field_name(value, "field")


class MemberPartition(BaseModel):
    """A member of a partitioned group that is itself partitioned: how its keys map onto the group's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, FieldSource] = Field(
        default_factory=dict,
        max_length=MAX_PARTITION_FIELDS,
        description="per group field (partitionBy), where the member holds its value; a field not named here is "
        "read from the member's field of the same name",
    )

    @field_validator("fields")
    @classmethod
    def _names(cls, value: dict[str, FieldSource]) -> dict[str, FieldSource]:
        for name in value:
            _field_name(name, "a group field")
        return value

    def source(self, group_field: str) -> FieldSource:
        return self.fields.get(group_field) or FieldSource()

    def mapping_id(self, partition_by: tuple[str, ...]) -> str:
        """A short, stable name of this mapping onto ``partition_by``: members mapping an asset alike share facts."""
        spec = [[f, self.source(f).field or f, self.source(f).grain] for f in partition_by]
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    def map_key(self, key: str, partition_by: tuple[str, ...]) -> str | None:
        """The group's partition key for one of the member's keys, or None when the key does not name every field
        the group needs (or a time value does not cut to its grain)."""
        try:
            values = dict(parse_partition_key(key))
        except PartitionKeyError:
            return None
        out: list[tuple[str, Any]] = []
        for group_field in partition_by:
            source = self.source(group_field)
            name = source.field or group_field
            if name not in values:
                return None
            value = values[name]
            if source.grain is not None:
                value = cut_to_grain(value, source.grain) if value is not None else None
                if value is None:
                    return None
            out.append((group_field, value))
        return format_partition_key(out)


def validate_partition_by(value: tuple[str, ...]) -> tuple[str, ...]:
    """1 to 4 distinct field names."""
    names = [_field_name(v, "partitionBy") for v in value]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"partitionBy names {twice[0]!r} twice")
    return tuple(names)
