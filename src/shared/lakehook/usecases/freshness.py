"""What is overdue: one rule for explain, every rule and asset for the freshness check's metric and alarm."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.freshness import Overdue, asset_overdue, rule_overdue
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor
from lakehook.ports import AssetRegistry
from lakehook.ports.rules import RuleStore, StateReader, StoredRule, TriggerStore

PAGE = 200


def last_claimed_at(cursors: Mapping[Any, GroupCursor]) -> int | None:
    """When any group of the rule last triggered (a skip is not a run: the cursor keeps the run's time)."""
    return max((c.claimed_at for c in cursors.values() if c.claimed_at is not None), default=None)


def overdue_of_rule(
    stored: StoredRule,
    cursors: Mapping[Any, GroupCursor],
    registry: AssetRegistry | None,
    reader: StateReader,
    now: int,
) -> list[Overdue] | None:
    """The rule's own promises (expectedBy, maxWaitSeconds) and its members' maxAgeSeconds, broken at ``now``;
    None when neither the rule nor any member promises anything."""
    rule = stored.rule
    found = rule_overdue(rule.freshness, stored.created_at, last_claimed_at(cursors), now)
    ages: dict[str, int] = {}
    if registry is not None:
        ages = {k: a.max_age_seconds for k in rule.asset_keys if (a := registry.get_asset(k)) and a.max_age_seconds}
    if rule.freshness is None and not ages:
        return None
    if ages:
        states = reader.get_states(list(ages))
        found += [o for k, age in ages.items() if (o := asset_overdue(k, age, states.get(k), now)) is not None]
    return found


@dataclass
class FreshnessReport:
    rules: dict[str, list[Overdue]] = field(default_factory=dict)
    assets: list[Overdue] = field(default_factory=list)

    def to_log(self) -> dict[str, Any]:
        return {
            "rulesOverdue": {r: [o.to_api() for o in found] for r, found in self.rules.items()},
            "assetsOverdue": [o.to_api() for o in self.assets],
        }


class CheckFreshness:
    """Every enabled rule with a freshness promise, and every registered asset with ``maxAgeSeconds``.

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
            for stored in page.items:
                rule = stored.rule
                if rule.freshness is None or not rule.enabled:
                    continue
                cursors = self._triggers.get_cursors([(rule.rule_id, g.group_id) for g in rule.groups])
                found = rule_overdue(rule.freshness, stored.created_at, last_claimed_at(cursors), now)
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
