"""The answers about registered assets: ``PUT /assets`` and ``GET /assets`` (with each polled source's health)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from lakehook.answers.base import Answer, NextToken, SourceHealthAnswer
from lakehook.domain.assets import AssetFormat, AssetSource

if TYPE_CHECKING:
    from lakehook.domain.assets import AssetRegistration
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
