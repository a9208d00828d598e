"""A group's schedule: a cron expression in an IANA time zone, read by croniter (as Airflow reads its own).

A scheduled group fires once per tick, after the tick has passed and its members are satisfied: Dagster's
``on_cron``, and, OR'ed with a group of members alone, Airflow's "assets or time". The tick is the end of the
trigger's window ``[previous tick, tick)`` (the data interval Airflow gives a cron run), so it is in the
trigger key: one trigger per tick, however often the group is evaluated. Ticks the group missed while it
waited for its members coalesce into the latest one.

Nothing sleeps for a tick: a group that ran for the latest tick answers ``WAITING_FOR_SCHEDULE`` until the
next one, and the resolver defers it to then; the deferral sweep (every minute) wakes it. A tick is therefore
acted on within about a minute, the sweep's period; a per-rule EventBridge Scheduler schedule would be
second-exact but is one more AWS resource per rule to create, update and delete in step with the rules.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from lakehook.domain.targets import is_stored
from lakehook.domain.time import MAX_ISO_MS, validate_timezone

_NEVER_FIRES_PROBE = datetime(2000, 1, 1, tzinfo=UTC)


class ScheduleNeverFiresError(ValueError):
    """A stored schedule's cron matches no date (written before lakehook refused such a cron): it has no ticks."""

    def __init__(self, cron: str) -> None:
        super().__init__(
            f"cron {cron!r} never fires: no date matches its day and month fields "
            "(stored before lakehook refused such a cron; correct the rule)"
        )
        self.cron = cron


class GroupSchedule(BaseModel):
    """``{"cron": "0 6 * * *", "timezone": "Europe/Berlin"}``: five fields (minute hour day month weekday)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cron: str = Field(max_length=256, description="five-field cron: minute hour day-of-month month day-of-week")
    timezone: str = Field(default="UTC", max_length=64, description="an IANA time zone, e.g. Europe/Berlin")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str, info: ValidationInfo) -> str:
        text = " ".join(value.split())
        if len(text.split(" ")) != 5 or not croniter.is_valid(text):
            raise ValueError(f"cron {value!r} is not a five-field cron expression (minute hour day month weekday)")
        # A five-field cron that fires once fires every few years at most (29 February on a weekday, 28 years),
        # so one next tick from a fixed instant tells whether it fires at all: ``0 0 30 2 *`` never does, and a
        # rule or deadline on it would never run nor ever be overdue. A rule stored before this check still loads.
        if is_stored(info.context):
            return text
        try:
            croniter(text, _NEVER_FIRES_PROBE).get_next(datetime)
        except CroniterBadDateError as exc:
            raise ValueError(f"cron {value!r} never fires: no date matches its day and month fields") from exc
        return text

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return validate_timezone(value)

    def latest_tick(self, now_ms: int) -> int:
        """The last tick at or before ``now_ms``. Raises ScheduleNeverFiresError (so do the other two)."""
        at = self._local(now_ms + 1)  # croniter's get_prev is strictly before its start: include now itself
        return self._tick(at, forward=False)

    def next_tick(self, now_ms: int) -> int:
        """The first tick after ``now_ms``; one past the last instant lakehook can show (9999-12-31T23:59:59.999Z)
        is that instant, which no clock reaches (datetime, and so croniter, cannot hold a time past 9999)."""
        try:
            return min(self._tick(self._local(now_ms), forward=True), MAX_ISO_MS)
        except OverflowError:
            return MAX_ISO_MS

    def previous_tick(self, tick_ms: int) -> int:
        """The tick before ``tick_ms``: the start of its window."""
        return self._tick(self._local(tick_ms), forward=False)

    def _tick(self, start: datetime, *, forward: bool) -> int:
        moving = croniter(self.cron, start)
        try:
            return _ms(moving.get_next(datetime) if forward else moving.get_prev(datetime))
        except CroniterBadDateError as exc:  # only a stored rule gets here: a written cron was probed
            raise ScheduleNeverFiresError(self.cron) from exc

    def _local(self, ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone(ZoneInfo(self.timezone))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
