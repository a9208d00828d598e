"""The answers about registered assets: ``PUT /assets`` and ``GET /assets`` (with each polled source's health)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from lakehook.answers.base import Answer, Iso, NextToken, SourceHealthAnswer, iso_or_none, present
from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.notice_state import describe
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.assets import AssetRegistration
    from lakehook.domain.notice_state import NoticeState, PollCadence
    from lakehook.domain.snapshots import PollStatus, SnapshotGap, UnrecordedPartitions
    from lakehook.domain.source_health import SourceHealth


class AssetAnswer(Answer):
    asset_key: str = Field(alias="assetKey")
    format: AssetFormat
    source: AssetSource | None = None
    description: str | None = None
    max_age_seconds: int | None = Field(
        default=None, alias="maxAgeSeconds", description="overdue after this long without a new snapshot"
    )
    poll_interval_seconds: int | None = Field(
        default=None,
        alias="pollIntervalSeconds",
        description="how often the schedule polls this table while its commit notices do not arrive",
    )
    source_health: SourceHealthAnswer | None = Field(
        default=None, alias="sourceHealth", description="GET /assets: a polled source's health (absent: never polled)"
    )

    @classmethod
    def from_domain(cls, asset: AssetRegistration, health: SourceHealth | None = None) -> AssetAnswer:
        """The registration as written (fields it has no value for absent), with its source's health if known."""
        data = asset.model_dump(by_alias=True, mode="json", exclude_none=True)
        if health is not None:
            data["sourceHealth"] = SourceHealthAnswer.from_domain(health)
        return cls.model_validate(data)


class AssetPage(Answer):
    items: list[AssetAnswer]
    next_token: str | None = NextToken


class NoticesAnswer(Answer):
    """A polled table's commit notices (docs/commit-notices.md): whether they arrive, and how often it is polled."""

    state: str = Field(description="NONE (none seen), ARRIVING, or QUIET (stopped: polled at its fast interval)")
    poll_interval_seconds: int = Field(alias="pollIntervalSeconds", description="how often the schedule polls it now")
    last_notice_at: Iso | None = Field(default=None, alias="lastNoticeAt", description="absent: none seen")
    fast_poll_since: Iso | None = Field(default=None, alias="fastPollSince", description="QUIET: since when")
    summary: str = Field(description="one line, as the CLI and the console show it")

    @classmethod
    def from_domain(
        cls, notices: NoticeState, own_interval: int | None, now: int, cadence: PollCadence
    ) -> NoticesAnswer:
        health, since = notices.health(now, cadence), notices.fast_since(now, cadence)
        return cls(
            state=health.value,
            poll_interval_seconds=notices.interval_seconds(own_interval, now, cadence),
            **present(last_notice_at=iso_or_none(notices.last_notice_ms), fast_poll_since=iso_or_none(since)),
            summary=describe(health, since),
        )


class SnapshotGapAnswer(Answer):
    """Snapshots that expired before they were read: reading resumed at the oldest retained one."""

    after_snapshot_id: int = Field(alias="afterSnapshotId", description="the last snapshot read before the gap")
    resumed_at_snapshot_id: int | None = Field(default=None, alias="resumedAtSnapshotId")
    missed: int | None = Field(default=None, description="how many snapshots were skipped, when known")

    @classmethod
    def from_domain(cls, gap: SnapshotGap) -> SnapshotGapAnswer:
        return cls.model_validate(gap.model_dump(by_alias=True, exclude_none=True))


class UnrecordedPartitionsAnswer(Answer):
    """The newest snapshot recorded although some partition keys it touched could not be (docs/partitions.md)."""

    snapshot_id: int = Field(alias="snapshotId")
    count: int = Field(description="partition keys of the snapshot that could not be recorded")
    keys: list[str] = Field(description="the first of them, as the event's unrecordedKeys")
    found_at: Iso = Field(alias="foundAt")

    @classmethod
    def from_domain(cls, found: UnrecordedPartitions) -> UnrecordedPartitionsAnswer:
        return cls(
            snapshot_id=found.snapshot_id, count=found.count, keys=list(found.keys), found_at=ms_to_iso(found.found_at)
        )


# PollStatus's instants, answered as ISO strings
_POLL_TIMES = ("lastPolledAt", "lastSuccessAt", "lastErrorAt", "nextAttemptAt", "failingSince", "blockedSince",
               "gapSince", "laggingSince", "hungSince")  # fmt: skip
_POLL_PARTS = {"last_gap", "warnings", "last_unrecorded_partitions", "blockers", "open_gap"}


class PollStatusAnswer(Answer):
    """What the poller knows of a registered table's polls; fields it never had are absent."""

    asset_key: str = Field(alias="assetKey")
    last_polled_at: Iso | None = Field(default=None, alias="lastPolledAt")
    last_success_at: Iso | None = Field(default=None, alias="lastSuccessAt")
    last_snapshot_id: int | None = Field(default=None, alias="lastSnapshotId")
    consecutive_failures: int = Field(default=0, alias="consecutiveFailures")
    last_error: str | None = Field(default=None, alias="lastError")
    last_error_kind: str | None = Field(default=None, alias="lastErrorKind")
    last_error_at: Iso | None = Field(default=None, alias="lastErrorAt")
    next_attempt_at: Iso | None = Field(default=None, alias="nextAttemptAt")
    failing_since: Iso | None = Field(default=None, alias="failingSince", description="the current failures' first")
    blocked_since: Iso | None = Field(default=None, alias="blockedSince")
    gap_since: Iso | None = Field(default=None, alias="gapSince")
    head_snapshot_id: int | None = Field(
        default=None, alias="headSnapshotId", description="the table's head when the last read stopped short of it"
    )
    lagging_since: Iso | None = Field(default=None, alias="laggingSince")
    hung_since: Iso | None = Field(
        default=None, alias="hungSince", description="when a poll started that ran past the poller's hang bound"
    )
    warnings: list[str] | None = Field(default=None, description="what the last read found wrong without failing")
    blockers: list[str] | None = Field(default=None, description="versions the last read cannot represent (BLOCKED)")
    last_unrecorded_partitions: UnrecordedPartitionsAnswer | None = Field(
        default=None, alias="lastUnrecordedPartitions"
    )
    last_gap: SnapshotGapAnswer | None = Field(default=None, alias="lastGap")
    open_gap: SnapshotGapAnswer | None = Field(
        default=None, alias="openGap", description="the gap the last read of new versions found"
    )

    @classmethod
    def from_domain(cls, status: PollStatus) -> PollStatusAnswer:
        data: dict[str, Any] = status.model_dump(by_alias=True, mode="json", exclude_none=True, exclude=_POLL_PARTS)
        data.update({name: ms_to_iso(data[name]) for name in _POLL_TIMES if name in data})
        unrecorded, gaps = status.last_unrecorded_partitions, (status.last_gap, status.open_gap)
        parts = present(
            warnings=list(status.warnings) or None,
            blockers=list(status.blockers) or None,
            lastUnrecordedPartitions=None if unrecorded is None else UnrecordedPartitionsAnswer.from_domain(unrecorded),
            lastGap=None if gaps[0] is None else SnapshotGapAnswer.from_domain(gaps[0]),
            openGap=None if gaps[1] is None else SnapshotGapAnswer.from_domain(gaps[1]),
        )
        return cls.model_validate({**data, **parts})
