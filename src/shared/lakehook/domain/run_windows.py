"""A group's run window: the hours of the day its runs may start in, in an IANA time zone.

``{"start": "01:00", "end": "05:00", "timezone": "Europe/Berlin"}`` lets the group start runs from 01:00 up to (not
including) 05:00 local time, every day (a native gate of the DolphinScheduler RFC: heavy jobs only at night). An
``end`` at or before ``start`` spans midnight (``22:00`` to ``04:00``); ``days`` narrows it to weekdays, counted by the
day the window opens on. A group whose members hold outside the window waits visibly (``WAITING_FOR_RUN_WINDOW``,
until the window next opens) and runs once it opens, for what it then finds; nothing is dropped. A run started
inside the window may run past its end: the window gates starts, not runs. Manual replays, retries and forced runs
are a person's decision and are not gated.

Local times that a daylight-saving change skips (02:30 on the spring-forward night) are read as the instant they
name by the offset before the change (zoneinfo's ``fold=0``); a window end that repeats (the autumn night) ends at
its first occurrence.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from lakehook.domain.time import validate_timezone

_CLOCK = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])", re.ASCII)
Weekday = Literal["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
_WEEKDAYS: tuple[Weekday, ...] = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")


def _clock(value: str, name: str) -> time:
    found = _CLOCK.fullmatch(value)
    if found is None:
        raise ValueError(f"{name} {value!r} is not a time of day HH:MM (00:00 … 23:59)")
    return time(int(found.group(1)), int(found.group(2)))


class RunWindow(BaseModel):
    """``{"start": "01:00", "end": "05:00", "timezone": "Europe/Berlin", "days": ["MON", …]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: str = Field(max_length=5, description="HH:MM, local time: runs may start from here")
    end: str = Field(
        max_length=5,
        description="HH:MM, local time: runs may start until here (excluded); at or "
        "before start: the window spans midnight",
    )
    timezone: str = Field(default="UTC", max_length=64, description="an IANA time zone, e.g. Europe/Berlin")
    days: tuple[Weekday, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=7,
        description="the weekdays the window opens on (MON … SUN); absent: every day",
    )

    @field_validator("start", "end")
    @classmethod
    def _times(cls, value: str, info: ValidationInfo) -> str:
        _clock(value, info.field_name or "time")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return validate_timezone(value)

    @field_validator("days")
    @classmethod
    def _days(cls, value: tuple[Weekday, ...] | None) -> tuple[Weekday, ...] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("days names a weekday twice")
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> RunWindow:
        if self.start == self.end:
            raise ValueError(
                f"start and end are both {self.start}: the window would be empty (for a whole day, leave runWindow out)"
            )
        return self

    def describe(self) -> str:
        days = f" on {', '.join(self.days)}" if self.days else ""
        return f"{self.start} to {self.end} {self.timezone}{days}"

    def opens_after(self, now_ms: int) -> int | None:
        """None when ``now_ms`` is inside the window; else the instant (ms) it next opens."""
        zone = ZoneInfo(self.timezone)
        local = datetime.fromtimestamp(now_ms / 1000, UTC).astimezone(zone)
        for back in (1, 0):  # a window that opened yesterday may still be open (it spans midnight)
            opened = self._opening(local.date() - timedelta(days=back), zone)
            if opened is not None and opened <= now_ms < self._closing(local.date() - timedelta(days=back), zone):
                return None
        for ahead in range(8):  # at most a week to the next allowed weekday
            opens = self._opening(local.date() + timedelta(days=ahead), zone)
            if opens is not None and opens > now_ms:
                return opens
        raise AssertionError("a run window with at least one weekday opens within eight days")

    def _opening(self, day: date, zone: ZoneInfo) -> int | None:
        if self.days is not None and _WEEKDAYS[day.weekday()] not in self.days:
            return None
        return _instant(day, _clock(self.start, "start"), zone)

    def _closing(self, day: date, zone: ZoneInfo) -> int:
        start, end = _clock(self.start, "start"), _clock(self.end, "end")
        return _instant(day + timedelta(days=1) if end <= start else day, end, zone)


def _instant(day: date, at: time, zone: ZoneInfo) -> int:
    return int(datetime.combine(day, at, tzinfo=zone).timestamp() * 1000)
