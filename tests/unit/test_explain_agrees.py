"""Explain and the resolver agree: whenever explain says a rule is ready, a claim for exactly the versions it shows
exists, or is made within one resolver cycle (the stream's pending records delivered, due deferrals swept).

Generated histories interleave snapshots (some held back and pushed late, so EACH_VERSION waits at a gap) and quality
verdicts (late ones too, and ones that come before their snapshot's push), rule puts (created, replaced, disabled,
re-enabled, either startFrom), a target that starts or fails runs and retries of failed triggers (EACH_VERSION's head
of line: WAITING_FOR_RUN, BLOCKED_BY_FAILED_TRIGGER), partial stream deliveries and sweeps; the system is the real
ingest, rule and resolver use cases on the in-memory fakes. A companion test checks that the histories do reach every
status explain can answer for these rules."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window, trigger_key
from lakehook.observability import logger
from lakehook.ports.rules import ClaimResult, Deferral, RuleError, StateChange
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolverStores, SweepDeferred
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_runs import EvaluateRule
from lakehook.usecases.rule_writes import PutRule
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.hypothesis_profiles import examples
from tests.wiring import ingest_events, resolve_asset_change

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
ASSETS = (A, B)

RULES: dict[str, dict[str, Any]] = {
    "all_ab": {"members": [{"assetKey": A}, {"assetKey": B}], "policy": {"mode": "ALL_UPDATED"}},
    "any_ab": {
        "members": [{"assetKey": A}, {"assetKey": B}],
        "policy": {"mode": "ANY_UPDATED", "minIntervalSeconds": 60, "quietPeriodSeconds": 20},
    },
    "passed_a": {"members": [{"assetKey": A, "condition": {"qualityStatus": "PASSED"}}], "policy": {}},
    "each_a": {"members": [{"assetKey": A}], "policy": {"mode": "EACH_VERSION"}},
    "each_checked_ab": {
        "members": [{"assetKey": A, "condition": {"qualityStatus": "PASSED"}}, {"assetKey": B}],
        "policy": {"mode": "EACH_VERSION"},
    },
    "cron_a": {"members": [{"assetKey": A}], "policy": {}, "schedule": {"cron": "*/2 * * * *"}},
    "either_ab": {  # a require tree (issue 38): one of a (checked) or b holds; the claim pins those that hold
        "members": [
            {"assetKey": A, "name": "a", "condition": {"qualityStatus": "PASSED"}},
            {"assetKey": B, "name": "b"},
        ],
        "require": {"atLeast": 1, "of": ["a", "b"]},
        "policy": {"mode": "ANY_UPDATED"},
    },
    "cron_only": {"members": [], "policy": {}, "schedule": {"cron": "* * * * *", "timezone": "Asia/Kathmandu"}},
}
# what the histories must reach (checked by test_generated_histories_reach_every_status)
NEWER_STATUSES = {
    "WAITING_FOR_VERSION",
    "WAITING_FOR_RUN",
    "BLOCKED_BY_FAILED_TRIGGER",
    "WAITING_FOR_UPDATE",
    "BLOCKED_BY_QUALITY",
    "WAITING_FOR_SCHEDULE",
}
SEEN: set[str] = set()
LISTED_SKIPS: list[int] = [0]  # how many explain answers listed a late version as skipped
ALREADY_RAN: list[int] = [0]  # how many pushes answered that their version already triggered a rule


class ExplainMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_750_000_000_000
        self.store = InMemoryAssetStore()
        self.rules = InMemoryRuleStore()
        self.triggers = InMemoryTriggerStore()
        history = InMemoryStateHistory()
        late = LateSnapshotNotice(self.rules, self.triggers, history)
        self.ingest_events = ingest_events(self.store, clock=lambda: self.now, late=late)
        self.deferrals = InMemoryDeferralStore()
        reader = InMemoryStateReader(
            self.store.get_state, self.triggers, events=lambda: [e.event for e in self.store.events.values()]
        )
        self.resolve = resolve_asset_change(
            ResolverStores(self.rules, reader, self.triggers, history, self.deferrals),
            clock=lambda: self.now,
            observer=None,
        )
        self.putter = PutRule(self.rules, lambda: self.now, resolver=self.resolve)
        self.explainer = ExplainRule(self.rules, self.triggers, reader, clock=lambda: self.now, resolver=self.resolve)
        self.sweep = SweepDeferred(self.deferrals, clock=lambda: self.now)
        self.pending: dict[str, list[StateChange]] = {k: [] for k in ASSETS}
        self.woken: list[Deferral] = []  # stream records of triggers that turned SUCCEEDED, not delivered yet
        self.next_snapshot = dict.fromkeys(ASSETS, 1)
        self.held_back: dict[str, list[int]] = {k: [] for k in ASSETS}  # committed, not pushed yet (a gap)
        self.checked_ready = 0
        self.answered_skips: set[tuple[str, str, int]] = set()  # a push answered: "... will not run for rule X"

    # --- the world ------------------------------------------------------------------------------------

    @rule(
        asset=st.sampled_from(ASSETS),
        verdict=st.sampled_from([None, True, False]),
        hold_back=st.booleans(),
        wait_ms=st.integers(0, 40_000),
    )
    def commit(self, asset: str, verdict: bool | None, hold_back: bool, wait_ms: int) -> None:
        """The table commits its next snapshot; its push may be held back (pushed late, or found by a poll)."""
        self.now += wait_ms
        sid = self.next_snapshot[asset]
        self.next_snapshot[asset] += 1
        if hold_back:
            self.held_back[asset].append(sid)
        else:
            self._ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid))
        if verdict is not None:  # on a held-back snapshot too: a verdict may come before its snapshot's push
            self._verdict(asset, sid, verdict)

    @rule(asset=st.sampled_from(ASSETS), index=st.integers(0, 5), wait_ms=st.integers(0, 40_000))
    def push_late(self, asset: str, index: int, wait_ms: int) -> None:
        """A held-back snapshot arrives late (STALE for the state, logged for EACH_VERSION)."""
        if not self.held_back[asset]:
            return
        self.now += wait_ms
        sid = self.held_back[asset].pop(index % len(self.held_back[asset]))
        self._ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid))

    @rule(asset=st.sampled_from(ASSETS), back=st.integers(1, 4), verdict=st.booleans())
    def late_verdict(self, asset: str, back: int, verdict: bool) -> None:
        """A quality check reports on an older snapshot."""
        sid = self.next_snapshot[asset] - back
        if sid >= 1:  # a held-back one too: the verdict comes before its snapshot's push
            self._verdict(asset, sid, verdict)

    def _verdict(self, asset: str, sid: int, passed: bool) -> None:
        kind = EventType.QUALITY_CHECK_PASSED if passed else EventType.QUALITY_CHECK_FAILED
        self._ingest(AssetEvent(eventType=kind, assetKey=asset, snapshotId=sid))

    def _ingest(self, event: AssetEvent) -> None:
        before = self.store.get_state(event.asset_key)
        result = self.ingest_events.ingest(event, SourceType.PUSH)
        for sid, rule_id in re.findall(
            r"version (\d+) (?:arrived after|is older than|is where) .*?will not run for rule (\w+)",
            result.reason or "",
        ):
            self.answered_skips.add((rule_id, event.asset_key, int(sid)))
        for sid, rule_id in re.findall(r"version (\d+) already triggered rule (\w+)", result.reason or ""):
            # a snapshot its quality verdict named ran before this push: a trigger of that rule pins it
            pinned = {
                (p.asset_key, p.snapshot_id)
                for t in self.triggers.triggers.values()
                if t.rule_id == rule_id and not is_late_skip(t)
                for p in t.inputs
            }
            assert (event.asset_key, int(sid)) in pinned, f"told {sid} already triggered {rule_id}: {result.reason}"
            ALREADY_RAN[0] += 1
        if event.event_type is EventType.SNAPSHOT_COMMITTED and result.status is not IngestStatus.DUPLICATE:
            # the event item's own stream record (a late, STALE snapshot's too)
            self.pending[event.asset_key].append(StateChange(event.asset_key, snapshot=snapshot_record(event)))
        after = self.store.get_state(event.asset_key)
        if after is not None and (before is None or after.version != before.version):
            self.pending[event.asset_key].append(StateChange(event.asset_key, after))

    @rule(fail=st.booleans(), wait_ms=st.integers(0, 40_000))
    def target_answers(self, fail: bool, wait_ms: int) -> None:
        """The target takes every claimed run: it starts them (SUCCEEDED, a stream record that wakes the group, not
        delivered yet) or fails them (FAILED: EACH_VERSION's head of line is blocked)."""
        self.now += wait_ms
        for t in list(self.triggers.triggers.values()):
            if t.status is TriggerStatus.TRIGGERING:
                status = TriggerStatus.FAILED if fail else TriggerStatus.SUCCEEDED
                self.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": status})
                if not fail:
                    self.woken.append(Deferral(t.rule_id, t.group_id, 0))
        self.explain_then_one_cycle(0)  # a user asks why, right after the target answered

    @rule()
    def retry_failed(self) -> None:
        """POST /triggers/{key}/retry: a FAILED trigger is dispatched again under the same key."""
        for t in list(self.triggers.triggers.values()):
            if t.status is TriggerStatus.FAILED:
                self.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.TRIGGERING})

    @initialize(
        start_from=st.lists(st.sampled_from(["LATEST", "NEXT_CHANGE"]), min_size=len(RULES), max_size=len(RULES))
    )
    def put_every_rule(self, start_from: list[str]) -> None:
        """Every rule exists from the start (put_rule replaces, disables and re-enables them later)."""
        for rule_id, start in zip(sorted(RULES), start_from, strict=True):
            self.put_rule(rule_id, start, True, 0)

    @rule(
        rule_id=st.sampled_from(sorted(RULES)),
        start_from=st.sampled_from(["LATEST", "NEXT_CHANGE"]),
        enabled=st.booleans(),
        wait_ms=st.integers(0, 40_000),
    )
    def put_rule(self, rule_id: str, start_from: str, enabled: bool, wait_ms: int) -> None:
        self.now += wait_ms
        spec = RULES[rule_id]
        body = {
            "groups": [
                {
                    "groupId": "g",
                    "members": spec["members"],
                    "schedule": spec.get("schedule"),
                    "require": spec.get("require"),
                }
            ],
            "policy": {**spec["policy"], "startFrom": start_from},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "enabled": enabled,
        }
        self.putter.put(rule_id, body)

    @rule(seed=st.integers(0, 2**32 - 1), everything=st.booleans())
    def deliver(self, seed: int, everything: bool) -> None:
        """Some (or all) of the stream's pending records, each asset's in order."""
        chooser = random.Random(seed)
        batch: list[StateChange] = []
        for key in ASSETS:
            take = len(self.pending[key]) if everything else chooser.randint(0, len(self.pending[key]))
            batch.extend(self.pending[key][:take])
            del self.pending[key][:take]
        if batch:
            self.resolve(batch)
        if self.woken and (everything or chooser.random() < 0.5):
            woken, self.woken = self.woken, []
            self.resolve(deferred=woken)

    @rule(wait_ms=st.integers(0, 120_000))
    def sweep_deferred(self, wait_ms: int) -> None:
        self.now += wait_ms
        due = self.sweep()
        if due:
            self.resolve(deferred=due)

    # --- the property ---------------------------------------------------------------------------------

    @rule(wait_ms=st.integers(0, 60_000))
    def explain_then_one_cycle(self, wait_ms: int) -> None:
        self.now += wait_ms
        for rule_id in sorted(RULES):
            if self.rules.get_rule(rule_id) is not None:
                self._check(rule_id)

    def _check(self, rule_id: str) -> None:
        explained = self.explainer.explain(rule_id)
        SEEN.update(g["status"] for g in explained["groups"])
        self._skips_agree(rule_id, explained)
        ready = {
            g["groupId"]: [PinnedInput.model_validate(p) for p in g["pins"]]
            for g in explained["groups"]
            if g["status"] == "READY"
        }
        promised = {
            gid: trigger_key(rule_id, gid, pins, Window.model_validate(g["window"]) if g.get("window") else None, 0)
            for g in explained["groups"]
            if (gid := g["groupId"]) in ready
            for pins in [ready[gid]]
        }
        assert explained["ready"] is bool(promised)
        quiet = not any(self.pending.values()) and not self.woken
        before = len(self.triggers.claim_order)
        # one resolver cycle at the same instant: the stream's pending records, then the due deferrals
        batch = [c for key in ASSETS for c in self.pending[key]]
        self.pending = {k: [] for k in ASSETS}
        if batch:
            self.resolve(batch)
        if self.woken:
            woken, self.woken = self.woken, []
            self.resolve(deferred=woken)
        due = self.sweep()
        if due:
            self.resolve(deferred=due)
        made = [t for k in self.triggers.claim_order[before:] if not is_late_skip(t := self.triggers.triggers[k])]
        mine = [t for t in made if t.rule_id == rule_id]
        if not promised:
            # nothing the stream had not delivered yet: the resolver decides exactly as explain did
            assert not (quiet and mine), f"explain said {rule_id} is not ready, yet {mine} was claimed: {explained}"
            return
        self.checked_ready += 1
        each = RULES[rule_id]["policy"].get("mode") == "EACH_VERSION"
        for gid, key in promised.items():
            if key in self.triggers.triggers:
                continue
            # EACH_VERSION runs older versions first: ones still in the stream (a snapshot older than the state, a
            # first trigger) are claimed ahead of the versions explain showed, which wait their turn (head of line)
            shown = {p.asset_key: p.ordinal for p in ready[gid]}
            ahead = [
                t
                for t in mine
                if each
                and t.group_id == gid
                and all(p.ordinal <= shown[p.asset_key] for p in t.inputs)
                and any(p.ordinal < shown[p.asset_key] for p in t.inputs)
            ]
            assert ahead, (
                f"explain said {rule_id} is ready, but no claim {key} (nor one ahead of it) was made: {explained}"
            )

    def _skips_agree(self, rule_id: str, explained: dict[str, Any]) -> None:
        """A late version explain lists as skipped is one the resolver recorded so, in the same words, and never
        runs; one a push answered "will not run" for this rule never runs either."""
        late = [t for t in self.triggers.triggers.values() if is_late_skip(t) and t.rule_id == rule_id]
        runs = {
            (p.asset_key, p.snapshot_id)
            for t in self.triggers.triggers.values()
            if t.rule_id == rule_id and not is_late_skip(t) and t.status is not TriggerStatus.SKIPPED
            for p in t.inputs
        }
        for group in explained["groups"]:
            if "skipped" not in group:
                continue
            listed = {(s["assetKey"], s["snapshotId"]): s["reason"] for s in group["skipped"]}
            recorded = {(t.inputs[0].asset_key, t.inputs[0].snapshot_id): t.reason for t in late}
            assert listed == recorded, f"explain lists {listed}, the resolver skipped {recorded}"
            LISTED_SKIPS[0] += bool(listed)
            assert not (listed.keys() & runs), f"a version listed as skipped ran: {listed.keys() & runs}"
        told = {(a, sid) for r, a, sid in self.answered_skips if r == rule_id}
        assert not (told & runs), f"a push answered that these will not run for {rule_id}, yet they ran: {told & runs}"


ExplainMachine.TestCase.settings = settings(
    max_examples=examples(150), stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def setup_module() -> None:
    logger.setLevel("WARNING")


def teardown_module() -> None:
    logger.setLevel("INFO")


TestExplainAgreesWithTheResolver = ExplainMachine.TestCase


def reach_every_status() -> dict[str, Any]:
    """Run the machine on fixed sets of histories until they reached every status and a listed skip (the property
    holding all along); what they reached."""
    SEEN.clear()
    LISTED_SKIPS[0] = 0
    setup_module()
    # Fixed sets of histories, until every status is reached: which ones Hypothesis draws shifts with the code
    # under test, and one or two sets alone have missed a status after an unrelated change.
    for steps in (40, 60, 80, 100):
        if NEWER_STATUSES <= SEEN and LISTED_SKIPS[0]:
            break
        run_state_machine_as_test(
            ExplainMachine,
            settings=settings(
                max_examples=100,
                stateful_step_count=steps,
                deadline=None,
                derandomize=True,  # the same histories on every run: reaching a status is not left to chance
                database=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    return {"missing": sorted(NEWER_STATUSES - SEEN), "listedSkips": LISTED_SKIPS[0]}


# In a process of its own: Hypothesis mixes constants from every loaded module of the project into what it draws
# (hypothesis.internal.conjecture.providers), so in a worker that had imported the rest of the suite the same
# derandomized settings drew other histories, a different set on each run (which modules a worker has loaded
# depends on what ran on it before): 4 rounds and 26 to 50 s of CPU where this module alone needs 1 round and 5 s.
REACH = "; ".join(
    (
        "import json",
        "from tests.unit.test_explain_agrees import reach_every_status",
        "print(json.dumps(reach_every_status()))",
    )
)


@pytest.mark.slow  # it asserts what 100 derandomized histories reach (up to four runs): no fast-profile version of it
# all four runs take about 30 s alone on a quiet machine (1 round, 5 s, reaches every status today); a gate once passed
# pytest-timeout's 300 s default while Hypothesis shrank a real failure (now a regression test below): room for that
@pytest.mark.timeout(1200)
def test_generated_histories_reach_every_status() -> None:
    """The property above means little if explain never answered the statuses EACH_VERSION added: run the machine
    (on a fixed set of histories, in a fresh process) and check that they reached each of them, the property holding
    all along."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", REACH], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, (
        f"the machine failed (its output follows)\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    )
    reached = json.loads(done.stdout.strip().splitlines()[-1])
    assert not reached["missing"], f"never reached {reached['missing']}"
    assert reached["listedSkips"], "no history made explain list a late version as skipped"


def test_a_snapshot_another_rules_claim_logged_from_its_pin_runs_for_an_each_version_rule_waiting_at_it() -> None:
    """EACH_VERSION: snapshot 1 ran; 2 is committed with a quality verdict but its push held back, 3 is held back and
    pushed late. ``each_checked_ab`` claims snapshot 2 (pinned on its verdict) and logs it; ``each_a``, which waited at
    the gap before 3, is evaluated again in the same invocation and runs 2, as explain (reading the log) says it will.
    Found by the gate's generated histories on 2026-12-07: explain answered READY pinning 2, the resolver claimed
    nothing (no stream record told ``each_a`` of the logged snapshot)."""
    state = ExplainMachine()
    state.put_every_rule(start_from=["LATEST"] * 8)
    state.commit(asset="paimon://lake/ods/a", hold_back=False, verdict=None, wait_ms=0)
    state.explain_then_one_cycle(wait_ms=0)
    state.target_answers(fail=False, wait_ms=0)
    state.commit(asset="paimon://lake/ods/a", hold_back=True, verdict=True, wait_ms=0)
    state.commit(asset="paimon://lake/ods/b", hold_back=False, verdict=None, wait_ms=0)
    state.commit(asset="paimon://lake/ods/a", hold_back=True, verdict=None, wait_ms=0)
    state.push_late(asset="paimon://lake/ods/a", index=1, wait_ms=0)
    state.retry_failed()
    state.retry_failed()
    state.explain_then_one_cycle(wait_ms=0)
    assert _runs(state, "each_a") == [1, 2]


def _runs(state: ExplainMachine, rule_id: str) -> list[int]:
    """The snapshots of asset a a rule's claims pinned (late skips aside), in claim order."""
    return [
        p.snapshot_id
        for k in state.triggers.claim_order
        if (t := state.triggers.triggers[k]).rule_id == rule_id and not is_late_skip(t)
        for p in t.inputs
        if p.asset_key == A and p.snapshot_id is not None
    ]


def _waiting_at_the_gap() -> ExplainMachine:
    """each_a ran snapshot 1 of a and waits at the gap before 3 (2 has its passing verdict, not its push)."""
    state = ExplainMachine()
    state.put_every_rule(start_from=["LATEST"] * len(RULES))
    state.commit(asset=A, hold_back=False, verdict=None, wait_ms=0)
    state.deliver(seed=0, everything=True)
    state.target_answers(fail=False, wait_ms=0)
    state.commit(asset=A, hold_back=True, verdict=True, wait_ms=0)  # snapshot 2: its verdict, not its push
    state.commit(asset=A, hold_back=False, verdict=None, wait_ms=0)  # snapshot 3: each_a waits at the gap before it
    state.deliver(seed=0, everything=True)
    return state


def test_a_claim_woken_by_another_asset_that_logs_a_pinned_snapshot_wakes_the_each_version_rules_of_its_asset() -> None:
    """The same gap, when the claim that logs snapshot 2 of a is woken by b alone (``each_a`` is not in that batch's
    work): the rules of a are evaluated again in that invocation, and ``each_a`` runs 2 then 3 in order."""
    state = _waiting_at_the_gap()
    assert _runs(state, "each_a") == [1]
    assert _runs(state, "each_checked_ab") == []  # b has no snapshot yet
    state.commit(asset=B, hold_back=False, verdict=None, wait_ms=0)
    batch = [c for key in ASSETS for c in state.pending[key]]
    assert {c.asset_key for c in batch} == {B}
    state.deliver(seed=0, everything=True)
    assert _runs(state, "each_checked_ab") == [2]
    assert _runs(state, "each_a") == [1, 2]
    state.target_answers(fail=False, wait_ms=0)  # 2's run succeeds: each_a's next is 3, then explain agrees
    state.deliver(seed=0, everything=True)
    assert _runs(state, "each_a") == [1, 2, 3]


def _waiting_at_the_gap_b_committed() -> ExplainMachine:
    """:func:`_waiting_at_the_gap`, then b commits, its record not delivered: an evaluation of each_checked_ab finds
    it, claims a=2 and logs it."""
    state = _waiting_at_the_gap()
    state.commit(asset=B, hold_back=False, verdict=None, wait_ms=0)
    return state


def _each_a_claims_raise(error: Exception) -> type[InMemoryTriggerStore]:
    """The trigger store, where each_a's claims raise ``error`` (a ValueError is a rule error; a ConnectionError an
    infrastructure one, which fails a stream batch to be retried)."""

    class EachAFails(InMemoryTriggerStore):
        def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
            if trigger.rule_id == "each_a":
                raise error
            return super().claim(trigger, cursor, expected)

    return EachAFails


def test_evaluating_a_rule_whose_claim_logs_a_pinned_snapshot_answers_only_its_own_claims() -> None:
    """``POST /rules/each_checked_ab/evaluate`` claims snapshot 2 of a (pinned on its verdict) and logs it, which wakes
    ``each_a`` in the same invocation: ``each_a`` runs 2 too, but the answer's ``claimed`` (and ``triggerKey``) are
    the evaluated rule's claims only, as before the wake: another rule's run is not this evaluation's answer."""
    state = _waiting_at_the_gap_b_committed()
    reader = InMemoryStateReader(
        state.store.get_state, state.triggers, events=lambda: [e.event for e in state.store.events.values()]
    )
    evaluate = EvaluateRule(
        state.rules, state.triggers, reader, lambda: state.now, resolver=state.resolve, explain=state.explainer
    )
    answer = evaluate.evaluate("each_checked_ab")
    assert _runs(state, "each_checked_ab") == [2] and _runs(state, "each_a") == [1, 2]  # the wake still runs 2
    mine = [k for k in state.triggers.claim_order if state.triggers.triggers[k].rule_id == "each_checked_ab"]
    assert answer["claimed"] == mine and answer["triggerKey"] == mine[0]


def test_evaluating_a_rule_clears_its_error_even_when_the_wake_fails_another_rules_group_of_the_same_id() -> None:
    """The wake above evaluates ``each_a`` (group ``g``) in ``each_checked_ab``'s evaluation; that group failing is
    ``each_a``'s error, and ``each_checked_ab``'s group ``g``, which evaluated fine, loses its ``lastError``."""
    state = _waiting_at_the_gap_b_committed()
    state.triggers.__class__ = _each_a_claims_raise(ValueError("each_a cannot be evaluated"))  # a rule error
    state.rules.record_error("each_checked_ab", RuleError("an earlier failure", state.now, "g"))
    report = state.resolve.evaluate(state.rules.rules["each_checked_ab"].rule)
    assert [(f.rule_id, f.group_id) for f in report.failed] == [("each_a", "g")]
    assert _runs(state, "each_checked_ab") == [2]
    assert state.rules.rules["each_checked_ab"].last_error is None
    failed = state.rules.rules["each_a"].last_error
    assert failed is not None and failed.group_id == "g"


def test_evaluating_a_rule_keeps_its_claim_when_the_wake_of_another_rule_meets_an_infrastructure_error() -> None:
    """``each_checked_ab``'s evaluation (a PUT, ``POST /rules/{id}/evaluate``) claims snapshot 2 and logs it; the wake
    of ``each_a`` then fails on the store: the evaluation still answers its own claim, and a recheck of asset a is left
    for the sweep, which runs 2 for ``each_a`` once the store answers again."""
    state = _waiting_at_the_gap_b_committed()
    state.triggers.__class__ = _each_a_claims_raise(ConnectionError("the table is unreachable"))  # infrastructure
    report = state.resolve.evaluate(state.rules.rules["each_checked_ab"].rule)
    assert [t.rule_id for t in report.claimed] == ["each_checked_ab"]
    assert _runs(state, "each_a") == [1]
    state.triggers.__class__ = InMemoryTriggerStore
    state.sweep_deferred(wait_ms=10 * 60_000)  # the recheck is due after the retry delay
    assert _runs(state, "each_a") == [1, 2]
