"""Freshness: say when something waited too long, and since when.

Three promises, each checked against the clock (nothing here changes what fires):

* a rule's ``freshness.expectedBy`` - a deadline as a cron in a time zone (``30 7 * * *``: every day at 07:30):
  the rule should have triggered between the previous deadline and this one; when a deadline passes without
  a trigger since the one before, the rule is overdue since that deadline, until it triggers;
* a rule's ``freshness.maxWaitSeconds`` - at most this long between triggers (before its first, since the
  rule was created): overdue since the last trigger plus that long;
* an asset's ``maxAgeSeconds`` (in its registration) - at most this long without a new snapshot (or, for an
  asset without snapshots, any new state): overdue since its last change plus that long;
* a rule's ``freshness.partitionMaxAgeSeconds`` (a rule with a partitioned group) - a partition a data commit
  touched runs within this long of lakehook finding it pending: overdue since the oldest pending partition's
  mark plus that long, until it runs (docs/partitions.md).

A partitioned group keeps ``expectedBy`` and ``maxWaitSeconds`` per partition, as its runs are per partition:
``maxWaitSeconds`` is the promise ``partitionMaxAgeSeconds`` makes (a pending partition runs within that long of
being found pending), and ``expectedBy`` expects a pending partition with a time value by the first deadline after
its period ends (``dt=2026-12-06`` with ``0 6 * * *``: by 2026-12-07T06:00), or after it was found pending when that
is later. A rule's own ``expectedBy`` and ``maxWaitSeconds`` then count the runs of its unpartitioned groups only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lakehook.domain.coverage import Span
from lakehook.domain.schedules import GroupSchedule
from lakehook.domain.state import AssetState
from lakehook.domain.time import ms_to_iso

MAX_FRESHNESS_SECONDS = 366 * 86_400


class OverdueKind(StrEnum):
    EXPECTED_BY = "EXPECTED_BY"
    MAX_WAIT = "MAX_WAIT"
    MAX_AGE = "MAX_AGE"
    PARTITION_MAX_AGE = "PARTITION_MAX_AGE"


class Freshness(BaseModel):
    """A rule's freshness promise: ``{"expectedBy": {"cron": "30 7 * * *", "timezone": "Europe/Berlin"},
    "maxWaitSeconds": 90000}``; either or both."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    expected_by: GroupSchedule | None = Field(
        default=None,
        alias="expectedBy",
        description="a deadline as a cron in a time zone: a trigger is due by each (a partitioned group: a pending "
        "partition's run by the first deadline after its period ends)",
    )
    max_wait_seconds: int | None = Field(
        default=None,
        alias="maxWaitSeconds",
        ge=60,
        le=MAX_FRESHNESS_SECONDS,
        description="at most this long between triggers (before the first, since the rule was created); a "
        "partitioned group: a pending partition runs within this long of being found pending",
    )

    partition_max_age_seconds: int | None = Field(
        default=None,
        alias="partitionMaxAgeSeconds",
        ge=60,
        le=MAX_FRESHNESS_SECONDS,
        description="a rule with a partitioned group (partitionBy): a partition a data commit touched runs within "
        "this long of being found pending",
    )

    @model_validator(mode="after")
    def _something(self) -> Freshness:
        if self.expected_by is None and self.max_wait_seconds is None and self.partition_max_age_seconds is None:
            raise ValueError("freshness states expectedBy, maxWaitSeconds or partitionMaxAgeSeconds")
        return self


@dataclass(frozen=True)
class Overdue:
    kind: OverdueKind
    since: int
    reason: str
    asset_key: str | None = None
    group_id: str | None = None
    partition: str | None = None
    cause: str | None = None  # a source it reads that is BLOCKED or has a GAP (domain.source_health), described


def rule_overdue(freshness: Freshness | None, created_at: int, last_claimed_at: int | None, now: int) -> list[Overdue]:
    """What a rule is overdue for at ``now``, given when it was created and when it last triggered."""
    if freshness is None:
        return []
    found: list[Overdue] = []
    deadline_spec = freshness.expected_by
    if deadline_spec is not None:
        deadline = deadline_spec.latest_tick(now)
        previous = deadline_spec.previous_tick(deadline)
        # Only deadlines the rule lived through count: one before it existed promised nothing.
        if previous >= created_at and (last_claimed_at is None or last_claimed_at <= previous):
            last = "never triggered" if last_claimed_at is None else f"last triggered at {ms_to_iso(last_claimed_at)}"
            found.append(
                Overdue(
                    OverdueKind.EXPECTED_BY,
                    deadline,
                    f"expected a trigger by {ms_to_iso(deadline)} ({deadline_spec.cron}, {deadline_spec.timezone}); "
                    f"{last}",
                )
            )
    if freshness.max_wait_seconds is not None:
        base = last_claimed_at if last_claimed_at is not None else created_at
        since = base + freshness.max_wait_seconds * 1000
        if since <= now:
            what = "the last trigger" if last_claimed_at is not None else "the rule was created"
            found.append(
                Overdue(
                    OverdueKind.MAX_WAIT,
                    since,
                    f"no trigger for {freshness.max_wait_seconds} s since {what} ({ms_to_iso(base)}): maxWaitSeconds",
                )
            )
    return found


def asset_overdue(asset_key: str, max_age_seconds: int | None, state: AssetState | None, now: int) -> Overdue | None:
    """Whether an asset went longer than ``maxAgeSeconds`` without a new snapshot (or state)."""
    if max_age_seconds is None or state is None:
        return None  # no state yet: nothing ever arrived, which explain says as BLOCKED_BY_SNAPSHOT / UNKNOWN
    changed = state.latest_commit_time or state.updated_at
    if changed is None:
        return None
    since = changed + max_age_seconds * 1000
    if since > now:
        return None
    return Overdue(
        OverdueKind.MAX_AGE,
        since,
        f"no new snapshot for {max_age_seconds} s: the last one is from {ms_to_iso(changed)} (maxAgeSeconds)",
        asset_key,
    )


def partition_overdue(
    group_id: str,
    max_age_seconds: int | None,
    pending_since: Mapping[str, int],
    now: int,
    kind: OverdueKind = OverdueKind.PARTITION_MAX_AGE,
) -> Overdue | None:
    """Whether a partition of the group has been pending (touched by a data commit, not yet run) longer than
    ``partitionMaxAgeSeconds`` (or, ``kind`` MAX_WAIT, the rule's ``maxWaitSeconds``, which a partitioned group
    keeps per partition): the oldest such (``pending_since``: partition key to when it was found pending)."""
    if max_age_seconds is None or not pending_since:
        return None
    oldest = min(pending_since, key=lambda p: (pending_since[p], p))
    since = pending_since[oldest] + max_age_seconds * 1000
    if since > now:
        return None
    late = sum(1 for t in pending_since.values() if t + max_age_seconds * 1000 <= now)
    others = f"; {late - 1} more of the group's pending partitions too" if late > 1 else ""
    promise = "maxWaitSeconds, per partition" if kind is OverdueKind.MAX_WAIT else "partitionMaxAgeSeconds"
    return Overdue(
        kind,
        since,
        f"{oldest} of group {group_id} is pending since {ms_to_iso(pending_since[oldest])} and has not run within "
        f"{max_age_seconds} s ({promise}){others}",
        group_id=group_id,
        partition=oldest,
    )


def partition_deadline(expected_by: GroupSchedule, span_end: int, pending_since: int) -> int:
    """When a pending partition's run is expected (``expectedBy`` per partition): the first deadline at or after both
    the end of the partition's period and the time it was found pending (data that touched a day after its deadline
    is expected by the next one, not overdue at once)."""
    return expected_by.next_tick(max(span_end, pending_since) - 1)


def partition_expected_overdue(
    group_id: str,
    expected_by: GroupSchedule | None,
    spans: Mapping[str, Span],
    pending_since: Mapping[str, int],
    now: int,
) -> Overdue | None:
    """Whether a pending partition of the group missed its ``expectedBy`` deadline (:func:`partition_deadline`;
    ``spans``: the time span of each pending partition that has one, the others have no deadline): the one whose
    deadline passed first."""
    if expected_by is None:
        return None
    deadlines = {p: partition_deadline(expected_by, spans[p].end, t) for p, t in pending_since.items() if p in spans}
    late = sorted((d, p) for p, d in deadlines.items() if d <= now)
    if not late:
        return None
    deadline, first = late[0]
    others = f"; {len(late) - 1} more of the group's pending partitions too" if len(late) > 1 else ""
    return Overdue(
        OverdueKind.EXPECTED_BY,
        deadline,
        f"{first} of group {group_id} was expected to run by {ms_to_iso(deadline)} ({expected_by.cron}, "
        f"{expected_by.timezone}: the first deadline after its period ended at {ms_to_iso(spans[first].end)}) and is "
        f"pending since {ms_to_iso(pending_since[first])}{others}",
        group_id=group_id,
        partition=first,
    )


@dataclass(frozen=True)
class Lag:
    """The longest wait of one kind at one moment, and whose it is: an asset key, or ``rule/group``."""

    seconds: float
    of: str


def longer(current: Lag | None, seconds: float | None, of: str) -> Lag | None:
    """The longer of ``current`` and a wait of ``seconds`` (None: not measured); the first of equal ones stays."""
    if seconds is None or (current is not None and current.seconds >= seconds):
        return current
    return Lag(seconds, of)


def state_lag_seconds(state: AssetState | None, now: int) -> float | None:
    """The age of the asset's newest snapshot (now minus its commit time); None without one (a spooled or custom
    asset, or a snapshot pushed without ``commitTime``)."""
    if state is None or state.latest_commit_time is None:
        return None
    return (now - state.latest_commit_time) / 1000


def watermark_lag_seconds(state: AssetState | None, now: int) -> float | None:
    """How far the asset's effective watermark is behind the clock (negative: ahead); None without a watermark."""
    watermark = state.watermark if state is not None else None
    return None if watermark is None else (now - watermark) / 1000
