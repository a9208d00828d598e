"""Read triggers: ``GET /triggers?ruleId=&status=`` (a rule's, newest first) and ``GET /triggers/{triggerKey}``.

A trigger waiting for a run slot (its rule's ``maxInFlight``) is answered with its place in the queue."""

from __future__ import annotations

from dataclasses import replace

from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.rules import validate_id
from lakehook.domain.run_slots import SlotLimit
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.ports.rules import RuleStore, TriggerStore
from lakehook.ports.store import Page
from lakehook.usecases.run_slots import RunSlotGate


class ReadTriggers:
    """The trigger routes' reads: a rule's triggers, and one trigger."""

    def __init__(
        self, triggers: TriggerStore, slots: RunSlotGate | None = None, rules: RuleStore | None = None
    ) -> None:
        self._triggers = triggers
        self._slots = slots
        self._rules = rules

    def _limit(self, rule_id: str) -> SlotLimit | None:
        stored = self._rules.get_rule(rule_id) if self._rules is not None else None
        return stored.rule.policy.slot_limit if stored is not None else None

    def _placed(self, triggers: list[Trigger]) -> list[Trigger]:
        """Waiting triggers with their place in the queue (one read of the rule, one of each scope's slots)."""
        if self._slots is None or not any(t.slot_wait is not None for t in triggers):
            return triggers
        limits = {rule_id: self._limit(rule_id) for rule_id in {t.rule_id for t in triggers if t.slot_wait}}
        slots = self._slots
        return [slots.waiting(t, limits[t.rule_id]) if t.slot_wait is not None else t for t in triggers]

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
        page = self._triggers.list_for_rule(rule_id, wanted, limit, next_token)
        return replace(page, items=self._placed(list(page.items)))

    def get_trigger(self, trigger_key: str) -> Trigger:
        trigger = self._triggers.get(trigger_key)
        if trigger is None:
            raise NotFoundError(f"trigger {trigger_key!r} does not exist")
        return self._placed([trigger])[0]
