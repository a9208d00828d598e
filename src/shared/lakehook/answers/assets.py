"""The answers about registered assets: ``PUT /assets`` and ``GET /assets`` (with each polled source's health)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from lakehook.answers.base import Answer, Iso, NextToken, SourceHealthAnswer, iso_or_none, present
from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.notice_state import describe

if TYPE_CHECKING:
    from lakehook.domain.assets import AssetRegistration
    from lakehook.domain.notice_state import NoticeState, PollCadence
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
