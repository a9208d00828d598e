"""Explain and the resolver agree: whenever explain says a rule is ready, a claim for exactly the versions it shows
exists, or is made within one resolver cycle (the stream's pending records delivered, due deferrals swept).

Generated histories interleave snapshots and quality verdicts, rule puts (created, replaced, disabled, re-enabled,
either startFrom), partial stream deliveries and sweeps; the system is the real ingest, rule and resolver use cases
on the in-memory fakes."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from lakehook.adapters.memory import InMemoryAssetStore
from lakehook.adapters.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.triggers import PinnedInput, Window, trigger_key
from lakehook.observability import logger
from lakehook.ports.rules import StateChange
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.resolve import ResolveAssetChange, SweepDeferred
from lakehook.usecases.rules import ManageRules

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
}


class ExplainMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_750_000_000_000
        self.store = InMemoryAssetStore()
        self.ingest_events = IngestEvents(self.store, clock=lambda: self.now)
        self.rules = InMemoryRuleStore()
        self.triggers = InMemoryTriggerStore()
        self.deferrals = InMemoryDeferralStore()
        reader = InMemoryStateReader(self.store.get_state, self.triggers)
        self.resolve = ResolveAssetChange(
            self.rules,
            reader,
            self.triggers,
            InMemoryStateHistory(),
            self.deferrals,
            clock=lambda: self.now,
            observer=None,
        )
        self.manage = ManageRules(self.rules, self.triggers, reader, clock=lambda: self.now, resolver=self.resolve)
        self.sweep = SweepDeferred(self.deferrals, clock=lambda: self.now)
        self.pending: dict[str, list[StateChange]] = {k: [] for k in ASSETS}
        self.next_snapshot = dict.fromkeys(ASSETS, 1)
        self.checked_ready = 0

    # --- the world ------------------------------------------------------------------------------------

    @rule(asset=st.sampled_from(ASSETS), verdict=st.sampled_from([None, True, False]), wait_ms=st.integers(0, 40_000))
    def commit(self, asset: str, verdict: bool | None, wait_ms: int) -> None:
        self.now += wait_ms
        sid = self.next_snapshot[asset]
        self.next_snapshot[asset] += 1
        self._ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid))
        if verdict is not None:
            kind = EventType.QUALITY_CHECK_PASSED if verdict else EventType.QUALITY_CHECK_FAILED
            self._ingest(AssetEvent(eventType=kind, assetKey=asset, snapshotId=sid))

    def _ingest(self, event: AssetEvent) -> None:
        before = self.store.get_state(event.asset_key)
        self.ingest_events.ingest(event, SourceType.PUSH)
        after = self.store.get_state(event.asset_key)
        if after is not None and (before is None or after.version != before.version):
            self.pending[event.asset_key].append(StateChange(event.asset_key, after))

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
            "groups": [{"groupId": "g", "members": spec["members"]}],
            "policy": {**spec["policy"], "startFrom": start_from},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "enabled": enabled,
        }
        self.manage.put(rule_id, body)

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
        explained = self.manage.explain(rule_id)
        promised = [
            trigger_key(
                rule_id,
                g["groupId"],
                [PinnedInput.model_validate(p) for p in g["pins"]],
                Window.model_validate(g["window"]) if g.get("window") else None,
                0,
            )
            for g in explained["groups"]
            if g["status"] == "READY"
        ]
        assert explained["ready"] is bool(promised)
        if not promised:
            return
        self.checked_ready += 1
        # one resolver cycle at the same instant: the stream's pending records, then the due deferrals
        batch = [c for key in ASSETS for c in self.pending[key]]
        self.pending = {k: [] for k in ASSETS}
        if batch:
            self.resolve(batch)
        due = self.sweep()
        if due:
            self.resolve(deferred=due)
        missing = [k for k in promised if k not in self.triggers.triggers]
        assert not missing, f"explain said {rule_id} is ready, but no claim {missing} was made: {explained}"


ExplainMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def setup_module() -> None:
    logger.setLevel("WARNING")


def teardown_module() -> None:
    logger.setLevel("INFO")


TestExplainAgreesWithTheResolver = ExplainMachine.TestCase
