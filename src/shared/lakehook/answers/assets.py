"""The answers about registered assets: ``PUT /assets`` and ``GET /assets`` (with each polled source's health)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from lakehook.answers.base import Answer, Iso, NextToken, SourceHealthAnswer, iso_or_none, present
from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.notice_state import describe
from lakehook.domain.partitions import partitions_json
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.assets import AssetRegistration
    from lakehook.domain.notice_state import NoticeState, PollCadence
    from lakehook.domain.snapshots import PollStatus, SnapshotGap, UnrecordedPartitions
    from lakehook.domain.source_health import SourceHealth
    from lakehook.domain.state import AssetState, LatestPartitions


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


class LatestPartitionsAnswer(Answer):
    """The partitions one snapshot touched: at most 1000 keys (64 KiB), sorted; ``count`` says how many there were."""

    keys: list[str] = Field(description="canonical Hive-style keys (dt=2026-12-01/region=eu), sorted")
    count: int = Field(description="how many partitions the snapshot touched")
    truncated: bool = Field(description="true: keys are the first of them, count says how many in all")
    unrecorded: int | None = Field(
        default=None, description="partition keys the snapshot touched that could not be recorded (docs/partitions.md)"
    )
    unrecorded_keys: list[str] | None = Field(
        default=None, alias="unrecordedKeys", description="the first of them: each key's start, length and why"
    )
    snapshot_id: int = Field(alias="snapshotId")
    order: int = Field(description="the snapshot's place in history (as latestSnapshotOrder)")

    @classmethod
    def from_domain(cls, parts: LatestPartitions) -> LatestPartitionsAnswer:
        return cls.model_validate({**partitions_json(parts), "snapshotId": parts.snapshot_id, "order": parts.order})


def _state_field(alias: str, description: str | None = None) -> Any:
    return Field(default=None, alias=alias, description=description)


class AssetStateAnswer(Answer):
    """``GET /assets/state``: the advance-only state as stored (fields an asset never had are absent), what is
    derived from it (watermark, schemaStatus, qualityStatus), and for a registered source its polls and health."""

    asset_key: str = Field(alias="assetKey")
    version: int = Field(description="0 for a registered asset without any recorded event")
    latest_snapshot_id: int | None = _state_field("latestSnapshotId")
    latest_snapshot_order: int | None = _state_field("latestSnapshotOrder", "the snapshot's place in history")
    latest_sequence_number: int | None = _state_field("latestSequenceNumber")
    latest_schema_id: int | None = _state_field("latestSchemaId")
    latest_commit_time: int | None = _state_field("latestCommitTime", "epoch milliseconds")
    latest_commit_kind: str | None = _state_field("latestCommitKind")
    latest_parent_snapshot_id: int | None = _state_field("latestParentSnapshotId")
    latest_snapshot_watermark: int | None = _state_field("latestSnapshotWatermark")
    latest_watermark: int | None = _state_field("latestWatermark", "the newest pushed watermark")
    first_schema_id: int | None = _state_field("firstSchemaId")
    latest_metadata_location: str | None = _state_field("latestMetadataLocation", "Iceberg: the snapshot's metadata")
    latest_data_changed: bool | None = _state_field("latestDataChanged", "whether the newest snapshot changed data")
    seen_from_start: bool | None = _state_field("seenFromStart", "whether the first snapshot recorded was the first")
    latest_data: dict[str, Any] | None = _state_field("latestData", "the newest snapshot that changed data")
    latest_partitions: LatestPartitionsAnswer | None = _state_field(
        "latestPartitions",
        "the partitions the newest data-changing snapshot touched (docs/partitions.md); null or absent: the table is "
        "unpartitioned, or that snapshot's event named none",
    )
    tags: list[str] | None = Field(default=None, description="sorted")
    latest_tag: str | None = _state_field("latestTag")
    latest_tag_snapshot_id: int | None = _state_field("latestTagSnapshotId")
    quality_passed_snapshot_id: int | None = _state_field("qualityPassedSnapshotId")
    quality_failed_snapshot_id: int | None = _state_field("qualityFailedSnapshotId")
    quality_passed_order: int | None = _state_field("qualityPassedOrder")
    quality_failed_order: int | None = _state_field("qualityFailedOrder")
    schema_approved_id: int | None = _state_field("schemaApprovedId")
    schema_rejected_id: int | None = _state_field("schemaRejectedId")
    backfill_id: str | None = _state_field("backfillId")
    backfill_status: str | None = _state_field("backfillStatus", "NONE, RUNNING or COMPLETED")
    cdc_recovered_watermark: int | None = _state_field("cdcRecoveredWatermark")
    manifest_uri: str | None = _state_field("manifestUri")
    manifest_status: str | None = _state_field("manifestStatus")
    manifest_snapshot_id: int | None = _state_field("manifestSnapshotId")
    manifest_reason: str | None = _state_field("manifestReason")
    manifest_object: str | None = _state_field("manifestObject")
    manifest_sha256: str | None = _state_field("manifestSha256", "the SHA-256 of the manifest verified (SEALED)")
    confirmed_snapshot_id: int | None = _state_field("confirmedSnapshotId")
    confirmed_order: int | None = _state_field("confirmedOrder")
    confirmed_trigger_key: str | None = _state_field("confirmedTriggerKey")
    unconfirmed_snapshot_id: int | None = _state_field("unconfirmedSnapshotId")
    unconfirmed_order: int | None = _state_field("unconfirmedOrder")
    unconfirmed_trigger_key: str | None = _state_field("unconfirmedTriggerKey")
    unconfirmed_reason: str | None = _state_field("unconfirmedReason")
    last_coverage_start: int | None = _state_field("lastCoverageStart")
    last_coverage_end: int | None = _state_field("lastCoverageEnd")
    updated_at: Iso | None = _state_field("updatedAt")
    last_event_id: str | None = _state_field("lastEventId")
    watermark: int | None = Field(default=None, description="the newest of the pushed and the snapshot watermarks")
    schema_status: str | None = _state_field("schemaStatus")
    quality_status: str | None = _state_field("qualityStatus")
    registered: bool
    poll_status: PollStatusAnswer | None = _state_field(
        "pollStatus", "a registered source: its polls (null: never polled)"
    )
    notices: NoticesAnswer | None = Field(
        default=None, description="a registered source, on a stack that takes commit notices: whether they arrive"
    )
    source_health: SourceHealthAnswer | None = _state_field(
        "sourceHealth", "a registered source that was polled: its health"
    )

    @classmethod
    def from_domain(cls, state: AssetState, registered: bool) -> AssetStateAnswer:
        """The state's own answer (``GET /assets/state`` adds the poll status, notices and health of a source)."""
        return cls.model_validate({**cls.of_state(state), "registered": registered})

    @classmethod
    def of_state(cls, state: AssetState) -> dict[str, Any]:
        """The fields the state gives (those it never had left out), to build the answer with."""
        data: dict[str, Any] = state.model_dump(
            by_alias=True, mode="json", exclude_none=True, exclude={"tag_refs", "tags", "latest_partitions"}
        )
        parts = state.latest_partitions
        if parts is not None:
            data["latestPartitions"] = LatestPartitionsAnswer.from_domain(parts)
        data.update(tags=sorted(state.tags), watermark=state.watermark)
        data.update(schemaStatus=state.schema_status.value, qualityStatus=state.quality_status)
        if state.updated_at is not None:
            data["updatedAt"] = ms_to_iso(state.updated_at)
        return data
