"""A rule applied to a throw-away copy of the world: recorded events fed, in the order they were received, through
the real ingest (state advance) and the real resolver (gather, plan, claim) on in-memory stores
(:mod:`lakehook.adapters.memory`), with the replay's clock at each event's receipt. Nothing is dispatched: a claimed
run is taken as finished at once (its SUCCEEDED wakes its group, as the trigger's stream record does), and a
cooldown or quiet period ends exactly when its deferral is due (the deployed sweep runs each minute, so a live claim
waiting on one can come up to a minute later, with any version that arrived meanwhile).

What the replay cannot see: a snapshot's partition keys past the event's first 1000 (their part items are not
replayed), and polls asked for a gap (the history holds what was recorded, nothing more)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakehook.adapters.memory.assets import InMemoryAssetStore
from lakehook.adapters.memory.coverage import InMemoryCoverageStore
from lakehook.adapters.memory.partitions import InMemoryPartitionStore
from lakehook.adapters.memory.rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from lakehook.domain.events import EventType
from lakehook.domain.rules import Rule, StartFrom
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.ports.rules import AssetRecheck, Deferral, StateChange
from lakehook.ports.store import RecordedEvent
from lakehook.usecases.coverage import RecordCoverage
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolveAssetChange, ResolverStores, SweepDeferred
from lakehook.usecases.rule_explain import ExplainRule

MAX_WAKES = 1000  # resolver passes one event may cause (runs finishing, deferrals due): a loop past it is a bug


class ReplayWorld:
    """The throw-away stores and the use cases on them, with a clock the replay moves."""

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms
        self.assets = InMemoryAssetStore()
        self.triggers = InMemoryTriggerStore()
        self.rules = InMemoryRuleStore()
        self.deferrals = InMemoryDeferralStore()
        self.partitions = InMemoryPartitionStore()
        history = InMemoryStateHistory()
        coverage = InMemoryCoverageStore()
        self.reader = InMemoryStateReader(
            self.assets.get_state, self.triggers, events=lambda: [e.event for e in self.assets.events.values()]
        )
        stores = ResolverStores(
            self.rules,
            self.reader,
            self.triggers,
            history,
            self.deferrals,
            coverage=coverage,
            partitions=self.partitions,
            assets=self.assets,
        )
        self.resolver = ResolveAssetChange(stores, clock=self.clock, observer=None)
        self.sweep = SweepDeferred(self.deferrals, clock=self.clock)
        late = LateSnapshotNotice(self.rules, self.triggers, history, clock=self.clock)
        covered = RecordCoverage(coverage, self.clock)
        self.ingest = IngestEvents(self.assets, clock=self.clock, coverage=covered, late=late)
        self.failures: list[str] = []

    def clock(self) -> int:
        return self.now

    # --- the rule ------------------------------------------------------------------------------------

    def apply(self, rule: Rule, at: int) -> None:
        """What ``PUT /rules/{id}`` does at ``at``: a NEXT_CHANGE rule's starting point first, then the rule stored
        and evaluated at once."""
        self.until(at)
        if rule.enabled and rule.policy.start_from is StartFrom.NEXT_CHANGE:
            self.resolver.start(rule, [g.group_id for g in rule.groups])
        self.rules.put_rule(rule, self.now)
        if rule.enabled:
            before = len(self.triggers.claim_order)
            report = self.resolver.evaluate(rule)
            self.failures.extend(f.message for f in report.failed)
            self._finish(self._claims_since(before))

    # --- the history ---------------------------------------------------------------------------------

    def feed(self, recorded: RecordedEvent) -> None:
        """One recorded event at the time it was received, and the stream records its ingest makes."""
        self.until(recorded.received_at)
        event = recorded.event
        before = self.assets.get_state(event.asset_key)
        parts = len(self.assets.inserted_parts)
        self.ingest.ingest(event, recorded.source, producer_id=recorded.producer_id)
        changes: list[StateChange] = []
        if event.event_type is EventType.SNAPSHOT_COMMITTED:  # the event item's INSERT
            changes.append(StateChange(event.asset_key, snapshot=snapshot_record(event), partitions=event.partitions))
        changes.extend(
            StateChange(p.asset_key, snapshot=p.snapshot, partitions=p.partitions, partitions_only=True)
            for p in self.assets.inserted_parts[parts:]
        )
        after = self.assets.get_state(event.asset_key)
        if after is not None and (before is None or after.version != before.version):  # the state item's record
            changes.append(StateChange(event.asset_key, after))
        if changes:
            self._resolve(changes, ())

    def until(self, at: int) -> None:
        """Move the clock to ``at``, sweeping each deferral due before it at its own due time."""
        for _ in range(MAX_WAKES):
            due = self.deferrals.due(at, 1)
            if not due:
                break
            self.now = max(self.now, due[0].due_at)
            marked = self.sweep()
            if marked:
                self._resolve((), marked)
        self.now = max(self.now, at)

    def explain(self, rule_id: str) -> dict[str, Any]:
        """What the rule waits for now, as ``GET /rules/{id}/explain`` would say on the replayed stores."""
        explain = ExplainRule(
            self.rules, self.triggers, self.reader, clock=self.clock, resolver=self.resolver, partitions=self.partitions
        )
        return explain.explain(rule_id)

    def claims(self) -> list[Trigger]:
        """Every claim, in the order it was made (a run finished is shown as claimed: TRIGGERING)."""
        return [self._as_claimed(self.triggers.triggers[k]) for k in self.triggers.claim_order]

    # --- the resolver's passes -----------------------------------------------------------------------

    def _resolve(self, changes: Sequence[StateChange], deferred: Sequence[Deferral | AssetRecheck]) -> None:
        before = len(self.triggers.claim_order)
        report = self.resolver(changes, deferred)
        self.failures.extend(f.message for f in report.failed)
        self._finish(self._claims_since(before))

    def _claims_since(self, before: int) -> list[Trigger]:
        return [self.triggers.triggers[k] for k in self.triggers.claim_order[before:]]

    def _finish(self, claimed: Sequence[Trigger]) -> None:
        """Each run claimed finishes at once; its SUCCEEDED wakes its group (a partition's only when in order)."""
        woken: list[Deferral | AssetRecheck] = []
        for trigger in claimed:
            if trigger.status is not TriggerStatus.TRIGGERING:
                continue
            with self.triggers.lock:
                self.triggers.triggers[trigger.trigger_key] = trigger.model_copy(
                    update={"status": TriggerStatus.SUCCEEDED}
                )
            if trigger.partition is None or trigger.in_order:
                woken.append(Deferral(trigger.rule_id, trigger.group_id, 0))
        if woken:
            self._resolve((), woken)

    def _as_claimed(self, trigger: Trigger) -> Trigger:
        if trigger.status is TriggerStatus.SUCCEEDED:
            return trigger.model_copy(update={"status": TriggerStatus.TRIGGERING})
        return trigger
