"""Run slots at dispatch: a rule's ``maxInFlight`` holds a claimed trigger back until one of its runs ends.

:class:`RunSlotGate` changes a scope's :class:`~lakehook.domain.run_slots.RunSlots` by compare-and-set (read, apply
the pure change, write conditional on the version read; again on a conflict), so two dispatchers never both take the
last slot. A trigger that took a slot on someone else's change (a run ended and the slot went to the head of the
queue) is woken through the ledger (``wake_for_slot``: its stream record starts the dispatcher again).

Slots are freed when a run reports its end (``POST /runs/{key}/complete``), when a dispatch ends FAILED (a retryable
one asks again when re-driven, in its claim order), and by :meth:`RunSlotGate.sweep` (the trigger compensator): a
holder whose claim ended or is gone, whose run is past ``maxRunSeconds``, or whose target (one with a run status API)
says the run is no longer queued or running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lakehook.domain.errors import LakehookError
from lakehook.domain.run_slots import Admission, QueuePlace, RunSlots, SlotLimit, SlotScope
from lakehook.domain.time import ms_to_iso, now_ms
from lakehook.domain.triggers import RunState, SlotWait, Trigger, TriggerStatus
from lakehook.observability import logger
from lakehook.ports.dispatch import LedgerEntry, RunSlotStore, TriggerLedger
from lakehook.ports.rules import RuleStore

T = TypeVar("T")
MAX_TRIES = 50
MAX_WAITING_SHOWN = 20


class SlotContentionError(LakehookError):
    """The scope's slots changed under every try: the caller retries later (the stream redelivers the record)."""


def scope_of(trigger: Trigger) -> SlotScope:
    return SlotScope(trigger.rule_id, trigger.partition)


def place_of(trigger: Trigger) -> QueuePlace:
    return QueuePlace(trigger.created_at, trigger.sequence, trigger.trigger_key)


@dataclass
class SweepReport:
    """What one sweep of the run slots did: holders released (ended, gone, past time) and triggers woken."""

    released: list[str] = field(default_factory=list)
    woken: list[str] = field(default_factory=list)


class RunSlotGate:
    """Admit, release and sweep run slots (see the module docstring)."""

    def __init__(self, store: RunSlotStore, ledger: TriggerLedger, clock: Callable[[], int] = now_ms) -> None:
        self._store = store
        self._ledger = ledger
        self._clock = clock

    def _change(self, scope: SlotScope, change: Callable[[RunSlots, int], tuple[RunSlots, T]]) -> T:
        """Apply ``change`` (state, now -> next state, answer) by compare-and-set; nothing is written when the state
        stays the same."""
        for _ in range(MAX_TRIES):
            slots, version = self._store.read(scope)
            after, answer = change(slots, self._clock())
            if after == slots or self._store.write(scope, after, version):
                return answer
        raise SlotContentionError(f"the run slots of {scope.describe()} changed under {MAX_TRIES} tries")

    def admit(self, trigger: Trigger, limit: SlotLimit) -> Admission:
        """Take a slot for the trigger or put it in the queue, in claim order; wake whom the change let through."""
        place = place_of(trigger)
        admission = self._change(scope_of(trigger), lambda slots, now: slots.admit(place, now, limit))
        self._wake(admission.woken)
        if not admission.granted:
            self._ledger.hold_for_slot(trigger.trigger_key, self._clock())
        return admission

    def release(self, trigger: Trigger, limit: SlotLimit | None) -> tuple[str, ...]:
        """The trigger's run no longer counts: its slot (or its place in the queue) goes; whom that let through is
        woken. Answers them."""
        return self.release_keys(scope_of(trigger), (trigger.trigger_key,), limit)

    def release_keys(self, scope: SlotScope, trigger_keys: tuple[str, ...], limit: SlotLimit | None) -> tuple[str, ...]:
        woken = self._change(scope, lambda slots, now: slots.release(trigger_keys, now, limit))
        self._wake(woken)
        return woken

    def _wake(self, trigger_keys: tuple[str, ...]) -> None:
        for key in trigger_keys:
            if not self._ledger.wake_for_slot(key, self._clock()):
                logger.info("slot taken by a claim no longer triggering", extra={"trigger_key": key})

    def waiting(self, trigger: Trigger, limit: SlotLimit | None) -> Trigger:
        """The trigger with its place in the queue filled in, when it waits for a slot."""
        if trigger.slot_wait is None or trigger.status is not TriggerStatus.TRIGGERING:
            return trigger
        slots, _ = self._store.read(scope_of(trigger))
        wait = SlotWait(
            since=trigger.slot_wait.since,
            position=slots.position(trigger.trigger_key),
            in_flight=len(slots.live(self._clock(), limit.max_run_ms).holders) if limit else len(slots.holders),
            max_in_flight=limit.max_in_flight if limit else None,
        )
        return trigger.model_copy(update={"slot_wait": wait})

    def explain(self, rule_id: str, limit: SlotLimit) -> dict[str, Any]:
        """What explain shows of a rule's ``maxInFlight``: its runs in flight and the triggers waiting, in queue
        order (at most ``MAX_WAITING_SHOWN`` per scope), per scope (the rule, or each partition of it)."""
        now = self._clock()
        scopes = []
        for scope, slots in self._store.of_rule(rule_id):
            live = slots.live(now, limit.max_run_ms)
            scopes.append(
                {
                    "partition": scope.partition,
                    "inFlight": sorted(live.holders),
                    "waiting": [
                        {"triggerKey": p.trigger_key, "position": i + 1, "claimedAt": ms_to_iso(p.created_at)}
                        for i, p in enumerate(slots.queue[:MAX_WAITING_SHOWN])
                    ],
                    "waitingCount": len(slots.queue),
                }
            )
        return {
            "maxInFlight": limit.max_in_flight,
            "maxRunSeconds": limit.max_run_ms // 1000,
            "waitingCount": sum(s["waitingCount"] for s in scopes),
            "scopes": scopes,
        }

    def sweep(
        self, rules: RuleStore, run_state: Callable[[LedgerEntry], RunState | None] | None = None, limit: int = 100
    ) -> SweepReport:
        """Free the slots whose runs ended without saying so here, and hand them on (the trigger compensator)."""
        report = SweepReport()
        for scope in self._store.scopes(limit):
            stored = rules.get_rule(scope.rule_id)
            slot_limit = stored.rule.policy.slot_limit if stored is not None else None
            slots, _ = self._store.read(scope)
            live = slots.live(self._clock(), slot_limit.max_run_ms) if slot_limit else slots
            gone = self._gone(slots, live, run_state)
            free = slot_limit is not None and len(live.holders) < slot_limit.max_in_flight and bool(slots.queue)
            if gone or free or slot_limit is None:  # something ended, a slot is free for a waiting trigger (the
                # limit was raised), or the rule dropped maxInFlight: hand the slots on
                woken = self.release_keys(scope, tuple(gone), slot_limit)
                report.released += gone
                report.woken += woken
            report.woken += self._lost_wakes(slots, gone)
        if report.released or report.woken:
            logger.info("run slots swept", extra={"released": len(report.released), "woken": len(report.woken)})
        return report

    def _gone(
        self, slots: RunSlots, live: RunSlots, run_state: Callable[[LedgerEntry], RunState | None] | None
    ) -> list[str]:
        """The triggers whose slot or place ended: holders past the slot's max run time (not ``live``), holders whose
        run ended, and waiting triggers whose claim is gone or done."""
        gone = [k for k in slots.holders if k not in live.holders]
        gone += [k for k in live.holders if self._ended(k, run_state)]
        gone += [p.trigger_key for p in slots.queue if self._abandoned(p.trigger_key)]
        return gone

    def _lost_wakes(self, slots: RunSlots, gone: list[str]) -> list[str]:
        """Holders whose claim is still marked waiting (a crash between the slot's write and the claim's wake): woken
        again. A waiting claim is never re-driven (it is not stuck), so this sweep is what starts it."""
        woken = []
        for key in slots.holders:
            entry = None if key in gone else self._ledger.get(key)
            marked = (
                entry is not None and entry.status is TriggerStatus.TRIGGERING and entry.trigger.slot_wait is not None
            )
            if marked and self._ledger.wake_for_slot(key, self._clock()):
                woken.append(key)
        return woken

    def _ended(self, trigger_key: str, run_state: Callable[[LedgerEntry], RunState | None] | None) -> bool:
        """Whether a holder's run no longer counts: the claim is gone, SKIPPED or FAILED for good, the run reported its
        end, or its target says it is neither queued nor running (a FAILED retryable one keeps its slot for its
        re-drive)."""
        entry = self._ledger.get(trigger_key)
        if entry is None or entry.run_status is not None:
            return True
        if entry.status in (TriggerStatus.SKIPPED, TriggerStatus.FAILED):
            return not entry.is_open()
        if entry.status is not TriggerStatus.SUCCEEDED or run_state is None:
            return False
        state = run_state(entry)
        return state is not None and not state.waiting

    def _abandoned(self, trigger_key: str) -> bool:
        """A waiting trigger whose claim is gone or done (it never needs its slot); a FAILED retryable one keeps its
        place for its re-drive."""
        entry = self._ledger.get(trigger_key)
        return entry is None or not entry.is_open()
