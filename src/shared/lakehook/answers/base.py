"""What every answer model shares (see ``api.answers``): the base class, ISO instants, paging, windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.source_health import SourceHealth

Iso = str  # an ISO 8601 instant in UTC, e.g. 2025-06-01T10:05:00Z
NextToken = Field(default=None, alias="nextToken", description="pass back as ?nextToken= for the next page")


# A route builds its answer model from domain objects (each model's ``from_domain``) and answers its ``dump()``;
# the OpenAPI document describes the same class. Schemas are built on first use (the document, or the first
# answer of that shape), not when a function imports the routes.
class Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    def dump(self) -> dict[str, Any]:
        """The JSON body: fields by their camelCase names, in declaration order; a field its builder did not set
        is absent (one set to None is null)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class SourceHealthAnswer(Answer):
    """Whether what lakehook knows of a polled table can be trusted (docs/operations.md#source-health)."""

    asset_key: str = Field(alias="assetKey")
    state: str = Field(description="HEALTHY, LAGGING, BLOCKED or GAP")
    since: Iso | None = Field(default=None, description="when the state began (absent for HEALTHY)")
    reason: str | None = Field(default=None, description="why: the error, the versions, the gap or the offset")
    blocked_by: str | None = Field(
        default=None,
        alias="blockedBy",
        description="BLOCKED: UNREADABLE, CREDENTIALS, UNREPRESENTABLE or POLLER_FAILING",
    )
    lagging_by: str | None = Field(
        default=None,
        alias="laggingBy",
        description="LAGGING: BEHIND_HEAD (the offset is behind the table's head) or NOTICES_STOPPED (its commit "
        "notices stopped; it is polled at its fast interval)",
    )

    @classmethod
    def from_domain(cls, health: SourceHealth) -> SourceHealthAnswer:
        """The state, and since when, why and by what only where the health has them."""
        return cls(
            asset_key=health.asset_key,
            state=health.state.value,
            **present(
                since=iso_or_none(health.since),
                reason=health.reason or None,
                blocked_by=None if health.blocked_by is None else health.blocked_by.value,
                lagging_by=None if health.lagging_by is None else health.lagging_by.value,
            ),
        )


class Window(Answer):
    """``[start, end)``."""

    start: Iso
    end: Iso

    @classmethod
    def from_ms(cls, start: int, end: int) -> Window:
        return cls(start=ms_to_iso(start), end=ms_to_iso(end))


def iso_or_none(ms: int | None) -> Iso | None:
    return None if ms is None else ms_to_iso(ms)


def present(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: an answer leaves the others out (absent, not null)."""
    return {name: value for name, value in fields.items() if value is not None}
