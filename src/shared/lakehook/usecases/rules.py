"""Manage rules (put/get/list/delete), explain them ("why hasn't it run?"), and list their triggers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.evaluation import VersionLog, evaluate_rule
from lakehook.domain.rules import Mode, Rule, validate_id
from lakehook.domain.time import ms_to_iso, now_ms
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.rules import RuleStore, StateReader, StoredRule, TriggerStore
from lakehook.ports.store import AssetRegistry, Page
from lakehook.usecases.coverage import coverage_of_groups

_WATERMARK_TAGS = ("instant", "window")  # discriminator tags pydantic puts in error locations


def describe_rule_error(exc: PydanticValidationError) -> tuple[str, str]:
    """One line naming each bad field in the API's camelCase, and the first field."""
    parts: list[str] = []
    fields: list[str] = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        loc = [p for i, p in enumerate(loc) if not (p in _WATERMARK_TAGS and i and loc[i - 1] == "watermarkAtLeast")]
        where = ".".join(loc) or "body"
        fields.append(where)
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts), fields[0] if fields else "body"


def parse_rule(rule_id: str, body: Any) -> Rule:
    """The rule ``PUT /rules/{ruleId}`` describes; a ValidationError (400) names the bad field."""
    try:
        validate_id(rule_id, "ruleId")
    except ValueError as exc:
        raise ValidationError(str(exc), field="ruleId") from exc
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object describing the rule", field="body")
    if "ruleId" in body and body["ruleId"] != rule_id:
        raise ValidationError(
            f"ruleId in the body ({body['ruleId']!r}) differs from the path ({rule_id!r})", field="ruleId"
        )
    try:
        return Rule.model_validate({**body, "ruleId": rule_id})
    except PydanticValidationError as exc:
        message, field = describe_rule_error(exc)
        raise ValidationError(message, field=field) from exc


def stored_to_api(stored: StoredRule) -> dict[str, Any]:
    return {
        **stored.rule.to_api(),
        "revision": stored.revision,
        "createdAt": ms_to_iso(stored.created_at),
        "updatedAt": ms_to_iso(stored.updated_at),
    }


class ManageRules:
    """The rule routes' use cases."""

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        reader: StateReader,
        registry: AssetRegistry | None = None,
        clock: Callable[[], int] = now_ms,
        coverage: CoverageStore | None = None,
    ) -> None:
        self._rules = rules
        self._triggers = triggers
        self._reader = reader
        self._registry = registry
        self._clock = clock
        self._coverage = coverage

    def put(self, rule_id: str, body: Any) -> tuple[StoredRule, bool]:
        """Create or replace; True when created."""
        rule = parse_rule(rule_id, body)
        stored = self._rules.put_rule(rule, self._clock())
        return stored, stored.revision == 1

    def get(self, rule_id: str) -> StoredRule:
        stored = self._rules.get_rule(rule_id)
        if stored is None:
            raise NotFoundError(f"rule {rule_id!r} does not exist")
        return stored

    def list(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        return self._rules.list_rules(limit, next_token)

    def delete(self, rule_id: str) -> None:
        """Delete the rule (its triggers and cursors stay, so re-creating it never re-fires old versions)."""
        if not self._rules.delete_rule(rule_id):
            raise NotFoundError(f"rule {rule_id!r} does not exist")

    def explain(self, rule_id: str) -> dict[str, Any]:
        """For each group and member: READY or why not, with current and required values and the last trigger."""
        rule = self.get(rule_id).rule
        refs = [(rule.rule_id, g.group_id) for g in rule.groups]
        inputs = self._reader.read(rule.asset_keys, refs)
        registered: dict[str, bool] | None = None
        if self._registry is not None:
            registered = {k: k in inputs.states or self._registry.get_asset(k) is not None for k in rule.asset_keys}
        # Explain looks at the current state only: the next EACH_VERSION version it shows is the newest.
        logs = {k: VersionLog.of([s], lost_before=s.version) for k, s in inputs.states.items()}
        cursors = {g: c for (_, g), c in inputs.cursors.items()}
        now = self._clock()
        evaluation = evaluate_rule(
            rule,
            inputs.states,
            cursors,
            now,
            registered=registered,
            logs=logs if rule.policy.mode is Mode.EACH_VERSION else None,
            coverage=coverage_of_groups(self._coverage, [(g, cursors.get(g.group_id)) for g in rule.groups], now),
        )
        last: dict[str, Trigger] = {}
        for group_id, cursor in cursors.items():
            trigger = self._triggers.get(cursor.trigger_key) if cursor.trigger_key else None
            if trigger is not None:
                last[group_id] = trigger
        groups = []
        for verdict in evaluation.groups:
            data = verdict.to_api()
            data["lastTrigger"] = _summary(last.get(verdict.group_id))
            groups.append(data)
        newest = max(last.values(), key=lambda t: (t.created_at, t.sequence), default=None)
        return {
            "ruleId": rule.rule_id,
            "enabled": rule.enabled,
            "mode": rule.policy.mode.value,
            "ready": evaluation.ready,
            "groups": groups,
            "lastTrigger": _summary(newest),
            "evaluatedAt": ms_to_iso(now),
        }

    def list_triggers(
        self, rule_id: str, status: str | None, limit: int, next_token: str | None = None
    ) -> Page[Trigger]:
        """The rule's triggers, newest first."""
        try:
            validate_id(rule_id, "ruleId")
        except ValueError as exc:
            raise ValidationError(str(exc), field="ruleId") from exc
        wanted: TriggerStatus | None = None
        if status is not None:
            try:
                wanted = TriggerStatus(status)
            except ValueError as exc:
                allowed = ", ".join(s.value for s in TriggerStatus)
                raise ValidationError(f"status must be one of {allowed}", field="status") from exc
        return self._triggers.list_for_rule(rule_id, wanted, limit, next_token)

    def get_trigger(self, trigger_key: str) -> Trigger:
        trigger = self._triggers.get(trigger_key)
        if trigger is None:
            raise NotFoundError(f"trigger {trigger_key!r} does not exist")
        return trigger


def _summary(trigger: Trigger | None) -> dict[str, Any] | None:
    if trigger is None:
        return None
    return {
        "triggerKey": trigger.trigger_key,
        "groupId": trigger.group_id,
        "status": trigger.status.value,
        "createdAt": ms_to_iso(trigger.created_at),
        "inputs": [p.to_api() for p in trigger.inputs],
        **({"window": trigger.window.to_api()} if trigger.window else {}),
    }
