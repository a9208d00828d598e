"""A replay's choices for target tests: the claim ReplayTrigger makes, with ``startFrom`` and ``variables``."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from lakehook.domain.replay_choices import FIELDS
from lakehook.domain.triggers import Trigger, trigger_key

# a DolphinScheduler task code, so every target (that one included) can honour it
CHOICES: dict[str, Any] = {"start_from": "4242", "variables": {"full_refresh": True, "batch": 5000, "note": "fix"}}


def replay_of(trigger: Trigger, **choices: Any) -> Trigger:
    """The trigger's replay as ReplayTrigger claims it: epoch 1, its choices (CHOICES unless given) on the claim."""
    key = trigger_key(trigger.rule_id, trigger.group_id, trigger.inputs, trigger.window, 1)
    return trigger.model_copy(
        update={"trigger_key": key, "replay_epoch": 1, "replay_of": trigger.trigger_key, **(choices or CHOICES)}
    )


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,40}", fullmatch=True).filter(lambda n: not n.startswith("lakehook_"))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
ANY_JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
)
UNKNOWN_FIELDS = st.text(min_size=1, max_size=30).filter(lambda f: f not in FIELDS)  # a field a replay does not take
