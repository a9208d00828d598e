"""What explain says of a scheduled group: its cron and zone, its last and next tick, and what the tick waits for.

Made by the group's own evaluation (:func:`lakehook.domain.evaluation.evaluate_group`), which the resolver and
explain share, so it says what the resolver does: ``waitsFor`` are the members' verdicts of that evaluation, not
a second reading. A group that ran for its last tick waits for the next one, and its members are then judged as
the resolver will judge them at that tick, on the state read now (what the policy asks since the last trigger).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.schedules import GroupSchedule, ScheduleNeverFiresError


def local_iso(ms: int, timezone: str) -> str:
    """Epoch milliseconds as ISO 8601 in ``timezone``, with its offset (``2026-03-29T06:00:00+02:00``)."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC) + timedelta(milliseconds=ms % 1000)
    return moment.astimezone(ZoneInfo(timezone)).isoformat(timespec="milliseconds").replace(".000", "")


@dataclass(frozen=True)
class ScheduleExplanation:
    """A scheduled group's ticks at ``now`` and what its next run waits for.

    ``pending_tick`` is the tick the group fires for next: the last tick while it has not run for it (missed
    ticks coalesce into the latest), else the next tick. ``waits_for`` are the members not satisfied for it
    (empty: only the time, or nothing), or None when the group could not be evaluated (ERROR).
    ``never_fires`` holds the reason when the cron matches no date (a rule stored before such crons were
    refused): it has no ticks."""

    schedule: GroupSchedule
    last_tick: int | None = None
    next_tick: int | None = None
    ran_for_last_tick: bool | None = None
    waits_for: tuple[MemberEvaluation, ...] | None = None
    never_fires: str | None = None

    @classmethod
    def at(
        cls,
        schedule: GroupSchedule,
        now: int,
        ran_until: int | None,
        waits_for: tuple[MemberEvaluation, ...],
    ) -> ScheduleExplanation:
        """The schedule's ticks around ``now``; ``ran_until`` is the end of the window the group last ran for."""
        try:
            last, following = schedule.latest_tick(now), schedule.next_tick(now)
        except ScheduleNeverFiresError as exc:
            return cls(schedule, never_fires=str(exc))
        return cls(schedule, last, following, ran_until is not None and ran_until >= last, waits_for)

    @classmethod
    def unevaluated(cls, schedule: GroupSchedule, now: int) -> ScheduleExplanation:
        """The ticks of a group whose evaluation failed (ERROR): what it ran for and waits for is unknown."""
        try:
            return cls(schedule, schedule.latest_tick(now), schedule.next_tick(now))
        except ScheduleNeverFiresError as exc:
            return cls(schedule, never_fires=str(exc))

    @property
    def pending_tick(self) -> int | None:
        if self.ran_for_last_tick is None:
            return None
        return self.next_tick if self.ran_for_last_tick else self.last_tick
