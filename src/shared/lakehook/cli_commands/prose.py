"""The API's values as a person reads them in ``lakehook explain``: ``snapshot 3, state version 2``, not the
Python-like ``snapshotId=3, stateVersion=2`` (``--output json`` keeps the API's own spelling for scripts)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lakehook.domain.time import ms_to_iso

STATE_VERSION_NOTE = (
    "state version: lakehook's count of the changes it recorded to an asset's state, one for each event that "
    "changed it; a trigger pins the one it read, so a newer state version means something arrived since"
)


def _snapshot_required(value: Any) -> str:
    return "a snapshot" if value else "no snapshot needed"


# How a field reads, by its API name; any other is its name in words (qualityStatus -> "quality status PASSED").
_FIELDS: dict[str, Callable[[Any], str]] = {
    "snapshotId": lambda v: f"snapshot {v}",
    "stateVersion": lambda v: f"state version {v}",
    "schemaId": lambda v: f"schema {v}",
    "commitTime": lambda v: f"committed {ms_to_iso(v)}" if isinstance(v, int) else f"committed {v}",
    "snapshotRequired": _snapshot_required,
    "newerThan": lambda v: f"newer than {prose(v)}",
    "createdAt": lambda v: f"created {v}",
    "groupId": lambda v: f"group {v}",
}


def words(name: str) -> str:
    """``qualityPassedSnapshotId`` -> ``quality passed snapshot id``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()


def prose(value: Any) -> str:
    """A JSON value in words: an object's fields as a list (its asset first), a list item by item."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return _object(value)
    if isinstance(value, list):
        return "; ".join(prose(v) for v in value) or "none"
    return str(value)


def _object(value: Mapping[str, Any]) -> str:
    fields = ", ".join(_field(k, v) for k, v in value.items() if k != "assetKey" and v is not None) or "-"
    return f"{value['assetKey']} ({fields})" if "assetKey" in value else fields


def _field(name: str, value: Any) -> str:
    render = _FIELDS.get(name)
    if render is not None:
        return render(value)
    if isinstance(value, Mapping | list):
        return f"{words(name)}: {prose(value)}"
    return f"{words(name)} {prose(value)}"


def trigger_lines(trigger: Mapping[str, Any] | None) -> Iterator[str]:
    """A trigger summary (explain's last trigger): its key and status on one line, each pinned input below."""
    if not trigger:
        yield "  last trigger: none"
        return
    rest = {k: v for k, v in trigger.items() if k not in ("triggerKey", "status", "inputs")}
    yield f"  last trigger: {trigger.get('triggerKey')} {trigger.get('status')}, {prose(rest)}"
    for pinned in trigger.get("inputs") or []:
        yield f"    pinned {prose(pinned)}"


def mentions(value: Any, name: str) -> bool:
    """Whether a field called ``name`` occurs anywhere in a JSON value."""
    if isinstance(value, Mapping):
        return name in value or any(mentions(v, name) for v in value.values())
    if isinstance(value, list):
        return any(mentions(v, name) for v in value)
    return False
