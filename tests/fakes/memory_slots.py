"""In-memory run slots (``RunSlotStore``): one state and version per scope, compare-and-set under a lock, as the
DynamoDB store's conditional writes do. ``writes`` counts the writes that went through, ``conflicts`` the refused."""

from __future__ import annotations

import threading

from lakehook.domain.run_slots import RunSlots, SlotScope, fresh_version
from lakehook.ports.dispatch import RunSlotStore


class InMemoryRunSlotStore(RunSlotStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: dict[SlotScope, tuple[RunSlots, int]] = {}
        self.writes = 0
        self.conflicts = 0

    def read(self, scope: SlotScope) -> tuple[RunSlots, int]:
        with self._lock:
            return self.states.get(scope, (RunSlots(), 0))

    def write(self, scope: SlotScope, slots: RunSlots, version: int) -> bool:
        with self._lock:
            stored = self.states.get(scope, (RunSlots(), 0))[1]
            if stored != version:
                self.conflicts += 1
                return False
            self.writes += 1
            if slots.empty:
                self.states.pop(scope, None)
            else:
                self.states[scope] = (slots, version + 1 if version else fresh_version())
            return True

    def of_rule(self, rule_id: str) -> list[tuple[SlotScope, RunSlots]]:
        with self._lock:
            mine = sorted((s for s in self.states if s.rule_id == rule_id), key=lambda s: s.scope_id)
            return [(s, self.states[s][0]) for s in mine]

    def scopes(self, limit: int) -> list[SlotScope]:
        with self._lock:
            return sorted(self.states, key=lambda s: s.scope_id)[:limit]
