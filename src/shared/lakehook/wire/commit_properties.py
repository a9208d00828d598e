"""The commit metadata that names the run which wrote a commit: ``lakehook.trigger-key``, in the standard library only.

A run that writes an outlet table of its rule sets this one property on its commit, in the format's own commit
metadata: an Iceberg snapshot summary property, a Delta ``commitInfo`` field (delta-rs custom metadata) or Spark's
``userMetadata`` text, a Paimon snapshot property, a Hudi ``extraMetadata`` entry (docs/targets.md). The poller
reads it back with :func:`trigger_key_in` (or :func:`trigger_key_in_text` for a free-text message) and the server
confirms the trigger it names; writers get it from :func:`commit_properties` (``lakehook.client`` and the
receiver's ``Invocation.commit_properties``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

TRIGGER_KEY_PROPERTY = "lakehook.trigger-key"
# a trigger key: <ruleId>.<groupId>[.<marker>].<hash>, of letters, digits, '_', '-' and '.'
_TRIGGER_KEY = re.compile(r"^[A-Za-z0-9_.-]{3,300}$")
_PAIRS = re.compile(r"[,;\s]+")


def trigger_key_in(properties: Mapping[str, Any] | None) -> str | None:
    """The trigger key a commit's metadata carries (``lakehook.trigger-key``), or None (absent, or not a key)."""
    if not properties:
        return None
    value = properties.get(TRIGGER_KEY_PROPERTY)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if _TRIGGER_KEY.fullmatch(value) else None


def trigger_key_in_text(text: Any) -> str | None:
    """The trigger key in a free-text commit message (Delta's ``userMetadata``, which Spark sets): a JSON object
    holding ``lakehook.trigger-key``, or ``lakehook.trigger-key=<key>`` among other ``name=value`` pairs separated
    by ``,``, ``;`` or white space. None when the text names none."""
    if not isinstance(text, str) or TRIGGER_KEY_PROPERTY not in text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return trigger_key_in(parsed)
    for pair in _PAIRS.split(text):
        name, _, value = pair.partition("=")
        if name == TRIGGER_KEY_PROPERTY:
            return trigger_key_in({name: value})
    return None


def commit_properties(trigger_key: str) -> dict[str, str]:
    """The commit metadata a run sets on each commit to an outlet table: ``{"lakehook.trigger-key": <key>}``
    (pyiceberg ``snapshot_properties``, pypaimon ``snapshot_properties``, delta-rs ``custom_metadata``). Raises
    ValueError for a value that is no trigger key."""
    if not isinstance(trigger_key, str) or trigger_key_in({TRIGGER_KEY_PROPERTY: trigger_key}) != trigger_key:
        raise ValueError(f"{trigger_key!r} is not a trigger key")
    return {TRIGGER_KEY_PROPERTY: trigger_key}


def user_metadata(trigger_key: str) -> str:
    """Delta's ``userMetadata`` text for Spark (``.option("userMetadata", ...)``): the property as a JSON object."""
    return json.dumps(commit_properties(trigger_key), separators=(",", ":"))
