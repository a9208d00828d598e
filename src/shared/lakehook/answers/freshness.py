"""The freshness answers: what a rule (explain's ``freshness``) or an asset is overdue for, built from the domain's
``Overdue`` (docs/operations.md, freshness)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from lakehook.answers.base import Answer, Iso, present
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.freshness import Overdue
    from lakehook.usecases.freshness import RuleFreshness


class OverdueAnswer(Answer):
    """One broken freshness promise: which, since when and why; its cause when a source it reads is untrusted."""

    kind: Literal["EXPECTED_BY", "MAX_WAIT", "MAX_AGE", "PARTITION_MAX_AGE"]
    since: Iso = Field(description="when it became overdue")
    reason: str
    cause: str | None = Field(default=None, description="a source it reads that is BLOCKED or has a GAP, described")
    asset_key: str | None = Field(default=None, alias="assetKey", description="MAX_AGE: the asset")
    group_id: str | None = Field(default=None, alias="groupId", description="a partition's group")
    partition: str | None = Field(default=None, description="the overdue partition")

    @classmethod
    def from_domain(cls, overdue: Overdue) -> OverdueAnswer:
        partition: dict[str, Any] = {}
        if overdue.partition is not None:
            partition = {"group_id": overdue.group_id, "partition": overdue.partition}
        return cls(
            kind=overdue.kind.value,
            since=ms_to_iso(overdue.since),
            reason=overdue.reason,
            **present(cause=overdue.cause, asset_key=overdue.asset_key),
            **partition,
        )


class RuleFreshnessAnswer(Answer):
    """Explain's ``freshness``: whether the rule keeps its promises (and its members their maxAgeSeconds)."""

    status: Literal["ON_TIME", "OVERDUE", "ERROR"] = Field(description="ERROR: the promise could not be checked")
    overdue: list[OverdueAnswer]
    reason: str | None = Field(default=None, description="ERROR: why the promise cannot be checked")

    @classmethod
    def from_domain(cls, freshness: RuleFreshness) -> RuleFreshnessAnswer:
        overdue = [OverdueAnswer.from_domain(o) for o in freshness.overdue]
        if freshness.error is None:
            return cls(status="OVERDUE" if overdue else "ON_TIME", overdue=overdue)
        return cls(
            status="ERROR", overdue=overdue, reason=f"the rule's freshness promise cannot be checked: {freshness.error}"
        )
