"""The resolver use case on in-memory fakes: scenarios users of other schedulers know too well."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.events import AssetEvent, EventResult, EventType, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.ports.rules import ClaimResult, Deferral, StateChange
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolveReport, ResolverLimits, ResolverStores, SweepDeferred
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.wiring import ingest_events, resolve_asset_change

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
START = 1_750_000_000_000


class World:
    """Ingest on the in-memory store; a fake stream of state changes; the resolver on fakes."""

    def __init__(self, *rules: Rule, triggers: InMemoryTriggerStore | None = None) -> None:
        self.now = START
        self.store = InMemoryAssetStore()
        self.rules = InMemoryRuleStore()
        for r in rules:
            self.rules.put_rule(r, self.now)
        self.triggers = triggers or InMemoryTriggerStore()
        self.history = InMemoryStateHistory()
        late = LateSnapshotNotice(self.rules, self.triggers, self.history)
        self.ingest = ingest_events(self.store, clock=lambda: self.now, late=late)
        self.answers: list[EventResult] = []  # every push's answer, in order
        self.deferrals = InMemoryDeferralStore()
        self.reader = InMemoryStateReader(
            self.store.get_state, self.triggers, events=lambda: [e.event for e in self.store.events.values()]
        )
        self.resolve = resolve_asset_change(
            ResolverStores(self.rules, self.reader, self.triggers, self.history, self.deferrals),
            clock=lambda: self.now,
            observer=None,
        )
        self.sweeper = SweepDeferred(self.deferrals, clock=lambda: self.now)
        self.stream: dict[str, list[StateChange]] = {}

    def push(self, event_type: str, asset: str, **fields: Any) -> None:
        before = self.store.get_state(asset)
        event = AssetEvent(eventType=event_type, assetKey=asset, **fields)
        result = self.ingest.ingest(event, SourceType.PUSH)
        self.answers.append(result)
        if event.event_type is EventType.SNAPSHOT_COMMITTED and result.status is not IngestStatus.DUPLICATE:
            # the event item's own stream record (a late, STALE snapshot's too)
            self.stream.setdefault(asset, []).append(StateChange(asset, snapshot=snapshot_record(event)))
        after = self.store.get_state(asset)
        if after is not None and (before is None or before.version != after.version):
            self.stream.setdefault(asset, []).append(StateChange(asset, after))

    def dispatch(self, report: ResolveReport, fail: bool = False, only: str | None = None) -> ResolveReport:
        """A healthy target (or a failing one): every TRIGGERING claim (``only``: of that partition) ends SUCCEEDED
        (or FAILED); a SUCCEEDED one's stream record wakes its group as the stream filter lets it through (a group's
        run, or a partition's run in order), until nothing more is claimed. Answers every claim made."""
        claimed = list(report.claimed)
        while True:
            woken = []
            for t in list(self.triggers.triggers.values()):
                if t.status is not TriggerStatus.TRIGGERING or (only is not None and t.partition != only):
                    continue
                status = TriggerStatus.FAILED if fail else TriggerStatus.SUCCEEDED
                self.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": status})
                if not fail and (t.partition is None or t.in_order):
                    woken.append(Deferral(t.rule_id, t.group_id, 0))
            if not woken:
                report.claimed = claimed
                return report
            again = self.resolve(deferred=woken)
            claimed += again.claimed
            report.verdicts.update(again.verdicts)

    def snap(self, asset: str, *snapshots: int, **fields: Any) -> None:
        for sid in snapshots:
            self.push("SNAPSHOT_COMMITTED", asset, snapshotId=sid, **fields)

    def deliver(self, *assets: str, dispatch: bool = True) -> ResolveReport:
        batch = [c for a in assets or list(self.stream) for c in self.stream.pop(a, [])]
        report = self.resolve(batch)
        return self.dispatch(report) if dispatch else report

    def sweep(self, wait_ms: int, dispatch: bool = True) -> ResolveReport:
        self.now += wait_ms
        report = self.resolve(deferred=self.sweeper())
        return self.dispatch(report) if dispatch else report

    def claimed(self, rule_id: str | None = None) -> list[list[int | None]]:
        """The versions of each claim, in claim order (not the late versions recorded as skipped)."""
        order = [t for k in self.triggers.claim_order if not is_late_skip(t := self.triggers.triggers[k])]
        return [[p.snapshot_id for p in t.inputs] for t in order if rule_id is None or t.rule_id == rule_id]

    def skipped(self, rule_id: str | None = None) -> dict[int | None, str | None]:
        """The late versions the resolver recorded as skipped: snapshot id -> reason."""
        late = [t for t in self.triggers.triggers.values() if is_late_skip(t)]
        return {t.inputs[0].snapshot_id: t.reason for t in late if rule_id is None or t.rule_id == rule_id}


def rule(
    rule_id: str, *members: dict[str, Any], mode: str = "ALL_UPDATED", enabled: bool = True, **policy: Any
) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "enabled": enabled,
            "policy": {"mode": mode, **policy},
            "groups": [{"groupId": "g", "members": list(members)}],
        }
    )


def test_the_rule_fires_when_the_second_asset_arrives() -> None:
    world = World(rule("r", {"assetKey": A}, {"assetKey": B}))
    world.snap(A, 1)
    assert world.deliver().claimed == []
    world.snap(B, 7)
    reads = world.reader.reads
    report = world.deliver(dispatch=False)
    assert world.reader.reads == reads + 1  # one batched read of states and cursors per invocation
    assert [[p.snapshot_id for p in t.inputs] for t in report.claimed] == [[1, 7]]
    assert report.claimed[0].status is TriggerStatus.TRIGGERING


def test_four_snapshots_in_one_batch_each_version_fires_four_times_any_updated_once() -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"), rule("any", {"assetKey": A}, mode="ANY_UPDATED"))
    world.snap(A, 1, 2, 3, 4)
    world.deliver()
    assert world.claimed("each") == [[1], [2], [3], [4]]
    assert world.claimed("any") == [[4]]


def test_redelivered_batch_claims_nothing_new() -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"))
    world.snap(A, 1, 2, 3)
    batch = world.stream.pop(A)
    world.dispatch(world.resolve(batch))
    assert world.resolve(batch).claimed == []
    assert world.claimed() == [[1], [2], [3]]


def test_each_version_catches_up_from_history_once_a_gate_reopens() -> None:
    # B's new schema awaits approval while A commits 2 and 3: nothing fires; the approval, on B's
    # record, must still give A's versions one trigger each, in order, from the stored history.
    world = World(
        rule("each", {"assetKey": A}, {"assetKey": B, "condition": {"schemaStatus": "COMPATIBLE"}}, mode="EACH_VERSION")
    )
    world.snap(A, 1)
    world.snap(B, 1, schemaId=1)
    world.deliver()
    world.snap(B, 2, schemaId=2)
    world.deliver(B)
    world.snap(A, 2, 3)
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=3)  # a state change that moves no pinned version
    assert world.deliver(A).claimed == []
    world.push("SCHEMA_CHANGE_APPROVED", B, schemaId=2)
    world.deliver(B)
    assert world.claimed() == [[1, 1], [2, 2], [3, 2]]


def test_a_resolver_of_another_asset_waits_for_history_it_has_not_seen() -> None:
    world = World(rule("each", {"assetKey": A}, {"assetKey": B}, mode="EACH_VERSION"))
    world.snap(A, 1)
    world.snap(B, 1)
    world.deliver()
    world.snap(A, 2, 3)  # A's records are not delivered yet
    world.snap(B, 2)
    world.deliver(B)  # must not jump A to 3: A's 2 is unknown to this resolver
    assert world.claimed() == [[1, 1], [1, 2]]
    world.deliver(A)
    assert world.claimed() == [[1, 1], [1, 2], [2, 2], [3, 2]]


def test_a_gap_that_never_fills_is_stepped_over_once_the_state_settled() -> None:
    # A's records were handled while the rule was disabled: no history. B's change must not pin A's
    # old version forever, nor skip ahead at once; once A's state has settled, a re-check moves on.
    each = rule("each", {"assetKey": A}, {"assetKey": B}, mode="EACH_VERSION")
    world = World(each)
    world.snap(A, 1)
    world.snap(B, 1)
    world.deliver()
    world.rules.put_rule(Rule.model_validate({**json_form(each), "enabled": False}), world.now)
    world.snap(A, 2, 3)
    world.deliver(A)  # nothing records A's history: the rule is disabled
    world.rules.put_rule(each, world.now)
    world.now += 60_000
    world.snap(B, 2)
    report = world.deliver(B)
    assert world.claimed() == [[1, 1], [1, 2]]
    assert [d.due_at for d in report.deferred] == [START + 15 * 60_000]  # when A's gap is final
    world.sweep(15 * 60_000)
    assert world.claimed() == [[1, 1], [1, 2], [3, 2]]


def test_a_lost_snapshot_is_waited_for_then_stepped_over_once_settled() -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"))
    world.snap(A, 1)
    world.deliver()
    world.snap(A, 2, 3, 4)
    del world.stream[A][:2]  # both records of snapshot 2 (its event, its state) exhausted their retries
    report = world.deliver()
    assert world.claimed() == [[1]]  # Paimon ids are consecutive: 2 is missing, so 3 and 4 wait
    assert report.verdicts[("each", "g")].status.value == "WAITING_FOR_VERSION"
    assert [d.due_at for d in report.deferred] == [START + 15 * 60_000]
    world.sweep(15 * 60_000)
    assert world.claimed() == [[1], [3], [4]]


def test_all_updated_needs_every_member_to_move_again() -> None:
    world = World(rule("r", {"assetKey": A}, {"assetKey": B}))
    world.snap(A, 1)
    world.snap(B, 1)
    world.deliver()
    world.snap(A, 2, 3)
    assert world.deliver().claimed == []
    world.snap(B, 2)
    world.deliver()
    assert world.claimed() == [[1, 1], [3, 2]]


def test_cooldown_defers_to_its_end_and_the_sweep_fires_it() -> None:
    world = World(rule("r", {"assetKey": A}, mode="ANY_UPDATED", minIntervalSeconds=60))
    world.snap(A, 1)
    world.deliver()
    world.now += 10_000
    world.snap(A, 2)
    report = world.deliver()
    assert report.claimed == [] and [d.due_at for d in report.deferred] == [START + 60_000]
    assert world.sweep(49_000).claimed == []  # t+59s: not due yet
    assert [[p.snapshot_id for p in t.inputs] for t in world.sweep(1_000).claimed] == [[2]]


def test_quiet_period_waits_for_no_change_then_fires_once() -> None:
    world = World(rule("r", {"assetKey": A}, mode="ANY_UPDATED", quietPeriodSeconds=30))
    for sid in (1, 2, 3):
        world.snap(A, sid)
        assert world.deliver().claimed == []
        world.now += 10_000
    assert world.sweep(0).claimed == []  # the deferral for snapshot 3 is due at t+20s+30s
    assert world.claimed() == []
    world.sweep(40_000)
    assert world.claimed() == [[3]]
    assert world.sweep(3_600_000).claimed == []  # a stale deferral re-evaluates harmlessly


def test_backfill_skip_records_a_skip_and_fires_on_the_next_real_change() -> None:
    world = World(rule("r", {"assetKey": A}, mode="ANY_UPDATED", backfill="SKIP"))
    world.snap(A, 1)
    world.deliver()
    world.push("BACKFILL_STARTED", A, backfillId="bf1")
    world.snap(A, 2, 3)
    assert world.deliver().claimed == []
    world.push("BACKFILL_COMPLETED", A, backfillId="bf1")
    skipped = world.deliver().claimed
    assert [(t.status, [p.snapshot_id for p in t.inputs]) for t in skipped] == [(TriggerStatus.SKIPPED, [3])]
    world.snap(A, 4)
    fired = world.deliver().claimed
    assert [(t.status, [p.snapshot_id for p in t.inputs]) for t in fired] == [(TriggerStatus.TRIGGERING, [4])]


def test_a_late_duplicate_completion_of_the_first_backfill_never_releases_the_second() -> None:
    # GIVEN a SKIP rule whose first backfill was absorbed, and a second backfill running
    world = World(rule("r", {"assetKey": A}, mode="ANY_UPDATED", backfill="SKIP"))
    world.snap(A, 1)
    world.deliver()
    world.push("BACKFILL_STARTED", A, backfillId="bf1")
    world.snap(A, 2)
    world.push("BACKFILL_COMPLETED", A, backfillId="bf1")
    assert [t.status for t in world.deliver().claimed] == [TriggerStatus.SKIPPED]
    world.push("BACKFILL_STARTED", A, backfillId="bf2")
    world.snap(A, 3)
    assert world.deliver().claimed == []
    # WHEN the first backfill's completion is delivered again (and any other change wakes the resolver)
    world.push("BACKFILL_COMPLETED", A, backfillId="bf1")
    world.push("WATERMARK_ADVANCED", A, watermark=START)
    # THEN the snapshots the second backfill commits still start no run
    assert world.deliver().claimed == []
    state = world.store.get_state(A)
    assert state is not None and (state.backfill_status.value, state.backfill_id) == ("RUNNING", "bf2")
    world.push("BACKFILL_COMPLETED", A, backfillId="bf2")
    skipped = world.deliver().claimed
    assert [(t.status, [p.snapshot_id for p in t.inputs]) for t in skipped] == [(TriggerStatus.SKIPPED, [3])]
    world.snap(A, 4)
    assert [(t.status, [p.snapshot_id for p in t.inputs]) for t in world.deliver().claimed] == [
        (TriggerStatus.TRIGGERING, [4])
    ]


def test_windowed_rule_fires_once_per_window() -> None:
    hour = 3_600_000
    base = 1_750_000_000_000 // hour * hour
    world = World(rule("w", {"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}, mode="ANY_UPDATED"))
    world.snap(A, 1, watermark=base + 10)
    world.snap(A, 2, watermark=base + 20)
    world.deliver()
    world.snap(A, 3, watermark=base + hour // 2)  # same window still open
    world.deliver()
    assert [t.window.end for t in world.triggers.triggers.values() if t.window] == [base]
    world.snap(A, 4, watermark=base + hour + 1)
    world.deliver()
    assert sorted(t.window.end for t in world.triggers.triggers.values() if t.window) == [base, base + hour]


def test_a_long_backlog_continues_in_a_later_invocation() -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"))
    world.resolve = resolve_asset_change(
        ResolverStores(world.rules, world.reader, world.triggers, world.history, world.deferrals),
        limits=ResolverLimits(max_claims_per_group=2),
        clock=lambda: world.now,
        observer=None,
    )
    world.snap(A, 1, 2, 3, 4, 5)
    report = world.deliver(dispatch=False)
    assert len(report.claimed) == 1  # head of line: 2 waits for 1's dispatch
    world.dispatch(report)
    assert world.claimed() == [[1], [2], [3], [4], [5]]


def test_disabled_and_deleted_rules_do_not_fire() -> None:
    world = World(rule("off", {"assetKey": A}, enabled=False), rule("gone", {"assetKey": A}))
    world.rules.delete_rule("gone")
    world.snap(A, 1)
    assert world.deliver().claimed == []


class RacingTriggerStore(InMemoryTriggerStore):
    """Another resolver claims first, once, with the same state: ours must lose and not double-claim."""

    def __init__(self) -> None:
        super().__init__()
        self.raced = False

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        if not self.raced:
            self.raced = True
            super().claim(trigger, cursor, expected)
        return super().claim(trigger, cursor, expected)


def test_a_lost_race_re_evaluates_with_the_winners_cursor() -> None:
    world = World(rule("each", {"assetKey": A}, mode="EACH_VERSION"), triggers=RacingTriggerStore())
    world.snap(A, 1, 2)
    report = world.deliver()
    assert report.conflicts == 1
    assert [[p.snapshot_id for p in t.inputs] for t in report.claimed] == [[2]]  # the racer claimed 1
    assert world.claimed() == [[1], [2]]


def test_groups_not_containing_the_changed_asset_are_not_evaluated() -> None:
    two = Rule.model_validate(
        {
            "ruleId": "two",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "groups": [{"groupId": "a", "members": [{"assetKey": A}]}, {"groupId": "b", "members": [{"assetKey": B}]}],
        }
    )
    world = World(two)
    world.snap(B, 1)
    world.deliver()
    world.snap(A, 1)
    report = world.deliver(A)
    assert set(report.verdicts) == {("two", "a")}


@pytest.mark.parametrize("mode", ["ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION"])
def test_an_and_over_sixteen_assets_never_fires_on_fifteen(mode: str) -> None:
    keys = [f"paimon://lake/db/t{i:02d}" for i in range(16)]
    world = World(rule("wide", *({"assetKey": k} for k in keys), mode=mode))
    for k in keys[:15]:
        world.snap(k, 1)
    assert world.deliver().claimed == []
    world.snap(keys[15], 1)
    assert len(world.deliver().claimed) == 1
