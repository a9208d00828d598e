"""Run completion and aliases on fakes, and a chain of three rules driven only by run completions."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.aliases import AliasSpec
from lakehook.domain.errors import AuthorizationError, ConflictError, NotFoundError, ValidationError
from lakehook.domain.events import IngestStatus, SourceType
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus
from lakehook.ports.rules import StateChange
from lakehook.usecases.aliases import ManageAliases, expand_aliases
from lakehook.usecases.completion import Caller, CompleteRun, CompletionResult
from lakehook.usecases.dispatch import DispatchStatus
from lakehook.usecases.resolve import ResolverStores
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_dispatch import (
    InMemoryAliasStore,
    InMemoryManifestStore,
    InMemoryTargetClient,
    InMemoryTriggerLedger,
)
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.hypothesis_profiles import examples
from tests.wiring import dispatch_trigger, ingest_events, resolve_asset_change

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
        self.ingest = ingest_events(self.assets, clock=lambda: self.now)
        self.rules = InMemoryRuleStore()
        self.claims = InMemoryTriggerStore()
        self.ledger = InMemoryTriggerLedger(self.claims)
        self.resolver = resolve_asset_change(
            ResolverStores(
                self.rules,
                InMemoryStateReader(self.assets.get_state, self.claims),
                self.claims,
                InMemoryStateHistory(),
                InMemoryDeferralStore(),
            ),
            clock=lambda: self.now,
            observer=None,
        )
        self.target = InMemoryTargetClient()
        self.dispatch = dispatch_trigger(
            self.ledger,
            self.rules,
            InMemoryManifestStore(),
            {"webhook": self.target},
            clock=lambda: self.now,
            sleep=lambda s: None,
            metrics=None,
        )
        self.aliases = InMemoryAliasStore()
        self.run_complete = CompleteRun(self.ledger, self.ingest, self.aliases, self.rules, clock=lambda: self.now)

    def complete(self, key: str, body: Any, caller: Caller = Caller.MANAGEMENT) -> CompletionResult:
        return self.run_complete(key, body, caller)

    def rule(self, rule_id: str, member: str, outlets: list[str] | None = None) -> None:
        self.rules.put_rule(
            Rule.model_validate(
                {
                    "ruleId": rule_id,
                    "groups": [{"groupId": "g", "members": [{"assetKey": member}]}],
                    "target": WEBHOOK,
                    "outlets": outlets or [],
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
    result = lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]})
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED]
    state = lake.assets.get_state(DWD)
    assert state is not None and state.latest_snapshot_id == 2001
    [recorded] = lake.assets.events.values()
    assert recorded.source is SourceType.RUN_COMPLETION
    entry = lake.ledger.get(key)
    assert entry is not None and entry.run_status == "SUCCEEDED" and entry.completed_at == T0


def test_the_same_completion_again_is_idempotent_and_changes_nothing() -> None:
    lake = Lake()
    key = claimed(lake)
    body = {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]}
    first = lake.complete(key, body)
    lake.now += 5000
    again = lake.complete(key, {"outlets": list(reversed(body["outlets"])), "status": "SUCCEEDED"})
    assert first.first and not again.first
    assert again.status == first.status == "SUCCEEDED" and again.completed_at == first.completed_at == T0
    assert [r.status for r in again.results] == [IngestStatus.DUPLICATE]
    assert len(lake.assets.events) == 1
    trigger = lake.claims.triggers[key]
    assert trigger.run_status == "SUCCEEDED" and trigger.completed_at == T0
    assert trigger.outlets == ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001},)


@pytest.mark.parametrize(
    "second",
    [
        {"status": "FAILED"},
        {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2002)]},
        {"status": "SUCCEEDED"},
    ],
    ids=["other-status", "other-outlets", "no-outlets"],
)
def test_a_different_completion_after_the_first_is_a_conflict_and_writes_nothing(second: dict[str, Any]) -> None:
    lake = Lake()
    key = claimed(lake)
    lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]})
    with pytest.raises(ConflictError, match="already completed with status SUCCEEDED"):
        lake.complete(key, second)
    assert lake.ledger.get(key).run_status == "SUCCEEDED"  # type: ignore[union-attr]
    assert lake.assets.get_state(DWD).latest_snapshot_id == 2001  # type: ignore[union-attr]
    assert len(lake.assets.events) == 1


def test_a_run_with_its_token_reports_only_the_outlets_its_rule_declares() -> None:
    lake = Lake()
    lake.rule("dwd", ODS, outlets=["paimon://lake/dwd_db/"])
    key = claimed(lake)
    with pytest.raises(AuthorizationError, match=f"outlet {ADS} is outside the outlets rule 'dwd' declares"):
        lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2), snapshot(ADS, 1)]}, Caller.RUN)
    # All or nothing: neither outlet got in, and the completion was not recorded.
    assert lake.assets.get_state(ADS) is None and lake.assets.get_state(DWD) is None
    assert lake.ledger.get(key).run_status is None  # type: ignore[union-attr]
    ok = lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 1)]}, Caller.RUN)
    assert ok.results[0].status is IngestStatus.ACCEPTED


def test_a_rule_without_outlets_lets_a_token_caller_report_its_end_but_no_outlet() -> None:
    lake = Lake()
    lake.rule("dwd", ODS)
    key = claimed(lake)
    with pytest.raises(AuthorizationError, match=re.escape("declares (none)")):
        lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 1)]}, Caller.RUN)
    assert lake.complete(key, {"status": "SUCCEEDED"}, Caller.RUN).status == "SUCCEEDED"


def test_management_credentials_are_not_confined_to_the_declared_outlets() -> None:
    lake = Lake()
    lake.rule("dwd", ODS, outlets=[DWD])
    key = claimed(lake)
    result = lake.complete(key, {"status": "SUCCEEDED", "outlets": [snapshot(ADS, 1)]}, Caller.MANAGEMENT)
    assert result.results[0].status is IngestStatus.ACCEPTED


def test_an_outlet_through_an_alias_is_confined_by_its_concrete_assets() -> None:
    lake = Lake()
    lake.rule("dwd", ODS, outlets=[DWD])
    ManageAliases(lake.aliases, clock=lambda: T0).put("facts", AliasSpec(asset_keys=[DWD, DWS]))
    key = claimed(lake)
    outlet = {"eventType": "SNAPSHOT_COMMITTED", "alias": "facts", "snapshotId": 1}
    with pytest.raises(AuthorizationError, match=DWS):
        lake.complete(key, {"status": "SUCCEEDED", "outlets": [outlet]}, Caller.RUN)
    assert lake.assets.get_state(DWD) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"status": "DONE"}, "status"),
        ({"status": "SUCCEEDED", "extra": 1}, "extra"),
        ({"status": "FAILED", "outlets": [snapshot(DWD, 1)]}, "FAILED run registers no outlets"),
        ([], "body"),
        (
            {"status": "SUCCEEDED", "outlets": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": "nope"}]},
            "outlets\\[0\\]",
        ),
    ],
)
def test_a_bad_completion_is_refused(body: Any, message: str) -> None:
    lake = Lake()
    with pytest.raises(ValidationError, match=message):
        lake.complete(claimed(lake), body)


def test_unknown_and_skipped_triggers_take_no_completion() -> None:
    lake = Lake()
    with pytest.raises(NotFoundError):
        lake.complete("nope.g.0", {"status": "SUCCEEDED"})
    with pytest.raises(ConflictError):
        lake.complete(claimed(lake, status=TriggerStatus.SKIPPED), {"status": "SUCCEEDED"})


def test_a_failed_run_is_noted_without_outlets() -> None:
    lake = Lake()
    key = claimed(lake)
    assert lake.complete(key, {"status": "FAILED"}).results == []
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
    # An unknown alias refuses the whole completion (it could not be corrected once recorded).
    with pytest.raises(ValidationError, match=re.escape("outlets[1].alias: alias 'missing' does not exist")):
        lake.complete(key, {"status": "SUCCEEDED", "outlets": outlets})
    assert lake.assets.get_state(DWD) is None and lake.ledger.get(key).run_status is None  # type: ignore[union-attr]
    result = lake.complete(key, {"status": "SUCCEEDED", "outlets": outlets[:1]})
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED, IngestStatus.ACCEPTED]
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
        lake.complete(trigger.trigger_key, {"status": "SUCCEEDED", "outlets": [snapshot(outlet, snapshot_id)]})
        changed = [outlet]
    assert lake.settle(changed) == []  # nothing depends on ADS
    assert started == ["dwd", "dws", "ads"]
    assert lake.assets.get_state(ADS).latest_snapshot_id == 4001  # type: ignore[union-attr]
    assert sorted(lake.target.runs.values()) == [1, 1, 1]
    # Each run's payload pinned exactly what the previous layer produced.
    payloads = {p["ruleId"]: p for k in lake.target.runs for p in lake.target.payloads(k)}
    assert payloads["dws"]["inputs"] == [{"assetKey": DWD, "snapshotId": 2001}]
    assert payloads["ads"]["inputs"] == [{"assetKey": DWS, "snapshotId": 3001}]
    # A repeated completion does not run the next layer again.
    dwd_key = next(k for k in lake.target.runs if k.startswith("dwd."))
    lake.complete(dwd_key, {"status": "SUCCEEDED", "outlets": [snapshot(DWD, 2001)]})
    assert lake.settle([DWD]) == []


# --- first terminal status wins, over generated sequences ------------------------------------------------------

_OUTLET_POOL = [snapshot(DWD, 1), snapshot(DWD, 2), snapshot(DWS, 1)]
_completions = st.one_of(
    st.just({"status": "FAILED"}),
    st.lists(st.sampled_from(range(len(_OUTLET_POOL))), unique=True, max_size=2).map(
        lambda picks: {"status": "SUCCEEDED", "outlets": [_OUTLET_POOL[i] for i in picks]}
    ),
)


def _shape(body: dict[str, Any]) -> tuple[str, list[tuple[str, int]]]:
    return body["status"], sorted((o["assetKey"], o["snapshotId"]) for o in body.get("outlets", []))


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(_completions, min_size=1, max_size=6))
def test_the_first_terminal_completion_wins_whatever_follows(sequence: list[dict[str, Any]]) -> None:
    lake = Lake()
    key = claimed(lake)
    first = sequence[0]
    for body in sequence:
        lake.now += 1000
        if _shape(body) == _shape(first):
            result = lake.complete(key, body)
            assert result.status == first["status"] and result.completed_at == T0 + 1000
        else:
            with pytest.raises(ConflictError):
                lake.complete(key, body)
    entry = lake.ledger.get(key)
    assert entry is not None and entry.run_status == first["status"] and entry.completed_at == T0 + 1000
    # Only the first completion's outlets ever reached the state.
    written = {o["assetKey"]: o["snapshotId"] for o in sorted(first.get("outlets", []), key=lambda o: o["snapshotId"])}
    for asset in (DWD, DWS):
        state = lake.assets.get_state(asset)
        if asset in written:
            assert state is not None and state.latest_snapshot_id == written[asset]
        else:
            assert state is None
