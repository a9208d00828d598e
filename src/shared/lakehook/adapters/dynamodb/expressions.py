"""Turn a domain :class:`~lakehook.domain.state_changes.Advance` into one DynamoDB conditional update: each state
field named by its stored attribute (``state_items.attribute_path``), each guard as a condition expression."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakehook.adapters.dynamodb.state_items import attribute_path
from lakehook.domain.state_changes import Advance, AllOf, Below, Guard, NotInSet, Pairs, StateField, WhileEqual


@dataclass
class UpdateParts:
    """The pieces of an UpdateItem call, named by placeholders."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    sets: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    condition: str = ""

    def name(self, attr: str) -> str:
        for placeholder, existing in self.names.items():
            if existing == attr:
                return placeholder
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attr
        return placeholder

    def path(self, state_field: StateField) -> str:
        """A state field's attribute, by placeholders (a map's field: ``#n0.#n1``)."""
        return ".".join(self.name(attribute) for attribute in attribute_path(state_field))

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def equal(self, pairs: Pairs) -> str:
        """Every field equals its value."""
        return " AND ".join(f"{self.path(name)} = {self.value(value)}" for name, value in pairs)

    def expression(self) -> str:
        clauses = []
        if self.sets:
            clauses.append("SET " + ", ".join(self.sets))
        if self.adds:
            clauses.append("ADD " + ", ".join(self.adds))
        return " ".join(clauses)


def guard_condition(parts: UpdateParts, guard: Guard) -> str:
    """The condition under which the advance applies."""
    if isinstance(guard, AllOf):
        return " AND ".join(guard_condition(parts, g) for g in guard.guards)
    if isinstance(guard, Below):
        n = parts.path(guard.field)
        return f"(attribute_not_exists({n}) OR {n} < {parts.value(guard.value)})"
    if isinstance(guard, NotInSet):
        n = parts.path(guard.field)
        return f"(attribute_not_exists({n}) OR NOT contains({n}, {parts.value(guard.value)}))"
    if isinstance(guard, WhileEqual):
        return f"({parts.equal(guard.pairs)}) AND NOT ({parts.equal(guard.changes)})"
    return f"NOT ({parts.equal(guard.pairs)})"


def advance_update(advance: Advance, *, asset_key: str, event_id: str, now_ms: int) -> UpdateParts:
    """One UpdateItem: the guard as condition, the sets, and the version bump."""
    parts = UpdateParts()
    parts.condition = guard_condition(parts, advance.guard)
    for name, value in advance.sets.items():
        parts.sets.append(f"{parts.path(name)} = {parts.value(value)}")
    for name, value in advance.set_if_absent.items():
        n = parts.path(name)
        parts.sets.append(f"{n} = if_not_exists({n}, {parts.value(value)})")
    for name, value in advance.add_to_set.items():
        parts.adds.append(f"{parts.path(name)} {parts.value({value})}")
    parts.sets.append(f"{parts.name('updatedAt')} = {parts.value(now_ms)}")
    parts.sets.append(f"{parts.name('lastEventId')} = {parts.value(event_id)}")
    parts.sets.append(f"{parts.name('assetKey')} = {parts.value(asset_key)}")
    parts.sets.append(f"{parts.name('itemType')} = {parts.value('STATE')}")
    parts.adds.append(f"{parts.name('version')} {parts.value(1)}")
    return parts
