"""The rule routes' answers (see ``api.answers``): a stored rule is the rule model itself, plus its revision."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from lakehook.answers.base import Answer, Iso, NextToken
from lakehook.answers.explain import GroupExplanation
from lakehook.answers.freshness import RuleFreshnessAnswer
from lakehook.answers.triggers import PlannedRun, TriggerSummary
from lakehook.domain.rules import Rule


class RuleAnswer(Rule):
    """A stored rule: the rule as written plus its revision and times."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    revision: int | None = Field(default=None, description="absent in a dry run's answer, as are the times")
    created_at: Iso | None = Field(default=None, alias="createdAt")
    updated_at: Iso | None = Field(default=None, alias="updatedAt")
    dry_run: bool | None = Field(default=None, alias="dryRun", description="true: validated, nothing written")
    would_start: list[PlannedRun] | None = Field(
        default=None,
        alias="wouldStart",
        description="a dry run's answer only: the runs writing the rule would start now (the resolver's plan)",
    )


class RulePage(Answer):
    items: list[RuleAnswer]
    next_token: str | None = NextToken


class SlotWaiter(Answer):
    trigger_key: str = Field(alias="triggerKey")
    position: int = Field(description="its place in the queue (1: next)")
    claimed_at: Iso = Field(alias="claimedAt")


class SlotScopeExplanation(Answer):
    partition: str | None = Field(description="a partitioned group's runs of this partition; null: the rule's runs")
    in_flight: list[str] = Field(alias="inFlight", description="the triggers whose runs hold a slot now")
    waiting: list[SlotWaiter] = Field(description="the first 20 waiting, in claim order")
    waiting_count: int = Field(alias="waitingCount")


class InFlightExplanation(Answer):
    """A rule with maxInFlight: its runs in flight and the claimed triggers waiting for a slot, per scope."""

    max_in_flight: int = Field(alias="maxInFlight")
    max_run_seconds: int = Field(alias="maxRunSeconds", description="in force (the default when the rule sets none)")
    waiting_count: int = Field(alias="waitingCount")
    scopes: list[SlotScopeExplanation] = Field(description="only scopes with a run in flight or a trigger waiting")


class Explanation(Answer):
    rule_id: str = Field(alias="ruleId")
    ready: bool
    groups: list[GroupExplanation]
    last_trigger: TriggerSummary | None = Field(
        default=None, alias="lastTrigger", description="the rule's newest trigger (of any group); null: none yet"
    )
    evaluated_at: Iso = Field(alias="evaluatedAt")
    in_flight: InFlightExplanation | None = Field(
        default=None, alias="inFlight", description="a rule with maxInFlight: its runs in flight and who waits"
    )
    freshness: RuleFreshnessAnswer | None = Field(
        default=None, description="a rule (or a member) that promises freshness: whether it keeps it; absent otherwise"
    )


class Evaluation(Explanation):
    """The explanation after an evaluation, and what it claimed."""

    trigger_key: str | None = Field(alias="triggerKey", description="the key claimed (the first), or null")
    claimed: list[str]
    manual: bool = Field(description="a forced, manual run")
