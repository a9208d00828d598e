"""Polling real Delta tables (written by delta-rs: local paths and S3 on a moto server) into DynamoDB on moto."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from lakehook.adapters.lakehouse.delta import (
    CHECKPOINT_TAIL_BYTES,
    LOG_DIR,
    PartitionLayout,
    checkpoint_metadata,
    commit_file,
)
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.adapters.lakehouse.table_files import S3TableFiles
from lakehook.adapters.secrets import SecretsManagerSecretStore
from lakehook.domain.assets import AssetFormat
from lakehook.domain.events import IngestStatus
from lakehook.domain.notice_state import NoticeHealth, PollCadence
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap
from lakehook.domain.time import now_ms
from lakehook.usecases.plan_polls import (
    PlanNotifiedPolls,
    PlanPolls,
    RunPollWork,
    WorkMode,
    parse_safety_net,
    parse_work,
)
from lakehook.usecases.poll import PollOutcome
from tests.delta_tables import copy
from tests.fakes.memory import InMemoryWorkQueue
from tests.lakehouse import CountingMotoServer, rows
from tests.pollers import Lake, lake_with_keys
from tests.pollers import delta_asset as register

pytestmark = pytest.mark.integration


def write(location: str, data: pa.Table, options: dict[str, str] | None = None, **kwargs: Any) -> None:
    write_deltalake(location, data, mode=kwargs.pop("mode", "append"), storage_options=options, **kwargs)


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "orders")


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def committed(path: str, version: int) -> dict[str, Any]:
    """The commitInfo delta-rs wrote for a version."""
    lines = Path(path, "_delta_log", commit_file(version)).read_text().splitlines()
    return next(json.loads(line)["commitInfo"] for line in lines if '"commitInfo"' in line)


# --- a local table --------------------------------------------------------------------------------


def test_versions_become_snapshot_events_with_what_delta_recorded(path: str, lake: Lake) -> None:
    write(path, rows(1, 2))
    asset = register(path, "ods.orders")
    assert lake.poll(asset).snapshot_ids == (0,)
    write(path, rows(3))
    write(path, rows(4, 5, 6), commit_properties=CommitProperties(custom_metadata={"lakehook.watermark": "1700"}))
    result = lake.poll(asset)
    assert result.snapshot_ids == (1, 2) and [r.status for r in result.results] == [IngestStatus.ACCEPTED] * 2
    events = lake.events(asset.asset_key)
    second = events[-1]
    assert (second.snapshot_id, second.parent_snapshot_id, second.schema_id, second.commit_kind) == (2, 1, 0, "WRITE")
    assert (second.delta_record_count, second.watermark, second.schema_changed) == (3, 1700, False)
    assert second.commit_time == committed(path, 2)["timestamp"]
    assert [e.snapshot_id for e in events] == [0, 1, 2]
    # delta-rs agrees on what the history is
    assert [h["operation"] for h in DeltaTable(path).history()] == [e.commit_kind for e in reversed(events)]
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == 2 and state.latest_commit_kind == "WRITE"
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_an_overwrite_reports_the_rows_it_left_and_merge_and_delete_their_change(path: str, lake: Lake) -> None:
    write(path, rows(1, 2, 3))
    asset = register(path, "ods.orders")
    lake.poll(asset)
    write(path, rows(7, 8), mode="overwrite")
    table = DeltaTable(path)
    table.delete("id = 7")
    source = pa.Table.from_pylist([{"id": 8, "amount": 1}, {"id": 9, "amount": 90}], schema=rows().schema)
    (
        DeltaTable(path)
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    lake.poll(asset)
    seen = {
        e.snapshot_id: (e.commit_kind, e.total_record_count, e.delta_record_count) for e in lake.events(asset.asset_key)
    }
    assert seen[1] == ("WRITE", 2, None)  # an overwrite leaves the rows it wrote
    assert seen[2] == ("DELETE", None, -1)
    assert seen[3] == ("MERGE", None, 1)  # one row inserted, one updated


def test_the_unchanged_check_is_not_fooled_by_a_cleaned_up_successor(path: str, lake: Lake) -> None:
    """The next commit file is gone, but a later checkpoint says the table moved on: read it, record the gap."""
    write(path, rows(1), configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    asset = register(path, "ods.orders")
    assert asset.source is not None
    assert lake.poll(asset).snapshot_ids == (0,)
    source = lake.sources(AssetFormat.DELTA)
    assert source.unchanged_since(asset.source, SnapshotCursor(snapshotId=0)) is True
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    for i in range(4):
        write(path, rows(i))  # versions 1..4
    table = DeltaTable(path)
    table.create_checkpoint()  # at version 4
    table.cleanup_metadata()  # every commit file before it goes: version 1 (the successor) among them
    assert not Path(path, "_delta_log", commit_file(1)).exists()

    assert source.unchanged_since(asset.source, SnapshotCursor(snapshotId=0)) is False
    result = lake.poll(asset)
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (4,)
    assert result.gap == SnapshotGap(afterSnapshotId=0, resumedAtSnapshotId=4, missed=3)
    assert source.unchanged_since(asset.source, SnapshotCursor(snapshotId=4)) is True  # the checkpoint is no commit
    assert source.unchanged_since(asset.source, SnapshotCursor.beginning()) is False  # never read: the pointer decides
    write(path, rows(5))
    assert source.unchanged_since(asset.source, SnapshotCursor(snapshotId=4)) is False
    assert lake.poll(asset).snapshot_ids == (5,)


def test_a_table_that_is_gone_fails_its_poll_rather_than_looking_unchanged(path: str, lake: Lake) -> None:
    write(path, rows(1))
    asset = register(path, "ods.orders")
    assert lake.poll(asset).snapshot_ids == (0,)
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    shutil.rmtree(path)  # no _last_checkpoint, no commit file: the cheap check defers to the pointer
    (result,) = lake.poll_all([asset])
    assert result.outcome is PollOutcome.FAILED and result.error_kind == "TableNotFoundError"


def test_a_first_poll_past_version_0_cannot_tell_a_schema_change_and_optimize_is_delta_rs_s_operation(
    path: str, lake: Lake
) -> None:
    """Delta's own part of the compaction and schema-change scenarios (tests/integration/test_pollers.py): a first
    poll starting at version 2 has no earlier metadata to compare (``schemaChanged`` unknown), the OPTIMIZE
    commit's kind is the operation delta-rs wrote, and a schema-merging write is a WRITE whose version is the new
    schema id."""
    for i in range(3):
        write(path, rows(i))
    asset = register(path, "ods.orders")
    lake.poll(asset)  # version 2
    DeltaTable(path).optimize.compact()  # version 3: a real OPTIMIZE
    wider = pa.Table.from_pylist([{"id": 9, "amount": 90, "note": "x"}])
    write(path, wider, schema_mode="merge")  # version 4 writes new metadata: its version is the schema id
    lake.poll(asset)
    seen = {e.snapshot_id: (e.commit_kind, e.schema_id, e.schema_changed) for e in lake.events(asset.asset_key)}
    assert seen == {2: ("WRITE", 0, None), 3: ("OPTIMIZE", 0, False), 4: ("WRITE", 4, True)}
    assert committed(path, 3)["operation"] == "OPTIMIZE"


def test_an_unreadable_checkpoint_hint_is_no_breakage(tmp_path: Path, lake: Lake) -> None:
    """Delta's own case beside tests/integration/test_pollers.py's broken tables: an unreadable _last_checkpoint is
    only a hint gone; the log is listed instead, as delta-rs does."""
    bad_pointer = str(tmp_path / "bad_pointer")
    write(bad_pointer, rows(1))
    Path(bad_pointer, "_delta_log", "_last_checkpoint").write_text("not json")
    assert DeltaTable(bad_pointer).version() == 0
    (result,) = lake.poll_all([register(bad_pointer, "ods.bad_pointer")])
    assert (result.outcome, result.error_kind, result.snapshot_ids) == (PollOutcome.ADVANCED, None, (0,))


def test_the_pointer_reads_only_the_log_after_the_last_checkpoint(path: str, lake: Lake) -> None:
    for i in range(12):
        write(path, rows(i))
    DeltaTable(path).create_checkpoint()  # at version 11
    write(path, rows(12))
    source = lake.sources(AssetFormat.DELTA)
    asset = register(path, "ods.orders")
    assert asset.source is not None
    assert source.pointer(asset.source) == "12"
    # the pointer never looks before the checkpoint: older commit files may be gone without changing it
    for version in range(11):
        Path(path, "_delta_log", commit_file(version)).unlink()
    assert source.pointer(asset.source) == "12"


# --- an S3 table on the moto server -----------------------------------------------------------------


@pytest.fixture
def s3_table(server: CountingMotoServer, aws: None, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    bucket = f"delta-{request.node.name.lower().replace('_', '-')[:40].rstrip('-')}"
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=bucket)
    options = {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }
    return f"s3://{bucket}/lake/orders", options


@pytest.fixture
def s3_lake(table: Any) -> Lake:
    """Credentials come from Secrets Manager (in-process moto) by reference, as registrations must hold them."""
    return lake_with_keys(table, "lakehook/delta-s3")


def by_reference(options: dict[str, str]) -> dict[str, str]:
    return {
        **options,
        "AWS_ACCESS_KEY_ID": "secretsmanager:lakehook/delta-s3#id",
        "AWS_SECRET_ACCESS_KEY": "secretsmanager:lakehook/delta-s3#secret",
    }


def test_s3_poll_costs_three_get_class_requests_unchanged_and_one_read_per_new_version(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]], s3_lake: Lake
) -> None:
    location, options = s3_table
    write(location, rows(1), options)
    asset = register(location, "ods.orders", by_reference(options))
    assert s3_lake.poll(asset).snapshot_ids == (0,)

    server.reset()
    with server.measure() as unchanged:
        assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED
    # the next version's commit file (404), _last_checkpoint (absent: no checkpoint yet) and the version read (still
    # there): no listing, S3's dearer request class
    assert dict(unchanged) == {("s3", "HeadObject"): 2, ("s3", "GetObject"): 1}
    with server.measure() as compensated:
        assert s3_lake.compensate([asset]).missed_events == 0
    assert dict(compensated) == {("s3", "HeadObject"): 2, ("s3", "GetObject"): 1}  # the compensation's check too

    for i in range(3):
        write(location, rows(i), options)
    server.reset()
    with server.measure() as changed:
        result = s3_lake.poll(asset)
    assert result.snapshot_ids == (1, 2, 3)
    # the next commit file is there (HEAD), then the pointer (_last_checkpoint, one listing) and one read a version
    assert dict(changed) == {("s3", "HeadObject"): 1, ("s3", "GetObject"): 1 + 3, ("s3", "ListObjects"): 1}


def test_s3_unchanged_after_a_checkpoint_costs_two_requests(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]], s3_lake: Lake
) -> None:
    location, options = s3_table
    for i in range(3):
        write(location, rows(i), options)
    DeltaTable(location, storage_options=options).create_checkpoint()  # at version 2, named by _last_checkpoint
    asset = register(location, "ods.orders", by_reference(options))
    assert s3_lake.poll(asset).snapshot_ids == (2,)
    server.reset()
    with server.measure() as unchanged:
        assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(unchanged) == {("s3", "HeadObject"): 1, ("s3", "GetObject"): 1}
    write(location, rows(3), options)
    assert s3_lake.poll(asset).snapshot_ids == (3,)
    state = s3_lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == 3


def test_s3_after_log_cleanup_a_new_poller_reads_the_checkpoints_metadata_by_ranges_once(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]], s3_lake: Lake
) -> None:
    """A column-mapped table whose ``metaData`` commit (version 0) log cleanup removed. A poller that knew the
    metadata version and starts anew (a cold worker) reads ``_last_checkpoint`` and the checkpoint's last 64 KiB
    (its footer and, here, its ``metaData`` column), never the whole checkpoint; the next polls cost what they
    cost before: nothing is read again while it is warm, and an unchanged table costs its two requests."""
    location, options = s3_table
    bucket, prefix = location.removeprefix("s3://").split("/", 1)
    config = {"delta.logRetentionDuration": "interval 0 seconds", "delta.columnMapping.mode": "name"}
    wide = pa.Table.from_pylist([{"id": i, "region": f"r{i:04d}"} for i in range(700)])  # 700 files: a large checkpoint
    write(location, wide, options, mode="overwrite", partition_by=["region"], configuration=config)
    asset = register(location, "ods.orders", by_reference(options))
    s3_lake.poll(asset)  # version 0: the metadata version
    write(location, pa.Table.from_pylist([{"id": 1000, "region": "r0001"}]), options)
    DeltaTable(location, storage_options=options).update({"id": "id + 1"}, predicate="region = 'r0002'")
    assert s3_lake.poll(asset).snapshot_ids == (1, 2)
    table = DeltaTable(location, storage_options=options)
    table.create_checkpoint()  # at version 2
    table.cleanup_metadata()  # versions 0 and 1 go
    client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    checkpoint = f"{prefix}/_delta_log/{2:020d}.checkpoint.parquet"
    size = client.head_object(Bucket=bucket, Key=checkpoint)["ContentLength"]
    assert size > 3 * 64 * 1024  # about 220 KiB: far more than the ranges read
    assert "Contents" not in client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/_delta_log/{0:020d}.json")
    files = S3TableFiles(location, client)  # ranges are ranges on S3: what a read of the tail and of a range gets
    body = client.get_object(Bucket=bucket, Key=checkpoint)["Body"].read()
    assert files.read_tail(checkpoint.removeprefix(f"{prefix}/"), 1000) == (body[-1000:], size)
    assert files.read_range(checkpoint.removeprefix(f"{prefix}/"), 4, 100) == body[4:104]
    write(location, pa.Table.from_pylist([{"id": 2000, "region": "r0003"}, {"id": 2001, "region": "new"}]), options)

    s3_lake.with_sources(snapshot_sources(SecretsManagerSecretStore(boto3.client("secretsmanager"))))  # a cold worker
    server.reset()
    with server.measure() as cold:
        assert s3_lake.poll(asset).snapshot_ids == (3,)
    # the next commit file (there), the pointer (_last_checkpoint, a listing), version 3, then version 0 (gone),
    # _last_checkpoint and the checkpoint's tail: the metaData column lies in it
    assert dict(cold) == {("s3", "HeadObject"): 1, ("s3", "GetObject"): 2 + 3, ("s3", "ListObjects"): 1}
    assert server.paths[f"GetObject /{bucket}/{checkpoint}"] == 1
    assert set(s3_lake.events(asset.asset_key)[-1].partitions.keys) == {"region=r0003", "region=new"}  # type: ignore[union-attr]

    write(location, pa.Table.from_pylist([{"id": 3000, "region": "r0004"}]), options)
    DeltaTable(location, storage_options=options).update({"id": "id + 1"}, predicate="region = 'r0004'")
    with server.measure() as warm:
        assert s3_lake.poll(asset).snapshot_ids == (4, 5)
    assert dict(warm) == {("s3", "HeadObject"): 1, ("s3", "GetObject"): 1 + 2, ("s3", "ListObjects"): 1}
    events = s3_lake.events(asset.asset_key)
    assert [(e.partitions.keys, e.partitions.count) for e in events[-2:] if e.partitions] == [
        (("region=r0004",), 1),
        (("region=r0004",), 1),  # an UPDATE: a remove and an add of one partition
    ]
    with server.measure() as unchanged:
        assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(unchanged) == {("s3", "HeadObject"): 1, ("s3", "GetObject"): 1}


def test_s3_a_checkpoints_metadata_far_from_its_tail_is_one_ranged_read_more(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]]
) -> None:
    """delta-rs puts the application transactions (``txn``) after ``metaData`` in a checkpoint: 3,000 of them put
    the ``metaData`` column far before the file's last 64 KiB. It is read with one ranged read of its own chunks
    (Arrow coalesces them), two requests in all, and is what deltalake reads as the table's metadata."""
    location, options = s3_table
    bucket, prefix = location.removeprefix("s3://").split("/", 1)
    config = {"delta.columnMapping.mode": "name"}
    write(
        location,
        pa.Table.from_pylist([{"id": 1, "region": "eu"}]),
        options,
        partition_by=["region"],
        configuration=config,
    )
    streams = [Transaction(app_id=f"stream-{i:05d}-{'x' * 40}", version=i) for i in range(3000)]
    write(
        location,
        pa.Table.from_pylist([{"id": 2, "region": "us"}]),
        options,
        commit_properties=CommitProperties(app_transactions=streams),
    )
    DeltaTable(location, storage_options=options).create_checkpoint()
    name = f"{1:020d}.checkpoint.parquet"
    client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    body = client.get_object(Bucket=bucket, Key=f"{prefix}/_delta_log/{name}")["Body"].read()
    chunks = pq.ParquetFile(pa.BufferReader(body)).metadata.row_group(0)
    offsets = [
        chunks.column(i).data_page_offset
        for i in range(chunks.num_columns)
        if chunks.column(i).path_in_schema.startswith("metaData.")
    ]
    assert max(offsets) < len(body) - CHECKPOINT_TAIL_BYTES  # nowhere near the tail

    with server.measure() as reads:
        meta = checkpoint_metadata(S3TableFiles(location, client), (name,))
    assert dict(reads) == {("s3", "GetObject"): 2}
    reference = DeltaTable(location, storage_options=options).metadata()
    assert meta is not None and (meta["id"], meta["configuration"]) == (reference.id, reference.configuration)
    assert PartitionLayout.of(meta).columns == ("region",) and PartitionLayout.of(meta).stored[0].startswith("col-")


def test_s3_missing_tables_and_unresolvable_credentials_fail_that_asset_only_without_leaking(
    s3_table: tuple[str, dict[str, str]], s3_lake: Lake
) -> None:
    location, options = s3_table
    write(location, rows(1), options)
    good = register(location, "ods.orders", by_reference(options))
    missing = register(location.replace("/orders", "/nowhere"), "ods.nowhere", by_reference(options))
    no_bucket = register("s3://no-such-bucket/orders", "ods.no_bucket", by_reference(options))
    bad = register(
        location,
        "ods.orders",
        {**by_reference(options), "AWS_SECRET_ACCESS_KEY": "secretsmanager:lakehook/absent"},
        catalog="other",
    )
    results = {r.asset_key: r for r in s3_lake.poll_all([missing, no_bucket, bad, good])}
    assert results[missing.asset_key].error_kind == "TableNotFoundError"
    assert results[no_bucket.asset_key].error_kind == "TableNotFoundError"
    failed = results[bad.asset_key]
    assert failed.error_kind == "SourceAccessError" and "secretsmanager:lakehook/absent" in (failed.error or "")
    assert "testing" not in (failed.error or "")
    assert results[good.asset_key].outcome is PollOutcome.ADVANCED


def test_s3_a_log_left_with_a_checkpoint_alone_is_its_version_and_a_broken_hint_is_listed_past(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]], s3_lake: Lake, tmp_path: Path
) -> None:
    """Delta's own multi-part-checkpoint table on S3, its commit files cleaned up, its _last_checkpoint emptied."""
    location, options = s3_table
    bucket, prefix = location.removeprefix("s3://").split("/", 1)
    client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    root = copy("delta/multi-part-checkpoint", tmp_path)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        name = file.relative_to(root).as_posix()
        if name.startswith("_delta_log/") and (name.endswith(".json") or name.endswith(".crc")):
            continue  # log cleanup took every commit file
        body = b"" if name == "_delta_log/_last_checkpoint" else file.read_bytes()
        client.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=body)
    assert DeltaTable(location, storage_options=options).version() == 1  # deltalake reads it from the checkpoint

    asset = register(location, "ods.orders", by_reference(options))
    server.reset()
    with server.measure() as first:
        result = s3_lake.poll(asset)
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (1,)
    (event,) = s3_lake.events(asset.asset_key)
    checkpoint = client.head_object(
        Bucket=bucket, Key=f"{prefix}/_delta_log/00000000000000000001.checkpoint.0000000001.0000000002.parquet"
    )
    assert event.commit_time == int(checkpoint["LastModified"].timestamp() * 1000) and event.commit_kind is None
    assert first[("s3", "HeadObject")] >= 1  # the checkpoint's time: the only one the log has for that version
    assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED


# --- per-asset polling: commit notices, the safety net, and the fall back to the fast poll -------------------


def commit_notice(location: str, version: int) -> dict[str, Any]:
    """S3's "Object Created" for a version's commit file, as EventBridge delivers it."""
    bucket, prefix = location.removeprefix("s3://").split("/", 1)
    key = f"{prefix}/{LOG_DIR}/{commit_file(version)}"
    return {
        "source": "aws.s3",
        "detail-type": "Object Created",
        "detail": {"bucket": {"name": bucket}, "object": {"key": key}},
    }


CADENCE = PollCadence(default_interval_seconds=60, safety_net_seconds=3_600, quiet_after_seconds=86_400)


class Stack:
    """The poll planner and worker of one stack on a simulated clock (one tick a minute), the queue in memory."""

    def __init__(self, lake: Lake, start_ms: int) -> None:
        self.now = start_ms
        self.queue = InMemoryWorkQueue()
        notices = lake.container.notice_store
        self.planner = PlanPolls(notices, self.queue, CADENCE)
        self.notified = PlanNotifiedPolls(lake.container.asset_registry, self.queue, notices, clock=lambda: self.now)
        self.worker = RunPollWork(
            lake.container.asset_registry, lake.poll_all, lake.compensate, notices=notices, clock=lambda: self.now
        )

    def tick(self) -> list[dict[str, Any]]:
        """The next minute's scheduled poll: what the planner queued, each message as the worker ran it."""
        self.now += 60_000
        self.planner(WorkMode.POLL, self.now)
        return self.work()

    def notice(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        self.notified(event)
        return self.work()

    def work(self) -> list[dict[str, Any]]:
        done = []
        while self.queue.messages:
            body = self.queue.messages.pop(0)
            mode, keys = parse_work(body)
            done.append({**body, **self.worker(mode, keys, safety_net=parse_safety_net(body))})
        return done


def test_s3_a_table_whose_notices_arrive_is_polled_hourly_and_falls_back_to_the_fast_poll_when_they_stop(
    server: CountingMotoServer, s3_table: tuple[str, dict[str, str]], s3_lake: Lake
) -> None:
    location, options = s3_table
    write(location, rows(1), options)
    asset = register(location, "ods.orders", by_reference(options))
    s3_lake.container.asset_registry.put_asset(asset, 1)
    key = asset.asset_key
    stack = Stack(s3_lake, now_ms() // 60_000 * 60_000)
    notices = s3_lake.container.notice_store

    # no notice yet: polled on every tick
    assert [m["assetKeys"] for m in stack.tick() + stack.tick()] == [[key], [key]]
    assert s3_lake.snapshot_ids(key) == {0}

    # a commit and its notice: polled at once, and from then on the schedule is only the safety net
    write(location, rows(2), options)
    assert [m["outcomes"] for m in stack.notice(commit_notice(location, 1))] == [["ADVANCED"]]
    assert s3_lake.snapshot_ids(key) == {0, 1}
    assert notices.notices(key).health(stack.now, CADENCE) is NoticeHealth.ARRIVING
    server.reset()
    with server.measure() as hour:
        polled = [m for _ in range(60) for m in stack.tick()]
    assert [(m["assetKeys"], m.get("safetyNet")) for m in polled] == [([key], True)]  # 1 poll in 60 ticks
    assert dict(hour) == {("s3", "HeadObject"): 2, ("s3", "GetObject"): 1}  # unchanged: GET-class requests only

    # the notice stream is lost: the next commit is found by the safety net, and the table falls back to fast polls
    write(location, rows(3), options)
    found = next(polled for _ in range(60) if (polled := stack.tick()))  # within the safety net's hour
    assert [(m["outcomes"], m["noticesMissed"]) for m in found] == [(["ADVANCED"], [key])]
    assert s3_lake.snapshot_ids(key) == {0, 1, 2}
    answer = s3_lake.container.read_asset_state(key)["notices"]
    assert answer["state"] == "QUIET" and answer["pollIntervalSeconds"] == 60
    assert answer["summary"].startswith("notices: QUIET (fast poll since ")
    assert [m["assetKeys"] for m in stack.tick() + stack.tick()] == [[key], [key]]  # every minute again
    write(location, rows(4), options)
    assert [m["outcomes"] for m in stack.tick()] == [["ADVANCED"]]  # seen on the next tick
    assert s3_lake.snapshot_ids(key) == {0, 1, 2, 3}  # no commit missed

    # notices come back: the safety net again
    write(location, rows(5), options)
    stack.notice(commit_notice(location, 4))
    assert notices.notices(key).health(stack.now, CADENCE) is NoticeHealth.ARRIVING
    assert sum(len(stack.tick()) for _ in range(60)) == 1
    assert s3_lake.snapshot_ids(key) == {0, 1, 2, 3, 4}
