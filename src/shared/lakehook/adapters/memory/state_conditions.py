"""DynamoDB's condition and update semantics for the in-memory asset store: a change's guard evaluated on a state
kept as its stored attributes (``adapters/dynamodb/state_items.attribute_path``), and the change applied as the
DynamoDB adapter's UpdateItem would. The asset store contract suite (tests/contracts) runs this and DynamoDB on
moto alike, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from lakehook.adapters.dynamodb.state_items import attribute_path, stored_value
from lakehook.domain.state_changes import Advance, AllOf, Below, Guard, NotInSet, Pairs, StateField, WhileEqual


def _comparable(value: Any) -> int | str:
    """A stored version as a condition compares it: a number (a store may hand back a decimal type) or a key."""
    return value if isinstance(value, str) else int(value)


def _all_equal(state: dict[str, Any], pairs: Pairs) -> bool:
    return all(stored_value(state, name) == value for name, value in pairs)


def guard_holds(state: dict[str, Any], guard: Guard) -> bool:
    """Whether the guard holds on a state given as its stored attributes, as DynamoDB's condition would."""
    if isinstance(guard, AllOf):
        return all(guard_holds(state, g) for g in guard.guards)
    if isinstance(guard, Below):
        current = stored_value(state, guard.field)
        if current is None:
            return True
        mine, theirs = guard.value, _comparable(current)
        # as DynamoDB: a number and a string never compare, so the condition fails
        return type(theirs) is type(mine) and theirs < mine  # type: ignore[operator]
    if isinstance(guard, NotInSet):
        return guard.value not in set(stored_value(state, guard.field) or ())
    if isinstance(guard, WhileEqual):
        return _all_equal(state, guard.pairs) and not _all_equal(state, guard.changes)
    return not _all_equal(state, guard.pairs)


def apply_advance(state: dict[str, Any], advance: Advance, *, event_id: str, now_ms: int) -> dict[str, Any] | None:
    """The new stored state, or None when the guard fails (the state refuses the change)."""
    if not guard_holds(state, advance.guard):
        return None
    new = dict(state)
    new.update({_attribute(name): value for name, value in advance.sets.items()})
    for name, value in advance.set_if_absent.items():
        new.setdefault(_attribute(name), value)
    for name, value in advance.add_to_set.items():
        attribute = _attribute(name)
        new[attribute] = set(new.get(attribute) or ()) | {value}
    new["version"] = int(new.get("version", 0)) + 1
    new["updatedAt"] = now_ms
    new["lastEventId"] = event_id
    return new


def _attribute(name: StateField) -> str:
    """A top-level stored attribute (a change sets whole attributes; only a guard reads a map's field)."""
    (attribute,) = attribute_path(name)
    return attribute
