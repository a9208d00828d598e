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
        today = datetime.fromtimestamp(now_ms / 1000, UTC).astimezone(zone).date()
        for back in (1, 0):  # a window that opened yesterday may still be open (it spans midnight)
            span = self._span(today - timedelta(days=back), zone)
            if span is not None and span[0] <= now_ms < span[1]:
                return None
        for ahead in range(8):  # at most a week to the next allowed weekday
            span = self._span(today + timedelta(days=ahead), zone)
            if span is not None and span[0] > now_ms:
                return span[0]
        raise AssertionError("a run window with at least one weekday opens within eight days")

    def _span(self, day: date, zone: ZoneInfo) -> tuple[int, int] | None:
        """The window that opens on ``day``: [opens, closes) in ms, or None on a day it does not open. A window a
        daylight-saving change swallows (02:00 to 03:00 on the spring-forward night) opens at the change, for its
        usual length, rather than not at all."""
        if self.days is not None and _WEEKDAYS[day.weekday()] not in self.days:
            return None
        start, end = _clock(self.start, "start"), _clock(self.end, "end")
        opens = _instant(day, start, zone)
        closes = _instant(day + timedelta(days=1) if end <= start else day, end, zone)
        if closes <= opens:
            length = (end.hour * 60 + end.minute - start.hour * 60 - start.minute) % (24 * 60)
            closes = opens + length * 60_000
        return opens, closes


def _instant(day: date, at: time, zone: ZoneInfo) -> int:
    return int(datetime.combine(day, at, tzinfo=zone).timestamp() * 1000)
