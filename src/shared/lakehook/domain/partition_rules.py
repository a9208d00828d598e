"""How a partitioned group names its partitions, and how a member's partition keys map onto them.

A group with ``partitionBy: ["dt"]`` runs once per partition key of those fields (``dt=2026-12-01``). Each
partitioned member says, per group field, which of its own partition fields holds the value (``field``, by default
the same name) and to which time grain the value is cut (``grain``): ``hour=2026-12-01-10`` → ``dt=2026-12-01``
with ``{"dt": {"field": "hour", "grain": "day"}}``. A member's fields the group does not name are dropped (a
commit touching ``dt=2026-12-01/region=eu`` is one of ``dt=2026-12-01``). Two mappings between grains: a **rollup**
(``complete``: the member holds the units of the group's value, the hours of its day; or, on a member's field the
group does not key on, ``{"values": [...]}``: each of those values) and a **fan-out** (``fanOut``: the group's values
are the units of the member's, each hour of a group keyed on hours takes its day's commit; ``fanOut`` a grain: the
units of that grain, a year's days; ``{"values": [...]}`` on a group field the member does not have: each of those
values). A rollup may be further apart (``"complete": "hour"`` on a month) or need only n of its units
(``{"atLeast": n}``, :class:`UnitCount`), and a group value may come from a member's through a ``map`` of values
onto values (with ``complete``: a rollup of the values mapping onto it). A member may roll up or fan out several
fields: a partition then needs (or a fact names) the product of their units, at most :data:`MAX_UNITS`. See
docs/partitions.md.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from itertools import product
from math import prod
from typing import Any, Literal, TypeVar

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
# The most units of a finer grain one value of a grain has (a year's 366 days, a month's 744 hours).
_MOST = {
    (Grain.DAY, Grain.HOUR): 24,
    (Grain.MONTH, Grain.DAY): 31,
    (Grain.MONTH, Grain.HOUR): 31 * 24,
    (Grain.YEAR, Grain.MONTH): 12,
    (Grain.YEAR, Grain.DAY): 366,
    (Grain.YEAR, Grain.HOUR): 366 * 24,
}
# The most units one partition of a rollup needs (the product of its rolled-up fields' units), and the most
# partitions one fact of a fan-out names (the product of its fanned-out fields' units): each evaluation of a
# partition reads a fact per unit, and each fact's partitions are marked pending and evaluated.
MAX_UNITS = 1000
MAX_VALUE_LENGTH = 256


def most_units(grain: Grain, unit: Grain) -> int:
    """The most values of ``unit`` one value of ``grain`` holds (a day's 24 hours, a leap year's 366 days)."""
    return _MOST[(grain, unit)]


def finer(grain: Grain, than: Grain) -> bool:
    """Whether ``grain`` is finer than ``than`` (an hour is finer than a day)."""
    return _GRAIN_LENGTH[grain] > _GRAIN_LENGTH[than]


# A rollup's coverage [from, to) of its units, as the units' values end: hours 0..23 (of a day), days 1..31 (of a
# month; from at most 28, so that every month has a unit in it; to past the month's end stops at it), months 1..12
# (of a year). A rollup further apart applies it to each unit's own number: hours 06 to 21 of each day of a month.
# Per unit grain: (lowest from, highest from, highest to).
UNIT_BOUNDS: dict[Grain, tuple[int, int, int]] = {
    Grain.HOUR: (0, 23, 24),
    Grain.DAY: (1, 28, 32),
    Grain.MONTH: (1, 12, 13),
}
_COARSER = {unit: grain for grain, unit in _FINER.items()}


class UnitRange(BaseModel):
    """The units of a rollup's partition it waits for: ``[from, to)``, unit values as written (``{"from": 6, "to":
    22}`` of a day: the hours 06 to 21)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    start: int = Field(alias="from", description="the first unit waited for (hour 0-23, day 1-28, month 1-12)")
    end: int = Field(alias="to", description="the unit after the last one waited for (hour 1-24, day 2-32, month 2-13)")
    unit: Grain | None = Field(
        default=None,
        description="the units' grain, for a rollup further apart than one grain (hour on a month: the range is each "
        "unit's own number, hours 06 to 21 of each day of the month); default one grain finer than grain",
    )

    @model_validator(mode="after")
    def _ordered(self) -> UnitRange:
        if self.start >= self.end:
            raise ValueError(f"from ({self.start}) must be below to ({self.end}): the range [from, to) is half-open")
        return self

    def check(self, grain: Grain, unit: Grain | None = None) -> UnitRange:
        """This range, when it fits the numbers of the units of ``grain`` it rolls up (by default one grain finer:
        hours of a day, days of a month, months of a year); a ValueError naming from or to otherwise."""
        unit = unit or _FINER[grain]
        low, high, top = UNIT_BOUNDS[unit]
        if not low <= self.start <= high:
            raise ValueError(f"from ({self.start}) must be {unit.value} {low} to {high} of the {_COARSER[unit].value}")
        if not self.start < self.end <= top:
            raise ValueError(f"to ({self.end}) must be above from and at most {top} (the {unit.value} after the last)")
        return self

    def count(self, unit: Grain) -> int:
        """The most units of one ``unit``'s parent (a day's hours, a month's days) the range holds."""
        return min(self.end, UNIT_BOUNDS[unit][2]) - self.start

    def holds(self, unit: str) -> bool:
        """Whether a unit value (``2026-12-01-06``) is in the range: its last number."""
        return self.start <= int(unit[-2:]) < self.end

    def describe(self, grain: Grain, unit: Grain) -> str:
        parent = _COARSER[unit]
        each = "" if parent is grain else f" of each {parent.value}"
        return f"{unit.value}s {self.start:02d} to {self.end - 1:02d}{each}"


class UnitValues(BaseModel):
    """The values of a field a rollup waits for, or a fan-out gives: ``{"values": ["eu", "us"]}``, each a partition
    value as the member's keys hold it (unescaped)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: tuple[str, ...] = Field(
        min_length=1,
        max_length=MAX_UNITS,
        description=f"1 to {MAX_UNITS} distinct values, each 1 to {MAX_VALUE_LENGTH} characters",
    )

    @field_validator("values")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for v in value:
            if not v or len(v) > MAX_VALUE_LENGTH:
                raise ValueError(f"each value is 1 to {MAX_VALUE_LENGTH} characters (null is no value to wait for)")
        twice = next((v for i, v in enumerate(value) if v in value[:i]), None)
        if twice is not None:
            raise ValueError(f"{twice[:40]!r} is named twice")
        return value

    def describe(self, name: str) -> str:
        shown = ", ".join(self.values[:5]) + (f" and {len(self.values) - 5} more" if len(self.values) > 5 else "")
        return f"{name} {shown}"


class UnitCount(BaseModel):
    """A rollup that holds a partition once at least ``atLeast`` of its units have a data commit (Airflow's
    MinimumCount): ``{"atLeast": 20}`` of a day's hours, over the units the other rollups name (``"unit"``, a range
    ``"from"``/``"to"``, or ``"values"``). With several rolled-up fields it counts the units of their product."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    at_least: int = Field(
        alias="atLeast",
        ge=1,
        le=MAX_UNITS,
        description="how many of the partition's units need a data commit, 1 to the fewest units a partition has",
    )
    unit: Grain | None = Field(default=None, description="the units' grain (hour on a month), as complete takes it")
    start: int | None = Field(
        default=None, alias="from", description="a range [from, to) of the units, as in UnitRange"
    )
    end: int | None = Field(default=None, alias="to", description="the unit after the last one of the range")
    values: tuple[str, ...] | None = Field(
        default=None, description="on a member's field the group does not key on: the values counted, as in UnitValues"
    )

    @model_validator(mode="after")
    def _units(self) -> UnitCount:
        if (self.start is None) is not (self.end is None):
            raise ValueError("from and to go together: the half-open range [from, to) of the units counted")
        if self.values is not None and (self.unit is not None or self.start is not None):
            raise ValueError("values takes no unit, from or to: the values are a field's own, as written")
        if self.values is not None:
            _sub_model(UnitValues, {"values": self.values})
        elif self.start is not None:
            _sub_model(UnitRange, {"from": self.start, "to": self.end, "unit": self.unit})
        return self

    @property
    def bare(self) -> bool:
        """Whether it counts the units as the rollup has them: no unit, range or values of its own."""
        return self.unit is None and self.start is None and self.values is None

    @property
    def span(self) -> UnitRange | None:
        """The range of units counted; None: every unit."""
        if self.start is None or self.end is None:
            return None
        return UnitRange.model_construct(start=self.start, end=self.end, unit=self.unit)

    @property
    def listed(self) -> UnitValues | None:
        """The values counted, on a member's field the group does not key on."""
        return None if self.values is None else UnitValues.model_construct(values=self.values)


# The value of each grain with the fewest units of each finer grain (February of a common year: 28 days, 672 hours).
_SHORTEST = {Grain.DAY: "2025-02-01", Grain.MONTH: "2025-02", Grain.YEAR: "2025"}


def units_of(value: str, grain: Grain, unit: Grain | None = None) -> list[str]:
    """The units of ``unit`` (by default one grain finer) that make up ``value`` of ``grain``, in time order: a day's
    24 hours, a month's days, a year's 12 months (``2026-12-01`` → ``2026-12-01-00`` … ``2026-12-01-23``), and
    further apart a year's days or a month's hours."""
    step = _FINER.get(grain)
    if unit is not None and step is not None and unit is not step:
        return [u for v in units_of(value, grain) for u in units_of(v, step, unit)]
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
    """Where one group field's value comes from in a member's partition key (or, on a member's field the group does
    not key on, the values of it a rollup waits for)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    field: str | None = Field(
        default=None, description="the member's own partition field holding the value (default: the same name)"
    )
    grain: Grain | None = Field(
        default=None,
        description="cut a time value to this grain (hour, day, month, year): hour=2026-12-01-10 is day 2026-12-01",
    )
    complete: bool | Grain | UnitRange | UnitValues | UnitCount = Field(
        default=False,
        description="a rollup: the member holds a partition only once every unit of it has a data commit (each of "
        "the 24 hours of a day, each day of a month, each month of a year; values one grain finer than grain); a "
        "grain finer still (hour, day): the units of that grain (a month's hours, a year's days), at most "
        f'{MAX_UNITS}; given {{"from": 6, "to": 22}}, each unit of that half-open range (hours 06 to 21 of a day; '
        'with "unit": "hour" on a month, hours 06 to 21 of each of its days); on a member\'s field the group does not '
        'key on, {"values": ["eu", "us"]}: each of those values (with no field or grain); {"atLeast": 20} (with a '
        '"unit", "from"/"to" or "values"): once at least that many of the units have one. Several rolled-up fields: '
        f"every combination of their units, at most {MAX_UNITS}",
    )
    fan_out: bool | Grain | UnitValues | None = Field(
        default=None,
        alias="fanOut",
        description="a fan-out: the member holds values of grain, and the group's are their units, one grain finer: "
        "a commit touching day 2026-12-01 touches each of its 24 hours (a month: each of its days; a year: its 12 "
        "months), and each group hour takes the newest commit touching its day; a grain finer still (hour, day, "
        'month): the units of that grain (a year\'s days); {"values": ["eu", "us"]} on a group field the member '
        "does not have (with no field or grain): each of those values. Several fanned-out fields: every combination, "
        f"at most {MAX_UNITS} partitions a fact names",
    )
    value_map: dict[str, str] | None = Field(
        default=None,
        alias="map",
        min_length=1,
        max_length=MAX_UNITS,
        description='the group\'s value from the member\'s, value onto value: {"de": "eu", "fr": "eu", "us": "us"} (a '
        "commit touching country=de touches region=eu; a value not mapped touches no partition); with complete "
        "(true or {\"atLeast\": n}) a rollup: the group's value once each (or n) of the member's values mapping onto "
        f"it has a data commit. 1 to {MAX_UNITS} entries, each side 1 to {MAX_VALUE_LENGTH} characters, no grain",
    )

    @field_validator("field")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _field_name(value, "field")

    @field_validator("value_map")
    @classmethod
    def _mapped_values(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for side in (value or {}).items():
            if not all(0 < len(v) <= MAX_VALUE_LENGTH for v in side):
                raise ValueError(f"each value mapped, and each it maps onto, is 1 to {MAX_VALUE_LENGTH} characters")
        return value

    @field_validator("complete", mode="before")
    @classmethod
    def _coverage(cls, value: Any, info: ValidationInfo) -> Any:
        grain = info.data.get("grain")
        if isinstance(value, str):
            return _unit_of(value, grain, "complete", "units one partition of the rollup needs")
        if not isinstance(value, dict):
            return value  # true, false, or what the type refuses
        if "atLeast" in value:
            count = _sub_model(UnitCount, value)
            if count.values is None:
                _time_units(count.unit, count.span, grain)
            return count
        if "values" in value:
            return _sub_model(UnitValues, value)
        span = _sub_model(UnitRange, value)
        _time_units(span.unit, span, grain)
        return span

    @field_validator("fan_out", mode="before")
    @classmethod
    def _fanned(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, dict):
            return _sub_model(UnitValues, value)
        if value is None or isinstance(value, bool):
            return value
        return _unit_of(value, info.data.get("grain"), "fanOut", "partitions one fact names")

    @property
    def rolls_up(self) -> bool:
        """Whether the member rolls this field up (``complete``: true, a range or values)."""
        return self.complete is not False

    @property
    def coverage(self) -> UnitRange | None:
        """The range of units a rollup waits for; None: every unit."""
        if isinstance(self.complete, UnitCount):
            return self.complete.span
        return self.complete if isinstance(self.complete, UnitRange) else None

    @property
    def at_least(self) -> int | None:
        """How many of a partition's units a rollup needs (``{"atLeast": n}``); None: each of them."""
        return self.complete.at_least if isinstance(self.complete, UnitCount) else None

    @property
    def fewest(self) -> int:
        """The fewest units of a rollup one partition has on this field (a month's 28 days, February's 672 hours, the
        values listed); 1 for no rollup."""
        values, unit, span = self.rollup_values, self.rollup_unit, self.coverage
        if values is not None:
            return len(values.values)
        if self.value_map is not None and self.rolls_up:
            return min(self.preimages.values())
        if unit is None or self.grain is None:
            return 1
        return sum(1 for u in units_of(_SHORTEST[self.grain], self.grain, unit) if span is None or span.holds(u))

    @property
    def rollup_unit(self) -> Grain | None:
        """The grain of the units a rollup of a time value waits for: one finer than ``grain``, or the one named
        (``"complete": "hour"`` on a month); None for no such rollup."""
        if not self.rolls_up or self.rollup_values is not None or self.grain not in _FINER:
            return None
        named = self.complete if isinstance(self.complete, Grain) else getattr(self.complete, "unit", None)
        return named or _FINER[self.grain]

    @property
    def rollup_values(self) -> UnitValues | None:
        """The values of a member's field a rollup waits for (``complete: {"values": [...]}``)."""
        if isinstance(self.complete, UnitCount):
            return self.complete.listed
        return self.complete if isinstance(self.complete, UnitValues) else None

    @property
    def fans_out(self) -> bool:
        """Whether the member fans this field out (``fanOut``): the group's values are the units of its own."""
        return self.fan_out is not None and self.fan_out is not False

    @property
    def fan_out_values(self) -> UnitValues | None:
        """The values a fan-out gives a group field the member does not have (``fanOut: {"values": [...]}``)."""
        return self.fan_out if isinstance(self.fan_out, UnitValues) else None

    @property
    def group_grain(self) -> Grain | None:
        """The grain of the group's values this source gives: ``grain``, or a fan-out's finer grain (one finer for
        ``fanOut: true``)."""
        if isinstance(self.fan_out, Grain):
            return self.fan_out
        if self.fan_out is True and self.grain in _FINER:
            return _FINER[self.grain]
        return self.grain

    @property
    def most(self) -> int:
        """The most units of a rollup one partition needs, or the most partitions one fact of a fan-out names, on
        this field; 1 for neither."""
        values = self.rollup_values or self.fan_out_values
        if values is not None:
            return len(values.values)
        if self.value_map is not None:
            return max(self.preimages.values()) if self.rolls_up else 1
        if self.grain is None or self.grain is Grain.HOUR or (not self.rolls_up and not self.fans_out):
            return 1
        unit = self.group_grain if self.fans_out else self.rollup_unit
        assert unit is not None
        if self.coverage is not None:
            parent = _COARSER[unit]
            return self.coverage.count(unit) * (1 if parent is self.grain else most_units(self.grain, parent))
        return most_units(self.grain, unit)

    @property
    def preimages(self) -> dict[str, int]:
        """Per value a ``map`` maps onto, how many of the member's values map onto it."""
        found: dict[str, int] = {}
        for target in (self.value_map or {}).values():
            found[target] = found.get(target, 0) + 1
        return found

    @model_validator(mode="after")
    def _mapped(self) -> FieldSource:
        if self.value_map is None:
            return self
        if self.grain is not None or self.fans_out:
            raise ValueError(
                "map takes no grain and no fanOut: it maps each of the member's values, as written, onto one of the "
                "group's"
            )
        c = self.complete
        if not isinstance(c, bool) and not (isinstance(c, UnitCount) and c.bare):
            raise ValueError(
                'map with complete takes true or {"atLeast": n}: the units of a group value are the member\'s values '
                "mapping onto it"
            )
        return self

    @model_validator(mode="after")
    def _rollup(self) -> FieldSource:
        if self.rolls_up and self.fans_out:
            raise ValueError(
                "complete (a rollup: the member holds the units of the group's value) and fanOut (the group's values "
                "are the units of the member's) exclude each other"
            )
        if (self.rollup_values or self.fan_out_values) is not None:
            if self.field is not None or self.grain is not None:
                which = "complete" if self.rollup_values is not None else "fanOut"
                raise ValueError(
                    f"{which} with values takes no field or grain: the values are the field's own, as written"
                )
            return self
        if self.rolls_up and self.value_map is None and self.grain in (None, Grain.HOUR):
            raise ValueError("complete (a rollup) needs a grain of day, month or year: the units it waits for")
        if self.fans_out and self.grain in (None, Grain.HOUR):
            raise ValueError(
                "fanOut needs a grain of day, month or year: the grain the member holds, whose units (hours, days, "
                "months) the group's partitions are"
            )
        return self


def _time_units(unit: Grain | None, span: UnitRange | None, grain: Any) -> None:
    """A ValueError when the units a rollup of a time value names (a grain, a range of them) do not fit ``grain``."""
    if unit is not None:
        _unit_of(unit, grain, "complete.unit", "units one partition of the rollup needs")
    if span is not None and grain in _FINER:
        span.check(grain, unit)


def _unit_of(value: Any, grain: Any, what: str, bound: str) -> Grain:
    """``value`` as the grain of the units a rollup waits for or a fan-out gives, checked against ``grain``: finer,
    and at most :data:`MAX_UNITS` of it in one value of ``grain`` (a year's 8,784 hours are refused); a ValueError
    naming ``what`` otherwise. A missing or hourly ``grain`` is the model's to refuse."""
    try:
        unit = Grain(value)
    except ValueError:
        raise ValueError(
            f'{what} is true (one grain finer), a finer grain (hour, day, month) or {{"values": [...]}}'
        ) from None
    if isinstance(grain, Grain) and grain is not Grain.HOUR:
        if not finer(unit, grain):
            raise ValueError(f"{what} ({unit.value}) must be a grain finer than grain ({grain.value})")
        if most_units(grain, unit) > MAX_UNITS:
            raise ValueError(
                f"{what} {unit.value}: a {grain.value} names up to {most_units(grain, unit)} {unit.value}s, above "
                f"the limit of {MAX_UNITS} {bound}"
            )
    return unit


_M = TypeVar("_M", UnitRange, UnitValues, UnitCount)


def _sub_model(model: type[_M], value: dict[str, Any]) -> _M:
    """``value`` as ``model``; a ValueError naming its first bad field otherwise."""
    try:
        return model.model_validate(value)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}: {message}" if where else message) from None


class _Kind(StrEnum):
    PLAIN = "plain"  # the member's value (cut to grain) is the group's
    ROLLUP = "rollup"  # the member holds units (one grain finer) of the group's value
    FAN_OUT = "fanOut"  # the member holds a coarser value, the group its units
    VALUES_ROLLUP = "valuesRollup"  # a member's field the group does not key on: each of the values
    VALUES_FAN_OUT = "valuesFanOut"  # a group field the member does not have: each of the values
    MAPPED = "mapped"  # the member's value mapped onto the group's (map)
    MAPPED_ROLLUP = "mappedRollup"  # the member's values mapping onto the group's: each of them (map with complete)


_ROLLED = (_Kind.ROLLUP, _Kind.VALUES_ROLLUP, _Kind.MAPPED_ROLLUP)  # the kinds a partition needs several facts of


@dataclass(frozen=True)
class _Dim:
    """One field of a mapping: how a member's value becomes a fact's (``to_fact``), a partition's value the facts'
    (``units``) and a fact's value the partitions' (``names``). A values rollup is in facts only, a values fan-out
    in partitions only."""

    name: str
    source: FieldSource
    kind: _Kind

    @property
    def member_field(self) -> str:
        return self.source.field or self.name

    @property
    def in_fact(self) -> bool:
        return self.kind is not _Kind.VALUES_FAN_OUT

    @property
    def in_partition(self) -> bool:
        return self.kind is not _Kind.VALUES_ROLLUP

    @property
    def values(self) -> list[str]:
        found = self.source.rollup_values or self.source.fan_out_values
        return list(found.values) if found is not None else []

    @property
    def mapped(self) -> bool:
        return self.kind in (_Kind.MAPPED, _Kind.MAPPED_ROLLUP)

    def _mapped(self, value: str | None, side: Literal["to_fact", "units", "names"]) -> list[str | None]:
        """``to_fact``, ``units`` or ``names`` (``side``) of a mapped field: a plain map keeps the group's value in
        its facts, a rollup of mapped values the member's (the units of a group value are its preimage)."""
        rollup, found = self.kind is _Kind.MAPPED_ROLLUP, self.source.value_map or {}
        if side == "units" and rollup:
            return [k for k, onto in found.items() if onto == value]
        if side == "units":
            return [value] if value in self.source.preimages else []
        if side == "names" and not rollup:
            return [value]
        onto = None if value is None else found.get(value)
        return [] if onto is None else [value if rollup and side == "to_fact" else onto]

    def to_fact(self, value: str | None) -> list[str | None]:
        """The fact's value for a member's value: none when it does not cut to the grain kept (or a map does not map
        it)."""
        if self.mapped:
            return self._mapped(value, "to_fact")
        grain = self.source.rollup_unit if self.kind is _Kind.ROLLUP else self.source.grain
        if grain is None:
            return [value]
        cut = cut_to_grain(value, grain) if value is not None else None
        return [] if cut is None else [cut]

    def units(self, value: str | None) -> list[str | None]:
        """The facts' values a partition's value needs: its units for a rollup (of its coverage), the member's
        coarser value for a fan-out, the value itself otherwise; none when the value can be no partition."""
        grain = self.source.grain
        if self.mapped:
            return self._mapped(value, "units")
        if self.kind is _Kind.PLAIN:
            return [value]
        if self.kind is _Kind.VALUES_ROLLUP:
            return list(self.values)
        if self.kind is _Kind.VALUES_FAN_OUT:
            return [value] if value in self.values else []
        assert grain is not None
        if value is None or grain_of(value) is not self.source.group_grain:
            return []
        if self.kind is _Kind.FAN_OUT:
            return [value[: _GRAIN_LENGTH[grain]]]
        span = self.source.coverage
        return [u for u in units_of(value, grain, self.source.rollup_unit) if span is None or span.holds(u)]

    def names(self, value: str | None) -> list[str | None]:
        """The partitions' values a fact's value names: the value cut to the group's grain for a rollup, every unit
        of it for a fan-out, each value for a values fan-out."""
        grain = self.source.grain
        if self.mapped:
            return self._mapped(value, "names")
        if self.kind is _Kind.VALUES_FAN_OUT:
            return list(self.values)
        if self.kind is _Kind.PLAIN:
            return [value]
        assert grain is not None
        if self.kind is _Kind.ROLLUP:
            cut = cut_to_grain(value, grain) if value is not None else None
            return [] if cut is None else [cut]
        if value is None or grain_of(value) is not grain:
            return []
        return list(units_of(value, grain, self.source.group_grain))


def _check_at_least(fields: Mapping[str, FieldSource]) -> None:
    """A ValueError naming the field unless ``atLeast`` is on one rolled-up field at most and at most the fewest units
    a partition has (over the product of the rolled-up fields: a month's 28 days x 2 regions is 56)."""
    counted = [(name, s.at_least) for name, s in fields.items() if s.at_least is not None]
    if len(counted) > 1:
        raise ValueError(
            f"{counted[1][0]}.complete.atLeast: atLeast is on one rolled-up field ({counted[0][0]} has one); it counts "
            "the units of the product of them all"
        )
    if counted:
        name, n = counted[0]
        rolled = [(f, s.fewest) for f, s in fields.items() if s.rolls_up]
        fewest = prod(units for _, units in rolled)
        if n is not None and n > fewest:
            shown = " x ".join(f"{units} ({f})" for f, units in rolled)
            raise ValueError(
                f"{name}.complete.atLeast ({n}) is above the {fewest} units the fewest partition of the rollup has "
                f"({shown}): it would never be held"
            )


def _combine(axes: Sequence[tuple[str, Sequence[str | None]]]) -> Iterator[str]:
    """Every key of one value per axis (the first axis varying slowest)."""
    names = [n for n, _ in axes]
    for combo in product(*(values for _, values in axes)):
        yield format_partition_key(list(zip(names, combo, strict=True)))


class MemberPartition(BaseModel):
    """A member of a partitioned group that is itself partitioned: how its keys map onto the group's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, FieldSource] = Field(
        default_factory=dict,
        max_length=MAX_PARTITION_FIELDS * 2,
        description="per group field (partitionBy), where the member holds its value; a field not named here is "
        "read from the member's field of the same name. A member's own field the group does not key on may be "
        'named with {"complete": {"values": [...]}}: a rollup waiting for each of those values',
    )

    @field_validator("fields")
    @classmethod
    def _names(cls, value: dict[str, FieldSource]) -> dict[str, FieldSource]:
        for name in value:
            _field_name(name, "a group field")
        units = [(n, s.most) for n, s in value.items() if s.rolls_up]
        fans = [(n, s.most) for n, s in value.items() if s.fans_out]
        for found, what in ((units, "units one partition of the rollup needs"), (fans, "partitions one fact names")):
            total = prod(n for _, n in found)
            if total > MAX_UNITS:
                shown = " x ".join(f"{n} ({name})" for name, n in found)
                raise ValueError(f"{shown} = {total} {what}, above the limit of {MAX_UNITS}")
        _check_at_least(value)
        return value

    def source(self, group_field: str) -> FieldSource:
        return self.fields.get(group_field) or FieldSource()

    def _dims(self, partition_by: tuple[str, ...]) -> list[_Dim]:
        """The mapping's fields in the order of its fact keys: the group's fields, then the member's fields rolled
        up over values, by name (a values fan-out is in partitions only)."""
        dims = []
        for name in partition_by:
            source = self.source(name)
            if source.fan_out_values is not None:
                kind = _Kind.VALUES_FAN_OUT
            elif source.fans_out:
                kind = _Kind.FAN_OUT
            elif source.value_map is not None:
                kind = _Kind.MAPPED_ROLLUP if source.rolls_up else _Kind.MAPPED
            elif source.rolls_up:
                kind = _Kind.ROLLUP
            else:
                kind = _Kind.PLAIN
            dims.append(_Dim(name, source, kind))
        extra = sorted(n for n, s in self.fields.items() if n not in partition_by and s.rollup_values is not None)
        return dims + [_Dim(n, self.fields[n], _Kind.VALUES_ROLLUP) for n in extra]

    def misplaced(self, partition_by: tuple[str, ...]) -> tuple[str, str] | None:
        """A field named where it cannot be (the field and why): a field the group does not key on that is no
        rollup over values, a rollup over values of a group field, or over a member field a group field reads."""
        read = {self.source(f).field or f: f for f in partition_by if self.source(f).fan_out_values is None}
        for name, source in self.fields.items():
            if name in partition_by and source.rollup_values is not None:
                return name, (
                    "complete with values rolls up a member's field the group does not key on; "
                    f"{name} is a field of partitionBy"
                )
            if name not in partition_by and source.rollup_values is None:
                return name, (
                    "not a field of partitionBy (a member's field the group does not key on takes only "
                    '{"complete": {"values": [...]}}, a rollup over those values)'
                )
            if name not in partition_by and name in read:
                return name, f"the member's field {name} holds group field {read[name]}: it is no field to roll up"
        return None

    def mapping_id(self, partition_by: tuple[str, ...]) -> str:
        """A short, stable name of this mapping onto ``partition_by``: members mapping an asset alike share facts."""
        spec: list[list[Any]] = [[f, self.source(f).field or f, self.source(f).grain] for f in partition_by]
        for dim in self._dims(partition_by):
            unit = dim.source.rollup_unit
            if dim.kind is _Kind.ROLLUP and dim.source.grain is not None and unit is not _FINER[dim.source.grain]:
                spec.append(["complete", dim.name, unit])  # kept per unit of that grain: other facts
            elif dim.kind is _Kind.ROLLUP:
                spec.append(["complete", dim.name])
            elif dim.kind is _Kind.VALUES_ROLLUP:
                spec.append(["complete", dim.name, "values"])
            elif dim.kind is _Kind.VALUES_FAN_OUT:
                spec.append(["fanOut", dim.name, "values"])
            elif dim.kind is _Kind.MAPPED:  # its facts hold the values mapped onto: the map is part of them
                spec.append(["map", dim.name, sorted((dim.source.value_map or {}).items())])
            elif dim.kind is _Kind.MAPPED_ROLLUP:  # its facts hold the member's values, whatever they map onto
                spec.append(["complete", dim.name, "map"])
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    def rollup_fields(self, partition_by: tuple[str, ...]) -> list[str]:
        """The fields this member rolls up (``complete``): group fields, then its own fields rolled up over values."""
        return [d.name for d in self._dims(partition_by) if d.kind in _ROLLED]

    def fan_out_fields(self, partition_by: tuple[str, ...]) -> list[str]:
        """The group fields this member fans out (``fanOut``)."""
        return [f for f in partition_by if self.source(f).fans_out]

    def fan_out(self, partition_by: tuple[str, ...]) -> int:
        """The most partitions of the group one fact of this member names: the product of its fan-outs' units (24
        hours of a day, 31 days of a month, 366 days of a year, the values of a values fan-out); 1 without one."""
        return prod(self.source(f).most for f in self.fan_out_fields(partition_by))

    def units(self, partition_by: tuple[str, ...]) -> int:
        """The most facts one partition of the group needs of this member: the product of its rollups' units (24
        hours x 2 regions is 48); 1 without one."""
        return prod(d.source.most for d in self._dims(partition_by) if d.kind in _ROLLED)

    def at_least(self, partition_by: tuple[str, ...]) -> int | None:
        """How many of a partition's units (of the product of its rolled-up fields) the member needs; None: each."""
        return next(
            (d.source.at_least for d in self._dims(partition_by) if d.kind in _ROLLED and d.source.at_least), None
        )

    def describe_coverage(self, partition_by: tuple[str, ...]) -> str:
        """`` (hours 06 to 21 x region eu, us)``: the ranges and values a rollup waits for; empty when it waits for
        every unit of a time value (or rolls nothing up)."""
        parts = []
        for dim in self._dims(partition_by):
            span, values = dim.source.coverage, dim.source.rollup_values
            unit = dim.source.rollup_unit
            if dim.kind is _Kind.ROLLUP and span is not None and dim.source.grain is not None and unit is not None:
                parts.append(span.describe(dim.source.grain, unit))
            elif dim.kind is _Kind.VALUES_ROLLUP and values is not None:
                parts.append(values.describe(dim.name))
            elif dim.kind is _Kind.MAPPED_ROLLUP:
                parts.append(f"{dim.member_field} mapped onto {dim.name}")
        return f" ({' x '.join(parts)})" if parts else ""

    def fact_key(self, key: str, partition_by: tuple[str, ...]) -> str | None:
        """The key a fact of one of the member's keys is kept under: the group's key, except that a rollup keeps the
        unit (``dt=2026-12-01-10``: the hour of the day it rolls up; ``dt=2026-12-01-10/region=eu`` rolling regions
        up too), so a partition can tell which units it has, and that a values fan-out leaves its field out. None
        when the key does not name a field the mapping needs (or a time value does not cut to its grain)."""
        try:
            values = dict(parse_partition_key(key))
        except PartitionKeyError:
            return None
        out: list[tuple[str, str | None]] = []
        for dim in self._dims(partition_by):
            if not dim.in_fact:
                continue
            if dim.member_field not in values:
                return None
            found = dim.to_fact(values[dim.member_field])
            if not found:
                return None
            out.append((dim.name, found[0]))
        return format_partition_key(out)

    def unit_keys(self, partition: str, partition_by: tuple[str, ...]) -> list[str]:
        """The fact keys this member needs for one of the group's partitions: the partition itself for a member that
        maps it as it is; for a rollup every unit of it (of each rolled-up field: their product); for a fan-out the
        one fact of the member's value holding it (``hr=2026-12-01`` for ``hr=2026-12-01-10``). None when the
        partition can be none of this mapping's."""
        try:
            values = dict(parse_partition_key(partition))
        except PartitionKeyError:
            return []
        axes: list[tuple[str, list[str | None]]] = []
        for dim in self._dims(partition_by):
            if dim.in_partition and dim.name not in values:
                return []
            found = dim.units(values.get(dim.name))
            if not found:
                return []
            if dim.in_fact:
                axes.append((dim.name, found))
        return list(_combine(axes))

    def misfit(self, partition: str, partition_by: tuple[str, ...]) -> str | None:
        """Why ``partition`` (a key of the group's fields) can be no partition of this member's mapping: a field the
        member cuts to a time grain whose value is no time value of that grain, or a value a values fan-out does not
        give; None when it can be one."""
        try:
            values = dict(parse_partition_key(partition))
        except PartitionKeyError as exc:
            return str(exc)
        for name in partition_by:
            source = self.source(name)
            grain, value = source.group_grain, values.get(name)
            shown = "null" if value is None else repr(value[:40])
            fanned = source.fan_out_values
            if fanned is not None and value not in fanned.values:
                return f"{name} {shown} is none of the values the member fans out to ({fanned.describe(name)})"
            if source.value_map is not None and value not in source.preimages:
                onto = UnitValues.model_construct(values=tuple(source.preimages))
                return f"{name} {shown} is none of the values the member's map maps onto ({onto.describe(name)})"
            if grain is not None and (value is None or grain_of(value) is not grain):
                how = f"fans its {source.grain}s out to" if source.fans_out else "cuts it to"
                return f"{name} {shown} is no {grain.value} ({_EXAMPLES[grain]}), the grain the member {how}"
        return None

    def partitions_of(self, fact_key: str, partition_by: tuple[str, ...]) -> list[str]:
        """The group's partitions a fact key names: the one it belongs to (a rollup's unit cut to its partition, its
        values-rolled fields dropped), or for a fan-out every unit of the member's value (a day's 24 hours; the
        product over the fanned-out fields)."""
        try:
            values = dict(parse_partition_key(fact_key))
        except PartitionKeyError:
            return []
        axes: list[tuple[str, list[str | None]]] = []
        for dim in self._dims(partition_by):
            if not dim.in_partition:
                continue
            if dim.in_fact and dim.name not in values:
                return []
            found = dim.names(values.get(dim.name))
            if not found:
                return []
            axes.append((dim.name, found))
        return list(_combine(axes))

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
            if source.value_map is not None:
                value = source.value_map.get(value) if value is not None else None
                if value is None:
                    return None
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
        for fanned in mapping.fan_out_fields(partition_by):
            source = mapping.source(fanned)
            if source.fan_out_values is not None:
                continue  # values, no grain
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
