"""Partitioned groups: partitionBy and member mappings are validated at PUT, keys map onto the group's partitions,
and a partition is READY exactly when each partitioned member has a data commit touching it newer than its last
run (docs/partitions.md, "Rules that run per partition")."""

from __future__ import annotations

import calendar
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.evaluation import evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import PartitionFact, facts_of, mapping_of, partition_view
from lakehook.domain.partition_rules import Grain, MemberPartition, cut_to_grain, grain_of, units_of
from lakehook.domain.partitions import TouchedPartitions, format_partition_key
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, Trigger, trigger_key
from lakehook.domain.versions import SnapshotRecord
from lakehook.usecases.rules import parse_rule

ORDERS = "paimon://lake/ods/orders"
PAYMENTS = "paimon://lake/ods/payments"
CLICKS = "iceberg://glue/ods/clicks"
DIM = "paimon://lake/ods/dim_shop"
DAY = "dt=2026-12-01"

BODY: dict[str, Any] = {
    "groups": [
        {
            "groupId": "daily",
            "partitionBy": ["dt"],
            "members": [
                {"assetKey": ORDERS, "partition": {}},
                {"assetKey": PAYMENTS, "partition": {}},
            ],
        }
    ],
    "target": {"type": "eventbridge", "eventBusName": "runs"},
}


def body(**group: Any) -> dict[str, Any]:
    data = copy.deepcopy(BODY)
    data["groups"][0].update(group)
    return data


def refused(data: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_rule("r", data)
    return caught.value


# --- the rule model --------------------------------------------------------------------------------


def test_a_partitioned_group_round_trips() -> None:
    data = body(
        members=[
            {"assetKey": ORDERS, "partition": {}},
            {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "ts_hour", "grain": "day"}}}},
            {"assetKey": DIM},
        ]
    )
    rule = parse_rule("r", data)
    group = rule.groups[0]
    assert group.partition_by == ("dt",)
    assert [m.asset_key for m in group.partitioned_members] == [ORDERS, CLICKS]
    assert Rule.model_validate(json_form(rule)) == rule


names = st.text(min_size=1, max_size=20)
bad_names = st.one_of(
    st.just(""),
    st.text(min_size=129, max_size=140),
    st.builds(lambda a, b, sep: a + sep + b, names, names, st.sampled_from(["/", "="])),
)


@given(bad=bad_names)
def test_a_bad_partition_field_name_is_a_400_naming_partition_by(bad: str) -> None:
    error = refused(body(partitionBy=["dt", bad]))
    assert error.field == "groups.0.partitionBy"


@given(field=names.filter(lambda n: "/" not in n and "=" not in n))
def test_partition_by_naming_a_field_twice_is_refused(field: str) -> None:
    error = refused(body(partitionBy=[field, field]))
    assert error.field == "groups.0.partitionBy" and "twice" in str(error)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"partitionBy": []}, "groups.0.partitionBy", "at least 1"),
        ({"partitionBy": ["a", "b", "c", "d", "e"]}, "groups.0.partitionBy", "at most 4"),
        ({"members": [{"assetKey": ORDERS}, {"assetKey": PAYMENTS}]}, "groups.0.members", "partitioned member"),
        (
            {"members": [{"assetKey": ORDERS, "partition": {"fields": {"hour": {}}}}]},
            "groups.0.members",
            "members.0.partition.fields.hour",
        ),
        (
            {"members": [{"assetKey": ORDERS, "partition": {"fields": {"dt": {"grain": "week"}}}}]},
            "groups.0.members.0.partition.fields.dt.grain",
            "",
        ),
        (
            {"members": [{"assetKey": ORDERS, "partition": {}, "condition": {"qualityStatus": "PASSED"}}]},
            "groups.0.members",
            "minSnapshotId",
        ),
    ],
)
def test_bad_partitioning_is_a_400_naming_the_field(change: dict[str, Any], field: str, words: str) -> None:
    error = refused(body(**change))
    assert error.field == field
    assert words in str(error)


def test_a_member_partition_without_partition_by_is_refused() -> None:
    data = body()
    del data["groups"][0]["partitionBy"]
    error = refused(data)
    assert error.field == "groups.0.members" and "no partitionBy" in str(error)


def test_each_version_runs_per_partition_with_a_rollup_member_but_not_from_next_change() -> None:
    assert parse_rule("r", {**body(), "policy": {"mode": "EACH_VERSION"}}).policy.mode.value == "EACH_VERSION"
    data = body()
    data["groups"][0]["members"][1]["partition"] = {
        "fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}
    }
    rolled = parse_rule("r", {**data, "policy": {"mode": "EACH_VERSION"}})  # a 400 until 2026-12-07
    assert rolled.policy.mode.value == "EACH_VERSION"
    error = refused({**data, "policy": {"mode": "EACH_VERSION", "startFrom": "NEXT_CHANGE"}})
    assert error.field == "policy" and "members.1 rolls up" in str(error) and "startFrom LATEST" in str(error)


def test_a_freshness_promise_over_group_runs_is_kept_per_partition_by_a_rule_with_a_partitioned_group() -> None:
    promise = {"maxWaitSeconds": 3600, "expectedBy": {"cron": "0 6 * * *"}}
    freshness = parse_rule("r", {**body(), "freshness": promise}).freshness
    assert freshness is not None and freshness.max_wait_seconds == 3600 and freshness.expected_by is not None


@pytest.mark.parametrize("policy", [{"startFrom": "NEXT_CHANGE"}, {"backfill": "SKIP"}])
def test_start_from_next_change_and_backfill_skip_hold_per_partition(policy: dict[str, Any]) -> None:
    """Accepted in every mode (tests/unit/test_partition_start.py plays them; NEXT_CHANGE with EACH_VERSION was a 400
    until 2026-12-07)."""
    for mode in ("ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION"):
        rule = parse_rule("r", {**body(), "policy": {"mode": mode, **policy}})
        assert rule.policy.model_dump(by_alias=True, mode="json").items() >= policy.items()


# --- mapping keys ----------------------------------------------------------------------------------

hours = st.datetimes().map(lambda d: d.strftime("%Y-%m-%d-%H")).filter(lambda v: len(v) == 13)


@given(hour=hours, grain=st.sampled_from(list(Grain)))
def test_a_time_value_cuts_to_each_coarser_grain_as_its_prefix(hour: str, grain: Grain) -> None:
    cut = cut_to_grain(hour, grain)
    assert cut is not None and hour.startswith(cut)
    assert cut_to_grain(cut, grain) == cut  # idempotent
    if grain is not Grain.YEAR:
        assert cut_to_grain(cut[:4], grain) is None  # a year cannot name a finer grain


@given(hour=hours, region=st.text(min_size=1, max_size=8))
def test_an_hourly_composite_key_maps_onto_a_daily_group(hour: str, region: str) -> None:
    mapping = MemberPartition.model_validate({"fields": {"dt": {"field": "ts_hour", "grain": "day"}}})
    key = format_partition_key([("ts_hour", hour), ("region", region)])
    assert mapping.map_key(key, ("dt",)) == format_partition_key([("dt", hour[:10])])
    assert mapping.map_key(key, ("dt", "region")) == format_partition_key([("dt", hour[:10]), ("region", region)])
    assert mapping.map_key(format_partition_key([("region", region)]), ("dt",)) is None  # no value for dt


def test_a_value_that_is_no_time_does_not_map_to_a_grain() -> None:
    mapping = MemberPartition.model_validate({"fields": {"dt": {"grain": "month"}}})
    assert mapping.map_key("dt=2026-12-01", ("dt",)) == "dt=2026-12"
    assert mapping.map_key("dt=20788", ("dt",)) is None  # Paimon's legacy day number is no ISO day
    assert mapping.map_key("dt=__HIVE_DEFAULT_PARTITION__", ("dt",)) is None


def test_a_compaction_gives_no_facts() -> None:
    group = parse_rule("r", body()).groups[0]
    touched = TouchedPartitions.of([DAY])
    assert facts_of(group, ORDERS, touched, SnapshotRecord(snapshotId=3, order=3, commitKind="COMPACT")) == []
    [fact] = facts_of(group, ORDERS, touched, SnapshotRecord(snapshotId=3, order=3, commitKind="APPEND"))
    assert (fact.partition, fact.snapshot_id) == (DAY, 3)


# --- one partition's verdict -----------------------------------------------------------------------


def fact(rule: Rule, asset: str, order: int, partition: str = DAY) -> PartitionFact:
    group = rule.groups[0]
    member = next(m for m in group.members if m.asset_key == asset)
    return PartitionFact(asset, mapping_of(group, member), partition, order, order)


def verdict(rule: Rule, facts: list[PartitionFact], cursor: GroupCursor | None = None, **states: AssetState) -> Any:
    known = {f.key: f for f in facts}
    group, read = rule.groups[0], {k: v for k, v in states.items()}
    view, cursor = partition_view(rule, group, DAY, known, read, cursor)
    return evaluate_group(rule, group, read, cursor, 0, partition=view)


def ran(rule: Rule, evaluation: Any) -> GroupCursor:
    base = GroupCursor.initial("r", "daily", DAY)
    key = trigger_key("r", "daily", evaluation.pins, None, 0, partition=DAY)
    trigger = Trigger(
        triggerKey=key, ruleId="r", groupId="daily", inputs=evaluation.pins, partition=DAY, createdAt=1, updatedAt=1
    )
    return base.after(trigger, {})


def test_a_partition_waits_for_the_member_that_has_not_touched_it() -> None:
    rule = parse_rule("r", body())
    v = verdict(rule, [fact(rule, ORDERS, 5)])
    assert v.status is Status.WAITING_FOR_PARTITION
    assert v.reason.startswith(f"{DAY}: waiting for {PAYMENTS}")
    ready = verdict(rule, [fact(rule, ORDERS, 5), fact(rule, PAYMENTS, 9)])
    assert ready.ready and [p.snapshot_id for p in ready.pins] == [5, 9] and ready.partition == DAY


def test_after_a_run_all_updated_waits_for_every_member_to_touch_the_partition_again() -> None:
    rule = parse_rule("r", body())
    cursor = ran(rule, verdict(rule, [fact(rule, ORDERS, 5), fact(rule, PAYMENTS, 9)]))
    v = verdict(rule, [fact(rule, ORDERS, 6), fact(rule, PAYMENTS, 9)], cursor)
    assert v.status is Status.WAITING_FOR_UPDATE and PAYMENTS in v.reason
    any_rule = parse_rule("r", {**body(), "policy": {"mode": "ANY_UPDATED"}})
    assert verdict(any_rule, [fact(rule, ORDERS, 6), fact(rule, PAYMENTS, 9)], cursor).ready
    assert not verdict(any_rule, [fact(rule, ORDERS, 5), fact(rule, PAYMENTS, 9)], cursor).ready


def test_an_unpartitioned_member_gates_every_partition_and_is_pinned() -> None:
    rule = parse_rule("r", body(members=[{"assetKey": ORDERS, "partition": {}}, {"assetKey": DIM}]))
    v = verdict(rule, [fact(rule, ORDERS, 5)])
    assert v.status is Status.BLOCKED_BY_UNKNOWN_ASSET and v.reason.startswith(f"{DAY}: waiting for {DIM}")
    dim = AssetState(assetKey=DIM, latestSnapshotId=40, version=1)
    ready = verdict(rule, [fact(rule, ORDERS, 5)], **{DIM: dim})
    assert ready.ready and [(p.asset_key, p.snapshot_id) for p in ready.pins] == [(ORDERS, 5), (DIM, 40)]


def test_the_partition_is_in_the_trigger_key() -> None:
    rule = parse_rule("r", body())
    pins = verdict(rule, [fact(rule, ORDERS, 5), fact(rule, PAYMENTS, 9)]).pins
    keys = {trigger_key("r", "daily", pins, None, 0, partition=p) for p in (DAY, "dt=2026-12-02", None)}
    assert len(keys) == 3
    assert trigger_key("r", "daily", pins, None, 0) == trigger_key("r", "daily", pins, None, 0, partition=None)


# --- rollups: a day of every hour ------------------------------------------------------------------


@pytest.mark.parametrize("source", [{"complete": True}, {"grain": "hour", "complete": True}])
def test_a_rollup_needs_a_grain_coarser_than_an_hour(source: dict[str, Any]) -> None:
    error = refused(body(members=[{"assetKey": ORDERS, "partition": {"fields": {"dt": source}}}]))
    assert error.field.startswith("groups.0.members.0.partition.fields.dt") and "complete" in str(error)


@given(day=st.dates().map(lambda d: d.isoformat()).filter(lambda v: len(v) == 10))
def test_a_days_units_are_its_24_hours_and_a_months_its_days(day: str) -> None:
    hours = units_of(day, Grain.DAY)
    assert len(hours) == 24 and len(set(hours)) == 24
    assert all(cut_to_grain(h, Grain.DAY) == day and grain_of(h) is Grain.HOUR for h in hours)
    days = units_of(day[:7], Grain.MONTH)
    assert day in days and all(cut_to_grain(d, Grain.MONTH) == day[:7] for d in days)
    assert len(days) == calendar.monthrange(int(day[:4]), int(day[5:7]))[1]


def test_the_run_manifest_and_the_payload_pin_the_partition_and_unpartitioned_ones_are_unchanged() -> None:
    from lakehook.domain.dispatch import Invocation, RunManifest

    rule = parse_rule("r", body())
    pins = verdict(rule, [fact(rule, ORDERS, 5), fact(rule, PAYMENTS, 9)]).pins
    key = trigger_key("r", "daily", pins, None, 0, partition=DAY)
    trigger = Trigger(triggerKey=key, ruleId="r", groupId="daily", inputs=pins, partition=DAY, createdAt=1, updatedAt=1)
    manifest = RunManifest.for_trigger(trigger)
    assert manifest.body()["partition"] == DAY
    assert RunManifest.from_document(manifest.document()).partition == DAY
    assert Invocation.of(trigger, manifest, "s3://m/x.json", 1).payload()["partition"] == DAY
    plain = trigger.model_copy(update={"partition": None, "trigger_key": trigger_key("r", "daily", pins, None, 0)})
    assert "partition" not in RunManifest.for_trigger(plain).body()
    assert "partition" not in Invocation.of(plain, RunManifest.for_trigger(plain), "s3://m/x.json", 1).payload()
