"""Random interleavings, duplicates and reorderings of events for 3 assets and 3 rules, checked
against a simple reference model of what must (and must never) be claimed.

The system under test is the real ingest use case on the in-memory asset store, and the real
resolver on in-memory fakes of its ports. A fake stream turns every state change into a record
(with moto's extra keys-only INSERT for the change that creates the state); records of one asset
are delivered in order, as DynamoDB streams do, in batches of random size, across assets in any
order, some delivered twice. Sweeps advance the clock and re-evaluate due deferrals.

Safety, after every step: no trigger key and no set of pinned versions is claimed twice per
group; every claim's pins satisfied the conditions on the state at the time of the claim, were
the newest satisfying versions (coalescing modes), and never go backwards. Liveness, once events
stop and deferrals are swept: every group whose condition holds on the final state has a claim
pinning the final versions, and EACH_VERSION skipped no version after its first claim.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings, target
from hypothesis import event as label
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState, SchemaStatus
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.observability import logger
from lakehook.ports.rules import ClaimOutcome, ClaimResult, Deferral, StateChange
from lakehook.usecases.resolve import ResolverStores, SweepDeferred
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
C = "iceberg://glue/ods/c"
ASSETS = (A, B, C)
SNAPSHOTS = range(1, 6)
FAILING_SNAPSHOT = 3  # A's quality check fails for this one and passes for every other
WATERMARK_GATE = 100


def _rule(rule_id: str, mode: str, members: list[dict[str, Any]], **policy: Any) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": mode, **policy},
            "groups": [{"groupId": "g", "members": members}],
        }
    )


RULES = [
    _rule(
        "all_ab",
        "ALL_UPDATED",
        [
            {"assetKey": A, "condition": {"qualityStatus": "PASSED"}},
            {"assetKey": B, "condition": {"schemaStatus": "COMPATIBLE"}},
        ],
    ),
    _rule("any_bc", "ANY_UPDATED", [{"assetKey": B}, {"assetKey": C}], minIntervalSeconds=60, quietPeriodSeconds=30),
    # C's schema gate can close again after a first trigger (a new schema awaits approval), so A's
    # versions pile up meanwhile and must come out of the history, in order, once C is approved.
    _rule(
        "each_ac",
        "EACH_VERSION",
        [
            {"assetKey": A},
            {"assetKey": C, "condition": {"watermarkAtLeast": WATERMARK_GATE, "schemaStatus": "COMPATIBLE"}},
        ],
    ),
]
BY_ID = {r.rule_id: r for r in RULES}


def iceberg_id(sequence: int) -> int:
    return 9_000_000_000 - sequence * 7_919


def position(event: AssetEvent) -> int | None:
    """Which of the asset's snapshots (1..5) an event is about."""
    return event.sequence_number if event.asset_key == C else event.snapshot_id


def schema_of(position: int) -> int:
    """B and C change their schema at snapshot 3."""
    return 1 if position < 3 else 2


def _events() -> list[AssetEvent]:
    events: list[AssetEvent] = []
    for sid in SNAPSHOTS:
        for key in ASSETS:
            schema = 1 if key == A else schema_of(sid)
            # C is an Iceberg table: random-looking ids (here: falling), ordered by sequence number;
            # its snapshots carry a watermark, 100 from the second one on.
            iceberg = key == C
            events.append(
                AssetEvent(
                    eventType=EventType.SNAPSHOT_COMMITTED,
                    assetKey=key,
                    snapshotId=iceberg_id(sid) if iceberg else sid,
                    sequenceNumber=sid if iceberg else None,
                    schemaId=schema,
                    watermark=sid * 50 if iceberg else None,
                )
            )
        verdict = EventType.QUALITY_CHECK_FAILED if sid == FAILING_SNAPSHOT else EventType.QUALITY_CHECK_PASSED
        events.append(AssetEvent(eventType=verdict, assetKey=A, snapshotId=sid))
    events.append(AssetEvent(eventType=EventType.SCHEMA_CHANGE_APPROVED, assetKey=B, schemaId=2))
    events.append(AssetEvent(eventType=EventType.SCHEMA_CHANGE_APPROVED, assetKey=C, schemaId=2))
    events.extend(AssetEvent(eventType=EventType.WATERMARK_ADVANCED, assetKey=C, watermark=w) for w in (50, 100, 150))
    return events


EVENTS = _events()


@dataclass
class Claim:
    trigger: Trigger
    states: dict[str, AssetState]  # the true states when it was claimed


class RecordingTriggerStore(InMemoryTriggerStore):
    """The in-memory trigger store, remembering the true states at each successful claim."""

    def __init__(self, source: InMemoryAssetStore) -> None:
        super().__init__()
        self.source = source
        self.claims: list[Claim] = []

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        result = super().claim(trigger, cursor, expected)
        if result.outcome is ClaimOutcome.CLAIMED:
            states = {k: s for k in ASSETS if (s := self.source.get_state(k)) is not None}
            self.claims.append(Claim(trigger, states))
        return result


class ResolverMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_750_000_000_000
        self.store = InMemoryAssetStore()
        self.ingest_events = ingest_events(self.store, clock=lambda: self.now)
        self.rules = InMemoryRuleStore()
        self.triggers = RecordingTriggerStore(source=self.store)
        self.deferrals = InMemoryDeferralStore()
        self.resolve = resolve_asset_change(
            ResolverStores(
                self.rules,
                InMemoryStateReader(self.store.get_state, self.triggers),
                self.triggers,
                InMemoryStateHistory(),
                self.deferrals,
            ),
            clock=lambda: self.now,
            observer=None,
        )
        self.sweep = SweepDeferred(self.deferrals, clock=lambda: self.now)
        self.pending: dict[str, list[StateChange]] = {k: [] for k in ASSETS}
        self.images: dict[str, list[AssetState]] = {k: [] for k in ASSETS}  # every state each asset had
        self.logged: dict[str, dict[int | None, int]] = {k: {} for k in ASSETS}  # snapshots recorded: id -> position
        self.checked = 0
        self.next_snapshot = dict.fromkeys(ASSETS, 1)

    @initialize()
    def install_rules(self) -> None:
        for r in RULES:
            self.rules.put_rule(r, self.now)

    # --- the world ------------------------------------------------------------------------------

    @rule(event=st.sampled_from(EVENTS), wait_ms=st.integers(0, 20_000))
    def ingest(self, event: AssetEvent, wait_ms: int) -> None:
        """Any event: a duplicate, a late one, one from the future."""
        self.now += wait_ms
        self._ingest(event)

    @precondition(lambda self: min(self.next_snapshot.values()) <= max(SNAPSHOTS))
    @rule(asset=st.sampled_from(ASSETS), verdict=st.booleans(), wait_ms=st.integers(0, 20_000))
    def commit_next(self, asset: str, verdict: bool, wait_ms: int) -> None:
        """The next snapshot of an asset (and for A maybe its quality verdict): progress, in order."""
        self.now += wait_ms
        sid = self.next_snapshot[asset]
        if sid > max(SNAPSHOTS):
            return
        self.next_snapshot[asset] += 1
        for event in EVENTS:
            if (
                event.asset_key == asset
                and position(event) == sid
                and (event.event_type is EventType.SNAPSHOT_COMMITTED or verdict)
            ):
                self._ingest(event)

    @rule(asset=st.sampled_from((B, C)), wait_ms=st.integers(0, 20_000))
    def approve_schema(self, asset: str, wait_ms: int) -> None:
        self.now += wait_ms
        self._ingest(AssetEvent(eventType=EventType.SCHEMA_CHANGE_APPROVED, assetKey=asset, schemaId=2))

    def _ingest(self, event: AssetEvent) -> None:
        before = self.store.get_state(event.asset_key)
        self.ingest_events.ingest(event, SourceType.PUSH)
        if event.event_type is EventType.SNAPSHOT_COMMITTED:
            self.logged[event.asset_key][event.snapshot_id] = position(event) or 0
        after = self.store.get_state(event.asset_key)
        if after is not None and (before is None or after.version != before.version):
            if before is None:  # moto emits a keys-only INSERT before the real one
                self.pending[event.asset_key].append(StateChange(event.asset_key, None))
            self.pending[event.asset_key].append(StateChange(event.asset_key, after))
            self.images[event.asset_key].append(after)

    @precondition(lambda self: any(self.pending.values()))
    @rule(seed=st.integers(0, 2**32 - 1), twice=st.booleans())
    def deliver(self, seed: int, twice: bool) -> None:
        chooser = random.Random(seed)
        batch: list[StateChange] = []
        for key in chooser.sample(ASSETS, chooser.randint(1, 3)):
            take = chooser.randint(0, len(self.pending[key]))
            batch.extend(self.pending[key][:take])
            del self.pending[key][:take]
        self.resolve(batch)  # each asset's records in order, as a stream delivers them; assets in any order
        if twice:
            self.resolve(batch)  # a redelivered batch

    @rule()
    def dispatch(self) -> None:
        """The target starts every claimed run; each SUCCEEDED trigger's stream record wakes its group."""
        woken = []
        for t in list(self.triggers.triggers.values()):
            if t.status is TriggerStatus.TRIGGERING:
                self.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.SUCCEEDED})
                woken.append(Deferral(t.rule_id, t.group_id, 0))
        if woken:
            self.resolve(deferred=woken)

    @rule(wait_ms=st.integers(0, 120_000))
    def sweep_deferred(self, wait_ms: int) -> None:
        self.now += wait_ms
        due = self.sweep()
        if due:
            self.resolve(deferred=due)

    # --- safety ----------------------------------------------------------------------------------

    @invariant()
    def claims_are_safe(self) -> None:
        claims = self.triggers.claims
        keys = [c.trigger.trigger_key for c in claims]
        assert len(keys) == len(set(keys)), "a trigger key was claimed twice"
        seen: set[tuple[Any, ...]] = set()
        for c in claims:
            identity = (
                c.trigger.rule_id,
                c.trigger.group_id,
                tuple(sorted(tuple(p.identity()) for p in c.trigger.inputs)),
            )
            assert identity not in seen, f"the same versions were claimed twice: {identity}"
            seen.add(identity)
        for c in claims[self.checked :]:
            self._check_claim(c)
        self._check_order()
        self.checked = len(claims)

    def _check_claim(self, claim: Claim) -> None:
        t = claim.trigger
        pins = {p.asset_key: p.snapshot_id for p in t.inputs}
        s = claim.states
        if t.rule_id == "all_ab":
            a, b = s[A], s[B]
            assert pins[A] == a.quality_passed_snapshot_id, "A must pin the newest snapshot that passed"
            assert pins[A] != FAILING_SNAPSHOT and pins[A] != a.quality_failed_snapshot_id
            assert pins[B] == b.latest_snapshot_id and b.schema_status is SchemaStatus.COMPATIBLE
        elif t.rule_id == "any_bc":
            assert pins == {B: s[B].latest_snapshot_id, C: s[C].latest_snapshot_id}
            changed = max(x.updated_at or 0 for x in (s[B], s[C]))
            assert t.created_at >= changed + 30_000, "claimed inside the quiet period"
        else:
            # EACH_VERSION judges each snapshot of C by its own gates: the asset's watermark, and whether the schema
            # of that very snapshot is approved (C's newest schema may still await approval meanwhile)
            assert (s[C].watermark or 0) >= WATERMARK_GATE, "claimed below the watermark gate"
            assert pins[A] in self.logged[A], "EACH_VERSION pinned a version A never had"
            assert pins[C] in self.logged[C], "EACH_VERSION pinned a version C never had"
            accepted = max(s[C].first_schema_id or 0, s[C].schema_approved_id or 0)
            assert schema_of(self.logged[C][pins[C]]) <= accepted, (
                "claimed a snapshot of C whose schema awaits approval"
            )
            orders = {p.asset_key: p.ordinal[0] for p in t.inputs}
            assert all(orders[k] <= (s[k].latest_snapshot_order or 0) for k in (A, C)), "pinned a future version"

    def _check_order(self) -> None:
        for rule_id in BY_ID:
            mine = [c.trigger for c in self.triggers.claims if c.trigger.rule_id == rule_id]
            for before, after in itertools.pairwise(mine):
                old = {p.asset_key: p.ordinal for p in before.inputs}
                new = {p.asset_key: p.ordinal for p in after.inputs}
                assert all(new[k] >= old[k] for k in old), f"{rule_id} went backwards: {old} -> {new}"
                assert any(new[k] > old[k] for k in old), f"{rule_id} fired without a new version"
                if rule_id == "all_ab":
                    assert all(new[k] > old[k] for k in old), "ALL_UPDATED fired before every member advanced"
                if rule_id == "any_bc":
                    assert after.created_at >= before.created_at + 60_000, "claimed inside the cooldown"

    # --- liveness --------------------------------------------------------------------------------

    def teardown(self) -> None:
        for key in ASSETS:  # the stream delivers everything that is left
            batch, self.pending[key] = self.pending[key], []
            self.resolve(batch)
        for _ in range(200):  # and the runs start and the sweeps run until nothing is waiting
            if any(t.status is TriggerStatus.TRIGGERING for t in self.triggers.triggers.values()):
                self.dispatch()
                continue
            self.now += 86_400_000
            due = self.sweep()
            if not due:
                break
            self.resolve(deferred=due)
        self.claims_are_safe()
        target(float(len(self.triggers.claims)), label="claims")  # steer towards runs that claim a lot
        for rule_id in BY_ID:
            count = sum(1 for c in self.triggers.claims if c.trigger.rule_id == rule_id)
            label(f"{rule_id} claims: " + ("0" if count == 0 else "1" if count == 1 else "2-3" if count < 4 else "4+"))
        final = {k: s for k in ASSETS if (s := self.store.get_state(k)) is not None}
        last = {r: [c.trigger for c in self.triggers.claims if c.trigger.rule_id == r] for r in BY_ID}

        a, b, c = final.get(A), final.get(B), final.get(C)
        if (
            a
            and b
            and a.quality_passed_snapshot_id
            and b.latest_snapshot_id
            and b.schema_status is SchemaStatus.COMPATIBLE
        ):
            assert last["all_ab"], "all_ab held on the final state but never fired"
            pinned = {p.asset_key: p.snapshot_id for p in last["all_ab"][-1].inputs}
            want = {A: a.quality_passed_snapshot_id, B: b.latest_snapshot_id}
            # ALL_UPDATED: either the final versions are pinned, or some member has not moved since.
            assert pinned == want or any(pinned[k] == want[k] for k in want), (pinned, want)
        if b and c and b.latest_snapshot_id and c.latest_snapshot_id:
            assert last["any_bc"], "any_bc held on the final state but never fired"
            pinned = {p.asset_key: p.snapshot_id for p in last["any_bc"][-1].inputs}
            assert pinned == {B: b.latest_snapshot_id, C: c.latest_snapshot_id}
        if (
            a
            and c
            and a.latest_snapshot_id
            and c.latest_snapshot_id
            and (c.watermark or 0) >= WATERMARK_GATE
            and c.schema_status is SchemaStatus.COMPATIBLE
        ):
            each = last["each_ac"]
            assert each, "each_ac held on the final state but never fired"
            pinned = {p.asset_key: p.snapshot_id for p in each[-1].inputs}
            assert pinned == {A: a.latest_snapshot_id, C: c.latest_snapshot_id}
            for key in (A, C):
                first = next(p.ordinal[0] for p in each[0].inputs if p.asset_key == key)
                claimed = {p.snapshot_id for t in each for p in t.inputs if p.asset_key == key}
                due = self._due(key, first)
                assert due <= claimed, f"EACH_VERSION skipped {sorted(due - claimed)} of {key}"

    def _due(self, key: str, first: int) -> set[int]:
        """Versions each_ac must trigger once C's gates hold on the final state (then they hold for each of its
        snapshots: the watermark gate is the asset's, and C's newest schema is approved or the only one): the
        latest snapshot of every state, from order ``first`` on. (A snapshot that was never the latest may have
        come after its gap settled and the rule went past it.)"""
        return {
            s.latest_snapshot_id
            for s in self.images[key]
            if s.latest_snapshot_id is not None and (s.latest_snapshot_order or 0) >= first
        }


ResolverMachine.TestCase.settings = settings(
    max_examples=examples(200), stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def setup_module() -> None:
    logger.setLevel("WARNING")  # a claim logs a line; thousands of examples need not


def teardown_module() -> None:
    logger.setLevel("INFO")


TestResolverStateMachine = ResolverMachine.TestCase
