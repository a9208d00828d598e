"""Run slots (a rule's ``maxInFlight``): never more holders than the limit, waiting triggers taken in claim order,
none dropped, past-time holders no longer counted; and the gate's compare-and-set keeps that under racing writers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.run_slot_store import slots_from_item, slots_item
from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.errors import ValidationError
from lakehook.domain.json_form import json_form
from lakehook.domain.run_slots import QueuePlace, RunSlots, SlotLimit, SlotScope
from lakehook.domain.triggers import PinnedInput, SlotWait, Trigger, TriggerStatus
from lakehook.ports.dispatch import RunSlotStore
from lakehook.usecases.rules import parse_rule
from lakehook.usecases.run_slots import RunSlotGate
from tests.fakes.memory_dispatch import InMemoryTriggerLedger
from tests.fakes.memory_slots import InMemoryRunSlotStore
from tests.hypothesis_profiles import examples

T0 = 1_750_000_000_000
HOUR_MS = 3_600_000

# An operation: ("admit", trigger number, ms later) | ("release", trigger number, ms later)
operations = st.lists(
    st.tuples(st.sampled_from(["admit", "release"]), st.integers(0, 11), st.integers(0, HOUR_MS // 2)),
    max_size=60,
)


def place(n: int) -> QueuePlace:
    """Trigger n's place: claimed at T0 + n seconds (claim order is n's order), sequence n."""
    return QueuePlace(T0 + n * 1000, n, f"r.g.{n:024x}")


@settings(max_examples=examples(300))
@given(ops=operations, limit=st.integers(1, 4), max_run_hours=st.integers(1, 3))
def test_holders_never_exceed_the_limit_and_waiters_are_taken_in_claim_order(
    ops: list[tuple[str, int, int]], limit: int, max_run_hours: int
) -> None:
    slots, now = RunSlots(), T0
    cap = SlotLimit(limit, max_run_hours * HOUR_MS)
    asked: set[str] = set()  # admitted and not released: each must be holding or waiting, never dropped
    for op, n, later in ops:
        now += later
        key = place(n).trigger_key
        before = slots
        if op == "admit":
            slots, admission = slots.admit(place(n), now, cap)
            asked.add(key)
            assert admission.granted == slots.holds(key)
            assert admission.granted or admission.position == slots.position(key)
            granted = [k for k in slots.holders if not before.holds(k) or before.holders[k] != slots.holders[k]]
        else:
            slots, woken = slots.release([key], now, cap)
            asked.discard(key)
            granted = list(woken)
        assert len(slots.holders) <= limit
        assert list(slots.queue) == sorted(slots.queue)
        assert not set(slots.holders) & {p.trigger_key for p in slots.queue}
        # whoever was granted just now had no one earlier than itself still waiting
        for k in granted:
            mine = next(p for p in (*before.queue, *(place(i) for i in range(12))) if p.trigger_key == k)
            assert all(p > mine for p in slots.queue), (k, slots.queue)
        # a holder leaves only when released or past its time; whoever else was asked holds or waits: none dropped
        for k in set(before.holders) - set(slots.holders) - {key if op == "release" else ""}:
            assert now - before.holders[k] >= cap.max_run_ms
            asked.discard(k)
        assert all(slots.holds(k) or slots.position(k) is not None for k in asked)


def test_a_holder_past_max_run_seconds_no_longer_counts_and_its_slot_goes_to_the_head() -> None:
    cap = SlotLimit(1, 60_000)
    slots, first = RunSlots().admit(place(1), T0, cap)
    slots, second = slots.admit(place(2), T0 + 1_000, cap)
    assert first.granted and not second.granted and second.position == 1
    slots, third = slots.admit(place(3), T0 + 59_000, cap)
    assert (third.granted, third.position) == (False, 2)
    slots, again = slots.admit(place(3), T0 + 60_000, cap)  # trigger 1 ran a minute: its slot goes to 2, not 3
    assert again.woken == (place(2).trigger_key,) and again.position == 1 and slots.holds(place(2).trigger_key)


def test_an_earlier_claim_arriving_late_waits_ahead_of_later_ones() -> None:
    cap = SlotLimit(1, HOUR_MS)
    slots, _ = RunSlots().admit(place(1), T0, cap)
    slots, _ = slots.admit(place(5), T0, cap)
    slots, late = slots.admit(place(3), T0, cap)  # its dispatcher came last, but it was claimed before 5
    assert late.position == 1 and slots.position(place(5).trigger_key) == 2
    slots, woken = slots.release([place(1).trigger_key], T0, cap)
    assert woken == (place(3).trigger_key,)


def test_without_a_limit_any_more_everyone_waiting_is_let_go() -> None:
    cap = SlotLimit(1, HOUR_MS)
    slots, _ = RunSlots().admit(place(1), T0, cap)
    slots, _ = slots.admit(place(2), T0, cap)
    slots, _ = slots.admit(place(3), T0, cap)
    after, woken = slots.release([], T0, None)
    assert after.empty and woken == (place(2).trigger_key, place(3).trigger_key)


def test_the_stored_shape_round_trips() -> None:
    cap = SlotLimit(1, HOUR_MS)
    slots, _ = RunSlots().admit(place(1), T0, cap)
    slots, _ = slots.admit(place(2), T0 + 5, cap)
    assert slots_from_item(slots_item(slots)) == slots


def test_a_partition_scope_is_its_own() -> None:
    assert SlotScope("r").scope_id == "r"
    assert SlotScope("r", "dt=2026-12-01").scope_id.startswith("r#P")
    assert SlotScope("r", "dt=2026-12-01") != SlotScope("r", "dt=2026-12-02")


# --- the rule's fields, checked when the rule is written --------------------------------------------------------


def body(**policy: Any) -> dict[str, Any]:
    return {
        "target": {"type": "eventbridge", "eventBusName": "runs"},
        "policy": policy,
        "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
    }


@pytest.mark.parametrize(
    ("policy", "named"),
    [
        ({"maxInFlight": 0}, "policy.maxInFlight"),
        ({"maxInFlight": 1001}, "policy.maxInFlight"),
        ({"maxInFlight": "two"}, "policy.maxInFlight"),
        ({"maxInFlight": 1, "maxRunSeconds": 0}, "policy.maxRunSeconds"),
        ({"maxRunSeconds": 600}, "maxRunSeconds"),
    ],
)
def test_bad_limits_are_a_400_naming_the_field(policy: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule("r", body(**policy))
    assert named in str(caught.value)


def test_a_good_limit_is_kept_and_defaults_its_run_time() -> None:
    rule = parse_rule("r", body(maxInFlight=2))
    assert rule.policy.slot_limit == SlotLimit(2, 86_400_000)
    assert json_form(rule)["policy"]["maxInFlight"] == 2 and "maxRunSeconds" not in json_form(rule)["policy"]
    assert parse_rule("r", body(maxInFlight=1, maxRunSeconds=900)).policy.slot_limit == SlotLimit(1, 900_000)
    assert parse_rule("r", body()).policy.slot_limit is None


# --- the gate's compare-and-set, racing --------------------------------------------------------------------------


def trigger(n: int, partition: str | None = None) -> Trigger:
    p = place(n)
    return Trigger(
        trigger_key=p.trigger_key,
        rule_id="r",
        group_id="g",
        inputs=(PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=n),),
        created_at=p.created_at,
        updated_at=p.created_at,
        sequence=p.sequence,
        partition=partition,
    )


class Interleaved(InMemoryRunSlotStore):
    """Between a gate's read and its write, another dispatcher's whole admission may happen (as Hypothesis says)."""

    def __init__(self, cuts_in: list[bool]) -> None:
        super().__init__()
        self.cuts_in = cuts_in
        self.racers: list[Trigger] = []
        self.cut = 0

    def read(self, scope: SlotScope) -> tuple[RunSlots, int]:
        seen = super().read(scope)
        if self.cuts_in and self.cuts_in.pop(0) and self.racers:
            racer = RunSlotGate(_Plain(self), self.ledger, clock=lambda: T0)
            racer.admit(self.racers.pop(0), SlotLimit(2, HOUR_MS))
            self.cut += 1
        return seen


class _Plain(RunSlotStore):
    """The same state without cutting in: the racing dispatcher's own view."""

    def __init__(self, store: Interleaved) -> None:
        self._store = store

    def read(self, scope: SlotScope) -> tuple[RunSlots, int]:
        return InMemoryRunSlotStore.read(self._store, scope)

    def write(self, scope: SlotScope, slots: RunSlots, version: int) -> bool:
        return self._store.write(scope, slots, version)

    def scopes(self, limit: int) -> list[SlotScope]:
        return self._store.scopes(limit)

    def of_rule(self, rule_id: str) -> list[tuple[SlotScope, RunSlots]]:
        return self._store.of_rule(rule_id)


@settings(max_examples=examples(200))
@given(cuts_in=st.lists(st.booleans(), max_size=40), order=st.permutations(list(range(8))))
def test_racing_admissions_never_take_more_than_the_limit(cuts_in: list[bool], order: list[int]) -> None:
    """Four triggers admitted by one dispatcher, four by another that cuts in between its reads and writes: the
    compare-and-set refuses every write made on a stale read, so two hold slots and six wait, in claim order."""
    ledger = InMemoryTriggerLedger()
    for n in range(8):
        ledger.add(trigger(n))
    store = Interleaved(cuts_in)
    store.ledger = ledger
    store.racers = [trigger(n) for n in order[4:]]
    gate = RunSlotGate(store, ledger, clock=lambda: T0)
    answers = [gate.admit(trigger(n), SlotLimit(2, HOUR_MS)) for n in order[:4]]
    while store.racers:  # the racers that did not get to cut in come now (one may still cut in ahead of another)
        gate.admit(store.racers.pop(0), SlotLimit(2, HOUR_MS))
    slots, _ = InMemoryRunSlotStore.read(store, SlotScope("r"))
    assert len(slots.holders) == 2 and len(slots.queue) == 6
    assert sum(a.granted for a in answers) <= 2
    assert list(slots.queue) == sorted(slots.queue)
    assert store.conflicts >= store.cut  # every cut-in made the write on the stale read fail, and it read again
    waiting = [t for t in ledger.store.triggers.values() if t.slot_wait is not None]
    assert sorted(t.trigger_key for t in waiting) == sorted(p.trigger_key for p in slots.queue)


def test_a_wait_marked_after_the_claim_was_taken_for_its_run_is_refused_and_never_shown_once_it_ran() -> None:
    """A release hands the slot on and the woken dispatcher leases the claim before the first dispatcher marked it
    waiting: the late mark is refused, and a wait left on a claim that is no longer TRIGGERING is not shown."""
    ledger = InMemoryTriggerLedger()
    claim = trigger(1)
    ledger.add(claim)
    assert ledger.begin_attempt(claim.trigger_key, "woken", T0, 300_000) is not None
    assert not ledger.hold_for_slot(claim.trigger_key, T0 + 1)
    entry = ledger.get(claim.trigger_key)
    assert entry is not None and entry.trigger.slot_wait is None
    ran = claim.model_copy(update={"status": TriggerStatus.SUCCEEDED, "slot_wait": SlotWait(since=T0)})
    assert "waitingForSlot" not in TriggerAnswer.from_domain(ran).dump()
    waits = claim.model_copy(update={"slot_wait": SlotWait(since=T0)})
    assert TriggerAnswer.from_domain(waits).dump()["waitingForSlot"]["position"] is None
