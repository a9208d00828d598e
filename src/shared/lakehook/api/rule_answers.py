"""The rule routes' answers (see ``api.answers``): a stored rule is the rule model itself, plus its revision, times
and last error; a dry run's is the rule plus the runs its write would start."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from lakehook.answers.base import Answer, Iso, NextToken
from lakehook.answers.explain import Explanation as Explanation
from lakehook.answers.explain import RuleErrorAnswer
from lakehook.answers.triggers import PlannedRun
from lakehook.domain.rules import Rule
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.triggers import Trigger
    from lakehook.ports.rules import StoredRule


class RuleAnswer(Rule, Answer):
    """A stored rule: the rule as written plus its revision and times, and why its last evaluation failed."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    revision: int | None = Field(default=None, description="absent in a dry run's answer, as are the times")
    created_at: Iso | None = Field(default=None, alias="createdAt")
    updated_at: Iso | None = Field(default=None, alias="updatedAt")
    last_error: RuleErrorAnswer | None = Field(
        default=None,
        alias="lastError",
        description="why the rule's last evaluation failed (explain's lastError); absent: it did not",
    )
    dry_run: bool | None = Field(default=None, alias="dryRun", description="true: validated, nothing written")
    would_start: list[PlannedRun] | None = Field(
        default=None,
        alias="wouldStart",
        description="a dry run's answer only: the runs writing the rule would start now (the resolver's plan)",
    )

    @classmethod
    def from_domain(cls, stored: StoredRule) -> RuleAnswer:
        """The rule as stored, its revision and times, and its last error only when it has one."""
        error = stored.last_error
        return cls._of(
            stored.rule,
            revision=stored.revision,
            created_at=ms_to_iso(stored.created_at),
            updated_at=ms_to_iso(stored.updated_at),
            last_error=None if error is None else RuleErrorAnswer.from_domain(error),
        )

    @classmethod
    def dry_run_of(cls, rule: Rule, runs: Sequence[Trigger]) -> RuleAnswer:
        """A dry run's answer: the rule as it would be written, and the runs the write would start now."""
        return cls._of(rule, dry_run=True, would_start=[PlannedRun.from_domain(t) for t in runs])

    @classmethod
    def _of(cls, rule: Rule, **answered: Any) -> RuleAnswer:
        # Not validated again: the rule was when it was written (under the stack's URL policy, which a default one
        # could refuse), and one read back keeps a target that no longer loads as it was stored.
        return cls.model_construct(**{name: getattr(rule, name) for name in Rule.model_fields}, **answered)

    def dump(self) -> dict[str, Any]:
        """The rule's JSON form (``domain.json_form``: fields in order, none that is None), then what the answer
        adds; the last error and the planned runs in their places, each as it dumps itself (an answer of its own:
        a null groupId or reason stays)."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if self.last_error is not None:
            body["lastError"] = self.last_error.dump()
        if self.would_start is not None:
            body["wouldStart"] = [run.dump() for run in self.would_start]
        return body


class RulePage(Answer):
    items: list[RuleAnswer]
    next_token: str | None = NextToken

    def dump(self) -> dict[str, Any]:
        """The page, each rule in its place as it dumps itself (a rule answer is the rule's JSON form)."""
        body = super().dump()
        body["items"] = [item.dump() for item in self.items]
        return body


class Evaluation(Explanation):
    """The explanation after an evaluation, and what it claimed."""

    trigger_key: str | None = Field(alias="triggerKey", description="the key claimed (the first), or null")
    claimed: list[str]
    manual: bool = Field(description="a forced, manual run")
