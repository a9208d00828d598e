"""A run confirmed by the data it wrote, on real tables written by each Python writer (pyiceberg, pypaimon, delta-rs).

The rule ``dwd`` declares the table as its outlet and ``confirm.withinSeconds``; its claim is dispatched by the
container's dispatcher (an EventBridge target on moto), which stamps ``confirmBy``. The run writes the outlet with
``lakehook.client.commit_properties(<trigger key>)`` in the format's commit metadata; the poller (the container's
poll path on DynamoDB on moto) reads it back and records CONFIRMED with the snapshot it wrote. A run that exits 0
without committing, a commit without the key, one with another trigger's key and a compaction carrying the key
confirm nothing: the deferral sweep's part marks the run NOT_ADVANCED once its window passed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.answers.triggers import TriggerAnswer
from lakehook.client import commit_properties
from lakehook.container import Container
from lakehook.domain.assets import AssetFormat
from lakehook.domain.confirmation import ConfirmationState
from lakehook.domain.member_selection import select_member
from lakehook.domain.rules import Member, Rule
from lakehook.domain.snapshots import SnapshotInfo
from lakehook.domain.status import Status
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus
from lakehook.usecases.completion import Caller
from lakehook.usecases.confirmation import ConfirmOutcome, ConfirmResult, SweepNotAdvanced
from lakehook.usecases.dispatch import DispatchStatus
from lakehook.usecases.poll import PollAsset
from tests.lakehouse import iceberg_rewrite, paimon_compact_commit
from tests.pollers import DeltaLakeTable, IcebergTable, Lake, LakeTable, PaimonTable, make_table
from tests.support import ROOT, FakeLambdaContext, load_handler

pytestmark = pytest.mark.integration

WRITTEN = (AssetFormat.ICEBERG, AssetFormat.PAIMON, AssetFormat.DELTA)
WITHIN_SECONDS = 600
INPUT = "paimon://lake/ods_db/ods_order_latest"


@pytest.fixture(params=WRITTEN, ids=[f.value for f in WRITTEN])
def outlet(request: pytest.FixtureRequest, tmp_path: Path) -> LakeTable:
    return make_table(AssetFormat(request.param), tmp_path, "dwd.orders")


@pytest.fixture
def lake(container: Container, table: Any, outlet: LakeTable) -> Lake:
    boto3.client("events", region_name="us-east-1").create_event_bus(Name="lakehook-runs")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=container.settings.bucket_name)
    rule = Rule.model_validate(
        {
            "ruleId": "dwd",
            "groups": [{"groupId": "g", "members": [{"assetKey": INPUT}]}],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "outlets": [outlet.key],
            "confirm": {"withinSeconds": WITHIN_SECONDS},
        }
    )
    container.rule_store.put_rule(rule, now_ms())
    lake = Lake(table, container=container)
    outlet.commit(1)
    lake.poll(outlet.asset)  # the first look: the table's history before the run
    return lake


def started(container: Container, table: Any, snapshot: int = 1) -> str:
    """A claim of rule dwd, dispatched (its run started): answer its trigger key."""
    at = now_ms()
    trigger = Trigger(
        trigger_key=f"dwd.g.{snapshot:024x}",
        rule_id="dwd",
        group_id="g",
        inputs=(PinnedInput(asset_key=INPUT, snapshot_id=snapshot),),
        created_at=at,
        updated_at=at,
    )
    assert DynamoDBTriggerStore(table).put_replay(trigger)
    assert container.dispatcher(trigger.trigger_key).status is DispatchStatus.SUCCEEDED
    return trigger.trigger_key


def confirmation(container: Container, key: str) -> Any:
    entry = container.trigger_ledger.get(key)
    assert entry is not None
    return entry.trigger.confirmation


def sweep_after_window(container: Container) -> list[str]:
    later = now_ms() + (WITHIN_SECONDS + 1) * 1000
    return SweepNotAdvanced(container.trigger_ledger, container.rule_store, clock=lambda: later)()


def write_with_key(outlet: LakeTable, key: str, *ids: int) -> int:
    """The run's commit, as its writer's Python library makes it with lakehook.client's helper."""
    return outlet.commit(*ids, properties=commit_properties(key))


def compact_with_key(outlet: LakeTable, key: str) -> None:
    """A compaction of the outlet that carries the key in its commit metadata (it changes no data)."""
    if isinstance(outlet, IcebergTable):
        iceberg_rewrite(outlet.table, commit_properties(key))
    elif isinstance(outlet, PaimonTable):
        paimon_compact_commit(outlet.table, commit_properties(key))
        outlet.snapshots += 1
    else:
        from deltalake import CommitProperties, DeltaTable

        assert isinstance(outlet, DeltaLakeTable)
        compaction = CommitProperties(custom_metadata=commit_properties(key))
        DeltaTable(outlet.location).optimize.compact(commit_properties=compaction)
        outlet.versions += 1


def test_a_run_that_commits_with_its_key_is_confirmed_by_that_snapshot(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table)
    entry = container.trigger_ledger.get(key)
    assert entry is not None and entry.trigger.confirm_by is not None
    assert entry.trigger.confirm_by - entry.trigger.updated_at == WITHIN_SECONDS * 1000

    written = write_with_key(outlet, key, 2, 3)
    result = lake.poll(outlet.asset)

    assert written in result.snapshot_ids
    confirmed = confirmation(container, key)
    assert confirmed.state is ConfirmationState.CONFIRMED
    assert (confirmed.asset_key, confirmed.snapshot_id, confirmed.late) == (outlet.key, written, False)
    assert lake.state(outlet.key).latest_snapshot_id == written  # the outlet's state went through ingest
    assert sweep_after_window(container) == []  # confirmed: never NOT_ADVANCED
    shown = TriggerAnswer.from_domain(container.read_triggers.get_trigger(key)).dump()
    assert shown["confirmation"]["state"] == "CONFIRMED"
    assert shown["confirmation"]["snapshotId"] == written


def test_a_run_that_exits_0_without_committing_is_not_advanced(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table)
    container.complete_run(key, {"status": "SUCCEEDED"}, Caller.MANAGEMENT)
    assert lake.poll(outlet.asset).snapshot_ids == ()
    assert sweep_after_window(container) == [key]

    assert confirmation(container, key).state is ConfirmationState.NOT_ADVANCED
    assert sweep_after_window(container) == []  # once: a second sweep counts nothing again


def test_only_the_window_decides_not_a_sweep_before_it(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table)
    assert SweepNotAdvanced(container.trigger_ledger, container.rule_store)() == []
    assert confirmation(container, key) is None


def test_a_foreign_commit_another_triggers_key_or_a_compaction_confirms_nothing(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table, snapshot=1)
    other = started(container, table, snapshot=2)
    outlet.commit(7)  # another writer's commit: no key
    write_with_key(outlet, other, 8)  # the other run's commit
    compact_with_key(outlet, key)  # a compaction that carries this run's key

    seen: list[ConfirmResult] = []
    recorded = PollAsset(
        lake.sources, lake.watermarks, lake.ingest, confirm=lambda k, s: seen.extend(container.confirm_runs(k, s))
    )
    assert len(recorded(outlet.asset).snapshot_ids) == 3
    # the poller read both keys back from the tables' own metadata, and judged each commit
    assert [(r.trigger_key, r.outcome) for r in seen] == [
        (other, ConfirmOutcome.CONFIRMED),
        (key, ConfirmOutcome.NO_DATA_CHANGE),
    ]

    assert confirmation(container, key) is None
    assert confirmation(container, other).state is ConfirmationState.CONFIRMED
    assert sweep_after_window(container) == [key]
    assert confirmation(container, key).state is ConfirmationState.NOT_ADVANCED


def test_a_commit_after_the_window_confirms_late(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table)
    assert sweep_after_window(container) == [key]

    written = write_with_key(outlet, key, 5)
    lake.poll(outlet.asset)

    confirmed = confirmation(container, key)
    assert (confirmed.state, confirmed.snapshot_id, confirmed.late) == (ConfirmationState.CONFIRMED, written, True)


def test_a_run_that_reported_failed_is_not_marked_not_advanced(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    key = started(container, table)
    container.complete_run(key, {"status": "FAILED"}, Caller.MANAGEMENT)
    assert sweep_after_window(container) == []
    assert confirmation(container, key) is None


def test_a_commit_to_a_table_that_is_no_outlet_confirms_nothing(
    container: Container, table: Any, lake: Lake, outlet: LakeTable, tmp_path: Path
) -> None:
    key = started(container, table)
    elsewhere = make_table(AssetFormat.ICEBERG, tmp_path / "elsewhere", "tmp.scratch")
    elsewhere.commit(1)
    lake.poll(elsewhere.asset)
    elsewhere.commit(2, properties=commit_properties(key))
    lake.poll(elsewhere.asset)
    assert confirmation(container, key) is None
    read = SnapshotInfo(snapshot_id=2, commit_time=now_ms(), commit_kind="APPEND", trigger_key=key)
    (outcome,) = container.confirm_runs(elsewhere.key, [read])
    assert outcome.outcome is ConfirmOutcome.NOT_AN_OUTLET


def test_a_skipped_claim_is_never_confirmed(container: Container, table: Any, lake: Lake, outlet: LakeTable) -> None:
    at = now_ms()
    skipped = Trigger(
        trigger_key="dwd.g.skipped0000000000000001",
        rule_id="dwd",
        group_id="g",
        status=TriggerStatus.SKIPPED,
        inputs=(PinnedInput(asset_key=INPUT, snapshot_id=9),),
        created_at=at,
        updated_at=at,
    )
    assert DynamoDBTriggerStore(table).put_replay(skipped)
    write_with_key(outlet, skipped.trigger_key, 4)
    lake.poll(outlet.asset)
    assert confirmation(container, skipped.trigger_key) is None


def test_the_deferral_sweep_function_marks_it_and_publishes_the_metric_the_alarm_reads(
    container: Container, table: Any, lake: Lake, capsys: pytest.CaptureFixture[str]
) -> None:
    key = started(container, table)
    # the run's window ended a moment ago (the dispatcher set it from the rule; here it is moved back, as time would)
    table.update_item(
        Key=keys.trigger_item_key(key),
        UpdateExpression="SET confirmBy = :past",
        ExpressionAttributeValues={":past": now_ms() - 1},
    )
    scheduled = {**json.loads((ROOT / "events" / "deferral_sweep" / "scheduled_event.json").read_text())}
    assert load_handler("deferral_sweep")(scheduled, FakeLambdaContext()) == {"due": 0}  # the minute's: not this
    freshness = {"check": "freshness"}  # the Freshness schedule's Input, every 5 minutes

    assert load_handler("deferral_sweep")(freshness, FakeLambdaContext())["notAdvanced"] == 1

    assert confirmation(container, key).state is ConfirmationState.NOT_ADVANCED
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [m.get("lakehouse_run_not_advanced_total") for m in emitted if "lakehouse_run_not_advanced_total" in m] == [
        [1.0]
    ]
    assert load_handler("deferral_sweep")(freshness, FakeLambdaContext())["notAdvanced"] == 0


def test_a_downstream_member_requiring_confirmed_inputs_pins_the_runs_commit_and_not_a_foreign_one(
    container: Container, table: Any, lake: Lake, outlet: LakeTable
) -> None:
    """confirmationStatus: CONFIRMED on the outlet (docs/rules.md#confirmationstatus-confirmed): the poll's confirmation
    keeps the commit on the outlet's state in DynamoDB, and the member pins it; another writer's commit blocks it."""
    downstream = Member.model_validate({"assetKey": outlet.key, "condition": {"confirmationStatus": "CONFIRMED"}})
    assert select_member(downstream, lake.state(outlet.key)).status is Status.BLOCKED_BY_CONFIRMATION

    key = started(container, table)
    written = write_with_key(outlet, key, 2)
    lake.poll(outlet.asset)
    state = lake.state(outlet.key)
    assert (state.confirmed_snapshot_id, state.confirmed_trigger_key) == (written, key)
    verdict = select_member(downstream, state)
    assert verdict.status is Status.READY and verdict.pin is not None and verdict.pin.snapshot_id == written

    foreign = outlet.commit(9)  # another writer's commit, no key
    lake.poll(outlet.asset)
    blocked = select_member(downstream, lake.state(outlet.key))
    assert blocked.status is Status.BLOCKED_BY_CONFIRMATION
    assert f"snapshot {foreign} was not written" in (blocked.reason or "")
    assert f"written by trigger {key}" in (blocked.reason or "")
