"""The answer of ``POST /sensors/evaluate``, for the OpenAPI document (the route answers
:func:`lakehook.usecases.sensors.EvaluateSensor.evaluate`'s dict)."""

from __future__ import annotations

from pydantic import Field

from lakehook.answers.base import Answer, Iso
from lakehook.answers.explain import GroupExplanation
from lakehook.answers.triggers import PinnedInputAnswer


class SensorExplanation(Answer):
    groups: list[GroupExplanation] = Field(description="every group evaluated: READY or what blocks it, per member")
    evaluated_at: Iso = Field(alias="evaluatedAt", description="when the last evaluation ran")


class SensorAnswer(Answer):
    ready: bool = Field(description="whether a group's members all hold now (groups are alternatives)")
    verdict: str = Field(description="READY, or the status of the first group (BLOCKED_BY_WATERMARK, ...)")
    group_id: str = Field(alias="groupId", description="the first READY group, else the first group")
    reason: str | None = Field(description="why that group is not READY (null when READY)")
    pins: list[PinnedInputAnswer] = Field(description="READY: the versions that satisfy the group; else empty")
    rule_id: str | None = Field(alias="ruleId", description="the rule asked about; null for an ad-hoc group")
    explanation: SensorExplanation
    evaluations: int = Field(description="how many times the condition was evaluated during the wait")
    waited_seconds: float = Field(alias="waitedSeconds", description="how long the request waited")
