"""Run slots: a rule's ``maxInFlight`` (policy), how many of its runs may be in flight at once.

A *scope* is what the limit counts: the rule's runs, or for a partitioned group's run the runs of that one partition
of the rule (its outlet partition). Normal runs, replays and forced runs all count in their scope.

:class:`RunSlots` is the state of one scope, a pure value: the triggers holding a slot (since when) and the triggers
waiting for one, in claim order (``createdAt``, then the group's sequence, then the key). Every change is a pure
function answering the next state, so the store can write it with one conditional write on the state it read:

- :meth:`RunSlots.admit` puts a claimed trigger in the queue (in its claim order) and grants slots to the heads of
  the queue while slots are free; the trigger either holds a slot then, or waits with its position;
- :meth:`RunSlots.release` frees the slots of runs that ended, and grants them to the heads of the queue;
- a holder past ``maxRunSeconds`` (from when it took its slot) no longer counts: every change drops it first.

Waiting triggers are never dropped or coalesced here: each keeps its place until it holds a slot.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

MAX_IN_FLIGHT = 1000
DEFAULT_MAX_RUN_SECONDS = 86_400  # a run that never reports its end holds its slot for a day at most
_HASH_CHARS = 24


@dataclass(frozen=True)
class SlotLimit:
    """How many runs of a scope may be in flight, and how long one counts at most (ms)."""

    max_in_flight: int
    max_run_ms: int


@dataclass(frozen=True)
class SlotScope:
    """What one limit counts: a rule's runs, or one partition's runs of the rule."""

    rule_id: str
    partition: str | None = None

    @property
    def scope_id(self) -> str:
        """``<ruleId>``, or ``<ruleId>#P<hash of the partition>`` (a rule id never holds ``#``)."""
        if self.partition is None:
            return self.rule_id
        digest = hashlib.sha256(self.partition.encode()).hexdigest()[:_HASH_CHARS]
        return f"{self.rule_id}#P{digest}"

    def describe(self) -> str:
        return (
            f"rule {self.rule_id}" if self.partition is None else f"partition {self.partition} of rule {self.rule_id}"
        )


@dataclass(frozen=True, order=True)
class QueuePlace:
    """A trigger's place in claim order: when it was claimed, its group's sequence, its key."""

    created_at: int
    sequence: int
    trigger_key: str


@dataclass(frozen=True)
class Admission:
    """What admitting a trigger decided: whether it holds a slot, else its 1-based place in the queue; and which
    other triggers took a slot by the same change (they must be woken)."""

    granted: bool
    position: int | None
    in_flight: int
    woken: tuple[str, ...] = ()


def fresh_version() -> int:
    """The version a scope's slots start at when stored anew: random, so a scope emptied (its state deleted) and then
    filled again never takes a version a read from before the delete holds, and a write based on that stale read
    fails its condition (a counter restarting at 1 would let it through, and a slot held since would be lost)."""
    return secrets.randbits(52) + 2


def _frozen(holders: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(holders))


@dataclass(frozen=True)
class RunSlots:
    """One scope's slots: ``holders`` (trigger key -> when it took its slot, epoch ms) and ``queue`` (waiting, in
    claim order)."""

    holders: Mapping[str, int] = field(default_factory=dict)
    queue: tuple[QueuePlace, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.holders and not self.queue

    def holds(self, trigger_key: str) -> bool:
        return trigger_key in self.holders

    def position(self, trigger_key: str) -> int | None:
        """The 1-based place of a waiting trigger in the queue, None when it does not wait."""
        return next((i + 1 for i, p in enumerate(self.queue) if p.trigger_key == trigger_key), None)

    def live(self, now: int, max_run_ms: int) -> RunSlots:
        """Without the holders past ``max_run_ms``: they no longer count as in flight."""
        kept = {k: since for k, since in self.holders.items() if now - since < max_run_ms}
        return self if len(kept) == len(self.holders) else RunSlots(_frozen(kept), self.queue)

    def _granting(self, now: int, limit: SlotLimit) -> tuple[RunSlots, tuple[str, ...]]:
        """Past-time holders dropped, then the heads of the queue granted while slots are free."""
        slots = self.live(now, limit.max_run_ms)
        free = max(limit.max_in_flight - len(slots.holders), 0)
        granted = slots.queue[:free]
        if not granted:
            return slots, ()
        holders = {**slots.holders, **{p.trigger_key: now for p in granted}}
        return RunSlots(_frozen(holders), slots.queue[len(granted) :]), tuple(p.trigger_key for p in granted)

    def admit(self, place: QueuePlace, now: int, limit: SlotLimit) -> tuple[RunSlots, Admission]:
        """The state once ``place``'s trigger asks for a slot (idempotent: asking again changes nothing)."""
        key = place.trigger_key
        queued = self
        if key not in self.holders and self.position(key) is None:
            queued = RunSlots(self.holders, tuple(sorted((*self.queue, place))))
        after, granted = queued._granting(now, limit)
        woken = tuple(k for k in granted if k != key)
        in_flight = len(after.holders)
        if after.holds(key):
            return after, Admission(True, None, in_flight, woken)
        return after, Admission(False, after.position(key), in_flight, woken)

    def release(
        self, trigger_keys: Iterable[str], now: int, limit: SlotLimit | None
    ) -> tuple[RunSlots, tuple[str, ...]]:
        """The state once these triggers' runs no longer count (ended, gone), and whom their slots went to. Without
        a limit (the rule dropped ``maxInFlight``), everyone waiting is let go."""
        gone = set(trigger_keys)
        holders = {k: since for k, since in self.holders.items() if k not in gone}
        queue = tuple(p for p in self.queue if p.trigger_key not in gone)
        slots = RunSlots(_frozen(holders), queue)
        if limit is None:
            return RunSlots(), tuple(p.trigger_key for p in queue)
        return slots._granting(now, limit)
