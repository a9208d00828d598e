"""The rule routes' answers (see ``api.answers``): a stored rule is the rule model itself, plus its revision."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from lakehook.answers.base import Answer, Iso, NextToken
from lakehook.answers.explain import Explanation as Explanation
from lakehook.answers.triggers import PlannedRun
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


class Evaluation(Explanation):
    """The explanation after an evaluation, and what it claimed."""

    trigger_key: str | None = Field(alias="triggerKey", description="the key claimed (the first), or null")
    claimed: list[str]
    manual: bool = Field(description="a forced, manual run")
