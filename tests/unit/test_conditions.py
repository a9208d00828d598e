"""Each condition kind alone: given a state, the version it pins or the explain status and reason it blocks with."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.conditions import (
    BackfillCompleted,
    Blocked,
    CdcRecoveredAtLeast,
    CdcRecoveredWindow,
    Chosen,
    DataChange,
    ManifestSealed,
    MemberCondition,
    MinSnapshotId,
    QualityPassed,
    SchemaCompatible,
    SnapshotRequired,
    SpooledSnapshot,
    TaggedSnapshot,
    WatermarkAtLeast,
    WatermarkWindow,
    conditions_of,
)
from lakehook.domain.evaluation import select_member
from lakehook.domain.rules import Member
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.status import Status
from lakehook.domain.versions import SnapshotRecord

PAIMON = "paimon://lake/ods/a"
ICEBERG = "iceberg://glue/ods/a"
SPOOL = "s3://spool/orders"


def state(key: str = PAIMON, **fields: Any) -> AssetState:
    return AssetState(asset_key=key, version=3, **fields)


def member(key: str = PAIMON, **condition: Any) -> Member:
    return Member.model_validate({"assetKey": key, "condition": condition})


def judge(rule: MemberCondition | None, s: AssetState) -> Chosen | Blocked:
    """The rule alone, on the state's newest snapshot (as the first rule of a member sees it)."""
    assert rule is not None, "the condition asks for this rule"
    return rule.evaluate(s, Chosen.newest(s))


def pinned(outcome: Chosen | Blocked) -> int | None:
    assert isinstance(outcome, Chosen), outcome
    return outcome.snapshot_id


def test_data_change_pins_the_newest_data_snapshot_past_a_compaction_unless_compactions_count() -> None:
    data = SnapshotRecord(snapshot_id=7, order=7, commit_kind="APPEND", schema_id=2)
    compacted = state(latest_snapshot_id=8, latest_commit_kind="COMPACT", latest_data=data)
    rule = DataChange.of(member())
    assert pinned(judge(rule, compacted)) == 7
    assert rule is not None and rule.shows(compacted) == {"dataSnapshotId": 7}
    assert pinned(judge(rule, state(latest_snapshot_id=8, latest_commit_kind="APPEND", latest_data=data))) == 8
    assert DataChange.of(member(includeCompaction=True)) is None


def test_data_change_passes_over_a_snapshot_whose_log_says_it_changed_no_data_whatever_its_kind() -> None:
    data = SnapshotRecord(snapshot_id=7, order=7, commit_kind="APPEND")
    noop = state(
        ICEBERG, latest_snapshot_id=8, latest_commit_kind="DELETE", latest_data_changed=False, latest_data=data
    )
    rule = DataChange.of(member(ICEBERG))
    assert pinned(judge(rule, noop)) == 7
    assert rule is not None and rule.shows(noop) == {"dataSnapshotId": 7}
    changed = state(
        ICEBERG, latest_snapshot_id=8, latest_commit_kind="DELETE", latest_data_changed=True, latest_data=data
    )
    assert pinned(judge(rule, changed)) == 8 and rule.shows(changed) == {}


def test_spooled_snapshot_is_the_version_of_an_asset_without_table_snapshots() -> None:
    rule = SpooledSnapshot.of(member(SPOOL, manifest="SEALED"))
    assert pinned(judge(rule, state(SPOOL, manifest_snapshot_id=42))) == 42
    assert pinned(judge(rule, state(SPOOL, latest_snapshot_id=5, manifest_snapshot_id=42))) == 5
    assert SpooledSnapshot.of(member(SPOOL)) is None


def test_quality_passed_pins_the_newest_passing_snapshot_and_says_so() -> None:
    rule = QualityPassed.of(member(qualityStatus="PASSED"))
    assert rule is not None
    s = state(latest_snapshot_id=12, quality_passed_snapshot_id=10, quality_failed_snapshot_id=12)
    chosen = judge(rule, s)
    assert pinned(chosen) == 10
    assert isinstance(chosen, Chosen)
    assert rule.note(s, chosen) == "pins snapshot 10, the newest that passed; snapshot 12 has failed its check"
    assert judge(rule, state(latest_snapshot_id=12, quality_failed_snapshot_id=12)) == Blocked(
        Status.BLOCKED_BY_QUALITY, "no snapshot has passed its quality check; snapshot 12 failed"
    )
    assert judge(rule, state(latest_snapshot_id=12, quality_passed_snapshot_id=12, quality_failed_snapshot_id=12)) == (
        Blocked(Status.BLOCKED_BY_QUALITY, "snapshot 12 passed a quality check and then failed one")
    )


def test_snapshot_required_blocks_until_a_snapshot_is_committed() -> None:
    rule = SnapshotRequired.of(member())
    assert judge(rule, state()) == Blocked(Status.BLOCKED_BY_SNAPSHOT, "no snapshot committed yet")
    assert pinned(judge(rule, state(latest_snapshot_id=1))) == 1
    assert SnapshotRequired.of(member(snapshotRequired=False)) is None


def test_min_snapshot_id_blocks_below_the_floor_and_blames_quality_when_only_the_passing_one_is_below() -> None:
    rule = MinSnapshotId.of(member(minSnapshotId=100))
    assert judge(rule, state(latest_snapshot_id=99)) == Blocked(
        Status.BLOCKED_BY_SNAPSHOT, "snapshot 99 is below minSnapshotId 100"
    )
    assert pinned(judge(rule, state(latest_snapshot_id=100))) == 100
    gated = MinSnapshotId.of(member(minSnapshotId=100, qualityStatus="PASSED"))
    assert gated is not None
    s = state(latest_snapshot_id=101)
    assert gated.evaluate(s, Chosen(98, 98, None)) == Blocked(
        Status.BLOCKED_BY_QUALITY,
        "snapshot 101 reached minSnapshotId 100, but the newest snapshot that passed its quality check is 98",
    )


def test_schema_compatible_blocks_a_schema_change_awaiting_approval() -> None:
    rule = SchemaCompatible.of(member(schemaStatus="COMPATIBLE"))
    changed = state(latest_snapshot_id=5, latest_schema_id=2, first_schema_id=1)
    assert judge(rule, changed) == Blocked(Status.BLOCKED_BY_SCHEMA, "schema 2 is PENDING_APPROVAL")
    assert pinned(judge(rule, changed.model_copy(update={"schema_approved_id": 2}))) == 5


def test_tagged_snapshot_blocks_until_the_tag_exists_then_pins_the_snapshot_it_names() -> None:
    rule = TaggedSnapshot.of(member(tag="v1"))
    assert judge(rule, state(latest_snapshot_id=9)) == Blocked(Status.BLOCKED_BY_TAG, "tag 'v1' does not exist yet")
    tagged = state(latest_snapshot_id=9, tags={"v1"}, tag_refs={"4::v1"})
    chosen = judge(rule, tagged)
    assert isinstance(chosen, Chosen) and (chosen.snapshot_id, chosen.order) == (4, 4)
    # Iceberg's ids are random: without a known order the id is not taken for one
    iceberg = judge(TaggedSnapshot.of(member(ICEBERG, tag="v1")), tagged.model_copy(update={"asset_key": ICEBERG}))
    assert isinstance(iceberg, Chosen) and (iceberg.snapshot_id, iceberg.order) == (4, None)


def test_manifest_sealed_blocks_until_verified_and_names_an_interruption() -> None:
    rule = ManifestSealed.of(member(SPOOL, manifest="SEALED"))
    uri = "s3://spool/orders/_manifest.json"
    assert judge(rule, state(SPOOL)) == Blocked(
        Status.BLOCKED_BY_MANIFEST, "no spool manifest has been reported for this asset"
    )
    assert judge(rule, state(SPOOL, manifest_uri=uri, manifest_status="PENDING")) == Blocked(
        Status.BLOCKED_BY_MANIFEST, f"manifest {uri} is PENDING: it counts once verified"
    )
    interrupted = judge(rule, state(SPOOL, manifest_uri=uri, manifest_status="INTERRUPTED"))
    assert isinstance(interrupted, Blocked) and "INTERRUPTED: the extract stopped part way" in interrupted.reason
    assert isinstance(judge(rule, state(SPOOL, manifest_uri=uri, manifest_status="SEALED")), Chosen)


def test_backfill_completed_waits_for_the_running_backfill() -> None:
    rule = BackfillCompleted.of(member(backfillStatus="COMPLETED"))
    assert judge(rule, state(latest_snapshot_id=1)) == Blocked(
        Status.BLOCKED_BY_BACKFILL, "no backfill has completed yet"
    )
    running = state(latest_snapshot_id=1, backfill_id="bf-7", backfill_status=BackfillStatus.RUNNING)
    assert judge(rule, running) == Blocked(
        Status.BLOCKED_BY_BACKFILL, "backfill bf-7 is running; waiting for it to complete"
    )
    done = running.model_copy(update={"backfill_status": BackfillStatus.COMPLETED})
    assert pinned(judge(rule, done)) == 1


def test_cdc_recovered_to_an_instant_says_what_the_source_caught_up_to_and_what_it_needs() -> None:
    rule = CdcRecoveredAtLeast.of(member(cdcRecoveredTo="2025-06-01T10:00:00Z"))
    assert judge(rule, state(latest_snapshot_id=1)) == Blocked(
        Status.BLOCKED_BY_CDC_LAG, "no CDC_LAG_RECOVERED reported yet; needs 2025-06-01T10:00:00Z"
    )
    behind = state(latest_snapshot_id=1, cdc_recovered_watermark=1_748_771_000_000)  # 09:43:20
    assert judge(rule, behind) == Blocked(
        Status.BLOCKED_BY_CDC_LAG, "the CDC source caught up to 2025-06-01T09:43:20Z; needs 2025-06-01T10:00:00Z"
    )
    assert pinned(judge(rule, state(latest_snapshot_id=1, cdc_recovered_watermark=1_748_772_000_000))) == 1
    window = CdcRecoveredWindow.of(member(cdcRecoveredTo="window"))
    assert isinstance(judge(window, state(latest_snapshot_id=1)), Blocked)
    assert pinned(judge(window, state(latest_snapshot_id=1, cdc_recovered_watermark=5))) == 1


def test_watermark_at_least_an_instant_says_what_it_has_and_needs() -> None:
    rule = WatermarkAtLeast.of(member(watermarkAtLeast="2025-06-01T10:00:00Z"))
    assert judge(rule, state()) == Blocked(Status.BLOCKED_BY_WATERMARK, "no watermark yet; needs 2025-06-01T10:00:00Z")
    early = state(latest_watermark=1_748_771_000_000)  # 09:43:20
    assert judge(rule, early) == Blocked(
        Status.BLOCKED_BY_WATERMARK, "watermark 2025-06-01T09:43:20Z; needs 2025-06-01T10:00:00Z"
    )
    assert isinstance(judge(rule, state(latest_snapshot_watermark=1_748_772_000_000)), Chosen)


def test_watermark_window_needs_a_watermark() -> None:
    rule = WatermarkWindow.of(member(watermarkAtLeast={"window": "PT1H"}))
    assert judge(rule, state(latest_snapshot_id=1)) == Blocked(Status.BLOCKED_BY_WATERMARK, "no watermark yet")
    assert pinned(judge(rule, state(latest_snapshot_id=1, latest_watermark=0))) == 1
    assert WatermarkWindow.of(member(watermarkAtLeast=5)) is None


def test_a_member_gets_only_the_rules_its_condition_asks_for_in_precedence_order() -> None:
    kinds = [type(r).__name__ for r in conditions_of(member(qualityStatus="PASSED", tag="v1", minSnapshotId=3))]
    assert kinds == ["DataChange", "QualityPassed", "SnapshotRequired", "MinSnapshotId", "TaggedSnapshot"]
    spooled = [type(r).__name__ for r in conditions_of(member(SPOOL, manifest="SEALED", includeCompaction=True))]
    assert spooled == ["SpooledSnapshot", "ManifestSealed"]


def test_a_member_failing_several_conditions_shows_the_first_in_precedence_order() -> None:
    s = state(latest_snapshot_id=5, latest_schema_id=2, first_schema_id=1, quality_failed_snapshot_id=5)
    both = member(qualityStatus="PASSED", schemaStatus="COMPATIBLE", tag="v1", backfillStatus="COMPLETED")
    assert select_member(both, s).status is Status.BLOCKED_BY_QUALITY
    passed = s.model_copy(update={"quality_passed_snapshot_id": 5, "quality_failed_snapshot_id": None})
    assert select_member(both, passed).status is Status.BLOCKED_BY_SCHEMA
    approved = passed.model_copy(update={"schema_approved_id": 2})
    assert (select_member(both, approved).status, select_member(both, approved).reason) == (
        Status.BLOCKED_BY_TAG,
        "tag 'v1' does not exist yet",
    )
    tagged = approved.model_copy(update={"tags": {"v1"}, "tag_refs": {"5::v1"}})
    assert select_member(both, tagged).reason == "no backfill has completed yet"


def test_data_change_takes_a_snapshots_no_data_flag_over_its_commit_kind() -> None:
    data = SnapshotRecord(snapshot_id=7, order=7, commit_kind="WRITE")
    rule = DataChange.of(member("delta://lake/ods/a"))
    # a Delta WRITE whose files all say dataChange=false (a repartition) changed no data
    quiet = state(
        "delta://lake/ods/a",
        latest_snapshot_id=8,
        latest_commit_kind="WRITE",
        latest_data_changed=False,
        latest_data=data,
    )
    assert pinned(judge(rule, quiet)) == 7
    assert rule is not None and rule.shows(quiet) == {"dataSnapshotId": 7}
    loud = quiet.model_copy(update={"latest_data_changed": True})
    assert pinned(judge(rule, loud)) == 8 and rule.shows(loud) == {}
    # only a "no" outweighs the kind: an OPTIMIZE is a compaction whatever else is said of it
    compaction = quiet.model_copy(update={"latest_commit_kind": "OPTIMIZE", "latest_data_changed": True})
    assert pinned(judge(rule, compaction)) == 7


def test_data_change_pins_nothing_while_no_snapshot_has_changed_data() -> None:
    created = state(
        "delta://lake/ods/a",
        latest_snapshot_id=1,
        latest_commit_kind="SET TBLPROPERTIES",
        latest_data_changed=False,
        seen_from_start=True,
    )
    assert judge(DataChange.of(member("delta://lake/ods/a")), created) == Blocked(
        Status.BLOCKED_BY_SNAPSHOT, "no snapshot has changed data yet (snapshot 1 changed none)"
    )
    assert select_member(member("delta://lake/ods/a", includeCompaction=True), created).status is Status.READY


@pytest.mark.parametrize("seen_from_start", [False, None])
@pytest.mark.parametrize(
    ("asset_key", "kind"),
    [
        ("delta://lake/ods/a", "OPTIMIZE"),
        ("iceberg://lake/ods/a", "REPLACE"),
        ("paimon://lake/ods/a", "COMPACT"),
        ("hudi://lake/ods/a", "CLUSTER"),
    ],
)
def test_data_change_never_pins_a_compaction_seen_first(
    seen_from_start: bool | None, asset_key: str, kind: str
) -> None:
    """Issue 33: a first poll took only the newest snapshot, a compaction of data written before. It changed no data,
    first seen or not: the member waits for the next data commit (one that asks for compactions pins it)."""
    registered = state(
        asset_key,
        latest_snapshot_id=2,
        latest_commit_kind=kind,
        latest_data_changed=False,
        seen_from_start=seen_from_start,
    )
    blocked = judge(DataChange.of(member(asset_key)), registered)
    assert isinstance(blocked, Blocked) and blocked.status is Status.BLOCKED_BY_SNAPSHOT
    assert f"snapshot 2 ({kind}) changed no data" in blocked.reason
    assert select_member(member(asset_key), registered).pin is None
    assert select_member(member(asset_key, includeCompaction=True), registered).status is Status.READY
