"""What is overdue: one rule for explain, every rule and asset for the freshness check's metric and alarm.

One rule whose promise cannot be checked (a deadline cron stored before lakehook refused crons that never fire,
a cursor that does not parse) is reported as such, with the reason, and never stops the others being checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.freshness import Overdue, asset_overdue, rule_overdue
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor
from lakehook.observability import logger
from lakehook.ports import AssetRegistry
from lakehook.ports.rules import RuleStore, StateReader, StoredRule, TriggerStore

PAGE = 200
# What checking one rule's promise may raise because of that rule (its stored body, its cursors), not the store:
# croniter's errors and pydantic's are ValueErrors, an instant out of range an OverflowError.
RULE_FAULTS = (ValueError, ArithmeticError)


def last_claimed_at(cursors: Mapping[Any, GroupCursor]) -> int | None:
    """When any group of the rule last triggered (a skip is not a run: the cursor keeps the run's time)."""
    return max((c.claimed_at for c in cursors.values() if c.claimed_at is not None), default=None)


def fault_reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class RuleFreshness:
    """What one rule is overdue for; ``error`` when its own promise could not be checked (its members' ages
    still are)."""

    overdue: list[Overdue]
    error: str | None = None

    def to_api(self) -> dict[str, Any]:
        status = "ERROR" if self.error is not None else "OVERDUE" if self.overdue else "ON_TIME"
        answer: dict[str, Any] = {"status": status, "overdue": [o.to_api() for o in self.overdue]}
        if self.error is not None:
            answer["reason"] = f"the rule's freshness promise cannot be checked: {self.error}"
        return answer


def overdue_of_rule(
    stored: StoredRule,
    cursors: Mapping[Any, GroupCursor],
    registry: AssetRegistry | None,
    reader: StateReader,
    now: int,
) -> RuleFreshness | None:
    """The rule's own promises (expectedBy, maxWaitSeconds) and its members' maxAgeSeconds, broken at ``now``;
    None when neither the rule nor any member promises anything."""
    rule = stored.rule
    error: str | None = None
    try:
        found = rule_overdue(rule.freshness, stored.created_at, last_claimed_at(cursors), now)
    except RULE_FAULTS as exc:
        found, error = [], fault_reason(exc)
    ages: dict[str, int] = {}
    if registry is not None:
        ages = {k: a.max_age_seconds for k in rule.asset_keys if (a := registry.get_asset(k)) and a.max_age_seconds}
    if rule.freshness is None and not ages:
        return None
    if ages:
        states = reader.get_states(list(ages))
        found += [o for k, age in ages.items() if (o := asset_overdue(k, age, states.get(k), now)) is not None]
    return RuleFreshness(found, error)


@dataclass
class FreshnessReport:
    """Overdue rules and assets; ``unchecked``: the rules whose promise could not be checked, and why."""

    rules: dict[str, list[Overdue]] = field(default_factory=dict)
    assets: list[Overdue] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)

    def to_log(self) -> dict[str, Any]:
        return {
            "rulesOverdue": {r: [o.to_api() for o in found] for r, found in self.rules.items()},
            "assetsOverdue": [o.to_api() for o in self.assets],
            "rulesUnchecked": dict(self.unchecked),
        }


class CheckFreshness:
    """Every enabled rule with a freshness promise, and every registered asset with ``maxAgeSeconds``; a rule
    whose promise cannot be checked goes to ``unchecked`` and the check goes on.

    Requests per run: the rule pages, one cursor read per rule with a promise, the asset pages, and one batch
    of state reads per page of assets with an age limit; rules and assets without promises cost nothing more.
    """

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        registry: AssetRegistry,
        reader: StateReader,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._rules = rules
        self._triggers = triggers
        self._registry = registry
        self._reader = reader
        self._clock = clock

    def __call__(self) -> FreshnessReport:
        now = self._clock()
        report = FreshnessReport()
        token: str | None = None
        while True:
            page = self._rules.list_rules(PAGE, token)
            report.unchecked.update(page.unreadable)
            for stored in page.items:
                rule = stored.rule
                if rule.freshness is None or not rule.enabled:
                    continue
                try:
                    cursors = self._triggers.get_cursors([(rule.rule_id, g.group_id) for g in rule.groups])
                    found = rule_overdue(rule.freshness, stored.created_at, last_claimed_at(cursors), now)
                except RULE_FAULTS as exc:
                    report.unchecked[rule.rule_id] = fault_reason(exc)
                    logger.error(
                        "freshness unchecked",
                        extra={"rule_id": rule.rule_id, "status": "ERROR", "reason": report.unchecked[rule.rule_id]},
                    )
                    continue
                if found:
                    report.rules[rule.rule_id] = found
            token = page.next_token
            if token is None:
                break
        while True:
            assets = self._registry.list_assets(PAGE, token)
            aged = {a.asset_key: a.max_age_seconds for a in assets.items if a.max_age_seconds}
            if aged:
                states = self._reader.get_states(list(aged))
                report.assets += [
                    o for k, age in aged.items() if (o := asset_overdue(k, age, states.get(k), now)) is not None
                ]
            token = assets.next_token
            if token is None:
                return report
