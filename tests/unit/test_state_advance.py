"""Advance-only asset state: each event type's guard, through the in-memory store, and derived statuses."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lakehook.adapters.dynamodb.state_items import asset_state_from_item
from lakehook.answers.assets import AssetStateAnswer
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.state import (
    AssetState,
    BackfillStatus,
    SchemaStatus,
    tag_ref,
    verdict_touch,
    verification_advance,
)
from lakehook.domain.versions import SnapshotRecord, Verdict
from lakehook.ports import AdvanceOutcome
from lakehook.usecases.ingest_state import advance_state, apply_change
from tests.fakes.memory import InMemoryAssetStore

ORDERS = "paimon://lake/ods_db/ods_order_latest"


def ev(event_type: EventType, **fields: Any) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": event_type.value, "assetKey": ORDERS, **fields})


def snap(sid: int, **fields: Any) -> AssetEvent:
    return ev(EventType.SNAPSHOT_COMMITTED, snapshotId=sid, **fields)


class Asset:
    """One asset on an in-memory store: record and apply events as the ingest path does, read the state."""

    def __init__(self) -> None:
        self.store = InMemoryAssetStore()
        self.clock = 0

    def apply(self, *events: AssetEvent) -> list[AdvanceOutcome]:
        outcomes = []
        for event in events:
            self.clock += 1
            recording = self.store.record_event(event, SourceType.PUSH, self.clock)
            outcomes.append(advance_state(self.store, event, self.clock, recorded_at=recording.received_at))
        return outcomes

    @property
    def state(self) -> AssetState:
        state = self.store.get_state(ORDERS)
        assert state is not None
        return state


@pytest.fixture
def asset() -> Asset:
    return Asset()


def test_no_state_until_an_event_moves_it(asset: Asset) -> None:
    assert asset.store.get_state(ORDERS) is None
    assert asset.apply(snap(1)) == [AdvanceOutcome.ADVANCED]
    assert asset.store.get_state(ORDERS) is not None


def test_an_interval_touches_the_state_once_per_event_so_the_resolver_wakes(asset: Asset) -> None:
    first = ev(EventType.INTERVAL_COVERED, interval={"start": 0, "end": 1000})
    second = ev(EventType.INTERVAL_COVERED, interval={"start": 1000, "end": 2000})
    assert asset.apply(first, first, second) == [
        AdvanceOutcome.ADVANCED,
        AdvanceOutcome.ALREADY,
        AdvanceOutcome.ADVANCED,
    ]
    assert (asset.state.last_coverage_start, asset.state.last_coverage_end, asset.state.version) == (1000, 2000, 2)


def test_snapshots_advance_only_forward(asset: Asset) -> None:
    outcomes = asset.apply(
        snap(5, schemaId=1, commitTime=500, commitKind="APPEND"),
        snap(3, schemaId=0, commitTime=300),  # late
        snap(5),  # a racing twin of 5
        snap(8, commitTime=800, parentSnapshotId=5),
    )
    assert outcomes == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE, AdvanceOutcome.ALREADY, AdvanceOutcome.ADVANCED]
    state = asset.state
    assert (state.latest_snapshot_id, state.latest_commit_time, state.latest_parent_snapshot_id) == (8, 800, 5)
    assert state.latest_schema_id == 1  # 8 named no schema: the last known one stays
    assert state.latest_commit_kind == "APPEND"
    assert state.version == 2  # only real advances bump the counter
    assert state.updated_at == 4 and state.last_event_id == snap(8).event_id


def test_watermarks_advance_only_forward_and_the_newest_of_both_kinds_counts(asset: Asset) -> None:
    outcomes = asset.apply(
        ev(EventType.WATERMARK_ADVANCED, watermark=2000),
        ev(EventType.WATERMARK_ADVANCED, watermark=1000),
        snap(1, watermark=2500),
    )
    assert outcomes == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE, AdvanceOutcome.ADVANCED]
    assert (asset.state.latest_watermark, asset.state.latest_snapshot_watermark) == (2000, 2500)
    assert asset.state.watermark == 2500
    asset.apply(ev(EventType.WATERMARK_ADVANCED, watermark=3000))
    assert asset.state.watermark == 3000


def test_cdc_recovery_watermark_is_kept_apart(asset: Asset) -> None:
    asset.apply(ev(EventType.CDC_LAG_RECOVERED, watermark=50), ev(EventType.CDC_LAG_RECOVERED, watermark=40))
    assert asset.state.cdc_recovered_watermark == 50
    assert asset.state.watermark is None


def test_cdc_recovery_advances_only_forward(asset: Asset) -> None:
    outcomes = asset.apply(*(ev(EventType.CDC_LAG_RECOVERED, watermark=w) for w in (50, 40, 50, 60)))
    assert outcomes == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE, AdvanceOutcome.ALREADY, AdvanceOutcome.ADVANCED]
    assert asset.state.cdc_recovered_watermark == 60


# --- quality: verdicts per snapshot, status of the latest --------------------------------------


def test_quality_is_unknown_until_the_latest_snapshot_is_checked(asset: Asset) -> None:
    asset.apply(snap(1))
    assert asset.state.quality_status == "UNKNOWN"
    asset.apply(ev(EventType.QUALITY_CHECK_PASSED, snapshotId=1))
    assert asset.state.quality_status == "PASSED"
    asset.apply(snap(2))
    assert asset.state.quality_status == "UNKNOWN"  # a PASSED for 1 says nothing about 2
    assert asset.state.quality_passed_snapshot_id == 1  # but the verdict for 1 is kept


def test_failed_latest_snapshot_wins_and_older_verdicts_never_overwrite(asset: Asset) -> None:
    outcomes = asset.apply(
        snap(2),
        ev(EventType.QUALITY_CHECK_FAILED, snapshotId=2),
        ev(EventType.QUALITY_CHECK_PASSED, snapshotId=1),
        ev(EventType.QUALITY_CHECK_FAILED, snapshotId=1),  # late: older than the FAILED for 2
    )
    assert outcomes[-1] is AdvanceOutcome.STALE
    state = asset.state
    assert (state.quality_passed_snapshot_id, state.quality_failed_snapshot_id) == (1, 2)
    assert state.quality_status == "FAILED"


def test_a_verdict_may_arrive_before_its_snapshot(asset: Asset) -> None:
    asset.apply(ev(EventType.QUALITY_CHECK_PASSED, snapshotId=7))
    assert asset.state.quality_status == "UNKNOWN"
    asset.apply(snap(7))
    assert asset.state.quality_status == "PASSED"


# --- schema status --------------------------------------------------------------------------


def test_schema_unknown_without_a_schema_id(asset: Asset) -> None:
    asset.apply(snap(1))
    assert asset.state.schema_status is SchemaStatus.UNKNOWN


def test_first_schema_is_compatible_and_a_new_one_waits_for_approval(asset: Asset) -> None:
    asset.apply(snap(1, schemaId=0))
    assert asset.state.schema_status is SchemaStatus.COMPATIBLE
    asset.apply(snap(2, schemaId=1))
    assert asset.state.schema_status is SchemaStatus.PENDING_APPROVAL
    asset.apply(ev(EventType.SCHEMA_CHANGE_APPROVED, schemaId=1))
    assert asset.state.schema_status is SchemaStatus.COMPATIBLE
    asset.apply(snap(3, schemaId=2))
    assert asset.state.schema_status is SchemaStatus.PENDING_APPROVAL


def test_rejection_and_a_later_approval_of_the_same_schema(asset: Asset) -> None:
    asset.apply(snap(1, schemaId=3), snap(2, schemaId=4), ev(EventType.SCHEMA_CHANGE_REJECTED, schemaId=4))
    assert asset.state.schema_status is SchemaStatus.REJECTED
    asset.apply(ev(EventType.SCHEMA_CHANGE_APPROVED, schemaId=4))
    assert asset.state.schema_status is SchemaStatus.COMPATIBLE


def test_schema_id_zero_is_a_real_schema(asset: Asset) -> None:
    # Iceberg and Paimon number the first schema 0: a falsy id must count like any other.
    asset.apply(snap(1, schemaId=0), ev(EventType.SCHEMA_CHANGE_REJECTED, schemaId=0))
    assert asset.state.schema_status is SchemaStatus.REJECTED
    asset.apply(ev(EventType.SCHEMA_CHANGE_APPROVED, schemaId=0))
    assert asset.state.schema_status is SchemaStatus.COMPATIBLE


def test_a_rejection_of_an_older_schema_does_not_block_the_latest(asset: Asset) -> None:
    asset.apply(
        snap(1, schemaId=1),
        ev(EventType.SCHEMA_CHANGE_REJECTED, schemaId=1),
        ev(EventType.SCHEMA_CHANGE_APPROVED, schemaId=2),
        snap(2, schemaId=2),
    )
    assert asset.state.schema_status is SchemaStatus.COMPATIBLE


# --- tags, backfill, manifests ---------------------------------------------------------------


def test_a_data_snapshot_arriving_after_a_newer_compaction_is_still_the_newest_data_change(asset: Asset) -> None:
    outcomes = asset.apply(snap(3), snap(5, commitKind="COMPACT"), snap(4), snap(2))
    assert outcomes == [AdvanceOutcome.ADVANCED, AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE, AdvanceOutcome.STALE]
    state = asset.state
    assert (state.latest_snapshot_id, state.latest_data_changed) == (5, False)
    assert state.latest_data is not None and state.latest_data.snapshot_id == 4  # 2 is older still: not taken


def test_the_newest_data_change_keeps_what_its_event_said_of_its_snapshot(asset: Asset) -> None:
    asset.apply(snap(7, schemaId=2, commitTime=700, metadataLocation="s3://m/7.json", watermark=70, parentSnapshotId=6))
    data = asset.state.latest_data
    assert data is not None
    assert (data.snapshot_id, data.order, data.parent_snapshot_id, data.schema_id, data.commit_time) == (
        7,
        7,
        6,
        2,
        700,
    )
    assert (data.metadata_location, data.watermark) == ("s3://m/7.json", 70)
    assert asset.state.first_schema_id == 2


def test_schema_verdicts_advance_only_forward(asset: Asset) -> None:
    approvals = (ev(EventType.SCHEMA_CHANGE_APPROVED, schemaId=s) for s in (3, 2, 4))
    assert asset.apply(*approvals) == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE, AdvanceOutcome.ADVANCED]
    assert asset.state.schema_approved_id == 4


def test_a_late_verdict_touches_the_state_once_so_the_resolver_wakes(asset: Asset) -> None:
    asset.apply(snap(5), ev(EventType.QUALITY_CHECK_PASSED, snapshotId=5))
    late = ev(EventType.QUALITY_CHECK_PASSED, snapshotId=3)
    version = asset.state.version
    assert apply_change(asset.store, ORDERS, verdict_touch(late), late.event_id, 10) is AdvanceOutcome.ADVANCED
    assert apply_change(asset.store, ORDERS, verdict_touch(late), late.event_id, 11) is AdvanceOutcome.ALREADY
    assert asset.state.version == version + 1 and asset.state.quality_passed_snapshot_id == 5


def test_the_latest_tag_is_the_newest_by_time_and_a_tag_names_its_snapshot_and_order(asset: Asset) -> None:
    asset.apply(
        ev(EventType.TAG_CREATED, tag="b", snapshotId=104, commitTime=1000),
        ev(EventType.TAG_CREATED, tag="a", snapshotId=105, commitTime=2000),  # newer, though it sorts first
        ev(EventType.TAG_CREATED, tag="rel:1", snapshotId=106, commitTime=500),
    )
    state = asset.state
    assert (state.latest_tag, state.latest_tag_snapshot_id) == ("a", 105)
    assert [state.tag_snapshot(t) for t in ("b", "a", "rel:1", "c")] == [(104, 104), (105, 105), (106, 106), None]


def test_a_tag_ref_is_stored_as_snapshot_order_and_tag_the_order_empty_when_unknown() -> None:
    assert (tag_ref("t", 7, None), tag_ref("u:v", 8, 3)) == ("7::t", "8:3:u:v")
    state = AssetState(asset_key=ORDERS, tag_refs={"7::t", "8:3:u:v"})
    assert (state.tag_snapshot("t"), state.tag_snapshot("u:v")) == ((7, None), (8, 3))


def test_a_snapshots_quality_is_the_states_only_while_no_newer_snapshot_failed() -> None:
    five = SnapshotRecord(snapshot_id=105, order=5)

    def state(**verdicts: int) -> AssetState:
        return AssetState(asset_key=ORDERS, quality_passed_snapshot_id=105, **verdicts)

    assert state().quality_of(five) is Verdict.PASSED
    assert state(quality_failed_snapshot_id=103, quality_failed_order=3).quality_of(five) is Verdict.PASSED
    assert state(quality_failed_snapshot_id=3, quality_failed_order=7).quality_of(five) is None  # by order, not id
    assert state(quality_failed_snapshot_id=3).quality_of(five) is Verdict.PASSED  # no order stored: the id's
    assert state(quality_failed_snapshot_id=9).quality_of(five) is None
    assert state(quality_failed_snapshot_id=105).quality_of(five) is Verdict.FAILED


def test_tags_accumulate_once_each(asset: Asset) -> None:
    outcomes = asset.apply(
        ev(EventType.TAG_CREATED, tag="2025-06-01", snapshotId=3),
        ev(EventType.TAG_CREATED, tag="2025-06-02", snapshotId=4),
        ev(EventType.TAG_CREATED, tag="2025-06-01", snapshotId=3),
    )
    assert outcomes == [AdvanceOutcome.ADVANCED, AdvanceOutcome.ADVANCED, AdvanceOutcome.ALREADY]
    assert asset.state.tags == {"2025-06-01", "2025-06-02"}
    assert (asset.state.latest_tag, asset.state.latest_tag_snapshot_id) == ("2025-06-02", 4)
    assert AssetStateAnswer.from_domain(asset.state, registered=True).dump()["tags"] == ["2025-06-01", "2025-06-02"]


def test_backfill_runs_then_completes(asset: Asset) -> None:
    asset.apply(ev(EventType.BACKFILL_STARTED, backfillId="bf-1"))
    assert (asset.state.backfill_id, asset.state.backfill_status) == ("bf-1", BackfillStatus.RUNNING)
    assert asset.apply(ev(EventType.BACKFILL_COMPLETED, backfillId="bf-1")) == [AdvanceOutcome.ADVANCED]
    assert asset.state.backfill_status is BackfillStatus.COMPLETED


def test_a_redelivered_backfill_start_is_already_applied(asset: Asset) -> None:
    start = ev(EventType.BACKFILL_STARTED, backfillId="bf-1")
    assert asset.apply(start, start) == [AdvanceOutcome.ADVANCED, AdvanceOutcome.ALREADY]
    assert asset.state.version == 1


def test_a_late_backfill_start_never_reopens_it_and_is_stale(asset: Asset) -> None:
    asset.apply(ev(EventType.BACKFILL_COMPLETED, backfillId="bf-1"))
    # The state does not take RUNNING, so the answer is STALE (it once said ALREADY, i.e. ACCEPTED).
    assert asset.apply(ev(EventType.BACKFILL_STARTED, backfillId="bf-1")) == [AdvanceOutcome.STALE]
    assert asset.state.backfill_status is BackfillStatus.COMPLETED
    assert asset.apply(ev(EventType.BACKFILL_COMPLETED, backfillId="bf-1")) == [AdvanceOutcome.ALREADY]


def test_a_redelivered_completion_of_an_older_backfill_never_rolls_back_a_running_one(asset: Asset) -> None:
    bf1_done = ev(EventType.BACKFILL_COMPLETED, backfillId="bf-1")
    outcomes = asset.apply(ev(EventType.BACKFILL_STARTED, backfillId="bf-1"), bf1_done)
    outcomes += asset.apply(ev(EventType.BACKFILL_STARTED, backfillId="bf-2"), bf1_done)
    assert outcomes[-1] is AdvanceOutcome.ALREADY
    assert (asset.state.backfill_status, asset.state.backfill_id) == (BackfillStatus.RUNNING, "bf-2")
    asset.apply(ev(EventType.BACKFILL_COMPLETED, backfillId="bf-2"))
    # once none runs, the id names every completed backfill, so a rule's cursor sees the second complete
    assert (asset.state.backfill_status, asset.state.backfill_id) == (BackfillStatus.COMPLETED, "bf-2 and 1 more")


def test_a_completion_that_overtakes_its_start_leaves_nothing_running(asset: Asset) -> None:
    assert asset.apply(
        ev(EventType.BACKFILL_COMPLETED, backfillId="bf-1"), ev(EventType.BACKFILL_STARTED, backfillId="bf-1")
    ) == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE]
    assert asset.state.backfill_status is BackfillStatus.COMPLETED


def test_a_state_written_before_the_backfill_sets_keeps_its_backfill() -> None:
    legacy = {"backfillId": "bf-1", "backfillStatus": "RUNNING", "backfillsCompleted": {"bf-0"}}
    state = asset_state_from_item(ORDERS, legacy)
    assert (state.backfill_status, state.backfill_id) == (BackfillStatus.RUNNING, "bf-1")


def test_a_redelivered_older_manifest_never_replaces_the_newer_one(asset: Asset) -> None:
    old, new = "s3://spool/orders/1.manifest.json", "s3://spool/orders/2.manifest.json"
    sealed_old = ev(EventType.MANIFEST_SEALED, manifestUri=old, snapshotId=1)
    asset.apply(sealed_old, ev(EventType.MANIFEST_INTERRUPTED, manifestUri=new, snapshotId=2))
    assert asset.apply(sealed_old) == [AdvanceOutcome.STALE]  # recorded first, so older: no-op
    state = asset.state
    assert (state.manifest_uri, state.manifest_status, state.manifest_snapshot_id) == (new, "INTERRUPTED", 2)


def test_a_late_manifest_is_ordered_by_its_own_time(asset: Asset) -> None:
    old, new = "s3://spool/orders/1.manifest.json", "s3://spool/orders/2.manifest.json"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=new, commitTime=2000))
    # first recorded now, but created before the current one: it never becomes current
    assert asset.apply(ev(EventType.MANIFEST_INTERRUPTED, manifestUri=old, commitTime=1000)) == [AdvanceOutcome.STALE]
    assert (asset.state.manifest_uri, asset.state.manifest_status) == (new, "PENDING")


def test_a_late_tag_joins_the_tags_without_becoming_the_latest(asset: Asset) -> None:
    asset.apply(ev(EventType.TAG_CREATED, tag="2025-06-02", snapshotId=4, commitTime=2000))
    assert asset.apply(ev(EventType.TAG_CREATED, tag="2025-06-01", snapshotId=3, commitTime=1000)) == [
        AdvanceOutcome.ADVANCED
    ]
    assert asset.state.tags == {"2025-06-01", "2025-06-02"}
    assert (asset.state.latest_tag, asset.state.latest_tag_snapshot_id) == ("2025-06-02", 4)


def test_manifest_status_follows_the_manifest_and_counts_once_verified(asset: Asset) -> None:
    uri = "s3://spool/orders/_manifest.json"
    asset.apply(ev(EventType.MANIFEST_INTERRUPTED, manifestUri=uri))
    assert asset.state.manifest_status == "INTERRUPTED"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri, snapshotId=9))
    assert (asset.state.manifest_status, asset.state.manifest_snapshot_id) == ("PENDING", 9)
    assert apply_change(asset.store, ORDERS, verification_advance(uri, True), "v", 10) is AdvanceOutcome.ADVANCED
    assert asset.state.manifest_status == "SEALED"
    assert apply_change(asset.store, ORDERS, verification_advance(uri, True), "v", 11) is AdvanceOutcome.ALREADY
    assert asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri)) == [AdvanceOutcome.ALREADY]
    assert asset.state.manifest_status == "SEALED"  # a redelivered claim does not re-open a verified manifest


def test_a_verdict_on_an_older_manifest_never_overwrites_a_newer_one(asset: Asset) -> None:
    old, new = "s3://spool/orders/1.manifest.json", "s3://spool/orders/2.manifest.json"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=old), ev(EventType.MANIFEST_SEALED, manifestUri=new))
    late = verification_advance(old, False, "part-0: the object does not exist", "s3://spool/orders/1/part-0")
    assert apply_change(asset.store, ORDERS, late, "v", 10) is AdvanceOutcome.STALE
    assert (asset.state.manifest_uri, asset.state.manifest_status) == (new, "PENDING")
    bad = verification_advance(new, False, "part-0: the object does not exist", "s3://spool/orders/2/part-0")
    assert apply_change(asset.store, ORDERS, bad, "v", 11) is AdvanceOutcome.ADVANCED
    state = asset.state
    assert (state.manifest_status, state.manifest_object) == ("INVALID", "s3://spool/orders/2/part-0")
    assert state.manifest_reason == "part-0: the object does not exist"


@pytest.mark.parametrize("interruption_first", [False, True])
def test_an_interruption_outranks_a_seal_of_the_same_instant_whichever_comes_first(
    asset: Asset, interruption_first: bool
) -> None:
    sealed = ev(EventType.MANIFEST_SEALED, manifestUri="s3://spool/orders/1.manifest.json", commitTime=5000)
    interrupted = ev(EventType.MANIFEST_INTERRUPTED, manifestUri="s3://spool/orders/2.manifest.json", commitTime=5000)
    first, second = (interrupted, sealed) if interruption_first else (sealed, interrupted)
    outcomes = asset.apply(first, second)
    assert outcomes[1] is (AdvanceOutcome.STALE if interruption_first else AdvanceOutcome.ADVANCED)
    assert (asset.state.manifest_uri, asset.state.manifest_status) == (interrupted.manifest_uri, "INTERRUPTED")


def test_a_verified_manifest_keeps_the_hash_verified_and_a_rewrite_verified_again_moves_it(asset: Asset) -> None:
    uri = "s3://spool/orders/_manifest.json"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri, snapshotId=9))
    first, second = "a" * 64, "b" * 64
    # a verdict SEALED says nothing of a reason or an object, whatever the verifier passed along
    sealed = verification_advance(uri, True, "ignored", "s3://spool/orders/part-0", first)
    assert apply_change(asset.store, ORDERS, sealed, "v", 10) is AdvanceOutcome.ADVANCED
    state = asset.state
    assert (state.manifest_status, state.manifest_sha256, state.manifest_reason, state.manifest_object) == (
        "SEALED",
        first,
        None,
        None,
    )
    assert apply_change(asset.store, ORDERS, sealed, "v", 11) is AdvanceOutcome.ALREADY
    rewritten = verification_advance(uri, True, sha256=second)  # the same URI rewritten, verified again
    assert apply_change(asset.store, ORDERS, rewritten, "v", 12) is AdvanceOutcome.ADVANCED
    assert (asset.state.manifest_status, asset.state.manifest_sha256) == ("SEALED", second)


def test_an_invalid_manifest_keeps_no_hash_and_says_why_in_at_most_2048_characters(asset: Asset) -> None:
    uri = "s3://spool/orders/_manifest.json"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri))
    invalid = verification_advance(uri, False, "x" * 3000, "s3://spool/orders/part-0", "c" * 64)
    assert apply_change(asset.store, ORDERS, invalid, "v", 10) is AdvanceOutcome.ADVANCED
    state = asset.state
    assert (state.manifest_status, state.manifest_sha256, state.manifest_object) == (
        "INVALID",
        None,
        "s3://spool/orders/part-0",
    )
    assert state.manifest_reason == "x" * 2048
    assert apply_change(asset.store, ORDERS, invalid, "v", 11) is AdvanceOutcome.ALREADY  # a redelivered verdict
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri, commitTime=10_000))  # sealed again, no reason given
    assert apply_change(asset.store, ORDERS, verification_advance(uri, False), "v", 12) is AdvanceOutcome.ADVANCED
    assert (asset.state.manifest_reason, asset.state.manifest_object) == ("it failed verification", None)


# --- the read model --------------------------------------------------------------------------


def test_state_reads_stored_decimals_and_sets() -> None:
    item = {
        "PK": "ASSET#x",
        "SK": "STATE",
        "latestSnapshotId": Decimal(42),
        "version": Decimal(3),
        "tags": {"a", "b"},
        "latestWatermark": Decimal("1700000000000"),
        "itemType": "STATE",
        "updatedAt": Decimal(1748772300250),
        "backfillStatus": "RUNNING",
    }
    state = asset_state_from_item(ORDERS, item)
    assert (state.latest_snapshot_id, state.version, state.watermark) == (42, 3, 1700000000000)
    assert state.backfill_status is BackfillStatus.RUNNING
    api = AssetStateAnswer.from_domain(state, registered=True).dump()
    assert api["assetKey"] == ORDERS and api["tags"] == ["a", "b"]
    assert api["updatedAt"] == "2025-06-01T10:05:00.250Z"
    assert (api["schemaStatus"], api["qualityStatus"]) == ("UNKNOWN", "UNKNOWN")
    assert "PK" not in api and "itemType" not in api


@pytest.mark.parametrize(
    ("kind", "data_changed", "changes"),
    [
        ("WRITE", False, False),  # Delta: named WRITE, but its files all say dataChange=false
        ("SET TBLPROPERTIES", False, False),
        ("OPTIMIZE", True, False),  # only a "no" is news: a "yes" leaves it to the kind, a compaction
        ("WRITE", True, True),
        ("COMPACT", None, False),  # no word from the format: the kind decides
        (None, None, True),
    ],
)
def test_a_snapshots_no_data_flag_decides_over_its_kind(
    asset: Asset, kind: str | None, data_changed: bool | None, changes: bool
) -> None:
    asset.apply(snap(1, commitKind="APPEND"), snap(2, commitKind=kind, dataChanged=data_changed))
    state = asset.state
    assert state.latest_data_changed is changes and state.latest_record is not None
    assert state.latest_record.changes_data is changes
    assert state.latest_data is not None and state.latest_data.snapshot_id == (2 if changes else 1)


@pytest.mark.parametrize(
    ("key", "first", "seen"),
    [
        ("delta://lake/ods/t", {"snapshotId": 0}, True),
        ("delta://lake/ods/t", {"snapshotId": 3, "parentSnapshotId": 2}, False),
        ("paimon://lake/ods/t", {"snapshotId": 1}, True),
        ("iceberg://lake/ods/t", {"snapshotId": 77, "sequenceNumber": 1}, True),
        ("iceberg://lake/ods/t", {"snapshotId": 78, "sequenceNumber": 2, "parentSnapshotId": 77}, False),
        ("hudi://lake/ods/t", {"snapshotId": 1}, False),
    ],
)
def test_the_state_knows_whether_its_first_snapshot_was_the_tables_first(
    key: str, first: dict[str, Any], seen: bool
) -> None:
    store = InMemoryAssetStore()
    sid = first["snapshotId"]
    later = {"snapshotId": sid + 1, "sequenceNumber": first.get("sequenceNumber", 0) + 1, "parentSnapshotId": sid}
    for at, fields in enumerate((first, later), start=1):
        event = ev(EventType.SNAPSHOT_COMMITTED, assetKey=key, commitKind="WRITE", dataChanged=False, **fields)
        store.record_event(event, SourceType.PUSH, at)
        assert advance_state(store, event, at, recorded_at=at) is AdvanceOutcome.ADVANCED
    state = store.get_state(key)
    assert state is not None and state.latest_snapshot_id == sid + 1
    assert state.seen_from_start is seen  # the first snapshot recorded decides; a later one leaves it


def test_a_later_snapshot_never_inherits_an_older_ones_no_data_flag(asset: Asset) -> None:
    asset.apply(snap(1, commitKind="WRITE", dataChanged=False), snap(2, commitKind="WRITE"))
    assert asset.state.latest_data_changed is True and asset.state.latest_record is not None
    assert asset.state.latest_record.changes_data and asset.state.latest_data is not None
    assert asset.state.latest_data.snapshot_id == 2


def test_a_compaction_older_than_the_newest_snapshot_is_stale_and_changes_nothing(asset: Asset) -> None:
    """A snapshot that changes no data has no late part to apply (make mutation: ``late = ""`` in
    _snapshot_committed, which the ingest path then tried to apply)."""
    assert asset.apply(snap(5), snap(3, commitKind="COMPACT")) == [AdvanceOutcome.ADVANCED, AdvanceOutcome.STALE]
    state = asset.state
    assert (state.latest_snapshot_id, state.latest_data_changed) == (5, True)
    assert state.latest_data is not None and state.latest_data.snapshot_id == 5


def test_a_snapshot_without_a_schema_leaves_the_first_schema_to_a_later_one(asset: Asset) -> None:
    """The first schema id is the first one a snapshot names, not a null from an earlier snapshot that named none
    (make mutation: _snapshot_committed setting the first schema id whatever the event said)."""
    asset.apply(snap(1), snap(2, schemaId=4), snap(3, schemaId=5))
    assert asset.state.first_schema_id == 4


def test_one_manifest_announced_again_by_an_older_event_is_already_applied(asset: Asset) -> None:
    """Two announcements of one manifest (each its own event: the writer's push and the spool verifier's) are one
    version of it: the older one, arriving second, is ALREADY, not STALE (make mutation: _manifest_claim without
    ``applied_if``, which told a copy by the order key alone, and the two events' keys differ)."""
    uri = "s3://spool/orders/1.manifest.json"
    asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri, commitTime=2000))
    assert asset.apply(ev(EventType.MANIFEST_SEALED, manifestUri=uri, commitTime=1000)) == [AdvanceOutcome.ALREADY]
    assert asset.apply(ev(EventType.MANIFEST_INTERRUPTED, manifestUri=uri, commitTime=500)) == [AdvanceOutcome.STALE]
