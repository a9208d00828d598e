"""How a partitioned group names its partitions, and how a member's partition keys map onto them.

A group with ``partitionBy: ["dt"]`` runs once per partition key of those fields (``dt=2026-12-01``). Each
partitioned member says, per group field, which of its own partition fields holds the value (``field``, by default
the same name) and to which time grain the value is cut (``grain``): ``hour=2026-12-01-10`` → ``dt=2026-12-01``
with ``{"dt": {"field": "hour", "grain": "day"}}``. A member's fields the group does not name are dropped (a
commit touching ``dt=2026-12-01/region=eu`` is one of ``dt=2026-12-01``). Two mappings between grains one apart:
a **rollup** (``complete``: the member holds the units of the group's value, the hours of its day) and a **fan-out**
(``fanOut``: the group's values are the units of the member's, each hour of a group keyed on hours takes its day's
commit). See docs/partitions.md.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

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


# The text of a value at each grain; a value of a finer grain starts with its coarser grains' text. ASCII digits only
# ([0-9]: ``\d`` matches every script's digits, so 2026-12-06 in fullwidth digits would be a second key of one day),
# matched whole (fullmatch: ``$`` lets a trailing newline through); :func:`parse_time_value` then checks the calendar.
_GRAIN_FORMS: dict[Grain, re.Pattern[str]] = {
    Grain.YEAR: re.compile(r"([0-9]{4})", re.ASCII),
    Grain.MONTH: re.compile(r"([0-9]{4})-([0-9]{2})", re.ASCII),
    Grain.DAY: re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII),
    Grain.HOUR: re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})-([0-9]{2})", re.ASCII),
}
_GRAIN_LENGTH = {Grain.YEAR: 4, Grain.MONTH: 7, Grain.DAY: 10, Grain.HOUR: 13}
_FINER = {Grain.YEAR: Grain.MONTH, Grain.MONTH: Grain.DAY, Grain.DAY: Grain.HOUR}
_EXAMPLES = {Grain.YEAR: "2026", Grain.MONTH: "2026-12", Grain.DAY: "2026-12-01", Grain.HOUR: "2026-12-01-10"}
# The most units one value of a grain has: the partitions one fact of a fan-out names at most.
MOST_UNITS = {Grain.DAY: 24, Grain.MONTH: 31, Grain.YEAR: 12}


# A rollup's coverage [from, to) of its units, as the units' values are written: hours 0..23 of a day, days 1..31 of
# a month (from at most 28, so that every month has a unit in it; to past the month's end stops at it), months
# 1..12 of a year. Per rollup grain: (unit name, lowest from, highest from, highest to).
UNIT_BOUNDS: dict[Grain, tuple[str, int, int, int]] = {
    Grain.DAY: ("hour", 0, 23, 24),
    Grain.MONTH: ("day", 1, 28, 32),
    Grain.YEAR: ("month", 1, 12, 13),
}


class UnitRange(BaseModel):
    """The units of a rollup's partition it waits for: ``[from, to)``, unit values as written (``{"from": 6, "to":
    22}`` of a day: the hours 06 to 21)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    start: int = Field(alias="from", description="the first unit waited for (hour 0-23, day 1-28, month 1-12)")
    end: int = Field(alias="to", description="the unit after the last one waited for (hour 1-24, day 2-32, month 2-13)")

    @model_validator(mode="after")
    def _ordered(self) -> UnitRange:
        if self.start >= self.end:
            raise ValueError(f"from ({self.start}) must be below to ({self.end}): the range [from, to) is half-open")
        return self

    def check(self, grain: Grain) -> UnitRange:
        """This range, when it fits the units of ``grain``; a ValueError naming from or to otherwise."""
        unit, low, high, top = UNIT_BOUNDS[grain]
        if not low <= self.start <= high:
            raise ValueError(f"from ({self.start}) must be {unit} {low} to {high} of the {grain.value} rolled up")
        if not self.start < self.end <= top:
            raise ValueError(f"to ({self.end}) must be above from and at most {top} (the {unit} after the last)")
        return self

    def holds(self, unit: str) -> bool:
        """Whether a unit value (``2026-12-01-06``) is in the range: its last number."""
        return self.start <= int(unit[-2:]) < self.end

    def describe(self, grain: Grain) -> str:
        unit = UNIT_BOUNDS[grain][0]
        return f"{unit}s {self.start:02d} to {self.end - 1:02d}"


def units_of(value: str, grain: Grain) -> list[str]:
    """The units one grain finer that make up ``value`` of ``grain``: a day's 24 hours, a month's days, a year's 12
    months (``2026-12-01`` → ``2026-12-01-00`` … ``2026-12-01-23``)."""
    if grain is Grain.DAY:
        return [f"{value}-{h:02d}" for h in range(24)]
    if grain is Grain.MONTH:
        year, month = int(value[:4]), int(value[5:7])
        return [f"{value}-{d:02d}" for d in range(1, calendar.monthrange(year, month)[1] + 1)]
    if grain is Grain.YEAR:
        return [f"{value}-{m:02d}" for m in range(1, 13)]
    raise ValueError("an hour has no finer units")


def parse_time_value(value: str) -> tuple[Grain, datetime] | None:
    """The grain a value is written at and the instant it starts (naive, as written), or None when it is no time
    value: exactly ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` or ``YYYY-MM-DD-HH`` in ASCII digits, naming a real date
    (a month 01-12, a day of that month, leap years included; years 0001-9999) and an hour 00-23. Such a value is
    canonical: :func:`format_time_value` writes it back as it is."""
    for grain, form in _GRAIN_FORMS.items():
        found = form.fullmatch(value)
        if found is None:
            continue
        year, month, day, hour = [int(n) for n in found.groups()] + [1, 1, 0][len(found.groups()) - 1 :]
        if not 1 <= month <= 12 or year < 1:
            return None
        if not 1 <= day <= calendar.monthrange(year, month)[1] or not 0 <= hour <= 23:
            return None
        return grain, datetime(year, month, day, hour)
    return None


def format_time_value(moment: datetime, grain: Grain) -> str:
    """The value of ``grain`` that ``moment`` falls in: ``2026-12-01-10``, ``2026-12-01``, ``2026-12``, ``2026``."""
    text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}-{moment.hour:02d}"
    return text[: _GRAIN_LENGTH[grain]]


def grain_of(value: str) -> Grain | None:
    """The grain a value is written at, or None when it is no time value (see :func:`parse_time_value`)."""
    parsed = parse_time_value(value)
    return None if parsed is None else parsed[0]


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

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    field: str | None = Field(
        default=None, description="the member's own partition field holding the value (default: the same name)"
    )
    grain: Grain | None = Field(
        default=None,
        description="cut a time value to this grain (hour, day, month, year): hour=2026-12-01-10 is day 2026-12-01",
    )
    complete: bool | UnitRange = Field(
        default=False,
        description="a rollup: the member holds a partition only once every unit of it has a data commit (each of "
        "the 24 hours of a day, each day of a month, each month of a year; values one grain finer than grain), or, "
        'given {"from": 6, "to": 22}, each unit of that half-open range (hours 06 to 21 of a day)',
    )
    fan_out: bool | None = Field(
        default=None,
        alias="fanOut",
        description="a fan-out: the member holds values of grain, and the group's are their units, one grain finer: "
        "a commit touching day 2026-12-01 touches each of its 24 hours (a month: each of its days; a year: its 12 "
        "months), and each group hour takes the newest commit touching its day",
    )

    @field_validator("field")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _field_name(value, "field")

    @field_validator("complete", mode="before")
    @classmethod
    def _coverage(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict):
            return value  # true, false, or what the type refuses
        try:
            span = UnitRange.model_validate(value)
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            raise ValueError(f"{where}: {message}" if where else message) from None
        grain = info.data.get("grain")
        return span.check(grain) if grain in UNIT_BOUNDS else span

    @property
    def rolls_up(self) -> bool:
        """Whether the member rolls this field up (``complete``: true or a range)."""
        return self.complete is not False

    @property
    def coverage(self) -> UnitRange | None:
        """The range of units a rollup waits for; None: every unit."""
        return self.complete if isinstance(self.complete, UnitRange) else None

    @property
    def fans_out(self) -> bool:
        """Whether the member fans this field out (``fanOut``): the group's values are the units of its own."""
        return self.fan_out is True

    @property
    def group_grain(self) -> Grain | None:
        """The grain of the group's values this source gives: ``grain``, one finer for a fan-out."""
        return _FINER[self.grain] if self.fans_out and self.grain in _FINER else self.grain

    @model_validator(mode="after")
    def _rollup(self) -> FieldSource:
        if self.rolls_up and self.fans_out:
            raise ValueError(
                "complete (a rollup: the member holds the units of the group's value) and fanOut (the group's values "
                "are the units of the member's) exclude each other"
            )
        if self.rolls_up and self.grain in (None, Grain.HOUR):
            raise ValueError("complete (a rollup) needs a grain of day, month or year: the units it waits for")
        if self.fans_out and self.grain in (None, Grain.HOUR):
            raise ValueError(
                "fanOut needs a grain of day, month or year: the grain the member holds, whose units (hours, days, "
                "months) the group's partitions are"
            )
        return self


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
        if sum(1 for source in value.values() if source.rolls_up or source.fans_out) > 1:
            raise ValueError("a member rolls up (complete) or fans out (fanOut) one field at most")
        return value

    def source(self, group_field: str) -> FieldSource:
        return self.fields.get(group_field) or FieldSource()

    def mapping_id(self, partition_by: tuple[str, ...]) -> str:
        """A short, stable name of this mapping onto ``partition_by``: members mapping an asset alike share facts."""
        spec = [[f, self.source(f).field or f, self.source(f).grain] for f in partition_by]
        rollup = self.rollup_field(partition_by)
        if rollup is not None:
            spec.append(["complete", rollup])
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    def rollup_field(self, partition_by: tuple[str, ...]) -> str | None:
        """The group field this member rolls up (``complete``), if any."""
        return next((f for f in partition_by if self.source(f).rolls_up), None)

    def fan_out_field(self, partition_by: tuple[str, ...]) -> str | None:
        """The group field this member fans out (``fanOut``), if any."""
        return next((f for f in partition_by if self.source(f).fans_out), None)

    def fan_out(self, partition_by: tuple[str, ...]) -> int:
        """The most partitions of the group one fact of this member names: the units of its fan-out's grain (24
        hours of a day, 31 days of a month, 12 months of a year); 1 without a fan-out."""
        fanned = self.fan_out_field(partition_by)
        grain = self.source(fanned).grain if fanned is not None else None
        return MOST_UNITS[grain] if grain is not None else 1

    def fact_key(self, key: str, partition_by: tuple[str, ...]) -> str | None:
        """The key a fact of one of the member's keys is kept under: the group's key, except that a rollup keeps the
        unit (``dt=2026-12-01-10``: the hour of the day it rolls up), so a partition can tell which units it has."""
        rollup = self.rollup_field(partition_by)
        if rollup is None:
            return self.map_key(key, partition_by)
        grain = self.source(rollup).grain
        assert grain is not None
        finer = self.model_copy(
            update={
                "fields": {
                    **self.fields,
                    rollup: self.source(rollup).model_copy(update={"grain": _FINER[grain], "complete": False}),
                }
            }
        )
        return finer.map_key(key, partition_by)

    def unit_keys(self, partition: str, partition_by: tuple[str, ...]) -> list[str]:
        """The fact keys a rollup needs for one of the group's partitions (every unit of it); the partition itself
        for a member that rolls nothing up; for a fan-out the one fact of the member's value holding the partition
        (``hr=2026-12-01`` for ``hr=2026-12-01-10``)."""
        rollup = self.rollup_field(partition_by)
        if rollup is None:
            return self._fanned_in(partition, partition_by)
        grain = self.source(rollup).grain
        assert grain is not None
        try:
            values = parse_partition_key(partition)
        except PartitionKeyError:
            return []
        value = dict(values).get(rollup)
        if value is None or grain_of(value) is not grain:
            return []
        span = self.source(rollup).coverage
        units = [u for u in units_of(value, grain) if span is None or span.holds(u)]
        return [format_partition_key([(n, u if n == rollup else v) for n, v in values]) for u in units]

    def _fanned_in(self, partition: str, partition_by: tuple[str, ...]) -> list[str]:
        """The fact key holding ``partition`` for a fan-out (the group's value cut to the member's grain; none when
        it is no value one grain finer than that), the partition itself otherwise."""
        fanned = self.fan_out_field(partition_by)
        if fanned is None:
            return [partition]
        source = self.source(fanned)
        assert source.grain is not None
        try:
            values = parse_partition_key(partition)
        except PartitionKeyError:
            return []
        value = dict(values).get(fanned)
        if value is None or grain_of(value) is not source.group_grain:
            return []
        return [format_partition_key([(n, cut_to_grain(value, source.grain) if n == fanned else v) for n, v in values])]

    def misfit(self, partition: str, partition_by: tuple[str, ...]) -> str | None:
        """Why ``partition`` (a key of the group's fields) can be no partition of this member's mapping: a field the
        member cuts to a time grain whose value is no time value of that grain; None when it can be one."""
        try:
            values = dict(parse_partition_key(partition))
        except PartitionKeyError as exc:
            return str(exc)
        for name in partition_by:
            source = self.source(name)
            grain, value = source.group_grain, values.get(name)
            if grain is not None and (value is None or grain_of(value) is not grain):
                shown = "null" if value is None else repr(value[:40])
                how = f"fans its {source.grain}s out to" if source.fans_out else "cuts it to"
                return f"{name} {shown} is no {grain.value} ({_EXAMPLES[grain]}), the grain the member {how}"
        return None

    def partitions_of(self, fact_key: str, partition_by: tuple[str, ...]) -> list[str]:
        """The group's partitions a fact key names: the one it belongs to (a rollup's unit cut to its partition), or
        for a fan-out every unit of the member's value (a day's 24 hours)."""
        rollup, fanned = self.rollup_field(partition_by), self.fan_out_field(partition_by)
        if rollup is None and fanned is None:
            return [fact_key]
        values = parse_partition_key(fact_key)
        if rollup is not None:
            grain = self.source(rollup).grain
            assert grain is not None
            return [format_partition_key([(n, cut_to_grain(v, grain) if n == rollup and v else v) for n, v in values])]
        assert fanned is not None
        grain, value = self.source(fanned).grain, dict(values).get(fanned)
        if grain is None or value is None or grain_of(value) is not grain:
            return []
        return [format_partition_key([(n, u if n == fanned else v) for n, v in values]) for u in units_of(value, grain)]

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


def group_partition_key(value: object, partition_by: tuple[str, ...]) -> str:
    """``value`` as one partition key of a group keyed on ``partition_by`` (its fields, in that order), canonical as
    lakehook writes keys; a ValueError says what is wrong and what to send (``dt=2026-12-01``)."""
    shape = "/".join(f"{f}=<value>" for f in partition_by)
    if not isinstance(value, str) or not value:
        raise ValueError(f"partition must be a partition key of the group's partitionBy: {shape}")
    try:
        fields = parse_partition_key(value)
    except PartitionKeyError as exc:
        raise ValueError(f"partition is not a partition key ({exc}); send {shape}") from exc
    names = tuple(n for n, _ in fields)
    if names != partition_by:
        raise ValueError(
            f"partition {value[:80]!r} names the fields {', '.join(names)}; the group's partitions are keyed on "
            f"{', '.join(partition_by)}, in that order: {shape}"
        )
    return format_partition_key(fields)


def fan_out_clash(
    mappings: Mapping[int, MemberPartition], partition_by: tuple[str, ...]
) -> tuple[int, str, str] | None:
    """Where a fan-out disagrees with another member about the grain of a group field's values (a member fanning
    days out to hours next to one cutting the field to days: no partition could have both): the fan-out member's
    index (a key of ``mappings``), the field and why; None when the members agree (a member that cuts the field to
    no grain agrees with any)."""
    for i, mapping in mappings.items():
        fanned = mapping.fan_out_field(partition_by)
        if fanned is None:
            continue
        source = mapping.source(fanned)
        assert source.grain is not None and source.group_grain is not None
        for j, other in mappings.items():
            theirs = other.source(fanned).group_grain
            if j != i and theirs is not None and theirs is not source.group_grain:
                return (
                    i,
                    fanned,
                    f"fans {source.grain.value}s out to {source.group_grain.value}s, but members.{j} gives "
                    f"{fanned} as {theirs.value}s: a partition of the group has one grain",
                )
    return None
