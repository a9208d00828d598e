"""The answer of ``POST /rules/{ruleId}/backtest`` (see ``usecases.backtest``)."""

from __future__ import annotations

from pydantic import Field

from lakehook.answers.base import Answer, Iso
from lakehook.answers.triggers import TriggerAnswer
from lakehook.api.rule_answers import Explanation


class BacktestHistory(Answer):
    kept_from: Iso = Field(alias="keptFrom", description="the oldest history kept: now minus eventRetentionDays")
    event_retention_days: int = Field(alias="eventRetentionDays", description="how long raw events are kept")
    events_read: int = Field(alias="eventsRead", description="the members' events replayed (at most 1000)")
    events_before_from: int = Field(alias="eventsBeforeFrom", description="of them, those that made the states at from")
    queries: int = Field(description="queries of the events index it took (500 events a page)")


class BacktestAnswer(Answer):
    rule_id: str = Field(alias="ruleId")
    start: Iso = Field(alias="from")
    end: Iso = Field(alias="to")
    history: BacktestHistory
    runs: list[TriggerAnswer] = Field(
        description="the claims the rule would have made in [from, to), in order, each with its pins and partition"
    )
    waiting_now: Explanation = Field(alias="waitingNow", description="explain at `to`, on the replayed history")
    errors: list[str] = Field(description="the rule's evaluation errors during the replay")
