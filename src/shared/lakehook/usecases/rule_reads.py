"""Read rules: ``GET /rules`` (a page of them) and ``GET /rules/{ruleId}`` (one, or a 404)."""

from __future__ import annotations

from lakehook.domain.errors import NotFoundError
from lakehook.ports.rules import RuleStore, StoredRule
from lakehook.ports.store import Page


def read_rule(rules: RuleStore, rule_id: str) -> StoredRule:
    """The stored rule; a NotFoundError (404) when there is none (what every route about one rule reads first)."""
    stored = rules.get_rule(rule_id)
    if stored is None:
        raise NotFoundError(f"rule {rule_id!r} does not exist")
    return stored


class ReadRules:
    """``GET /rules`` and ``GET /rules/{ruleId}``."""

    def __init__(self, rules: RuleStore) -> None:
        self._rules = rules

    def get(self, rule_id: str) -> StoredRule:
        return read_rule(self._rules, rule_id)

    def list(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        return self._rules.list_rules(limit, next_token)
