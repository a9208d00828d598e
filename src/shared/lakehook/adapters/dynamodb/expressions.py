"""Turn a domain :class:`Advance` into one DynamoDB conditional update."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.state import Advance, AllOf, Below, Guard, NotInSet, WhileEqual


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

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

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
        n = ".".join(parts.name(a) for a in guard.attr.split("."))  # a map's field: latestData.order
        return f"(attribute_not_exists({n}) OR {n} < {parts.value(guard.value)})"
    if isinstance(guard, NotInSet):
        n = parts.name(guard.attr)
        return f"(attribute_not_exists({n}) OR NOT contains({n}, {parts.value(guard.value)}))"
    if isinstance(guard, WhileEqual):
        same = " AND ".join(f"{parts.name(attr)} = {parts.value(value)}" for attr, value in guard.pairs)
        done = " AND ".join(f"{parts.name(attr)} = {parts.value(value)}" for attr, value in guard.changes)
        return f"({same}) AND NOT ({done})"
    equal = " AND ".join(f"{parts.name(attr)} = {parts.value(value)}" for attr, value in guard.pairs)
    return f"NOT ({equal})"


def advance_update(advance: Advance, *, asset_key: str, event_id: str, now_ms: int) -> UpdateParts:
    """One UpdateItem: the guard as condition, the sets, and the version bump."""
    parts = UpdateParts()
    parts.condition = guard_condition(parts, advance.guard)
    for attr, value in advance.sets.items():
        parts.sets.append(f"{parts.name(attr)} = {parts.value(value)}")
    for attr, value in advance.set_if_absent.items():
        n = parts.name(attr)
        parts.sets.append(f"{n} = if_not_exists({n}, {parts.value(value)})")
    for attr, value in advance.add_to_set.items():
        parts.adds.append(f"{parts.name(attr)} {parts.value({value})}")
    parts.sets.append(f"{parts.name('updatedAt')} = {parts.value(now_ms)}")
    parts.sets.append(f"{parts.name('lastEventId')} = {parts.value(event_id)}")
    parts.sets.append(f"{parts.name('assetKey')} = {parts.value(asset_key)}")
    parts.sets.append(f"{parts.name('itemType')} = {parts.value('STATE')}")
    parts.adds.append(f"{parts.name('version')} {parts.value(1)}")
    return parts
