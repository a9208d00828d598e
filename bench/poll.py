"""Poll: storage requests and time per poll, by table format, history length and number of new snapshots.

Real tables on a moto server on loopback (S3 for every format, Glue as the Iceberg catalog, DynamoDB for
lakehook's own table), polled by `PollAsset` through `IcebergSnapshotSource` / `PaimonSnapshotSource` /
`DeltaSnapshotSource` / `HudiSnapshotSource`.
Every HTTP request the server serves is counted, by service and operation (pyarrow's S3 client sizes
each object with a HEAD before its GET, so one object read is HEAD + GET). Cases: an unchanged table
(median of 5 polls), 1 new snapshot, 100 new snapshots; each after 1, 100 and 1,000 snapshots of history.
History and the 100-snapshot batches are generated cheaply: Paimon by one real commit, then copies of its
snapshot file under new ids (what a commit leaves in `snapshot/`); Iceberg by one real append, then one
catalog commit adding the snapshots (`AddSnapshotUpdate`s sharing the first manifest list). The single
new snapshot is a real commit. DynamoDB requests are the ingest of each new event (put + update) and the
offset's read and compare-and-set.
Delta: one real delta-rs write, then copies of its commit file under the next versions (what an append
leaves in `_delta_log/`), a real checkpoint at the end of the history (delta-rs checkpoints every 100
commits by default), then one real write as the single new version and 100 copies as the batch.
Hudi: the first commit of Apache Hudi's sample MOR table (tests/data/hudi), then copies of that INSERT deltacommit
(`.requested`, `.inflight`, completed) under later instant times; the history keeps at most 30 instants on
the active timeline, as Hudi's archiver does by default (`hoodie.keep.max.commits`), while the new ones
are added without archival. Delta and Hudi use boto3 (one object read is one GET).
Two paths, the same cases: `PollAsset` (the use case, as above), and the poll worker function's real path
(`functions/poll_worker/app.py`'s handler, called in this process with an SQS event whose message body is
what the planner sends, `{"mode": "poll", "assetKeys": [...]}`, on a fresh server holding the tables, with
the container pointed at it: the asset's registration read from DynamoDB, the credential references
resolved in Secrets Manager, the poll's status recorded), after 100 snapshots of history
(`LAKEHOOK_BENCH_POLL_WORKER_FORMATS`, default iceberg,paimon). The worker's events are the snapshots its
source returned; that the asset's state then names the newest one is checked. Each new-snapshot case is
made `LAKEHOOK_BENCH_POLL_REPEATS` times (default 3) and the unchanged one 5 times: times are medians with
min-max, request counts those of the last (they are the same each time). "ms inside moto" is the wall time
of moto's own application serving the poll's requests (`bench.timed_moto`), summed over requests: pyarrow and
pypaimon read objects in parallel, so it can exceed the poll's wall time.
`LAKEHOOK_BENCH_POLL_FORMATS` picks the use case's formats (default all four).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from tests.fakes.memory import InMemorySecretStore
from tests.lakehouse import (
    create_iceberg_table,
    create_paimon_table,
    paimon_commit,
    rows,
)
from tests.support import FakeLambdaContext, create_table, load_handler

from bench.timed_moto import TimedMotoServer, fresh_lakehook, quiet_stdout
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.container import Container
from lakehook.domain.assets import AssetFormat, AssetRegistration, AssetSource
from lakehook.domain.snapshots import SnapshotCursor
from lakehook.domain.time import now_ms
from lakehook.ports.lakehouse import SnapshotBatch, SnapshotSource
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.poll import PollAsset

ALL_FORMATS = ("iceberg", "paimon", "delta", "hudi")
FORMATS = tuple(os.environ.get("LAKEHOOK_BENCH_POLL_FORMATS", ",".join(ALL_FORMATS)).split(","))
WORKER_FORMATS = tuple(os.environ.get("LAKEHOOK_BENCH_POLL_WORKER_FORMATS", "iceberg,paimon").split(","))
HISTORIES = (1, 100, 1000)
WORKER_HISTORY = 100
UNCHANGED_REPEATS = 5
NEW_REPEATS = int(os.environ.get("LAKEHOOK_BENCH_POLL_REPEATS", "3"))
BATCH = 100  # new snapshots at once, the second new-snapshot case
TABLE = "lakehook-bench-poll"
# What is measured on a table once it exists: (bench, format, history, asset, add one snapshot, add n) -> rows
Cases = Callable[[Any, str, int, AssetRegistration, Callable[[], None], Callable[[int], None]], list[dict[str, Any]]]


class TimedSource(SnapshotSource):
    """Passes through to the real source, adding up the time spent reading the table."""

    def __init__(self, inner: SnapshotSource) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.snapshots = 0  # returned, in all
        self.newest: int | None = None  # the newest snapshot id returned

    def pointer(self, source: AssetSource) -> str:
        began = time.perf_counter()
        try:
            return self.inner.pointer(source)
        finally:
            self.seconds += time.perf_counter() - began

    def unchanged_since(self, source: AssetSource, cursor: SnapshotCursor) -> bool:
        """The format's cheap unchanged check, passed through (without it every poll would read the pointer)."""
        began = time.perf_counter()
        try:
            return self.inner.unchanged_since(source, cursor)
        finally:
            self.seconds += time.perf_counter() - began

    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        began = time.perf_counter()
        try:
            batch = self.inner.snapshots_since(source, cursor, pointer, limit=limit, known_tags=known_tags)
        finally:
            self.seconds += time.perf_counter() - began
        self.snapshots += len(batch.snapshots)
        if batch.snapshots:
            self.newest = batch.snapshots[-1].snapshot_id
        return batch


@dataclass(frozen=True)
class Measured:
    events: int
    snapshots: int
    calls: Counter[tuple[str, str]]
    seconds: float
    reading: float
    moto: float  # inside moto's application
    spread: str = ""


class Bench:
    """Polls through the use case, `PollAsset`, wired with the real sources and DynamoDB stores."""

    path = "PollAsset (use case)"

    def __init__(self, server: TimedMotoServer) -> None:
        self.server = server
        ddb = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1")
        create_table(ddb, TABLE)
        table = boto3.resource("dynamodb", endpoint_url=server.endpoint, region_name="us-east-1").Table(TABLE)
        real = snapshot_sources(_bench_secrets())
        formats = (AssetFormat.ICEBERG, AssetFormat.PAIMON, AssetFormat.DELTA, AssetFormat.HUDI)
        self.timed = {fmt: TimedSource(real(fmt)) for fmt in formats}
        self.poll = PollAsset(
            self.timed.__getitem__,
            DynamoDBWatermarkStore(table),
            IngestEvents(DynamoDBAssetStore(table)),
            batch_limit=1000,
        )
        self.s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")

    def bucket(self, name: str) -> str:
        self.s3.create_bucket(Bucket=name)
        return name

    def measure(self, asset: AssetRegistration) -> Measured:
        """One poll: its result, the requests served, its wall time and the part spent reading the table."""
        timed = self.timed[asset.format]
        reading = timed.seconds
        with self.server.served() as served:
            began = time.perf_counter()
            result = self.poll(asset)
            elapsed = time.perf_counter() - began
        return Measured(
            len(result.results),
            len(result.snapshot_ids),
            served.calls,
            elapsed,
            timed.seconds - reading,
            served.seconds,
        )


class WorkerBench:
    """Polls through the poll worker function's handler, given the SQS message the planner sends."""

    path = "poll worker handler (SQS message)"

    def __init__(self, server: TimedMotoServer, wired: Container) -> None:
        from lakehook.adapters import aws
        from lakehook.adapters.lakehouse.credentials import ssm_parameter_reader

        self.server = server
        self.wired = wired
        real = snapshot_sources(wired.secret_store, ssm_parameter_reader(aws.client("ssm", wired.settings)))
        formats = (AssetFormat.ICEBERG, AssetFormat.PAIMON, AssetFormat.DELTA, AssetFormat.HUDI)
        self.timed = {fmt: TimedSource(real(fmt)) for fmt in formats}
        wired.overrides["snapshot_sources"] = self.timed.__getitem__  # the same real sources, timed
        self.handler = load_handler("poll_worker")
        self.s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
        boto3.client("secretsmanager", endpoint_url=server.endpoint, region_name="us-east-1").create_secret(
            Name="bench", SecretString=_bench_secrets().get_secret("bench")
        )
        self.registered: set[str] = set()
        self.messages = 0

    def bucket(self, name: str) -> str:
        self.s3.create_bucket(Bucket=name)
        return name

    def poll(self, asset: AssetRegistration) -> None:
        if asset.asset_key not in self.registered:
            self.wired.asset_registry.put_asset(asset, now_ms())
            self.registered.add(asset.asset_key)
        self.messages += 1
        body = json.dumps({"mode": "poll", "assetKeys": [asset.asset_key]})  # as PlanPolls queues it
        record = {
            "messageId": f"bench-{self.messages}",
            "receiptHandle": f"bench-receipt-{self.messages}",
            "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(now_ms())},
            "messageAttributes": {},
            "md5OfBody": "0",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lakehook-PollQueue",
            "awsRegion": "us-east-1",
        }
        with quiet_stdout():
            answer = self.handler({"Records": [record]}, FakeLambdaContext())
        assert answer == {"batchItemFailures": []}, answer

    def measure(self, asset: AssetRegistration) -> Measured:
        timed = self.timed[asset.format]
        reading, snapshots = timed.seconds, timed.snapshots
        with self.server.served() as served:
            began = time.perf_counter()
            self.poll(asset)
            elapsed = time.perf_counter() - began
        found = timed.snapshots - snapshots
        if found:  # the worker took them in: the asset's state names the newest
            state = self.wired.asset_store.get_state(asset.asset_key)
            assert state is not None and state.latest_snapshot_id == timed.newest, (state, timed.newest)
        return Measured(found, found, served.calls, elapsed, timed.seconds - reading, served.seconds)


def _row(path: str, fmt: str, history: int, case: str, measured: Measured) -> dict[str, Any]:
    storage = {op: n for (svc, op), n in measured.calls.items() if svc in {"s3", "glue"}}
    other = {f"{svc} {op}": n for (svc, op), n in measured.calls.items() if svc not in {"s3", "glue", "dynamodb"}}
    return {
        "path": path,
        "format": fmt,
        "history": history,
        "case": case,
        "events": measured.events,
        "catalog": storage.get("GetTable", 0) or "-",
        "S3 GET": storage.get("GetObject", 0),
        "S3 HEAD": storage.get("HeadObject", 0),
        "S3 LIST": storage.get("ListObjects", 0),
        "storage requests": sum(storage.values()),
        "DynamoDB requests": sum(n for (svc, _), n in measured.calls.items() if svc == "dynamodb"),
        "DynamoDB by operation": ", ".join(
            f"{op} {n}" for (svc, op), n in sorted(measured.calls.items()) if svc == "dynamodb"
        ),
        "other requests": ", ".join(f"{k} {n}" for k, n in sorted(other.items())) or 0,
        "ms per poll": round(measured.seconds * 1000, 1),
        "min-max": measured.spread,
        "ms reading the table": round(measured.reading * 1000, 1),
        "ms inside moto": round(measured.moto * 1000, 1),
    }


def _median(polls: list[Measured]) -> Measured:
    """The median poll's times (min-max beside them) with the last poll's counts."""
    seconds = [p.seconds * 1000 for p in polls]
    return Measured(
        polls[-1].events,
        polls[-1].snapshots,
        polls[-1].calls,
        statistics.median(p.seconds for p in polls),
        statistics.median(p.reading for p in polls),
        statistics.median(p.moto for p in polls),
        f"{min(seconds):.1f}-{max(seconds):.1f} ({len(polls)})",
    )


def _cases(
    bench: Any, fmt: str, history: int, asset: AssetRegistration, add_one: Any, add_many: Any
) -> list[dict[str, Any]]:
    """Unchanged, 1 new, 100 new snapshots on ``bench`` (a `Bench` or a `WorkerBench`)."""
    bench.poll(asset)  # the offset now sits on the newest snapshot
    polls = [bench.measure(asset) for _ in range(UNCHANGED_REPEATS)]
    assert not any(p.events for p in polls)
    out = [_row(bench.path, fmt, history, "unchanged", _median(polls))]
    for case, add, count in (
        ("1 new snapshot", lambda: add_one(), 1),
        (f"{BATCH} new snapshots", lambda: add_many(BATCH), BATCH),
    ):
        polls = []
        for _ in range(NEW_REPEATS):
            add()
            polls.append(bench.measure(asset))
            assert polls[-1].snapshots == count, polls[-1]
        out.append(_row(bench.path, fmt, history, case, _median(polls)))
    return out


# --- Paimon -------------------------------------------------------------------------------------------


def _paimon(bench: Any, history: int, cases: Cases | None = None) -> list[dict[str, Any]]:
    bucket = bench.bucket(f"bench-paimon-{history}")
    options = {
        "warehouse": f"s3://{bucket}/warehouse",
        "fs.s3.endpoint": bench.server.endpoint,
        "fs.s3.region": "us-east-1",
        "fs.s3.path-style-access": "true",
    }
    writer = {**options, "fs.s3.accessKeyId": "testing", "fs.s3.accessKeySecret": "testing"}
    table = create_paimon_table(writer, "bench.orders")
    paimon_commit(table, rows(1))
    snapshot_dir = f"{table.table_path}/snapshot"
    template = json.loads(table.file_io.read_file_utf8(f"{snapshot_dir}/snapshot-1"))

    def synthesize(count: int) -> None:
        latest = int(table.file_io.read_file_utf8(f"{snapshot_dir}/LATEST"))
        for sid in range(latest + 1, latest + count + 1):
            body = {**template, "id": sid, "timeMillis": template["timeMillis"] + sid}
            table.file_io.write_file(f"{snapshot_dir}/snapshot-{sid}", json.dumps(body), overwrite=True)
        table.file_io.write_file(f"{snapshot_dir}/LATEST", str(latest + count), overwrite=True)

    synthesize(history - 1)
    # Credentials travel as references, resolved at poll time (here from an in-memory secret store).
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"paimon://bench/bench/orders_{history}",
            "format": "paimon",
            "source": {
                "catalog": "bench",
                "table": "bench.orders",
                "properties": {
                    **options,
                    "fs.s3.accessKeyId": "secretsmanager:bench#id",
                    "fs.s3.accessKeySecret": "secretsmanager:bench#secret",
                },
            },
        }
    )

    def add_one(properties: dict[str, str] | None = None) -> None:  # a run's commit carries its trigger key
        paimon_commit(table, rows(2), properties)

    return (cases or _cases)(bench, "paimon", history, asset, add_one, synthesize)


# --- Iceberg ------------------------------------------------------------------------------------------


def glue_catalog_settings(endpoint: str, bucket: str) -> tuple[dict[str, str], dict[str, str]]:
    """A Glue catalog with its warehouse on S3, both on the moto server at ``endpoint``: its properties, and the
    credentials (kept apart: an asset's registration names them as secret references)."""
    properties = {
        "type": "glue",
        "glue.endpoint": endpoint,
        "glue.region": "us-east-1",
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "warehouse": f"s3://{bucket}/iceberg",
    }
    credentials = {
        "glue.access-key-id": "testing",
        "glue.secret-access-key": "testing",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
    }
    return properties, credentials


def _iceberg(bench: Any, history: int, cases: Cases | None = None) -> list[dict[str, Any]]:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

    bucket = bench.bucket(f"bench-iceberg-{history}")
    properties, credentials = glue_catalog_settings(bench.server.endpoint, bucket)
    catalog = load_catalog("glue", **properties, **credentials)
    table = create_iceberg_table(catalog, f"bench{history}.orders")
    table.append(rows(1))
    rng = random.Random(history)

    def synthesize(count: int) -> None:
        table.refresh()
        parent = table.current_snapshot()
        assert parent is not None
        updates: list[Any] = []
        seq, ts = table.metadata.last_sequence_number, parent.timestamp_ms
        for _ in range(count):
            seq, ts = seq + 1, ts + 1
            snapshot = Snapshot(
                snapshot_id=rng.randrange(1, 2**62),
                parent_snapshot_id=parent.snapshot_id,
                sequence_number=seq,
                timestamp_ms=ts,
                manifest_list=parent.manifest_list,
                schema_id=parent.schema_id,
                summary=Summary(operation=Operation.APPEND, **{"added-records": "1", "total-records": str(seq)}),
            )
            updates.append(AddSnapshotUpdate(snapshot=snapshot))
            parent = snapshot
        main = SetSnapshotRefUpdate(
            ref_name="main",
            type=SnapshotRefType.BRANCH,
            snapshot_id=parent.snapshot_id,
            max_ref_age_ms=None,
            max_snapshot_age_ms=None,
            min_snapshots_to_keep=None,
        )
        updates.append(main)
        catalog.commit_table(table, (), tuple(updates))

    if history > 1:
        synthesize(history - 1)
    refs = {k: f"secretsmanager:bench#{k}" for k in credentials}
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"iceberg://glue/bench{history}/orders",
            "format": "iceberg",
            "source": {"catalog": "glue", "table": f"bench{history}.orders", "properties": {**properties, **refs}},
        }
    )

    def add_one() -> None:
        table.refresh()
        table.append(rows(2))

    return (cases or _cases)(bench, "iceberg", history, asset, add_one, synthesize)


# --- Delta -------------------------------------------------------------------------------------------


def _storage_options(bench: Any) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": bench.server.endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "secretsmanager:bench#id",
        "AWS_SECRET_ACCESS_KEY": "secretsmanager:bench#secret",
    }


def _delta(bench: Any, history: int, cases: Cases | None = None) -> list[dict[str, Any]]:
    from deltalake import DeltaTable, write_deltalake

    bucket = bench.bucket(f"bench-delta-{history}")
    location = f"s3://{bucket}/lake/orders"
    options = _storage_options(bench)
    writer = {**options, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    write_deltalake(location, rows(1), storage_options=writer)
    write_deltalake(location, rows(2), mode="append", storage_options=writer)  # an append's commit: the template
    log = "lake/orders/_delta_log"
    template = bench.s3.get_object(Bucket=bucket, Key=f"{log}/{1:020d}.json")["Body"].read().decode()
    latest = [1]

    def synthesize(count: int) -> None:
        for version in range(latest[0] + 1, latest[0] + count + 1):
            bench.s3.put_object(Bucket=bucket, Key=f"{log}/{version:020d}.json", Body=template.encode())
        latest[0] += count

    if history > 2:
        synthesize(history - 2)
    if history >= 100:
        DeltaTable(location, storage_options=writer).create_checkpoint()
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"delta://bench/bench/orders_{history}",
            "format": "delta",
            "source": {"catalog": "bench", "location": location, "properties": options},
        }
    )

    def add_one() -> None:
        write_deltalake(location, rows(3), mode="append", storage_options=writer)
        latest[0] += 1

    return (cases or _cases)(bench, "delta", history, asset, add_one, synthesize)


# --- Hudi --------------------------------------------------------------------------------------------

HUDI_ACTIVE_INSTANTS = 30  # Hudi's default hoodie.keep.max.commits: older instants leave the active timeline


def _hudi(bench: Any, history: int, workdir: str, cases: Cases | None = None) -> list[dict[str, Any]]:
    from pathlib import Path

    from tests.hudi_tables import V9_MOR, timeline_dir, unpack

    bucket = bench.bucket(f"bench-hudi-{history}")
    root = unpack(V9_MOR, Path(workdir) / f"hudi-{history}")
    timeline = timeline_dir(root)
    first_insert = sorted(p.name for p in timeline.glob("*_*.deltacommit"))[0]
    instant = first_insert.split("_")[0]
    for path in timeline.iterdir():  # the history starts at the sample's first commit
        if path.is_file() and not path.name.startswith(instant):
            path.unlink()
    prefix = "lake/txns"
    for path in sorted(root.rglob("*")):
        if path.is_file():
            bench.s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(root)}")
    body = (timeline / first_insert).read_bytes()
    requested = (timeline / f"{instant}.deltacommit.requested").read_bytes()
    inflight = (timeline / f"{instant}.deltacommit.inflight").read_bytes()
    key = f"{prefix}/{timeline.relative_to(root)}"
    active: list[int] = [int(instant)]
    clock = [int(first_insert.split("_")[1].split(".")[0])]

    def commit(archive: bool) -> None:
        instant, completion = clock[0] + 1, clock[0] + 2
        clock[0] = completion
        bench.s3.put_object(Bucket=bucket, Key=f"{key}/{instant}.deltacommit.requested", Body=requested)
        bench.s3.put_object(Bucket=bucket, Key=f"{key}/{instant}.deltacommit.inflight", Body=inflight)
        bench.s3.put_object(Bucket=bucket, Key=f"{key}/{instant}_{completion}.deltacommit", Body=body)
        active.append(instant)
        while archive and len(active) > HUDI_ACTIVE_INSTANTS:
            gone = active.pop(0)
            for name in (
                f"{gone}.deltacommit.requested",
                f"{gone}.deltacommit.inflight",
                f"{gone}_{gone + 1}.deltacommit",
            ):
                bench.s3.delete_object(Bucket=bucket, Key=f"{key}/{name}")

    for _ in range(history - 1):
        commit(archive=True)
    asset = AssetRegistration.model_validate(
        {
            "assetKey": f"hudi://bench/bench/txns_{history}",
            "format": "hudi",
            "source": {
                "catalog": "bench",
                "location": f"s3://{bucket}/{prefix}",
                "properties": _storage_options(bench),
            },
        }
    )

    def add(count: int) -> None:
        for _ in range(count):
            commit(archive=False)

    return (cases or _cases)(bench, "hudi", history, asset, lambda: add(1), add)


def _format(bench: Any, fmt: str, history: int, workdir: str, cases: Cases | None = None) -> list[dict[str, Any]]:
    """A table of the format with ``history`` snapshots, measured by ``cases`` (default: `_cases`)."""
    if fmt == "iceberg":
        return _iceberg(bench, history, cases)
    if fmt == "paimon":
        return _paimon(bench, history, cases)
    if fmt == "delta":
        return _delta(bench, history, cases)
    return _hudi(bench, history, workdir, cases)


def run(formats: tuple[str, ...] = FORMATS, worker_formats: tuple[str, ...] = WORKER_FORMATS) -> list[dict[str, Any]]:
    import tempfile

    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as workdir:
        server = TimedMotoServer().start()
        try:
            bench = Bench(server)
            for fmt in formats:
                for history in HISTORIES:
                    out += _format(bench, fmt, history, workdir)
        finally:
            server.stop()
        if worker_formats:
            with fresh_lakehook() as (fresh, wired):
                worker = WorkerBench(fresh, wired)
                for fmt in worker_formats:
                    out += _format(worker, fmt, WORKER_HISTORY, workdir)
    out[-1]["load avg"] = f"{os.getloadavg()[0]:.2f} at the end"
    return out


def _bench_secrets() -> InMemorySecretStore:
    """One secret holding the test credentials; every credential property references a field of it."""
    secrets = InMemorySecretStore()
    value = {
        "id": "testing",
        "secret": "testing",
        "glue.access-key-id": "testing",
        "glue.secret-access-key": "testing",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
    }
    secrets.put_secret("bench", json.dumps(value))
    return secrets


if __name__ == "__main__":
    from bench.run import markdown_table

    began = time.perf_counter()
    chosen = tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else FORMATS
    table_rows = run(chosen, tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else WORKER_FORMATS)
    sys.stdout.write(markdown_table(table_rows))
    sys.stdout.write(f"\n{time.perf_counter() - began:.0f} s\n")
