"""A replay's choices for target tests: the claim ReplayTrigger makes, with ``startFrom`` and ``variables``."""

from __future__ import annotations

from typing import Any

from lakehook.domain.triggers import Trigger, trigger_key

# a DolphinScheduler task code, so every target (that one included) can honour it
CHOICES: dict[str, Any] = {"start_from": "4242", "variables": {"full_refresh": True, "batch": 5000, "note": "fix"}}


def replay_of(trigger: Trigger, **choices: Any) -> Trigger:
    """The trigger's replay as ReplayTrigger claims it: epoch 1, its choices (CHOICES unless given) on the claim."""
    key = trigger_key(trigger.rule_id, trigger.group_id, trigger.inputs, trigger.window, 1)
    return trigger.model_copy(
        update={"trigger_key": key, "replay_epoch": 1, "replay_of": trigger.trigger_key, **(choices or CHOICES)}
    )
