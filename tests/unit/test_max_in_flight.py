"""``maxInFlight: 1`` end to end on fakes: the real ingest, resolver, dispatcher, run completion and compensator,
10 commits at 1, 10 and 100 commits a second, each run taking 1.5 s, for every mode.

The simulation is event by event on one clock: a commit is ingested when it happens; the stream hands the resolver
what arrived every 50 ms; a new claim's stream record starts the dispatcher; a run reports its end 1.5 s after it
started (``POST /runs/{key}/complete``), which frees its slot; a slot handed to a waiting trigger wakes the dispatcher
through the ledger (its ``wake`` record), and a claim that SUCCEEDED wakes its group (an EACH_VERSION group claims its
next version then). Never more than one run is in flight; every claim runs exactly once, in claim order; EACH_VERSION
runs all 10 versions in order; the other modes coalesce only as their mode does, and run the newest version last.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from lakehook.answers.triggers import TriggerAnswer
from lakehook.cli_commands.commands import _status, in_flight_lines, verdict
from lakehook.domain.run_slots import SlotLimit, SlotScope
from lakehook.domain.snapshots import SnapshotInfo
from lakehook.domain.triggers import RunState, TriggerStatus
from lakehook.ports.rules import Deferral
from lakehook.usecases.completion import Caller, CompleteRun
from lakehook.usecases.confirmation import ConfirmOutcome, ConfirmRuns
from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus, RedriveTriggers
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.run_slots import RunSlotGate
from lakehook.usecases.triggers import ReadTriggers
from tests.fakes.memory_dispatch import (
    Fault,
    InMemoryAliasStore,
    InMemoryManifestStore,
    InMemoryTargetClient,
    InMemoryTriggerLedger,
)
from tests.fakes.memory_slots import InMemoryRunSlotStore
from tests.unit.test_resolve_usecase import START, World, rule
from tests.wiring import dispatch_trigger

A = "paimon://lake/ods/a"
RUN_MS = 1_500
BATCH_MS = 50
COMMITS = 10


@dataclass
class Flight:
    """The resolver's world plus dispatch, completion and run slots, driven by timed events."""

    world: World
    target: InMemoryTargetClient = field(default_factory=InMemoryTargetClient)
    events: list[tuple[int, int, str, Any]] = field(default_factory=list)
    order: itertools.count[int] = field(default_factory=itertools.count)
    seen: set[str] = field(default_factory=set)
    started: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    in_flight: set[str] = field(default_factory=set)
    most_in_flight: int = 0
    waited: int = 0
    delivering: bool = False

    def __post_init__(self) -> None:
        clock = self.clock
        self.ledger = InMemoryTriggerLedger(self.world.triggers)
        self.slots = InMemoryRunSlotStore()
        self.gate = RunSlotGate(self.slots, self.ledger, clock=clock)
        self.dispatch = dispatch_trigger(
            self.ledger,
            self.world.rules,
            InMemoryManifestStore(),
            {"eventbridge": self.target},
            DispatchPolicy(),
            clock=clock,
            sleep=lambda _: None,
            metrics=None,
            slots=self.gate,
        )
        self.complete = CompleteRun(
            self.ledger, self.world.ingest, InMemoryAliasStore(), self.world.rules, clock=clock, slots=self.gate
        )
        self.redrive = RedriveTriggers(self.ledger, self.dispatch, clock=clock, slots=(self.gate, self.world.rules))

    def clock(self) -> int:
        return self.world.now

    def at(self, when: int, kind: str, what: Any = None) -> None:
        heapq.heappush(self.events, (when, next(self.order), kind, what))

    def run(self) -> None:
        while self.events:
            when, _, kind, what = heapq.heappop(self.events)
            self.world.now = max(self.world.now, when)
            getattr(self, f"_{kind}")(what)
            self._woken()

    def _commit(self, snapshot: int) -> None:
        self.world.snap(A, snapshot)
        if not self.delivering:  # the stream's next batch takes whatever arrived until then
            self.delivering = True
            self.at((self.world.now // BATCH_MS + 1) * BATCH_MS, "deliver")

    def _deliver(self, _: Any) -> None:
        self.delivering = False
        self.world.deliver(dispatch=False)
        self._claims()

    def _complete(self, key: str) -> None:
        self.in_flight.discard(key)
        self.complete(key, {"status": "SUCCEEDED"}, Caller.MANAGEMENT)

    def _claims(self) -> None:
        """Dispatch every new TRIGGERING claim (its INSERT record), in the order claimed."""
        for key in list(self.world.triggers.claim_order):
            trigger = self.world.triggers.triggers[key]
            if key not in self.seen and trigger.status is TriggerStatus.TRIGGERING:
                self.seen.add(key)
                self._dispatch(key)

    def _woken(self) -> None:
        for key in self.ledger.woken():
            self._dispatch(key)

    def _dispatch(self, key: str) -> None:
        result = self.dispatch(key)
        if result.status is DispatchStatus.WAITING_FOR_SLOT:
            self.waited += 1
            return
        if result.status is DispatchStatus.FAILED:
            self.failed.append(key)
            return
        assert result.status is DispatchStatus.SUCCEEDED, result
        self.started.append(key)
        self.in_flight.add(key)
        self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
        self.at(self.world.now + RUN_MS, "complete", key)
        trigger = self.world.triggers.triggers[key]
        self.world.resolve(deferred=[Deferral(trigger.rule_id, trigger.group_id, 0)])  # SUCCEEDED wakes the group
        self._claims()

    def pins(self, keys: list[str]) -> list[int | None]:
        return [self.world.triggers.triggers[k].inputs[0].snapshot_id for k in keys]


def flight(mode: str, per_second: int, target: InMemoryTargetClient | None = None, **policy: Any) -> Flight:
    world = World(rule("r", {"assetKey": A}, mode=mode, maxInFlight=1, **policy))
    simulated = Flight(world, target or InMemoryTargetClient())
    for i in range(COMMITS):
        simulated.at(START + i * 1000 // per_second, "commit", i + 1)
    return simulated


@pytest.mark.parametrize("per_second", [1, 10, 100])
@pytest.mark.parametrize("mode", ["EACH_VERSION", "ALL_UPDATED", "ANY_UPDATED"])
def test_ten_commits_run_one_at_a_time_in_claim_order(mode: str, per_second: int) -> None:
    simulated = flight(mode, per_second)
    simulated.run()
    claimed = [
        k for k in simulated.world.triggers.claim_order if simulated.world.triggers.triggers[k].partition is None
    ]
    assert simulated.most_in_flight == 1
    assert simulated.waited > 0  # the limit held someone back at every rate
    assert simulated.started == claimed  # every claim ran, in claim order: none dropped, none reordered
    assert all(simulated.target.runs[k] == 1 for k in claimed)
    pins = simulated.pins(simulated.started)
    if mode == "EACH_VERSION":
        assert pins == list(range(1, COMMITS + 1))
    else:  # coalesced only by the mode itself (commits the stream hands over together); the newest runs last
        assert pins == sorted(set(pins)) and pins[-1] == COMMITS  # type: ignore[type-var]
    assert all(t.slot_wait is None for t in simulated.world.triggers.triggers.values())
    assert simulated.slots.states == {}  # nothing in flight, nobody waiting: the slots item is gone


def test_waiting_triggers_are_shown_with_their_place_in_the_queue() -> None:
    simulated = flight("ALL_UPDATED", 10)
    while simulated.events and simulated.events[0][0] < START + 600:  # six commits in, the first still running
        when, _, kind, what = heapq.heappop(simulated.events)
        simulated.world.now = when
        getattr(simulated, f"_{kind}")(what)
    reads = ReadTriggers(simulated.world.triggers, slots=simulated.gate, rules=simulated.world.rules)
    listed = reads.list_triggers("r", None, 50).items
    waiting = sorted((t for t in listed if t.slot_wait is not None), key=lambda t: t.slot_wait.position or 0)  # type: ignore[union-attr]
    assert [t.slot_wait.position for t in waiting] == list(range(1, len(waiting) + 1))  # type: ignore[union-attr]
    assert len(waiting) == 5 and all(t.status is TriggerStatus.TRIGGERING for t in waiting)
    shown = TriggerAnswer.from_domain(waiting[0]).dump()["waitingForSlot"]
    assert (shown["position"], shown["inFlight"], shown["maxInFlight"]) == (1, 1, 1)
    assert [t.created_at for t in waiting] == sorted(t.created_at for t in waiting)  # claim order
    assert reads.get_trigger(waiting[2].trigger_key).slot_wait.position == 3  # type: ignore[union-attr]


def test_a_run_that_never_reports_frees_its_slot_after_max_run_seconds() -> None:
    simulated = flight("EACH_VERSION", 10, maxRunSeconds=60)
    simulated.complete = _Silent()  # type: ignore[assignment]  # no run ever reports its end
    simulated.run()
    assert simulated.started == [simulated.world.triggers.claim_order[0]]
    slots, _ = simulated.slots.read(SlotScope("r"))
    since = slots.holders[simulated.started[0]]
    simulated.world.now = since + 59_999
    assert simulated.redrive().slots.released == []  # still within its time
    simulated.world.now = since + 60_000
    swept = simulated.redrive().slots
    assert swept.released == simulated.started and len(swept.woken) == 1
    simulated._woken()
    assert len(simulated.started) == 2 and simulated.pins(simulated.started) == [1, 2]


def test_a_dispatch_that_fails_frees_its_slot_for_the_next() -> None:
    simulated = flight("ALL_UPDATED", 1)
    simulated.target.faults = [Fault.HTTP_4XX]  # the first claim is refused for good
    simulated.run()
    first, *rest = simulated.world.triggers.claim_order
    assert simulated.failed == [first] and simulated.started == rest and len(rest) == COMMITS - 1
    assert simulated.most_in_flight == 1 and simulated.slots.states == {}


class _Silent:
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_explain_and_the_cli_show_who_runs_and_who_waits() -> None:
    simulated = flight("ALL_UPDATED", 10)
    while simulated.events and simulated.events[0][0] < START + 600:
        when, _, kind, what = heapq.heappop(simulated.events)
        simulated.world.now = when
        getattr(simulated, f"_{kind}")(what)
    world = simulated.world
    explain = ExplainRule(world.rules, world.triggers, world.reader, resolver=world.resolve, slots=simulated.gate)
    shown = explain.explain("r")["inFlight"]
    assert (shown["maxInFlight"], shown["maxRunSeconds"], shown["waitingCount"]) == (1, 86_400, 5)
    [scope] = shown["scopes"]
    assert scope["partition"] is None and scope["inFlight"] == simulated.started
    assert [w["position"] for w in scope["waiting"]] == [1, 2, 3, 4, 5]
    lines = list(in_flight_lines(shown))
    assert "5 waiting for a slot" in lines[0] and f"running {simulated.started[0]}" in lines[1]
    assert lines[2].startswith(f"      #1 {scope['waiting'][0]['triggerKey']}")
    reads = ReadTriggers(world.triggers, slots=simulated.gate, rules=world.rules)
    first = TriggerAnswer.from_domain(reads.get_trigger(scope["waiting"][0]["triggerKey"])).dump()
    assert verdict(first).startswith("WAITING_FOR_SLOT: #1 in the queue, 1 of maxInFlight 1 runs in flight")
    assert _status(first) == "WAITING_FOR_SLOT #1"
    assert "inFlight" not in ExplainRule(world.rules, world.triggers, world.reader, resolver=world.resolve).explain("r")


class _Ended(InMemoryTargetClient):
    """A target with a run status API that says every run it started has ended (as Airflow or Step Functions can)."""

    def run_state(self, run_id: str, config: Any) -> RunState | None:
        return RunState(state="success", checked_at=START)


def test_a_target_that_says_the_run_ended_frees_its_slot_at_the_next_sweep() -> None:
    simulated = flight("EACH_VERSION", 10, target=_Ended())
    simulated.complete = _Silent()  # type: ignore[assignment]  # the run never reports its end itself
    simulated.run()
    assert len(simulated.started) == 1
    swept = simulated.redrive().slots
    assert swept.released == simulated.started and len(swept.woken) == 1
    simulated._woken()
    assert simulated.pins(simulated.started) == [1, 2]


def test_a_run_its_outlet_commit_confirmed_frees_its_slot_for_the_next() -> None:
    """A run that never reports its end but whose outlet commit carried its trigger key (CONFIRMED) no longer counts:
    the next waiting trigger starts then, not after maxRunSeconds."""
    outlet = "iceberg://glue/dwd/a"
    simulated = flight("EACH_VERSION", 10, maxRunSeconds=3600)
    stored = simulated.world.rules.get_rule("r")
    assert stored is not None
    simulated.world.rules.put_rule(stored.rule.model_copy(update={"outlets": [outlet]}), simulated.world.now)
    simulated.complete = _Silent()  # type: ignore[assignment]  # no run reports its end: its commit says it ran
    simulated.run()
    (first,) = simulated.started
    confirm = ConfirmRuns(simulated.ledger, simulated.world.rules, clock=simulated.clock, slots=simulated.gate)
    foreign = confirm(outlet, [SnapshotInfo(snapshot_id=8, commit_time=simulated.world.now, trigger_key="other")])
    assert [r.outcome for r in foreign] == [ConfirmOutcome.NO_TRIGGER]
    simulated._woken()
    assert simulated.started == [first]  # a commit naming no trigger of this rule frees nothing
    (done,) = confirm(outlet, [SnapshotInfo(snapshot_id=9, commit_time=simulated.world.now, trigger_key=first)])
    assert done.outcome is ConfirmOutcome.CONFIRMED
    simulated._woken()
    assert len(simulated.started) == 2 and simulated.pins(simulated.started) == [1, 2]


def test_waiting_claims_are_never_redriven_and_the_sweep_hands_on_what_a_lost_wake_or_a_raised_limit_frees() -> None:
    """Waiting claims are not stuck ones: the re-drive's page (100 claims a pass) leaves them out, so a rule with many
    waiting never hides another rule's stuck claim (found in review: each pass re-marked them and filled its page).
    The run-slot sweep is what recovers them: a slot granted whose wake was lost (a crash between the two writes) is
    woken again, and slots a raised maxInFlight frees go to the first waiting."""
    simulated = flight("ALL_UPDATED", 1)
    simulated.complete = _Silent()  # type: ignore[assignment]  # no run ends: the rest wait
    simulated.run()
    first, *waiting = simulated.world.triggers.claim_order
    assert simulated.started == [first] and len(waiting) == COMMITS - 1
    later = simulated.world.now + 3_600_000
    assert [e.trigger.trigger_key for e in simulated.ledger.pending(later, later, 100)] == []
    scope = SlotScope("r")
    slots, version = simulated.slots.read(scope)
    handed, granted = slots.release((first,), simulated.world.now, SlotLimit(1, 3_600_000))
    assert granted == (waiting[0],) and simulated.slots.write(scope, handed, version)  # its wake is never written
    swept = simulated.gate.sweep(simulated.world.rules)
    assert swept.woken == [waiting[0]]
    simulated._woken()
    assert simulated.started == [first, waiting[0]]
    stored = simulated.world.rules.get_rule("r")
    assert stored is not None
    policy = stored.rule.policy.model_copy(update={"max_in_flight": 3})
    simulated.world.rules.put_rule(stored.rule.model_copy(update={"policy": policy}), simulated.world.now)
    assert simulated.gate.sweep(simulated.world.rules).woken == waiting[1:3]  # nothing ended: the limit rose
    simulated._woken()
    assert simulated.started == [first, *waiting[:3]]
