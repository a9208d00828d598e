"""A manual run of one partition (``POST /rules/{id}/evaluate`` with ``force`` and ``partition``), and the replay of a
partition's run: each pins what the partition's facts give, and carries the partition in its trigger, key, manifest
and payload. On the in-memory fakes; tests/integration/test_partition_rules_on_moto.py does it on moto."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.dispatch import Invocation, RunManifest
from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.partitions import format_partition_key
from lakehook.domain.requests import IdempotencyKeyReusedError
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.domain.triggers import Trigger, TriggerStatus, trigger_key
from lakehook.ports.rules import StateChange
from lakehook.usecases.replay import ReplayTrigger
from lakehook.usecases.rule_runs import EvaluateRule
from lakehook.usecases.spool import PreflightReplay, VerifySpoolManifest
from tests.fakes.memory import InMemoryAssetRegistry
from tests.fakes.memory_coverage import InMemoryObjectStore, InMemorySnapshotExistence
from tests.hypothesis_profiles import examples
from tests.rule_cases import evaluate_rule
from tests.unit.test_partition_resolve import CLICKS, DIM, ORDERS, PAYMENTS, Lake, daily, hourly

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]


def evaluator(lake: Lake) -> EvaluateRule:
    return evaluate_rule(
        lake.rules,
        lake.triggers,
        lake.reader,
        clock=lambda: lake.now,
        resolver=lake.resolve,
        partitions=lake.partitions,
    )


def force(lake: Lake, partition: Any = None, rule_id: str = "daily", **options: Any) -> Trigger:
    body = {"force": True, **({"partition": partition} if partition is not None else {}), **options}
    answer = evaluator(lake).evaluate(rule_id, body)
    assert answer["manual"] is True and answer["claimed"] == [answer["triggerKey"]]
    trigger = lake.triggers.get(answer["triggerKey"])
    assert trigger is not None
    return trigger


def gated() -> Any:
    return daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM})


commits = st.lists(
    st.tuples(st.sampled_from([ORDERS, PAYMENTS]), st.sets(st.sampled_from(DAYS), max_size=3), st.booleans()),
    min_size=1,
    max_size=8,
)


@settings(max_examples=examples(60), deadline=None)
@given(history=commits, day=st.sampled_from(DAYS))
def test_a_forced_partition_pins_each_members_newest_commit_touching_it_and_moves_no_cursor(
    history: list[tuple[str, set[str], bool]], day: str
) -> None:
    """Commits touching generated days, some handled by the resolver and the last ones perhaps not (a table's newest
    is known from its state): a manual run of a day pins, per partitioned member, the newest known commit that
    touched it (a brute-force model), and the gate's newest snapshot; a member no known commit of which touched it
    is a 409 naming it. No cursor moves, and the resolver's runs are as before."""
    lake = Lake(gated())
    lake.commit(DIM, 40)
    delivered = 0
    for sid, (asset, days, deliver) in enumerate(history, start=1):
        lake.commit(asset, sid, *sorted(days))
        if deliver:
            lake.deliver(dispatch=False)
            delivered = sid
    # what lakehook knows: every commit the resolver handled, and each table's newest commit (its state's)
    last = {asset: sid for sid, (asset, _, _) in enumerate(history, start=1)}
    newest: dict[str, int] = {}
    for sid, (asset, days, _) in enumerate(history, start=1):
        if day in days and (sid <= delivered or last[asset] == sid):
            newest[asset] = sid
    cursors = dict(lake.triggers.cursors)
    runs = lake.runs()
    missing = [a for a in (ORDERS, PAYMENTS) if a not in newest]
    if missing:
        with pytest.raises(ConflictError) as caught:
            force(lake, f"dt={day}")
        assert f"member {missing[0]} has no data commit touching dt={day}" in str(caught.value)
        return
    trigger = force(lake, f"dt={day}")
    assert trigger.partition == f"dt={day}" and trigger.status is TriggerStatus.TRIGGERING
    assert [(p.asset_key, p.snapshot_id) for p in trigger.inputs] == [
        (ORDERS, newest[ORDERS]),
        (PAYMENTS, newest[PAYMENTS]),
        (DIM, 40),
    ]
    assert trigger.trigger_key == trigger_key(
        "daily", "g", trigger.inputs, None, 0, marker="manual-1", partition=f"dt={day}"
    )
    assert lake.triggers.cursors == cursors  # no cursor moved, the partition's own included
    assert lake.runs()[: len(runs)] == runs and len(lake.runs()) == len(runs) + 1


def test_two_partitions_touched_by_the_same_commits_are_two_keys_and_the_manifest_and_payload_carry_each() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.commit(PAYMENTS, 7, "2026-12-01", "2026-12-02")
    one, two = force(lake, "dt=2026-12-01"), force(lake, "dt=2026-12-02")
    assert one.inputs == two.inputs and one.trigger_key != two.trigger_key
    for trigger in (one, two):
        manifest = RunManifest.for_trigger(trigger)
        assert manifest.body()["partition"] == trigger.partition
        assert Invocation.of(trigger, manifest, "s3://m/x.json", 1).payload()["partition"] == trigger.partition


def test_a_forced_partition_refuses_a_second_run_in_flight_and_runs_again_under_the_next_number() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.commit(PAYMENTS, 7, "2026-12-01")
    first = force(lake, "dt=2026-12-01")
    with pytest.raises(ConflictError, match="in flight"):
        force(lake, "dt=2026-12-01")
    lake.triggers.triggers[first.trigger_key] = first.model_copy(update={"status": TriggerStatus.SUCCEEDED})
    again = force(lake, "dt=2026-12-01")
    assert again.trigger_key.startswith("daily.g.manual-2.") and again.partition == "dt=2026-12-01"


@settings(max_examples=examples(40), deadline=None)
@given(value=st.one_of(st.none(), st.text(max_size=10)))
def test_any_value_is_forced_under_the_key_lakehook_writes(value: str | None) -> None:
    """Values with the characters Hive escapes, spaces, non-ASCII text and null, sent with lower-case escapes: the
    run names the key as lakehook writes it, and pins the commits that touched it."""
    lake = Lake(daily())
    key = format_partition_key([("dt", value)])
    for asset, sid in ((ORDERS, 1), (PAYMENTS, 7)):
        event = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, partitions=[key])
        lake.ingest.ingest(event, SourceType.PUSH)
        lake.stream.setdefault(asset, []).append(
            StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)
        )
    lake.deliver(dispatch=False)
    sent = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), key)
    trigger = force(lake, sent)
    assert trigger.partition == key
    assert [(p.asset_key, p.snapshot_id) for p in trigger.inputs] == [(ORDERS, 1), (PAYMENTS, 7)]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, 'say which with "partition": "dt=<value>"'),
        ({"partition": "dt"}, "is not a partition key"),
        ({"partition": ""}, "partition must be a partition key"),
        ({"partition": 7}, "partition must be a partition key"),
        ({"partition": "day=2026-12-01"}, "keyed on dt"),
        ({"partition": "dt=2026-12-01/region=eu"}, "keyed on dt"),
        ({"partition": "dt=2026-12-01/dt=2026-12-02"}, "twice"),
    ],
)
def test_a_missing_or_malformed_partition_is_a_400_naming_partition(options: dict[str, Any], words: str) -> None:
    lake = Lake(daily())
    with pytest.raises(ValidationError) as caught:
        evaluator(lake).evaluate("daily", {"force": True, **options})
    assert caught.value.field == "partition" and words in str(caught.value)
    assert lake.triggers.triggers == {}


def test_a_partition_without_force_or_for_an_unpartitioned_group_is_a_400_naming_partition() -> None:
    lake = Lake(daily())
    with pytest.raises(ValidationError) as caught:
        evaluator(lake).evaluate("daily", {"partition": "dt=2026-12-01"})
    assert caught.value.field == "partition" and '"force": true' in str(caught.value)
    plain = Lake(
        Rule.model_validate(
            {
                "ruleId": "daily",
                "target": {"type": "eventbridge", "eventBusName": "runs"},
                "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
            }
        )
    )
    with pytest.raises(ValidationError) as caught:
        evaluator(plain).evaluate("daily", {"force": True, "partition": "dt=2026-12-01"})
    assert caught.value.field == "partition" and "no partitionBy" in str(caught.value)


def test_a_rollup_forced_before_every_unit_has_a_commit_is_a_409_naming_the_member_and_the_units() -> None:
    rule = daily(
        {"assetKey": ORDERS, "partition": {}},
        {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}}},
    )
    lake = Lake(rule)
    lake.commit(ORDERS, 1, "2026-12-01")
    for h in range(23):
        hourly(lake, 900 + h, f"2026-12-01-{h:02d}")
    lake.deliver()
    with pytest.raises(ConflictError) as caught:
        force(lake, "dt=2026-12-01")
    assert f"member {CLICKS} has no data commit touching 1 of the 24 units of dt=2026-12-01 (dt=2026-12-01-23)" in str(
        caught.value
    )
    with pytest.raises(ValidationError) as refused:
        force(lake, "dt=2026-12")
    assert refused.value.field == "partition" and CLICKS in str(refused.value)
    hourly(lake, 930, "2026-12-01-23")
    lake.deliver(dispatch=False)
    trigger = force(lake, "dt=2026-12-01")
    assert [(p.asset_key, p.snapshot_id) for p in trigger.inputs] == [(ORDERS, 1), (CLICKS, 930)]


def test_an_idempotency_key_answers_the_same_forced_partition_again_and_refuses_another_partition() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.commit(PAYMENTS, 7, "2026-12-01", "2026-12-02")
    rules = evaluator(lake)
    body = {"force": True, "partition": "dt=2026-12-01"}
    first = rules.answer_evaluate("daily", body, "req-1")
    again = rules.answer_evaluate("daily", dict(body), "req-1")
    assert again.replayed and again.body["triggerKey"] == first.body["triggerKey"]
    assert len([t for t in lake.triggers.triggers.values() if t.partition == "dt=2026-12-01"]) == 1
    with pytest.raises(IdempotencyKeyReusedError):
        rules.answer_evaluate("daily", {"force": True, "partition": "dt=2026-12-02"}, "req-1")


# --- a replay of a partition's run ------------------------------------------------------------------------


def replayer(lake: Lake) -> ReplayTrigger:
    preflight = PreflightReplay(
        VerifySpoolManifest(InMemoryObjectStore()), InMemoryAssetRegistry(), lake.store, InMemorySnapshotExistence()
    )
    return ReplayTrigger(lake.triggers, preflight, clock=lambda: lake.now)


@pytest.mark.parametrize("manual", [False, True])
def test_a_replay_of_a_partitions_run_keeps_its_partition_in_the_trigger_key_manifest_and_payload(manual: bool) -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.commit(PAYMENTS, 7, "2026-12-02")
    report = lake.deliver(dispatch=False)
    if manual:
        lake.commit(PAYMENTS, 8, "2026-12-01")
        original = force(lake, "dt=2026-12-01")
    else:
        [original] = report.claimed
    manifest = RunManifest.for_trigger(original)  # what the dispatcher wrote for it
    uri = f"s3://m/manifests/{original.trigger_key}.json"
    lake.triggers.triggers[original.trigger_key] = original.model_copy(
        update={"status": TriggerStatus.SUCCEEDED, "manifest_uri": uri}
    )
    answer = replayer(lake).replay(original.trigger_key)
    replay = answer.replay
    assert replay is not None and replay.partition == original.partition is not None
    assert replay.trigger_key == trigger_key(
        "daily", "g", original.inputs, None, 1, partition=original.partition
    ) and replay.trigger_key not in (original.trigger_key,)
    assert (
        TriggerAnswer.from_domain(replay).dump()["partition"] == original.partition
        and replay.replay_of == original.trigger_key
    )
    stored = lake.triggers.get(replay.trigger_key)
    assert stored is not None and stored.partition == original.partition and stored.manifest_uri == uri
    payload = Invocation.of(replay, manifest, uri, 1).payload()
    assert (payload["partition"], payload["replayOf"], payload["triggerKey"]) == (
        original.partition,
        original.trigger_key,
        replay.trigger_key,
    )
    # a second replay: the next epoch, the same partition
    second = replayer(lake).replay(original.trigger_key).replay
    assert second is not None and second.partition == original.partition and second.replay_epoch == 2


@pytest.mark.parametrize("partition", ["dt=2026-12", "dt=20788", "dt=__HIVE_DEFAULT_PARTITION__", "dt=2026-12-01-10"])
def test_a_value_that_is_no_time_value_of_a_members_grain_is_a_400_naming_partition(partition: str) -> None:
    clicks = {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "ts_hour", "grain": "day"}}}}
    lake = Lake(daily({"assetKey": ORDERS, "partition": {}}, clicks))
    with pytest.raises(ValidationError) as caught:
        force(lake, partition)
    assert caught.value.field == "partition" and f"is no partition of {CLICKS}" in str(caught.value)
    assert "is no day (2026-12-01)" in str(caught.value)
