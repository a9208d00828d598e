"""Whether a table's commit notices arrive, and so how often the schedule must poll it.

A table whose Glue or S3 commit notices arrive is polled by each notice within seconds; the schedule only needs
to poll it as a safety net (``safety_net_seconds``, hourly by default). A table whose notices do not arrive is
polled at its own fast interval (its ``pollIntervalSeconds``, else the stack's ``PollIntervalSeconds``). The
notice state decides which:

* ``NONE``: no notice has named the table since it was registered: fast poll;
* ``ARRIVING``: a notice named it within ``quiet_after_seconds``, and no safety-net poll has since found a commit
  that no notice announced: safety-net poll;
* ``QUIET``: notices stopped: none within ``quiet_after_seconds``, or a safety-net poll found a commit older than
  ``NOTICE_GRACE_MS`` that no notice had announced (a lost notice). Fast poll from then on (``fast_since``),
  until the next notice makes it ``ARRIVING`` again.

So a lost notice delays a commit by at most the safety-net interval, never loses it (the poll reads every
version after its offset), and the table falls back to the fast poll by itself. The schedule itself keeps no
per-table state: a table with interval ``I`` is due on the one tick of each ``I`` its key's phase picks
(:func:`due`), so 1,000 tables polled hourly are spread over the hour, not queued on one tick.

Pure: no clock, no store. This module is the notice half of a table's health; the source-health model lives
apart and can join it by asset key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from lakehook.domain.time import ms_to_iso

TICK_SECONDS = 60  # the poll schedule's rate (template.yaml PollPlannerFunction / Poll: rate(1 minute))
NOTICE_GRACE_MS = 120_000  # a notice reaches the planner within seconds; a commit older than this had its chance
MIN_INTERVAL_SECONDS = TICK_SECONDS
MAX_INTERVAL_SECONDS = 86_400


class NoticeHealth(StrEnum):
    NONE = "NONE"
    ARRIVING = "ARRIVING"
    QUIET = "QUIET"


@dataclass(frozen=True)
class PollCadence:
    """The stack's polling settings: the default fast interval, the safety net for a table whose notices arrive,
    and how long notices may be quiet before the table falls back to its fast interval (all in seconds)."""

    default_interval_seconds: int = 60
    safety_net_seconds: int = 3_600
    quiet_after_seconds: int = 86_400

    def __post_init__(self) -> None:
        check_interval(self.default_interval_seconds, "poll interval (PollIntervalSeconds)")
        check_interval(self.safety_net_seconds, "safety net (NoticeSafetyNetSeconds)")
        if self.quiet_after_seconds < self.safety_net_seconds:
            raise ValueError("the notice quiet time (NoticeQuietSeconds) must be at least the safety net")


def stack_cadence(interval_seconds: int, safety_net_seconds: int, quiet_seconds: int) -> PollCadence:
    """The cadence a stack's parameters give, never refused (every function reads them at start): each interval
    rounded up to whole minutes within one minute and one day, the quiet time at least the safety net."""

    def minutes(seconds: int) -> int:
        whole = -(-max(int(seconds), MIN_INTERVAL_SECONDS) // TICK_SECONDS) * TICK_SECONDS
        return min(whole, MAX_INTERVAL_SECONDS)

    safety_net = minutes(safety_net_seconds)
    return PollCadence(minutes(interval_seconds), safety_net, max(int(quiet_seconds), safety_net))


def check_interval(seconds: int, name: str) -> int:
    """A poll interval: whole minutes (the schedule's tick) from one minute to one day; ValueError naming it."""
    if (
        not isinstance(seconds, int)
        or isinstance(seconds, bool)
        or not MIN_INTERVAL_SECONDS <= seconds <= MAX_INTERVAL_SECONDS
        or seconds % TICK_SECONDS
    ):
        raise ValueError(
            f"{name} must be a whole number of minutes in seconds, from {MIN_INTERVAL_SECONDS} to "
            f"{MAX_INTERVAL_SECONDS} (got {seconds!r})"
        )
    return seconds


@dataclass(frozen=True)
class NoticeState:
    """What is stored of a table's notices: when the last one named it, and when a safety-net poll found a commit
    no notice had announced since (cleared by the next notice)."""

    last_notice_ms: int | None = None
    missed_since_ms: int | None = None

    def health(self, now_ms: int, cadence: PollCadence) -> NoticeHealth:
        if self.last_notice_ms is None:
            return NoticeHealth.NONE
        if self.missed_since_ms is not None or now_ms - self.last_notice_ms > cadence.quiet_after_seconds * 1000:
            return NoticeHealth.QUIET
        return NoticeHealth.ARRIVING

    def fast_since(self, now_ms: int, cadence: PollCadence) -> int | None:
        """Since when a QUIET table is polled fast: the missed commit's discovery, else the end of the quiet time."""
        if self.health(now_ms, cadence) is not NoticeHealth.QUIET or self.last_notice_ms is None:
            return None
        quiet_from = self.last_notice_ms + cadence.quiet_after_seconds * 1000
        return min(quiet_from, self.missed_since_ms) if self.missed_since_ms is not None else quiet_from

    def interval_seconds(self, own_interval: int | None, now_ms: int, cadence: PollCadence) -> int:
        """How often the schedule polls the table now: the safety net while notices arrive (never more often than
        the table's own interval asks), else its own interval or the stack's default."""
        fast = own_interval or cadence.default_interval_seconds
        if self.health(now_ms, cadence) is NoticeHealth.ARRIVING:
            return max(fast, cadence.safety_net_seconds)
        return fast


def describe(health: NoticeHealth, fast_since_ms: int | None) -> str:
    """One line for the CLI and console: ``notices: ARRIVING`` / ``notices: QUIET (fast poll since …)``."""
    if health is NoticeHealth.QUIET and fast_since_ms is not None:
        return f"notices: QUIET (fast poll since {ms_to_iso(fast_since_ms)})"
    return f"notices: {health.value}"


def unannounced(first_new_commit_ms: int | None, now_ms: int) -> bool:
    """Whether a safety-net poll's new commit shows a lost notice: it is older than the grace a notice takes to
    arrive and poll (a younger one may have its notice in flight)."""
    return first_new_commit_ms is not None and now_ms - first_new_commit_ms > NOTICE_GRACE_MS


def phase_seconds(asset_key: str, interval_seconds: int) -> int:
    """The table's offset within its interval, in whole ticks: stable per key, spread evenly over keys."""
    ticks = interval_seconds // TICK_SECONDS
    digest = int.from_bytes(hashlib.sha256(asset_key.encode()).digest()[:8], "big")
    return (digest % ticks) * TICK_SECONDS


def due(asset_key: str, interval_seconds: int, tick_ms: int) -> bool:
    """Whether the schedule's tick at ``tick_ms`` polls the table: exactly one tick in each ``interval_seconds``
    (the one its phase picks), whatever the interval; every tick when the interval is the tick."""
    tick = tick_ms // 1000 // TICK_SECONDS * TICK_SECONDS
    return (tick - phase_seconds(asset_key, interval_seconds)) % interval_seconds == 0
