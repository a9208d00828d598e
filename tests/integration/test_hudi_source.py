"""Polling real Hudi tables (Apache Hudi's sample tables, 0.x and 1.x timelines; local and S3 on moto) into DynamoDB.

The tables were written by Hudi (tests/data/hudi/README.md); their timelines are revealed commit by commit
(tests/hudi_tables.py). What lakehook reads is checked against the ``hudi`` (hudi-rs) binding's own reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from hudi import HudiTableBuilder

from lakehook.adapters.lakehouse.hudi import instant_millis
from lakehook.domain.events import IngestStatus
from lakehook.usecases.poll import PollOutcome
from tests.hudi_tables import V6_COW, V8_COW, V9_MOR, StagedHudiTable, timeline_dir, unpack
from tests.lakehouse import CountingMotoServer
from tests.pollers import Lake, lake_with_keys
from tests.pollers import hudi_asset as register

pytestmark = pytest.mark.integration


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def hudi_rs_versions(location: str, options: dict[str, str] | None = None) -> dict[int, dict[str, Any]]:
    """What the hudi-rs binding reads of the table: each completed version's action and commit metadata."""
    builder = HudiTableBuilder.from_base_uri(location)
    if options:
        builder = builder.with_storage_options(options)
    timeline = builder.build().get_timeline()
    instants = [
        *timeline.get_completed_commits(),
        *timeline.get_completed_deltacommits(),
        *timeline.get_completed_replacecommits(),
    ]
    return {
        int(i.timestamp): {"action": i.action, **json.loads(timeline.get_instant_metadata_in_json(i))} for i in instants
    }


# --- local tables ---------------------------------------------------------------------------------


def test_a_0x_timeline_becomes_snapshot_events_with_what_hudi_recorded(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    asset = register(hudi.location, "ods.users")
    (first,) = hudi.reveal()
    assert lake.poll(asset).snapshot_ids == (first,)
    shown = hudi.reveal_all()
    result = lake.poll(asset)
    assert result.snapshot_ids == tuple(shown) and [r.status for r in result.results] == [IngestStatus.ACCEPTED] * 2
    events = lake.events(asset.asset_key)
    truth = hudi_rs_versions(hudi.location)
    assert [e.snapshot_id for e in events] == sorted(truth)
    for event in events:
        recorded = truth[event.snapshot_id or 0]
        assert event.commit_kind == recorded["operationType"]  # UPSERT, UPSERT, INSERT_OVERWRITE_TABLE
        assert event.commit_time == instant_millis(event.snapshot_id or 0)
        assert event.schema_id == events[0].snapshot_id and event.schema_changed is False
    assert [truth[e.snapshot_id or 0]["action"] for e in events] == ["commit", "commit", "replacecommit"]
    # the rows hudi-rs reads go 3, 4, 1: the overwrite of the whole table replaced the 4 rows with 1
    assert [(e.delta_record_count, e.total_record_count) for e in events] == [(3, None), (1, None), (-3, 1)]
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


@pytest.mark.parametrize("name", [V8_COW, V9_MOR])
def test_a_1x_timeline_with_avro_metadata_reads_as_hudi_rs_reads_it(tmp_path: Path, lake: Lake, name: str) -> None:
    hudi = StagedHudiTable.of(name, tmp_path)
    asset = register(hudi.location, "ods.txns")
    hudi.reveal()
    lake.poll(asset)
    hudi.reveal_all()
    lake.poll(asset)
    events = lake.events(asset.asset_key)
    truth = hudi_rs_versions(hudi.location)
    assert [e.snapshot_id for e in events] == sorted(truth)
    assert [e.commit_kind for e in events] == [truth[e.snapshot_id or 0]["operationType"] for e in events]
    completions = {int(p.name.split("_")[1].split(".")[0]): p for p in timeline_dir(hudi.root).glob("*_*.*")}
    assert len(completions) >= len(events)
    for event in events:
        assert event.commit_time >= instant_millis(event.snapshot_id or 0)  # completion time, after the instant


def test_compaction_and_clustering_are_the_commit_kinds_of_a_mor_table(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    asset = register(hudi.location, "ods.txns")
    hudi.reveal()
    lake.poll(asset)
    hudi.reveal_all()
    lake.poll(asset)
    kinds = [(e.commit_kind, e.delta_record_count) for e in lake.events(asset.asset_key)]
    assert kinds == [
        ("INSERT", 8),
        ("UPSERT_PREPPED", 0),
        ("DELETE_PREPPED", -1),
        ("UPSERT_PREPPED", 0),
        ("DELETE_PREPPED", -1),
        ("UPSERT_PREPPED", 0),
        ("INSERT", 2),
        ("INSERT_OVERWRITE", -2),  # 2 rows written, the 4 of region=eu's two replaced file groups gone
        ("INSERT", 2),
        ("INSERT", 2),
        ("COMPACT", None),  # a compaction and a clustering change no data: no record delta
        ("CLUSTER", None),
        ("INSERT", 2),
    ]
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_commit_kind == "INSERT"


def test_a_corrupt_0x_json_commit_is_corrupt_metadata(tmp_path: Path, lake: Lake) -> None:
    """The 0.x timeline's JSON commit metadata, beside tests/integration/test_pollers.py's broken tables (a 1.x
    table's Avro): a truncated one fails its poll as CorruptMetadataError."""
    corrupt = unpack(V6_COW, tmp_path / "corrupt")
    newest = sorted((corrupt / ".hoodie").glob("*.replacecommit"))[-1]
    newest.write_text('{"partitionToWriteStats": {"trunc')
    (result,) = lake.poll_all([register(str(corrupt), "ods.corrupt")])
    assert (result.outcome, result.error_kind) == (PollOutcome.FAILED, "CorruptMetadataError")


@pytest.fixture
def s3_options(server: CountingMotoServer, aws: None, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    bucket = f"hudi-{request.node.name.lower().replace('_', '-')[:40].rstrip('-')}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    options = {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
    }
    return bucket, options


def upload(server: CountingMotoServer, root: Path, bucket: str, prefix: str) -> None:
    client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    for path in sorted(root.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(root)}")


def test_s3_poll_costs_one_listing_unchanged_and_one_read_per_new_instant(
    server: CountingMotoServer, s3_options: tuple[str, dict[str, str]], table: Any, tmp_path: Path
) -> None:
    bucket, options = s3_options
    lake = lake_with_keys(table, "lakehook/hudi-s3")
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    hudi.reveal()
    upload(server, hudi.root, bucket, "lake/txns")
    location = f"s3://{bucket}/lake/txns"
    by_reference = {
        **options,
        "AWS_ACCESS_KEY_ID": "secretsmanager:lakehook/hudi-s3#id",
        "AWS_SECRET_ACCESS_KEY": "secretsmanager:lakehook/hudi-s3#secret",
    }
    asset = register(location, "ods.txns", by_reference)
    assert len(lake.poll(asset).snapshot_ids) == 1

    server.reset()
    with server.measure() as unchanged:
        assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(unchanged) == {("s3", "ListObjects"): 1}

    shown = hudi.reveal(3)
    upload(server, timeline_dir(hudi.root), bucket, "lake/txns/.hoodie/timeline")
    server.reset()
    with server.measure() as changed:
        result = lake.poll(asset)
    assert result.snapshot_ids == tuple(shown)
    # one listing (kept for the read that follows) and one read per new instant; the schema in force is cached
    assert dict(changed) == {("s3", "ListObjects"): 1, ("s3", "GetObject"): 3}
    # and hudi-rs, reading the same S3 table, sees the same versions
    assert sorted(hudi_rs_versions(location, options)) == [e.snapshot_id for e in lake.events(asset.asset_key)]
