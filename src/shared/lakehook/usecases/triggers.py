"""Read triggers: ``GET /triggers?ruleId=&status=`` (a rule's, newest first) and ``GET /triggers/{triggerKey}``."""

from __future__ import annotations

from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.rules import validate_id
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.ports.rules import TriggerStore
from lakehook.ports.store import Page


class ReadTriggers:
    """The trigger routes' reads: a rule's triggers, and one trigger."""

    def __init__(self, triggers: TriggerStore) -> None:
        self._triggers = triggers

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
