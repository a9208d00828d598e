"""Run completion and aliases on fakes, and a chain of three rules driven only by run completions."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.memory import InMemoryAssetStore
from lakehook.adapters.memory_dispatch import (
    InMemoryAliasStore,
    InMemoryManifestStore,
    InMemoryTargetClient,
    InMemoryTriggerLedger,
)
from lakehook.adapters.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from lakehook.domain.aliases import AliasSpec
from lakehook.domain.errors import AuthorizationError, ConflictError, NotFoundError, ValidationError
from lakehook.domain.events import IngestStatus, SourceType
from lakehook.domain.producers import Producer
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus
from lakehook.ports.rules import StateChange
from lakehook.usecases.aliases import ManageAliases, expand_aliases
from lakehook.usecases.completion import CompleteRun
from lakehook.usecases.dispatch import DispatchStatus, DispatchTrigger
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.resolve import ResolveAssetChange

T0 = 1_750_000_000_000
ODS = "paimon://lake/ods_db/ods_order_latest"
DWD = "paimon://lake/dwd_db/dwd_trade_event_fact"
DWS = "paimon://lake/dws_db/dws_trade_daily"
ADS = "paimon://lake/ads_db/ads_gmv"
WEBHOOK = {"type": "webhook", "url": "https://scheduler.example.com/hooks/x", "secretRef": "t/x"}


class Lake:
    """Ingest, resolver, dispatcher and completion wired on fakes, sharing one trigger store."""

    def __init__(self) -> None:
        self.now = T0
        self.assets = InMemoryAssetStore()
        self.ingest = IngestEvents(self.assets, clock=lambda: self.now)
        self.rules = InMemoryRuleStore()
        self.claims = InMemoryTriggerStore()
        self.ledger = InMemoryTriggerLedger(self.claims)
        self.resolver = ResolveAssetChange(
            self.rules,
            InMemoryStateReader(self.assets.get_state, self.claims),
            self.claims,
            InMemoryStateHistory(),
            InMemoryDeferralStore(),
            clock=lambda: self.now,
            observer=None,
        )
        self.target = InMemoryTargetClient()
        self.dispatch = DispatchTrigger(
            self.ledger,
            self.rules,
            InMemoryManifestStore(),
            {"webhook": self.target},
            clock=lambda: self.now,
            sleep=lambda s: None,
            metrics=None,
        )
        self.aliases = InMemoryAliasStore()
        self.complete = CompleteRun(self.ledger, self.ingest, self.aliases, clock=lambda: self.now)

    def rule(self, rule_id: str, member: str) -> None:
        self.rules.put_rule(
            Rule.model_validate(
                {
                    "ruleId": rule_id,
                    "groups": [{"groupId": "g", "members": [{"assetKey": member}]}],
                    "target": WEBHOOK,
                }
            ),
            self.now,
        )

    def settle(self, changed: list[str]) -> list[Trigger]:
        """What the stream would do: resolve the changed assets, then dispatch every new claim."""
        self.now += 1000
        claimed = self.resolver([StateChange(k) for k in changed]).claimed
        for trigger in claimed:
            assert self.dispatch(trigger.trigger_key).status is DispatchStatus.SUCCEEDED
        return claimed


def snapshot(asset: str, snapshot_id: int) -> dict[str, Any]:
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": snapshot_id}


def claimed(lake: Lake, rule_id: str = "dwd", status: TriggerStatus = TriggerStatus.TRIGGERING) -> str:
    pins = (PinnedInput(asset_key=ODS, snapshot_id=1),)
    trigger = Trigger(
        trigger_key=f"{rule_id}.g.0001",
        rule_id=rule_id,
        group_id="g",
        inputs=pins,
        status=status,
        created_at=T0,
        updated_at=T0,
    )
    lake.ledger.add(trigger)
    return trigger.trigger_key


# --- completion -------------------------------------------------------------------------------------------


def test_outlets_enter_the_ingest_path_as_run_completions() -> None:
    lake = Lake()
    key = claimed(lake)
    result = lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]}, None)
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED]
    state = lake.assets.get_state(DWD)
    assert state is not None and state.to_api()["latestSnapshotId"] == 2001
    [recorded] = lake.assets.events.values()
    assert recorded.source is SourceType.RUN_COMPLETION
    entry = lake.ledger.get(key)
    assert entry is not None and entry.run_status == "SUCCEEDED" and entry.completed_at == T0


def test_a_completion_is_idempotent() -> None:
    lake = Lake()
    key = claimed(lake)
    body = {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]}
    lake.complete(key, body, None)
    again = lake.complete(key, body, None)
    assert [r.status for r in again.results] == [IngestStatus.DUPLICATE]


def test_a_producer_may_only_report_outlets_under_its_prefixes() -> None:
    lake = Lake()
    key = claimed(lake)
    producer = Producer(
        producer_id="dwd-job",
        asset_key_prefixes=["paimon://lake/dwd_db/"],
        secret_ref="s",
        created_at=T0,
        updated_at=T0,
    )
    ok = lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 1)]}, producer)
    assert ok.results[0].status is IngestStatus.ACCEPTED
    with pytest.raises(AuthorizationError):
        lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2), snapshot(ADS, 1)]}, producer)
    assert lake.assets.get_state(ADS) is None
    assert lake.assets.get_state(DWD).to_api()["latestSnapshotId"] == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"status": "DONE"}, "status"),
        ({"status": "SUCCEEDED", "extra": 1}, "extra"),
        ({"status": "FAILED", "outlets": [snapshot(DWD, 1)]}, "FAILED run registers no outlets"),
        ([], "body"),
    ],
)
def test_a_bad_completion_is_refused(body: Any, message: str) -> None:
    lake = Lake()
    with pytest.raises(ValidationError, match=message):
        lake.complete(claimed(lake), body, None)


def test_unknown_and_skipped_triggers_take_no_completion() -> None:
    lake = Lake()
    with pytest.raises(NotFoundError):
        lake.complete("nope.g.0", {"status": "SUCCEEDED"}, None)
    with pytest.raises(ConflictError):
        lake.complete(claimed(lake, status=TriggerStatus.SKIPPED), {"status": "SUCCEEDED"}, None)


def test_a_failed_run_is_noted_without_outlets() -> None:
    lake = Lake()
    key = claimed(lake)
    assert lake.complete(key, {"status": "FAILED"}, None).results == []
    assert lake.ledger.get(key).run_status == "FAILED"  # type: ignore[union-attr]


# --- aliases ------------------------------------------------------------------------------------------------


def test_an_outlet_through_an_alias_updates_every_concrete_asset() -> None:
    lake = Lake()
    ManageAliases(lake.aliases, clock=lambda: T0).put("trade_facts", AliasSpec(asset_keys=[DWD, DWS]))
    key = claimed(lake)
    outlets = [
        {"eventType": "SNAPSHOT_COMMITTED", "alias": "trade_facts", "snapshotId": 7},
        {"eventType": "SNAPSHOT_COMMITTED", "alias": "missing", "snapshotId": 7},
    ]
    result = lake.complete(key, {"status": "SUCCEEDED", "outlets": outlets}, None)
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED, IngestStatus.ACCEPTED, IngestStatus.REJECTED]
    assert result.results[2].reason == "alias: alias 'missing' does not exist"
    assert lake.assets.get_state(DWD) is not None and lake.assets.get_state(DWS) is not None


def test_alias_expansion_keeps_other_events_and_refuses_ambiguity() -> None:
    store = InMemoryAliasStore()
    ManageAliases(store, clock=lambda: T0).put("a", AliasSpec(asset_keys=[DWD, DWS, DWD]))
    events = [
        snapshot(ODS, 1),
        {"eventType": "SNAPSHOT_COMMITTED", "alias": "a", "snapshotId": 2},
        {"eventType": "SNAPSHOT_COMMITTED", "alias": "a", "assetKey": ODS, "snapshotId": 3},
    ]
    expanded = expand_aliases(events, store)
    assert expanded[:3] == [snapshot(ODS, 1), snapshot(DWD, 2), snapshot(DWS, 2)]  # duplicates dropped on PUT
    assert expanded[3].status is IngestStatus.REJECTED and "not both" in expanded[3].reason


def test_replacing_an_alias_keeps_its_creation_time() -> None:
    store = InMemoryAliasStore()
    clock = [T0]
    manage = ManageAliases(store, clock=lambda: clock[0])
    _, created = manage.put("a", AliasSpec(asset_keys=[DWD]))
    clock[0] += 5000
    alias, again = manage.put("a", AliasSpec(asset_keys=[DWS]))
    assert created and not again
    assert alias.asset_keys == (DWS,) and alias.created_at == T0 and alias.updated_at == T0 + 5000
    with pytest.raises(NotFoundError):
        manage.get("b")


# --- the chain ------------------------------------------------------------------------------------------------


def test_a_chain_of_three_rules_reaches_the_last_layer_on_run_completions_alone() -> None:
    lake = Lake()
    lake.rule("dwd", ODS)  # ODS -> DWD
    lake.rule("dws", DWD)  # DWD -> DWS
    lake.rule("ads", DWS)  # DWS -> ADS

    # Only the ODS table is pushed; every later layer advances because the previous run reported its outlet.
    lake.ingest.ingest_raw([snapshot(ODS, 1001)], SourceType.PUSH)
    layers = [(DWD, 2001), (DWS, 3001), (ADS, 4001)]
    changed = [ODS]
    started: list[str] = []
    for outlet, snapshot_id in layers:
        [trigger] = lake.settle(changed)
        started.append(trigger.rule_id)
        lake.complete(trigger.trigger_key, {"status": "SUCCEEDED", "outlets": [snapshot(outlet, snapshot_id)]}, None)
        changed = [outlet]
    assert lake.settle(changed) == []  # nothing depends on ADS
    assert started == ["dwd", "dws", "ads"]
    assert lake.assets.get_state(ADS).to_api()["latestSnapshotId"] == 4001  # type: ignore[union-attr]
    assert sorted(lake.target.runs.values()) == [1, 1, 1]
    # Each run's payload pinned exactly what the previous layer produced.
    payloads = {p["ruleId"]: p for k in lake.target.runs for p in lake.target.payloads(k)}
    assert payloads["dws"]["inputs"] == [{"assetKey": DWD, "snapshotId": 2001}]
    assert payloads["ads"]["inputs"] == [{"assetKey": DWS, "snapshotId": 3001}]
    # A repeated completion does not run the next layer again.
    dwd_key = next(k for k in lake.target.runs if k.startswith("dwd."))
    lake.complete(dwd_key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]}, None)
    assert lake.settle([DWD]) == []
