"""The run receives the triggering events' details: each pinned version's commit facts and the producer's payload
reach the invocation payload and the run manifest (docs/targets.md, "What the run receives")."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.memory.assets import InMemoryAssetStore
from lakehook.adapters.memory.rules import InMemoryStateReader
from lakehook.domain.dispatch import DETAILS_IN_FIELD, Invocation, RunManifest, largest_size
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.input_details import DETAIL_FIELDS, InputDetails, details_of, event_ref
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.receiver import parse_invocation
from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus
from tests.fakes.memory_dispatch import InMemoryManifestStore, InMemoryTargetClient, InMemoryTriggerLedger
from tests.fakes.memory_rules import InMemoryRuleStore, InMemoryTriggerStore
from tests.hypothesis_profiles import examples
from tests.input_details import DETAILS, PAYLOAD, assert_details, detailed
from tests.wiring import dispatch_trigger

ORDERS = "paimon://lake/ods/orders"
PAYMENTS = "paimon://lake/ods/payments"
T0 = 1_750_000_000_000


class Webhook(InMemoryTargetClient):
    type_name: ClassVar[str] = "webhook"


class Small(Webhook):
    payload_limit: ClassVar[int] = 4096


def commit(snapshot: int, asset: str = ORDERS, **extra: Any) -> AssetEvent:
    return AssetEvent.model_validate(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": snapshot, **extra}
    )


class World:
    def __init__(self, client: InMemoryTargetClient | None = None) -> None:
        self.assets = InMemoryAssetStore()
        self.claims = InMemoryTriggerStore()
        self.ledger = InMemoryTriggerLedger(self.claims)
        self.rules = InMemoryRuleStore()
        rule = {
            "ruleId": "dwd",
            "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}, {"assetKey": PAYMENTS}]}],
            "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "s/dwd"},
        }
        self.rules.put_rule(Rule.model_validate(rule), T0)
        self.manifests = InMemoryManifestStore()
        self.client = client or Webhook()
        reader = InMemoryStateReader(
            self.assets.get_state, self.claims, events=lambda: [r.event for r in self.assets.events.values()]
        )
        self.dispatch = dispatch_trigger(
            self.ledger,
            self.rules,
            self.manifests,
            {"webhook": self.client},
            DispatchPolicy(),
            clock=lambda: T0,
            sleep=lambda s: None,
            metrics=None,
            events=reader,
        )

    def record(self, event: AssetEvent, source: SourceType = SourceType.PUSH) -> None:
        assert self.assets.record_event(event, source, T0).novel

    def claim(self, *pins: PinnedInput, replay_of: Trigger | None = None, uri: str | None = None) -> Trigger:
        epoch = 1 if replay_of is not None else 0
        key = trigger_key("dwd", "g", pins, None, epoch)
        made = Trigger(
            trigger_key=key,
            rule_id="dwd",
            group_id="g",
            inputs=pins,
            replay_epoch=epoch,
            created_at=T0,
            updated_at=T0,
            manifest_uri=uri,
            replay_of=replay_of.trigger_key if replay_of is not None else None,
        )
        cursor = self.claims.get_cursors([("dwd", "g")]).get(("dwd", "g"))
        base = cursor or GroupCursor.initial("dwd", "g")
        assert self.claims.claim(made, base.after(made, {}), cursor).outcome.value == "CLAIMED"
        return made

    def run(self, trigger: Trigger) -> dict[str, Any]:
        result = self.dispatch(trigger.trigger_key)
        assert result.status is DispatchStatus.SUCCEEDED, result
        [payload] = self.client.payloads(trigger.trigger_key)
        return payload


def pins() -> tuple[PinnedInput, PinnedInput]:
    return (PinnedInput(asset_key=ORDERS, snapshot_id=7), PinnedInput(asset_key=PAYMENTS, watermark=T0))


def test_a_pushed_events_payload_and_commit_facts_reach_the_run_and_its_manifest() -> None:
    world = World()
    world.record(
        commit(
            7,
            commitKind="OVERWRITE",
            dataChanged=True,
            totalRecordCount=1200,
            deltaRecordCount=-30,
            partitions=["dt=2026-12-01"],
            payload=PAYLOAD,
        )
    )
    world.record(AssetEvent.model_validate({"eventType": "WATERMARK_ADVANCED", "assetKey": PAYMENTS, "watermark": T0}))
    trigger = world.claim(*pins())
    payload = world.run(trigger)
    orders, payments = payload["inputs"]
    assert orders == {"assetKey": ORDERS, "snapshotId": 7, **json_form(DETAILS)}
    assert payments == {"assetKey": PAYMENTS, "watermark": T0}  # a watermark's event has no facts nor payload
    assert DETAILS_IN_FIELD not in payload
    manifest = world.manifests.get(payload["manifestUri"])
    assert [json_form(i) for i in manifest.inputs] == payload["inputs"]
    received = parse_invocation(json.dumps(payload))
    assert received.input(ORDERS).payload == PAYLOAD and received.input(ORDERS).commit_kind == "OVERWRITE"
    assert received.input(PAYMENTS).payload is None and not received.details_in_manifest


def test_the_details_are_the_pinned_versions_not_an_older_commits() -> None:
    world = World()
    world.record(commit(6, commitKind="APPEND", payload={"batch": 6}))
    world.record(commit(7, commitKind="DELETE", payload={"batch": 7}))
    payload = world.run(world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7)))
    assert payload["inputs"][0]["payload"] == {"batch": 7} and payload["inputs"][0]["commitKind"] == "DELETE"


def test_a_version_recorded_first_by_a_poll_keeps_what_the_poll_recorded() -> None:
    world = World()
    world.record(commit(7, commitKind="APPEND"), SourceType.POLL)
    assert not world.assets.record_event(commit(7, payload=PAYLOAD), SourceType.PUSH, T0).novel
    payload = world.run(world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7)))
    assert payload["inputs"][0] == {"assetKey": ORDERS, "snapshotId": 7, "commitKind": "APPEND"}


def test_a_replay_keeps_the_originals_details_after_its_events_expired() -> None:
    world = World()
    world.record(commit(7, commitKind="OVERWRITE", payload=PAYLOAD))
    first = world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7))
    original = world.run(first)
    world.assets.events.clear()  # the retention has passed: the events are gone, the manifest is not
    replay = world.claim(*first.inputs, replay_of=first, uri=original["manifestUri"])
    again = world.run(replay)
    assert again["inputs"] == original["inputs"] and again["inputs"][0]["payload"] == PAYLOAD
    assert again["replayOf"] == first.trigger_key


def test_a_manifest_written_without_details_is_the_one_every_attempt_sends() -> None:
    """A claim dispatched before the upgrade (its manifest has no details) is not refused as a conflict after it."""
    world = World()
    world.record(commit(7, commitKind="OVERWRITE", payload=PAYLOAD))
    trigger = world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7))
    uri = world.manifests.put_if_absent(trigger.trigger_key, RunManifest.for_trigger(trigger))
    payload = world.run(trigger)
    assert payload["manifestUri"] == uri and payload["inputs"] == [{"assetKey": ORDERS, "snapshotId": 7}]


def test_a_stored_manifest_of_other_pins_is_still_a_conflict() -> None:
    world = World()
    trigger = world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7))
    other = trigger.model_copy(update={"inputs": (PinnedInput(asset_key=ORDERS, snapshot_id=8),)})
    world.manifests.put_if_absent(trigger.trigger_key, RunManifest.for_trigger(other))
    result = world.dispatch(trigger.trigger_key)
    assert result.status is DispatchStatus.FAILED
    entry = world.ledger.get(trigger.trigger_key)
    assert entry is not None and entry.trigger.status is TriggerStatus.FAILED
    assert entry.failure_code == "manifest_conflict"


def test_details_that_would_not_fit_the_target_go_only_in_the_manifest_and_the_run_starts() -> None:
    world = World(Small())
    world.record(commit(7, commitKind="OVERWRITE", payload={"blob": "x" * 8000}))
    payload = world.run(world.claim(PinnedInput(asset_key=ORDERS, snapshot_id=7)))
    assert payload[DETAILS_IN_FIELD] == "manifest"
    assert payload["inputs"] == [{"assetKey": ORDERS, "snapshotId": 7}]
    assert largest_size(payload) <= Small.payload_limit
    [stored] = world.manifests.get(payload["manifestUri"]).inputs
    assert stored.payload == {"blob": "x" * 8000} and stored.commit_kind == "OVERWRITE"
    assert parse_invocation(payload).details_in_manifest


def test_each_pin_names_the_event_of_its_version() -> None:
    assert event_ref(PinnedInput(asset_key=ORDERS, snapshot_id=7, watermark=5)) == (ORDERS, "SNAPSHOT_COMMITTED", "7")
    manifest = PinnedInput(asset_key=ORDERS, manifest_uri="s3://spool/m.json", watermark=5)
    assert event_ref(manifest) == (ORDERS, "MANIFEST_SEALED", "s3://spool/m.json")
    assert event_ref(PinnedInput(asset_key=ORDERS, tag="v1")) == (ORDERS, "TAG_CREATED", "v1")
    assert event_ref(PinnedInput(asset_key=ORDERS, watermark=5)) == (ORDERS, "WATERMARK_ADVANCED", "5")
    assert event_ref(PinnedInput(asset_key=ORDERS)) is None
    assert details_of((PinnedInput(asset_key=ORDERS, snapshot_id=7),), {}) == [None]


def test_a_manifest_without_details_is_byte_for_byte_what_0_1_0_wrote() -> None:
    pin = PinnedInput(asset_key=ORDERS, snapshot_id=7, schema_id=1, commit_time=T0)
    trigger = Trigger(trigger_key="dwd.g.k", rule_id="dwd", group_id="g", inputs=(pin,), created_at=T0, updated_at=T0)
    body = (
        '{"createdAt":"2025-06-15T15:06:40Z","groupId":"g","inputs":[{"assetKey":"paimon://lake/ods/orders",'
        '"commitTime":1750000000000,"schemaId":1,"snapshotId":7}],"manifestVersion":1,"replayEpoch":0,'
        '"ruleId":"dwd","triggerKey":"dwd.g.k"}'
    )
    assert RunManifest.for_trigger(trigger).canonical().decode() == body
    detailed_manifest = RunManifest.for_trigger(trigger, details=[DETAILS])
    assert RunManifest.from_document(detailed_manifest.document()) == detailed_manifest
    assert detailed_manifest.bare() == RunManifest.for_trigger(trigger)


def test_the_receiver_reads_the_details_and_refuses_a_bad_one() -> None:
    trigger = Trigger(
        trigger_key="dwd.g.k",
        rule_id="dwd",
        group_id="g",
        inputs=(PinnedInput(asset_key=ORDERS, snapshot_id=7),),
        created_at=T0,
        updated_at=T0,
    )
    assert_details(parse_invocation(detailed(trigger).body()))
    payload = detailed(trigger).payload()
    payload["inputs"][0]["totalRecordCount"] = "many"
    with pytest.raises(ValueError, match=r"inputs\[0\]\.totalRecordCount must be an integer"):
        parse_invocation(payload)
    with pytest.raises(ValueError, match="detailsIn"):
        parse_invocation({**detailed(trigger).payload(), "detailsIn": "s3"})


SIZES = st.lists(st.integers(0, 6000), min_size=1, max_size=4)
TEXTS = st.sampled_from(["x", "é", "😀", '"'])


@settings(max_examples=examples(100))
@given(sizes=SIZES, char=TEXTS, limit=st.integers(500, 40_000), attempt=st.integers(1, 10**6))
def test_a_fitted_payload_fits_its_limit_and_every_attempt_decides_alike(
    sizes: list[int], char: str, limit: int, attempt: int
) -> None:
    inputs = tuple(PinnedInput(asset_key=f"{ORDERS}_{n}", snapshot_id=n) for n in range(len(sizes)))
    key = trigger_key("dwd", "g", inputs, None, 0)
    trigger = Trigger(trigger_key=key, rule_id="dwd", group_id="g", inputs=inputs, created_at=T0, updated_at=T0)
    details = [InputDetails(commit_kind="APPEND", payload={"text": char * size}) for size in sizes]
    manifest = RunManifest.for_trigger(trigger, details=details)

    def whole(number: int) -> Invocation:
        return Invocation.of(trigger, manifest, "s3://m/k.json", number, completion_token="t" * 64)

    def fitted(number: int) -> Invocation:
        return whole(number).fitted(limit)

    first, later = fitted(1), fitted(attempt)
    assert first.details_in_manifest == later.details_in_manifest
    assert first.identity() == later.identity()
    payload = later.payload()
    if later.details_in_manifest:
        assert payload[DETAILS_IN_FIELD] == "manifest"
        assert not any(name in i for i in payload["inputs"] for name in DETAIL_FIELDS)
        assert largest_size(whole(1).payload()) > limit
    else:
        assert len(later.body()) <= largest_size(payload) <= limit
        assert [i["payload"] for i in payload["inputs"]] == [d.payload for d in details]
