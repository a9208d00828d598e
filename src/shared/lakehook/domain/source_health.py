"""Source health: whether what lakehook knows of a polled table can be trusted, from what its poller recorded.

An asset's source is, by the :class:`~lakehook.domain.snapshots.PollStatus` its poller keeps:

* ``BLOCKED`` - the poller cannot read the table (``UNREADABLE``: missing, corrupt or unreachable; ``CREDENTIALS``:
  refused, or its credentials cannot be resolved; ``POLLER_FAILING``: the poller itself fails, or hangs: a poll
  still running past the poller's hang bound, ``hungSince``, until a poll of the table finishes), or the last read
  found versions it cannot represent (``UNREPRESENTABLE``: a Hudi instant whose time cannot be a date, partition keys
  that cannot be recorded). Since the first failure (the first such read) of the current run of them.
* ``GAP`` - the last read that found new versions found some expired (or vacuumed) before they were read; since the
  first read of the current run of gaps. It ends with the next read of new versions without one.
* ``LAGGING`` - the last read stopped short of the table's head (more versions than one poll takes): the offset is
  behind, and the next polls catch up (``laggingBy: BEHIND_HEAD``). Or the table's commit notices stopped
  (:func:`with_notices`: QUIET after they had arrived, domain.notice_state): its commits reach lakehook only by
  its fast poll from then on, up to a poll period late, and a commit no notice announced waited up to the safety
  net (``laggingBy: NOTICES_STOPPED``).
* ``HEALTHY`` - none of these.

BLOCKED and GAP mean a rule reading the asset cannot decide on what lakehook knows (:meth:`SourceHealth.trusted`):
explain says so, and a freshness alarm names the source as its cause. Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from lakehook.domain.notice_state import NoticeHealth, NoticeState, PollCadence
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.time import ms_to_iso


class Health(StrEnum):
    HEALTHY = "HEALTHY"
    LAGGING = "LAGGING"
    BLOCKED = "BLOCKED"
    GAP = "GAP"


class BlockedBy(StrEnum):
    UNREADABLE = "UNREADABLE"
    CREDENTIALS = "CREDENTIALS"
    UNREPRESENTABLE = "UNREPRESENTABLE"
    POLLER_FAILING = "POLLER_FAILING"


class LaggingBy(StrEnum):
    BEHIND_HEAD = "BEHIND_HEAD"
    NOTICES_STOPPED = "NOTICES_STOPPED"


# What a source error's message says when access was refused or credentials could not be had (S3 and Glue error
# codes, HTTP statuses, and the credential resolver's "property 'x': …" messages).
_CREDENTIALS = re.compile(
    r"AccessDenied|Forbidden|Unauthori[sz]ed|ExpiredToken|InvalidAccessKeyId|SignatureDoesNotMatch|InvalidToken|"
    r"\b40[13]\b|credential|\bproperty '",
    re.IGNORECASE,
)
_UNREADABLE_KINDS = frozenset({"TableNotFoundError", "CorruptMetadataError"})


def blocked_by(error_kind: str | None, message: str | None) -> BlockedBy:
    """Why a poll that raised blocks its source, by the error's type name and message."""
    if error_kind == "SourceAccessError":
        return BlockedBy.CREDENTIALS if _CREDENTIALS.search(message or "") else BlockedBy.UNREADABLE
    if error_kind in _UNREADABLE_KINDS:
        return BlockedBy.UNREADABLE
    return BlockedBy.POLLER_FAILING


_WHY = {
    BlockedBy.UNREADABLE: "the table cannot be read",
    BlockedBy.CREDENTIALS: "access to the table is refused or its credentials cannot be resolved",
    BlockedBy.UNREPRESENTABLE: "the table has versions lakehook cannot represent",
    BlockedBy.POLLER_FAILING: "the poller fails",
}


@dataclass(frozen=True)
class SourceHealth:
    """One asset's source health: the state, since when, why (BLOCKED, GAP and LAGGING say), and what blocks it."""

    asset_key: str
    state: Health
    since: int | None = None
    reason: str | None = None
    blocked_by: BlockedBy | None = None
    lagging_by: LaggingBy | None = None

    @property
    def trusted(self) -> bool:
        """Whether a rule may decide on what lakehook knows of the asset (not BLOCKED, no GAP)."""
        return self.state in (Health.HEALTHY, Health.LAGGING)

    def describe(self) -> str:
        """``<asset> is BLOCKED since <when> because <why>`` (HEALTHY: ``<asset> is HEALTHY``)."""
        found = f"{self.asset_key} is {self.state.value}"
        if self.since is not None:
            found += f" since {ms_to_iso(self.since)}"
        return f"{found} because {self.reason}" if self.reason else found


def source_health(status: PollStatus | None) -> SourceHealth | None:
    """The source health a poll status says (None: never polled, nothing is known). The worst state wins: a failing
    poll, then versions it cannot represent, then a gap, then lagging."""
    if status is None:
        return None
    key = status.asset_key
    if status.hung_since is not None:
        reason = (
            f"{_WHY[BlockedBy.POLLER_FAILING]}: a poll started at {ms_to_iso(status.hung_since)} did not finish "
            "within the poller's hang bound, and no poll of the table has finished since (it hangs without raising)"
        )
        return SourceHealth(key, Health.BLOCKED, status.hung_since, reason, BlockedBy.POLLER_FAILING)
    if status.consecutive_failures > 0:
        cause = blocked_by(status.last_error_kind, status.last_error)
        failures = f"{status.consecutive_failures} poll{'s' if status.consecutive_failures > 1 else ''} in a row"
        reason = f"{_WHY[cause]} ({failures}): {status.last_error_kind}: {status.last_error}"
        return SourceHealth(key, Health.BLOCKED, status.failing_since or status.last_error_at, reason, cause)
    if status.blockers:
        reason = f"{_WHY[BlockedBy.UNREPRESENTABLE]}: {'; '.join(status.blockers)}"
        return SourceHealth(key, Health.BLOCKED, status.blocked_since, reason, BlockedBy.UNREPRESENTABLE)
    if status.open_gap is not None:
        gap = status.open_gap
        missed = "an unknown number of versions" if gap.missed is None else f"{gap.missed} version(s)"
        reason = (
            f"{missed} after snapshot {gap.after_snapshot_id} expired before they were read (reading resumed at "
            f"{gap.resumed_at_snapshot_id}): the table expires or vacuums versions faster than it is polled"
        )
        return SourceHealth(key, Health.GAP, status.gap_since, reason)
    if status.head_snapshot_id is not None:
        reason = (
            f"the offset (snapshot {status.last_snapshot_id}) is behind the table's head (snapshot "
            f"{status.head_snapshot_id}): the next polls catch up"
        )
        return SourceHealth(key, Health.LAGGING, status.lagging_since, reason, lagging_by=LaggingBy.BEHIND_HEAD)
    return SourceHealth(key, Health.HEALTHY)


def with_notices(
    health: SourceHealth | None, notices: NoticeState, now_ms: int, cadence: PollCadence
) -> SourceHealth | None:
    """A polled source joined with its commit notices: a HEALTHY one whose notices stopped (QUIET, after at least one
    had named it) is LAGGING, ``NOTICES_STOPPED``, since the table fell back to its fast poll. A worse state is kept
    as it is; a table no notice ever named (NONE) is polled fast from the start and loses nothing to notices."""
    if health is None or health.state is not Health.HEALTHY:
        return health
    if notices.health(now_ms, cadence) is not NoticeHealth.QUIET or notices.last_notice_ms is None:
        return health
    if notices.missed_since_ms is not None:
        why = "a safety-net poll found a commit no notice had announced"
    else:
        why = f"none has named the table for more than {cadence.quiet_after_seconds} s"
    reason = (
        f"its commit notices stopped (the last named it at {ms_to_iso(notices.last_notice_ms)}; {why}): its commits "
        "reach lakehook only by its fast poll until a notice arrives again"
    )
    since = notices.fast_since(now_ms, cadence)
    return SourceHealth(health.asset_key, Health.LAGGING, since, reason, lagging_by=LaggingBy.NOTICES_STOPPED)


def cannot_decide(health: SourceHealth) -> str:
    """What explain says of a group whose member's source is not trusted."""
    return f"cannot decide: {health.describe()}"
