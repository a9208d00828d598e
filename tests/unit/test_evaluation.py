"""Evaluation: the newest satisfying version of each member, or the reason it is blocked."""

from __future__ import annotations

from typing import Any

from lakehook.answers.explain import GroupExplanation, MemberExplanation
from lakehook.domain.evaluation import Status, VersionLog, evaluate_group, evaluate_rule, select_member
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Condition, Member, Rule
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.time import parse_instant_ms
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, Window
from tests.wiring import ingest_events

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
NOW = 1_750_000_000_000
HOUR = 3_600_000


def state(key: str = A, version: int = 1, **fields: Any) -> AssetState:
    return AssetState(asset_key=key, version=version, **fields)


def member(key: str = A, **condition: Any) -> Member:
    return Member.model_validate({"assetKey": key, "condition": condition})


def rule(*members: dict[str, Any], mode: str = "ALL_UPDATED", **policy: Any) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": mode, **policy},
            "groups": [{"groupId": "g", "members": list(members)}],
        }
    )


def cursor_at(
    *pins: PinnedInput,
    claimed_at: int = NOW - 86_400_000,
    window: Window | None = None,
    backfills: dict[str, str] | None = None,
) -> GroupCursor:
    trigger = Trigger(
        trigger_key="k",
        rule_id="r",
        group_id="g",
        inputs=pins,
        window=window,
        created_at=claimed_at,
        updated_at=claimed_at,
    )
    return GroupCursor.initial("r", "g").after(trigger, backfills or {})


def pin(key: str, snapshot: int, version: int = 1) -> PinnedInput:
    return PinnedInput(asset_key=key, snapshot_id=snapshot, state_version=version)


def group_of(
    r: Rule,
    states: list[AssetState],
    cursor: GroupCursor | None = None,
    now: int = NOW,
    logs: dict[str, VersionLog] | None = None,
) -> Any:
    return evaluate_group(r, r.groups[0], {s.asset_key: s for s in states}, cursor, now, logs=logs)


# --- members ----------------------------------------------------------------------------------------


def test_a_member_without_state_is_an_unknown_asset_unless_registered() -> None:
    assert select_member(member(), None).status is Status.BLOCKED_BY_UNKNOWN_ASSET
    assert select_member(member(), None, registered=False).status is Status.BLOCKED_BY_UNKNOWN_ASSET
    assert select_member(member(), None, registered=True).status is Status.BLOCKED_BY_SNAPSHOT


def test_quality_passed_pins_the_newest_passing_snapshot_never_a_newer_failed_one() -> None:
    s = state(latest_snapshot_id=12, latest_schema_id=3, quality_passed_snapshot_id=11, quality_failed_snapshot_id=12)
    found = select_member(member(qualityStatus="PASSED"), s)
    assert found.status is Status.READY
    assert found.pin is not None and found.pin.snapshot_id == 11
    assert found.pin.schema_id is None  # the state knows the schema of snapshot 12 only
    assert "12 has failed" in (found.reason or "")
    assert found.current["qualityFailedSnapshotId"] == 12


def test_quality_without_any_pass_blocks() -> None:
    s = state(latest_snapshot_id=12, quality_failed_snapshot_id=12)
    found = select_member(member(qualityStatus="PASSED"), s)
    assert found.status is Status.BLOCKED_BY_QUALITY and "12 failed" in (found.reason or "")
    assert found.required == {"snapshotRequired": True, "qualityStatus": "PASSED"}


def test_a_snapshot_that_passed_and_then_failed_is_not_pinned() -> None:
    s = state(latest_snapshot_id=5, quality_passed_snapshot_id=5, quality_failed_snapshot_id=5)
    assert select_member(member(qualityStatus="PASSED"), s).status is Status.BLOCKED_BY_QUALITY


def test_without_a_quality_condition_the_latest_snapshot_is_pinned() -> None:
    s = state(latest_snapshot_id=12, latest_schema_id=3, latest_commit_time=77, quality_failed_snapshot_id=12)
    found = select_member(member(), s)
    assert found.pin == PinnedInput(asset_key=A, snapshot_id=12, schema_id=3, commit_time=77, state_version=1)


def test_schema_must_be_compatible() -> None:
    pending = state(latest_snapshot_id=2, latest_schema_id=2, first_schema_id=1)
    found = select_member(member(schemaStatus="COMPATIBLE"), pending)
    assert found.status is Status.BLOCKED_BY_SCHEMA
    assert found.current["schemaStatus"] == "PENDING_APPROVAL"
    approved = state(latest_snapshot_id=2, latest_schema_id=2, first_schema_id=1, schema_approved_id=2)
    assert select_member(member(schemaStatus="COMPATIBLE"), approved).status is Status.READY


def test_tag_must_exist() -> None:
    assert select_member(member(tag="2025-06-01"), state(latest_snapshot_id=1)).status is Status.BLOCKED_BY_TAG
    tagged = state(latest_snapshot_id=1, tags={"2025-06-01"})
    assert select_member(member(tag="2025-06-01"), tagged).status is Status.READY


def test_absolute_watermark_shows_current_and_required() -> None:
    floor = parse_instant_ms("2025-06-02T00:00:00Z")
    s = state(latest_snapshot_id=1, latest_watermark=floor - 1)
    found = select_member(member(watermarkAtLeast="2025-06-02T00:00:00Z"), s)
    assert found.status is Status.BLOCKED_BY_WATERMARK
    assert found.current["watermark"] == floor - 1 and found.required["watermarkAtLeast"] == floor
    assert select_member(member(watermarkAtLeast=floor), state(latest_watermark=floor, latest_snapshot_id=1)).pin


def test_snapshot_watermark_counts_as_the_watermark() -> None:
    s = state(latest_snapshot_id=1, latest_snapshot_watermark=500)
    assert select_member(member(watermarkAtLeast=500), s).status is Status.READY


def test_min_snapshot_id() -> None:
    assert select_member(member(minSnapshotId=10), state(latest_snapshot_id=9)).status is Status.BLOCKED_BY_SNAPSHOT
    held = state(latest_snapshot_id=10, quality_passed_snapshot_id=9)
    assert select_member(member(minSnapshotId=10, qualityStatus="PASSED"), held).status is Status.BLOCKED_BY_QUALITY


def test_snapshot_not_required_accepts_a_watermark_only_asset() -> None:
    s = state(latest_watermark=1000)
    assert select_member(member(), s).status is Status.BLOCKED_BY_SNAPSHOT
    found = select_member(member(snapshotRequired=False), s)
    assert found.pin is not None and found.pin.ordinal == (-1, 1000)


# --- groups and policies -----------------------------------------------------------------------------


def test_an_and_over_sixteen_assets_never_fires_on_fifteen() -> None:
    keys = [f"paimon://lake/db/t{i}" for i in range(16)]
    r = rule(*({"assetKey": k} for k in keys))
    fifteen = [state(k, latest_snapshot_id=1) for k in keys[:15]]
    verdict = group_of(r, fifteen)
    assert verdict.status is Status.BLOCKED_BY_UNKNOWN_ASSET and keys[15] in verdict.reason
    assert [m.status for m in verdict.members].count(Status.READY) == 15
    assert group_of(r, [*fifteen, state(keys[15], latest_snapshot_id=1)]).status is Status.READY


def test_all_updated_waits_for_every_member_to_advance() -> None:
    r = rule({"assetKey": A}, {"assetKey": B})
    last = cursor_at(pin(A, 1), pin(B, 1))
    verdict = group_of(r, [state(A, latest_snapshot_id=2), state(B, latest_snapshot_id=1)], last)
    assert verdict.status is Status.WAITING_FOR_UPDATE
    assert [m.status for m in verdict.members] == [Status.READY, Status.WAITING_FOR_UPDATE]
    assert verdict.members[1].required["newerThan"]["snapshotId"] == 1
    ready = group_of(r, [state(A, latest_snapshot_id=2), state(B, latest_snapshot_id=2)], last)
    assert ready.ready and [p.snapshot_id for p in ready.pins] == [2, 2]


def test_all_updated_fires_first_time_without_a_cursor() -> None:
    r = rule({"assetKey": A}, {"assetKey": B})
    assert group_of(r, [state(A, latest_snapshot_id=1), state(B, latest_snapshot_id=9)]).ready


def test_a_member_held_back_by_quality_says_so_instead_of_waiting() -> None:
    r = rule({"assetKey": A, "condition": {"qualityStatus": "PASSED"}}, {"assetKey": B})
    last = cursor_at(pin(A, 11), pin(B, 1))
    s = state(A, latest_snapshot_id=12, quality_passed_snapshot_id=11, quality_failed_snapshot_id=12)
    verdict = group_of(r, [s, state(B, latest_snapshot_id=2)], last)
    assert verdict.status is Status.BLOCKED_BY_QUALITY
    assert "12 has not passed" in verdict.reason


def test_any_updated_fires_on_one_member_and_pins_the_rest_as_they_are() -> None:
    r = rule({"assetKey": A}, {"assetKey": B}, mode="ANY_UPDATED")
    last = cursor_at(pin(A, 1), pin(B, 1))
    verdict = group_of(r, [state(A, latest_snapshot_id=4), state(B, latest_snapshot_id=1)], last)
    assert verdict.ready and [p.snapshot_id for p in verdict.pins] == [4, 1]
    same = group_of(r, [state(A, latest_snapshot_id=1), state(B, latest_snapshot_id=1)], last)
    assert same.status is Status.WAITING_FOR_UPDATE


def test_a_stale_read_never_pins_versions_older_than_the_cursor() -> None:
    r = rule({"assetKey": A}, {"assetKey": B}, mode="ANY_UPDATED")
    last = cursor_at(pin(A, 5), pin(B, 1))
    verdict = group_of(r, [state(A, latest_snapshot_id=4), state(B, latest_snapshot_id=2)], last)
    assert verdict.status is Status.WAITING_FOR_UPDATE
    assert "older than the last trigger" in verdict.members[0].reason


def test_each_version_steps_to_the_next_known_version() -> None:
    r = rule({"assetKey": A}, {"assetKey": B}, mode="EACH_VERSION")
    history = [state(A, version=v, latest_snapshot_id=v) for v in (2, 3, 4)]
    current = history[-1]
    last = cursor_at(pin(A, 1, version=1), pin(B, 1))
    log = VersionLog.of(history)
    verdict = group_of(r, [current, state(B, latest_snapshot_id=1)], last, logs={A: log})
    assert verdict.ready and [p.snapshot_id for p in verdict.pins] == [2, 1]
    nothing_known = group_of(r, [current, state(B, latest_snapshot_id=1)], last, logs={})
    assert nothing_known.status is Status.WAITING_FOR_UPDATE


def test_each_version_skips_states_that_did_not_change_the_pinned_version() -> None:
    r = rule({"assetKey": A, "condition": {"qualityStatus": "PASSED"}}, mode="EACH_VERSION")
    history = [
        state(A, version=2, latest_snapshot_id=2, quality_passed_snapshot_id=1),  # snapshot 2, unchecked
        state(A, version=3, latest_snapshot_id=2, quality_passed_snapshot_id=1, quality_failed_snapshot_id=2),
        state(A, version=4, latest_snapshot_id=3, quality_passed_snapshot_id=3, quality_failed_snapshot_id=2),
    ]
    verdict = group_of(r, [history[-1]], cursor_at(pin(A, 1, version=1)), logs={A: VersionLog.of(history)})
    assert verdict.ready and verdict.pins[0].snapshot_id == 3  # 2 failed: it never gets a trigger


def test_version_log_stops_at_a_gap_unless_the_gap_is_known_lost() -> None:
    states = [state(version=v, latest_snapshot_id=v) for v in (2, 3, 5, 6)]
    assert [s.version for s in VersionLog.of(states).after(1)] == [2, 3]
    assert [s.version for s in VersionLog.of(states, lost_before=5).after(1)] == [2, 3, 5, 6]
    assert [s.version for s in VersionLog.of(states).after(3)] == []  # 5 is known, 4 might still come
    assert [s.version for s in VersionLog.of(states, lost_before=5).after(3)] == [5, 6]
    assert [s.version for s in VersionLog.of(states).after(4)] == [5, 6]


def test_each_version_first_trigger_starts_at_the_oldest_version_seen() -> None:
    r = rule({"assetKey": A}, mode="EACH_VERSION")
    seen = [state(A, version=v, latest_snapshot_id=v) for v in (7, 8, 9)]
    verdict = group_of(r, [seen[-1]], None, logs={A: VersionLog.of(seen, lost_before=7)})
    assert verdict.pins[0].snapshot_id == 7


def test_windowed_group_fires_once_per_closed_window() -> None:
    r = rule({"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H", "allowedLatenessSeconds": 300}}})
    at = parse_instant_ms("2025-06-01T10:30:00Z")
    s = state(A, latest_snapshot_id=1, latest_watermark=at)
    verdict = group_of(r, [s])
    assert verdict.window == Window(start=at - HOUR // 2 - HOUR, end=at - HOUR // 2)  # [09:00, 10:00)
    done = cursor_at(pin(A, 1), window=verdict.window)
    later = group_of(r, [state(A, latest_snapshot_id=2, latest_watermark=at + 20 * 60_000)], done)
    assert later.status is Status.BLOCKED_BY_WATERMARK  # 10:50: window [10:00, 11:00) is open
    assert later.members[0].required["watermarkAtLeast"] == at + HOUR // 2 + 300_000
    closed = group_of(r, [state(A, latest_snapshot_id=2, latest_watermark=at + 35 * 60_000)], done)
    assert closed.ready and closed.window == Window(start=at - HOUR // 2, end=at + HOUR // 2)


def test_a_window_never_pins_a_version_older_than_the_last_trigger() -> None:
    r = rule({"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}, {"assetKey": B})
    ten = parse_instant_ms("2025-06-01T10:00:00Z")
    done = cursor_at(pin(A, 1), pin(B, 5), window=Window(start=ten - 2 * HOUR, end=ten - HOUR))
    stale = [state(A, latest_snapshot_id=1, latest_watermark=ten + 1), state(B, latest_snapshot_id=4)]
    assert group_of(r, stale, done).status is Status.WAITING_FOR_UPDATE
    fresh = [state(A, latest_snapshot_id=1, latest_watermark=ten + 1), state(B, latest_snapshot_id=5)]
    assert group_of(r, fresh, done).window == Window(start=ten - HOUR, end=ten)


def test_each_version_windows_come_one_by_one() -> None:
    r = rule({"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}, mode="EACH_VERSION")
    ten = parse_instant_ms("2025-06-01T10:00:00Z")
    done = cursor_at(pin(A, 1), window=Window(start=ten - 4 * HOUR, end=ten - 3 * HOUR))
    verdict = group_of(r, [state(A, latest_snapshot_id=1, latest_watermark=ten + 1)], done)
    assert verdict.window == Window(start=ten - 3 * HOUR, end=ten - 2 * HOUR)


def test_cooldown_ends_min_interval_after_the_last_trigger() -> None:
    r = rule({"assetKey": A}, minIntervalSeconds=60)
    last = cursor_at(pin(A, 1), claimed_at=NOW - 10_000)
    verdict = group_of(r, [state(A, latest_snapshot_id=2)], last)
    assert verdict.status is Status.COOLDOWN and verdict.until == NOW + 50_000
    assert GroupExplanation.from_domain(verdict).dump()["until"].endswith("Z")
    assert group_of(r, [state(A, latest_snapshot_id=2)], last, now=NOW + 50_000).ready


def test_quiet_period_ends_after_the_last_member_change() -> None:
    r = rule({"assetKey": A}, {"assetKey": B}, quietPeriodSeconds=30)
    states = [
        state(A, latest_snapshot_id=1, updated_at=NOW - 40_000),
        state(B, latest_snapshot_id=1, updated_at=NOW - 5_000),
    ]
    verdict = group_of(r, states)
    assert verdict.status is Status.QUIET_PERIOD and verdict.until == NOW + 25_000
    assert group_of(r, states, now=NOW + 25_000).ready


def test_backfill_skip_holds_while_running_then_absorbs_its_snapshots() -> None:
    r = rule({"assetKey": A}, {"assetKey": B}, backfill="SKIP")
    last = cursor_at(pin(A, 1), pin(B, 1))
    running = state(A, latest_snapshot_id=5, backfill_id="bf1", backfill_status=BackfillStatus.RUNNING)
    verdict = group_of(r, [running, state(B, latest_snapshot_id=2)], last)
    assert verdict.status is Status.BLOCKED_BY_BACKFILL and "bf1" in verdict.reason
    completed = state(A, latest_snapshot_id=9, backfill_id="bf1", backfill_status=BackfillStatus.COMPLETED)
    absorb = group_of(r, [completed, state(B, latest_snapshot_id=2)], last)
    assert absorb.ready and absorb.skip
    assert [p.snapshot_id for p in absorb.pins] == [9, 1]  # B's own update is not absorbed
    absorbed = cursor_at(pin(A, 9), pin(B, 1), backfills={A: "bf1"})
    after = group_of(r, [completed, state(B, latest_snapshot_id=2)], absorbed)
    assert after.status is Status.WAITING_FOR_UPDATE  # ALL_UPDATED: A has not moved since the backfill


def test_backfill_trigger_policy_ignores_backfills() -> None:
    r = rule({"assetKey": A})
    running = state(A, latest_snapshot_id=5, backfill_id="bf1", backfill_status=BackfillStatus.RUNNING)
    assert group_of(r, [running]).ready


def test_a_disabled_rule_reports_disabled() -> None:
    r = Rule.model_validate({**json_form(rule({"assetKey": A})), "enabled": False})
    assert group_of(r, [state(A, latest_snapshot_id=1)]).status is Status.DISABLED


def test_groups_are_alternatives() -> None:
    r = Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "groups": [
                {"groupId": "both", "members": [{"assetKey": A}, {"assetKey": B}]},
                {"groupId": "a_only", "members": [{"assetKey": A}]},
            ],
        }
    )
    evaluation = evaluate_rule(r, {A: state(A, latest_snapshot_id=1)}, {}, NOW)
    assert evaluation.ready
    assert [g.status for g in evaluation.groups] == [Status.BLOCKED_BY_UNKNOWN_ASSET, Status.READY]


def test_explain_shape_of_a_member() -> None:
    found = select_member(member(qualityStatus="PASSED"), state(latest_snapshot_id=3, quality_failed_snapshot_id=3))
    assert set(MemberExplanation.from_domain(found).dump()) == {"assetKey", "status", "current", "required", "reason"}
    assert MemberExplanation.from_domain(found).dump()["status"] == "BLOCKED_BY_QUALITY"


def test_condition_defaults_require_a_snapshot() -> None:
    assert Condition().snapshot_required is True


# --- what counts as an update (compaction) and tags ----------------------------------------------


def ingested(*events: dict[str, Any], key: str = A) -> AssetState:
    """The state the ingest path builds from these events (the in-memory store applies the same Advance)."""
    from lakehook.domain.events import SourceType
    from tests.fakes.memory import InMemoryAssetStore

    store = InMemoryAssetStore()
    ingest = ingest_events(store, clock=lambda: NOW)
    for event in events:
        ingest.ingest_raw([{"assetKey": key, **event}], SourceType.PUSH)
    found = store.get_state(key)
    assert found is not None
    return found


def snap(snapshot_id: int, kind: str = "APPEND", **fields: Any) -> dict[str, Any]:
    return {"eventType": "SNAPSHOT_COMMITTED", "snapshotId": snapshot_id, "commitKind": kind, **fields}


def test_a_compaction_snapshot_pins_the_newest_snapshot_that_changed_data() -> None:
    s = ingested(snap(1, schemaId=3, commitTime=NOW - 5), snap(2, "COMPACT", schemaId=3))
    chosen = select_member(member(), s).pin
    assert chosen is not None and (chosen.snapshot_id, chosen.schema_id, chosen.commit_time) == (1, 3, NOW - 5)
    opted = select_member(member(includeCompaction=True), s).pin
    assert opted is not None and opted.snapshot_id == 2


def test_a_group_does_not_fire_again_on_a_compaction_but_does_on_the_next_data_change() -> None:
    r = rule({"assetKey": A})
    after_one = cursor_at(pin(A, 1))
    compacted = ingested(snap(1), snap(2, "COMPACT"))
    waiting = evaluate_group(r, r.groups[0], {A: compacted}, after_one, NOW)
    assert waiting.status is Status.WAITING_FOR_UPDATE
    appended = ingested(snap(1), snap(2, "COMPACT"), snap(3, "APPEND"))
    fired = evaluate_group(r, r.groups[0], {A: appended}, after_one, NOW)
    assert fired.ready and [p.snapshot_id for p in fired.pins] == [3]
    opted = rule({"assetKey": A, "condition": {"includeCompaction": True}})
    assert evaluate_group(opted, opted.groups[0], {A: compacted}, after_one, NOW).ready


def test_an_iceberg_replace_snapshot_changes_no_data() -> None:
    key = "iceberg://lake/ods/orders"
    s = ingested(
        snap(9001, sequenceNumber=1, metadataLocation="s3://w/m/00001.metadata.json"),
        snap(4242, "REPLACE", sequenceNumber=2, parentSnapshotId=9001, metadataLocation="s3://w/m/00002.metadata.json"),
        key=key,
    )
    chosen = select_member(member(key), s).pin
    assert chosen is not None
    assert (chosen.snapshot_id, chosen.ordinal, chosen.metadata_location) == (
        9001,
        (1, -1),
        "s3://w/m/00001.metadata.json",
    )


def test_a_tag_member_pins_the_tagged_snapshot_and_waits_for_no_later_snapshot() -> None:
    tag = {"eventType": "TAG_CREATED", "tag": "month-end", "snapshotId": 1}
    s = ingested(snap(1, schemaId=2), snap(2), tag, snap(3))
    r = rule({"assetKey": A, "condition": {"tag": "month-end"}})
    first = evaluate_group(r, r.groups[0], {A: s}, None, NOW)
    assert first.ready and [(p.snapshot_id, p.tag) for p in first.pins] == [(1, "month-end")]
    later = ingested(snap(1, schemaId=2), snap(2), tag, snap(3), snap(4))
    again = evaluate_group(r, r.groups[0], {A: later}, cursor_at(*first.pins), NOW)
    assert again.status is Status.WAITING_FOR_UPDATE
