"""Polling real Paimon tables (pypaimon commits; local and S3 warehouses) into DynamoDB on moto."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from pypaimon.common.json_util import JSON
from pypaimon.snapshot.snapshot import Snapshot

from lakehook.adapters.lakehouse.paimon import snapshot_info
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.usecases.poll import PollOutcome
from tests.lakehouse import CountingMotoServer, create_paimon_table, paimon_commit, rows
from tests.pollers import Lake, lake_with_keys
from tests.pollers import paimon_asset as register

pytestmark = pytest.mark.integration


@pytest.fixture
def warehouse(tmp_path: Path) -> dict[str, str]:
    return {"warehouse": str(tmp_path / "warehouse")}


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


# --- a local warehouse ----------------------------------------------------------------------------


def test_commits_become_snapshot_events_with_what_paimon_recorded(warehouse: dict[str, str], lake: Lake) -> None:
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1, 2))
    assert lake.poll(asset).snapshot_ids == (1,)
    paimon_commit(orders, rows(3))
    paimon_commit(orders, rows(4, 5, 6))
    result = lake.poll(asset)
    assert result.snapshot_ids == (2, 3) and [r.status for r in result.results] == [IngestStatus.ACCEPTED] * 2
    third = lake.events(asset.asset_key)[-1]
    written = json.loads(Path(warehouse["warehouse"], "ods.db/orders/snapshot/snapshot-3").read_text())
    assert (third.snapshot_id, third.parent_snapshot_id, third.schema_id, third.commit_kind) == (3, 2, 0, "APPEND")
    assert (third.total_record_count, third.delta_record_count) == (6, 3)
    assert (third.commit_user, third.commit_identifier, third.commit_time) == (
        written["commitUser"],
        written["commitIdentifier"],
        written["timeMillis"],
    )
    assert third.schema_changed is False
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == 3 and state.latest_commit_time == written["timeMillis"]
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_tags_become_tag_created_on_the_next_change_or_compensation(warehouse: dict[str, str], lake: Lake) -> None:
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    paimon_commit(orders, rows(2))
    lake.poll(asset)
    orders.create_tag("eod-2025-06-01", snapshot_id=1)
    # A tag does not move LATEST: the cheap poll does not see it, compensation does.
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert lake.compensate([asset]).missed_events == 1
    orders.create_tag("eod-2025-06-02", snapshot_id=2)
    paimon_commit(orders, rows(3))
    result = lake.poll(asset)
    tags = [(e.tag, e.snapshot_id) for e in lake.events(asset.asset_key, EventType.TAG_CREATED)]
    assert tags == [("eod-2025-06-01", 1), ("eod-2025-06-02", 2)]
    # snapshot 3, then the tags by name: the first one compensation had already recorded
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED, IngestStatus.DUPLICATE, IngestStatus.ACCEPTED]
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.tags == {"eod-2025-06-01", "eod-2025-06-02"}


def test_watermarks_from_java_writers_are_read_and_the_no_watermark_sentinel_is_dropped() -> None:
    java = {
        "version": 3,
        "id": 12,
        "schemaId": 1,
        "baseManifestList": "a",
        "deltaManifestList": "b",
        "changelogManifestList": "c",
        "commitUser": "flink",
        "commitIdentifier": 5,
        "commitKind": "COMPACT",
        "timeMillis": 1_725_963_330_123,
        "logOffsets": {},
        "totalRecordCount": 10,
        "deltaRecordCount": -2,
        "changelogRecordCount": 3,
        "watermark": 1_725_963_300_000,
    }
    info = snapshot_info(JSON.from_json(json.dumps(java), Snapshot))
    assert (info.watermark, info.changelog_record_count, info.delta_record_count) == (1_725_963_300_000, 3, -2)
    none = snapshot_info(JSON.from_json(json.dumps({**java, "watermark": -(2**63)}), Snapshot))
    assert none.watermark is None


# --- an S3 warehouse on a moto server -------------------------------------------------------------


@pytest.fixture
def s3_warehouse(server: CountingMotoServer, aws: None, request: pytest.FixtureRequest) -> dict[str, str]:
    bucket = f"paimon-{request.node.name.lower().replace('_', '-')[:40]}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return {
        "warehouse": f"s3://{bucket}/warehouse",
        "fs.s3.endpoint": server.endpoint,
        "fs.s3.region": "us-east-1",
        "fs.s3.accessKeyId": "testing",
        "fs.s3.accessKeySecret": "testing",
        "fs.s3.path-style-access": "true",
    }


@pytest.fixture
def s3_lake(table: Any) -> Lake:
    """Credentials come from Secrets Manager (moto) by reference, as registrations must hold them."""
    return lake_with_keys(table, "lakehook/paimon-s3")


def by_reference(options: dict[str, str]) -> dict[str, str]:
    return {
        **options,
        "fs.s3.accessKeyId": "secretsmanager:lakehook/paimon-s3#id",
        "fs.s3.accessKeySecret": "secretsmanager:lakehook/paimon-s3#secret",
    }


def s3_gets(server: CountingMotoServer, suffix: str) -> int:
    return sum(n for path, n in server.paths.items() if path.startswith("GetObject ") and path.endswith(suffix))


def test_s3_poll_costs_one_hint_read_and_one_next_snapshot_probe_unchanged_and_one_read_per_new_snapshot(
    server: CountingMotoServer, s3_warehouse: dict[str, str], s3_lake: Lake
) -> None:
    orders = create_paimon_table(s3_warehouse, "ods.orders")
    asset = register(by_reference(s3_warehouse), "ods.orders")
    paimon_commit(orders, rows(1))
    s3_lake.poll(asset)

    server.reset()
    with server.measure() as unchanged:
        assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert s3_gets(server, "/snapshot/LATEST") == 1
    # pyarrow sizes an object with a HEAD before its GET: one object read is HEAD + GET; LATEST is only a
    # hint, so snapshot-2 is probed too (Paimon's findLatest): a missing object's read is its HEAD alone
    assert dict(unchanged) == {("s3", "GetObject"): 1, ("s3", "HeadObject"): 2}
    assert [p for p in server.paths if p.startswith("HeadObject ") and not p.endswith("/snapshot/LATEST")] == [
        next(p for p in server.paths if p.endswith("/snapshot/snapshot-2"))
    ]

    for i in range(3):
        paimon_commit(orders, rows(i))
    server.reset()
    with server.measure() as changed:
        result = s3_lake.poll(asset)
    assert result.snapshot_ids == (2, 3, 4)
    assert s3_gets(server, "/snapshot/LATEST") == 1
    assert [s3_gets(server, f"/snapshot/snapshot-{sid}") for sid in (1, 2, 3, 4)] == [0, 1, 1, 1]
    assert (changed[("s3", "GetObject")], changed[("s3", "ListObjects")]) == (1 + 3, 1)  # + one listing of tag/
    state = s3_lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == 4


def test_s3_push_and_poll_are_one_event_and_a_missing_table_is_reported(
    s3_warehouse: dict[str, str], s3_lake: Lake
) -> None:
    orders = create_paimon_table(s3_warehouse, "ods.orders")
    asset = register(by_reference(s3_warehouse), "ods.orders")
    missing = register(by_reference(s3_warehouse), "ods.nowhere")
    paimon_commit(orders, rows(1))
    s3_lake.ingest.ingest(
        AssetEvent.model_validate({"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset.asset_key, "snapshotId": 1}),
        SourceType.PUSH,
    )
    results = {r.asset_key: r for r in s3_lake.poll_all([missing, asset])}
    assert results[missing.asset_key].error_kind == "TableNotFoundError"
    assert [r.status for r in results[asset.asset_key].results] == [IngestStatus.DUPLICATE]
    assert len(s3_lake.events(asset.asset_key)) == 1


def test_s3_unresolvable_credentials_fail_that_asset_only_without_leaking(
    s3_warehouse: dict[str, str], s3_lake: Lake
) -> None:
    orders = create_paimon_table(s3_warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    good = register(by_reference(s3_warehouse), "ods.orders")
    bad = register(
        {**by_reference(s3_warehouse), "fs.s3.accessKeySecret": "secretsmanager:lakehook/absent"},
        "ods.orders",
        catalog="other",
    )
    results = {r.asset_key: r for r in s3_lake.poll_all([bad, good])}
    failed = results[bad.asset_key]
    assert failed.error_kind == "SourceAccessError" and "secretsmanager:lakehook/absent" in (failed.error or "")
    assert "testing" not in (failed.error or "")
    assert results[good.asset_key].outcome is PollOutcome.ADVANCED


def test_polling_a_filesystem_warehouse_needs_none_of_the_packages_the_layer_leaves_out(
    warehouse: dict[str, str],
) -> None:
    """pypaimon's catalog module imports polars and pandas; the poller's path must not need them (layer size)."""
    import subprocess
    import sys

    orders = create_paimon_table(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    paimon_commit(orders, rows(2))
    code = (
        "import sys, json, importlib.abc\n"
        # The lakehouse layer ships none of these: prove the poll path runs without them, not just that
        # it happens not to load them.
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in {'polars', 'pandas', 'numpy', 'rich', 'sqlalchemy'}:\n"
        "            raise ImportError(name + ' is not in the lakehouse layer')\n"
        "sys.meta_path.insert(0, Missing())\n"
        "from lakehook.adapters.lakehouse.factory import snapshot_sources\n"
        "from tests.fakes.memory import InMemorySecretStore\n"
        "from lakehook.domain.assets import AssetFormat, AssetSource\n"
        "from lakehook.domain.snapshots import SnapshotCursor\n"
        f"src = AssetSource(catalog='lake', properties={warehouse!r}, table='ods.orders')\n"
        "paimon = snapshot_sources(InMemorySecretStore())(AssetFormat.PAIMON)\n"
        "batch = paimon.snapshots_since(src, SnapshotCursor(snapshot_id=1), paimon.pointer(src), limit=10)\n"
        "print(json.dumps([[s.snapshot_id for s in batch.snapshots], "
        "[m for m in ('polars', 'pandas') if m in sys.modules]]))\n"
    )
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(answer.stdout.strip().splitlines()[-1]) == [[2], []]
