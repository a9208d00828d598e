"""The replay pre-flight: every pinned manifest sealed and verifying, every snapshot retained, no schema drift."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from lakehook.answers.triggers import PreflightAnswer
from lakehook.domain.assets import AssetFormat, AssetRegistration, AssetSource
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.snapshots import SnapshotCursor, SnapshotInfo
from lakehook.domain.spool import seal_document
from lakehook.domain.triggers import PinnedInput
from lakehook.ports.lakehouse import SnapshotBatch, SnapshotSource, SourceAccessError, TableNotFoundError
from lakehook.usecases.spool import (
    Check,
    ItemStatus,
    PreflightReplay,
    ReplayInput,
    SnapshotSourceExistence,
    VerifySpoolManifest,
)
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore
from tests.fakes.memory_coverage import InMemoryObjectStore, InMemorySnapshotExistence
from tests.wiring import ingest_events

ORDERS = "iceberg://glue/ods_db/ods_order_latest"
SPOOL = "s3://spool-bucket/orders"
MANIFEST = "s3://spool-bucket/orders/run-42.manifest.json"
PART = "s3://spool-bucket/orders/run-42/part-0.csv"
DATA = b"order_id\n1\n2\n"


class World:
    """The fakes a pre-flight reads: objects, registrations, asset state and retained snapshots."""

    def __init__(self) -> None:
        self.objects = InMemoryObjectStore(chunk_size=4)
        self.registry = InMemoryAssetRegistry()
        self.store = InMemoryAssetStore()
        self.snapshots = InMemorySnapshotExistence()
        self.preflight = PreflightReplay(
            VerifySpoolManifest(self.objects, clock=lambda: 1), self.registry, self.store, self.snapshots
        )
        self.registry.put_asset(
            AssetRegistration(
                asset_key=ORDERS,
                format=AssetFormat.ICEBERG,
                source=AssetSource(catalog="glue", table="ods_db.ods_order_latest"),
            ),
            1,
        )
        self.snapshots.retained[ORDERS] = {1001: SnapshotInfo(snapshot_id=1001, commit_time=1, schema_id=5)}
        self.ingest(
            {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": ORDERS,
                "snapshotId": 1001,
                "sequenceNumber": 1,
                "schemaId": 5,
            }
        )
        self.manifest = self.seal(status="SEALED")

    def ingest(self, raw: dict[str, Any]) -> None:
        ingest_events(self.store).ingest(AssetEvent.model_validate(raw), SourceType.POLL)

    def seal(self, **changes: Any) -> dict[str, Any]:
        document = seal_document(
            {
                "formatVersion": 1,
                "assetKey": SPOOL,
                "snapshotId": 42,
                "rowCount": 2,
                "schema": {"schemaId": 3, "fields": [{"name": "order_id", "type": "long"}]},
                "objects": [
                    {"uri": PART, "size": len(DATA), "sha256": hashlib.sha256(DATA).hexdigest(), "rowCount": 2}
                ],
                "createdAt": "2025-06-01T10:05:00Z",
                **changes,
            }
        )
        self.objects.objects[MANIFEST] = json.dumps(document).encode()
        self.objects.objects[PART] = DATA
        return document

    def inputs(self, **spool: Any) -> list[ReplayInput]:
        pinned = PinnedInput(asset_key=ORDERS, snapshot_id=1001, schema_id=5)
        manifest = {"spool_manifest_uri": MANIFEST, "spool_manifest_sha256": self.manifest["sha256"], **spool}
        return [ReplayInput.from_pin(pinned), ReplayInput(SPOOL, snapshot_id=42, schema_id=3, **manifest)]


@pytest.fixture
def world() -> World:
    return World()


def statuses(report: Any) -> dict[tuple[str, str], str]:
    return {(i.asset_key, i.check.value): i.status.value for i in report.items}


def test_a_replay_of_intact_inputs_passes_every_item(world: World) -> None:
    report = world.preflight.check(world.inputs())
    assert report.ok
    assert statuses(report) == {
        (ORDERS, "SNAPSHOT_RETAINED"): "PASSED",
        (ORDERS, "SCHEMA_COMPATIBLE"): "PASSED",
        (SPOOL, "MANIFEST_SEALED"): "PASSED",
        (SPOOL, "SCHEMA_COMPATIBLE"): "PASSED",
    }
    assert PreflightAnswer.from_domain(report).dump()["ok"] is True


def test_replay_is_refused_when_a_pinned_snapshot_has_expired(world: World) -> None:
    world.snapshots.retained[ORDERS] = {1002: SnapshotInfo(snapshot_id=1002, commit_time=2, schema_id=5)}
    report = world.preflight.check(world.inputs())
    assert not report.ok
    (failure,) = report.failures
    assert (failure.check, failure.asset_key) == (Check.SNAPSHOT_RETAINED, ORDERS)
    assert "1001 has expired" in failure.reason


@pytest.mark.parametrize(
    ("error", "words"),
    [(TableNotFoundError("gone"), "no longer exists"), (SourceAccessError("403"), "could not be read")],
)
def test_an_unreadable_table_fails_the_snapshot_item(world: World, error: Exception, words: str) -> None:
    world.snapshots.failures[ORDERS] = error
    report = world.preflight.check(world.inputs())
    (failure,) = report.failures
    assert failure.check is Check.SNAPSHOT_RETAINED and words in failure.reason


def test_an_interrupted_extract_strictly_blocks_the_replay(world: World) -> None:
    world.manifest = world.seal(status="INTERRUPTED", reason="source database went away")
    report = world.preflight.check(world.inputs())
    (failure,) = report.failures
    assert failure.check is Check.MANIFEST_SEALED
    assert "interrupted" in failure.reason and "source database went away" in failure.reason


def test_a_tampered_spooled_object_fails_with_the_object(world: World) -> None:
    world.objects.objects[PART] = b"order_id\n1\n3\n"
    report = world.preflight.check(world.inputs())
    (failure,) = report.failures
    assert failure.check is Check.MANIFEST_SEALED
    assert failure.detail["object"] == PART and "SHA-256" in failure.reason


def test_a_manifest_rewritten_since_the_trigger_fails(world: World) -> None:
    pinned_sha = world.manifest["sha256"]
    world.manifest = world.seal(status="SEALED", createdAt="2025-06-02T00:00:00Z")  # valid, but another one
    report = world.preflight.check(world.inputs(spool_manifest_sha256=pinned_sha))
    (failure,) = report.failures
    assert failure.check is Check.MANIFEST_SEALED and "rewritten since the trigger" in failure.reason


NEW_SCHEMA = {"eventType": "SNAPSHOT_COMMITTED", "snapshotId": 1002, "sequenceNumber": 2, "schemaId": 6}


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([NEW_SCHEMA, {"eventType": "SCHEMA_CHANGE_APPROVED", "schemaId": 6}], "PASSED"),
        ([NEW_SCHEMA, {"eventType": "SCHEMA_CHANGE_REJECTED", "schemaId": 6}], "FAILED"),
        ([NEW_SCHEMA], "FAILED"),  # changed and not approved (yet)
    ],
)
def test_schema_drift_since_the_trigger(world: World, events: list[dict[str, Any]], expected: str) -> None:
    for raw in events:
        world.ingest({**raw, "assetKey": ORDERS})
    report = world.preflight.check(world.inputs())
    assert statuses(report)[(ORDERS, "SCHEMA_COMPATIBLE")] == expected


def test_a_snapshot_whose_schema_changed_under_it_fails(world: World) -> None:
    world.snapshots.retained[ORDERS] = {1001: SnapshotInfo(snapshot_id=1001, commit_time=1, schema_id=4)}
    report = world.preflight.check(world.inputs())
    (failure,) = report.failures
    assert failure.check is Check.SCHEMA_COMPATIBLE and "now reports schema 4" in failure.reason


def test_what_cannot_be_checked_is_skipped_not_failed(world: World) -> None:
    pushed_only = "paimon://lake/ods_db/pushed_only"
    report = world.preflight.check([ReplayInput(pushed_only, snapshot_id=7)])
    assert report.ok
    assert statuses(report) == {
        (pushed_only, "SNAPSHOT_RETAINED"): "SKIPPED",
        (pushed_only, "SCHEMA_COMPATIBLE"): "SKIPPED",
    }
    assert all(i.status is ItemStatus.SKIPPED and i.reason for i in report.items)


# --- SnapshotExistence through a SnapshotSource ----------------------------------------------------------


class ListedSource(SnapshotSource):
    """A table whose main line is a list of snapshots (the newest last)."""

    def __init__(self, snapshots: list[SnapshotInfo]) -> None:
        self.snapshots = snapshots

    def pointer(self, source: AssetSource) -> str:
        return f"v{len(self.snapshots)}" if self.snapshots else ""

    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        assert cursor is None
        return SnapshotBatch(pointer=pointer, snapshots=self.snapshots[-limit:])


def test_snapshot_existence_through_a_snapshot_source() -> None:
    registration = AssetRegistration(
        asset_key=ORDERS,
        format=AssetFormat.ICEBERG,
        source=AssetSource(catalog="glue", table="ods_db.ods_order_latest"),
    )
    retained = [SnapshotInfo(snapshot_id=i, commit_time=i, schema_id=1) for i in (5, 6, 7)]
    existence = SnapshotSourceExistence(lambda fmt: ListedSource(retained))
    assert existence.find_snapshot(registration, 6) == retained[1]
    assert existence.find_snapshot(registration, 4) is None  # expired
    assert SnapshotSourceExistence(lambda fmt: ListedSource([])).find_snapshot(registration, 6) is None
