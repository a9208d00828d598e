"""Poll partitions: what recording the partitions a snapshot touched costs a poll, per format, for 0, 1 and 100.

The same wiring as the `poll` bench (`PollAsset` through the real sources, a moto server on loopback: S3 for every
format, Glue as the Iceberg catalog, DynamoDB for lakehook's table; every HTTP request it serves counted by service
and operation; pyarrow's S3 client sizes an object with a HEAD before its GET). Per format, one table without
partition fields and one partitioned by `dt`; each case is one new snapshot after the poller's offset sits on the
newest: on the unpartitioned table, then on the partitioned one touching 1 partition, then touching 100.
Iceberg (Glue), Paimon and Delta: each new snapshot is a real commit by the format's library (pyiceberg `append`,
pypaimon batch commit, delta-rs `write_deltalake` with `partition_by`), one data file per partition. Hudi has no
Python writer: its tables are Apache Hudi's sample tables (tests/data/hudi) unpacked to S3 at their first commit,
and each new snapshot is a copy of one of their completed instants under a later instant time: the unpartitioned
table's `commit` (`v8_nonpartitioned`), the partitioned table's (`v9_txns_simple_nometa`, by `region`) one-region
UPSERT `deltacommit`, and for 100 partitions its first INSERT `deltacommit` rewritten (with the Avro schema the
file carries) to name 100 partition paths, each with a copy of its first write stat.
Each case is made `LAKEHOOK_BENCH_POLL_PARTITIONS_REPEATS` times (default 3): times are medians with min-max,
request counts those of the last (the same each time); that the asset's state then keeps the number of partitions
the case touched (none for the unpartitioned table) is checked. "extra storage requests" is the case's storage
requests less the unpartitioned table's of the same format: what recording partitions adds per new snapshot.
`LAKEHOOK_BENCH_POLL_PARTITIONS_FORMATS` picks the formats (default all four). Run these cases alone with
`--only poll_partitions` (the `poll` bench does not run them).
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
from tests.lakehouse import create_iceberg_table, create_paimon_table, paimon_commit, rows

from bench.poll import TABLE, Bench, _median, _row, _storage_options, glue_catalog_settings
from bench.timed_moto import TimedMotoServer
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.domain.assets import AssetRegistration

ALL_FORMATS = ("iceberg", "paimon", "delta", "hudi")
FORMATS = tuple(os.environ.get("LAKEHOOK_BENCH_POLL_PARTITIONS_FORMATS", ",".join(ALL_FORMATS)).split(","))
REPEATS = int(os.environ.get("LAKEHOOK_BENCH_POLL_PARTITIONS_REPEATS", "3"))
WIDE = 100  # partitions one snapshot touches, the wide case
ARROW = pa.schema([("id", pa.int64()), ("dt", pa.string())])
PATH = "PollAsset (use case)"

Case = tuple[str, AssetRegistration, Callable[[], None], int | None]  # name, asset, commit, partitions it touches


def _frame(count: int, start: int) -> pa.Table:
    """``count`` rows, one per day from 2026-01-01 on (one partition each), ids from ``start``."""
    from datetime import date, timedelta

    first = date(2026, 1, 1)
    return pa.Table.from_pylist(
        [{"id": start + i, "dt": (first + timedelta(days=i)).isoformat()} for i in range(count)], schema=ARROW
    )


class Cases:
    """Measures one new snapshot per case on a `poll` `Bench`, and reads back what the state kept."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        resource = boto3.resource("dynamodb", endpoint_url=bench.server.endpoint, region_name="us-east-1")
        self.store = DynamoDBAssetStore(resource.Table(TABLE))
        self.ids = 0

    def frame(self, count: int) -> pa.Table:
        self.ids += count
        return _frame(count, self.ids)

    def run(self, fmt: str, cases: list[Case]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for asset in {a.asset_key: a for _, a, _, _ in cases}.values():
            self.bench.poll(asset)  # the offset now sits on the newest snapshot
        for name, asset, commit, touched in cases:
            polls = []
            for _ in range(REPEATS):
                commit()
                polls.append(self.bench.measure(asset))
                assert polls[-1].snapshots == 1, polls[-1]
                state = self.store.get_state(asset.asset_key)
                assert state is not None
                kept = state.latest_partitions.count if state.latest_partitions is not None else None
                assert kept == touched, (fmt, name, kept)
            row = _row(PATH, fmt, polls[-1].snapshots, name, _median(polls))
            del row["path"], row["history"]
            out.append({"format": row.pop("format"), "case": row.pop("case"), "partitions": touched or 0, **row})
        base = out[0]["storage requests"]
        for row in out:
            row["extra storage requests"] = row["storage requests"] - base
        return out


# --- Iceberg ------------------------------------------------------------------------------------------


def _iceberg(cases: Cases) -> list[Case]:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    bench = cases.bench
    bucket = bench.bucket("bench-iceberg-partitions")
    properties, credentials = glue_catalog_settings(bench.server.endpoint, bucket)
    catalog = load_catalog("glue", **properties, **credentials)
    plain = create_iceberg_table(catalog, "benchparts.plain")
    plain.append(rows(1))
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "dt", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="dt"))
    daily = catalog.create_table("benchparts.daily", schema=schema, partition_spec=spec)
    daily.append(cases.frame(1))
    refs = {k: f"secretsmanager:bench#{k}" for k in credentials}

    def asset(name: str) -> AssetRegistration:
        return AssetRegistration.model_validate(
            {
                "assetKey": f"iceberg://glue/benchparts/{name}",
                "format": "iceberg",
                "source": {"catalog": "glue", "table": f"benchparts.{name}", "properties": {**properties, **refs}},
            }
        )

    def append(table: Any, frame: Callable[[], pa.Table]) -> Callable[[], None]:
        def commit() -> None:
            table.refresh()
            table.append(frame())

        return commit

    return [
        ("unpartitioned", asset("plain"), append(plain, lambda: rows(2)), None),
        ("1 partition", asset("daily"), append(daily, lambda: cases.frame(1)), 1),
        (f"{WIDE} partitions", asset("daily"), append(daily, lambda: cases.frame(WIDE)), WIDE),
    ]


# --- Paimon -------------------------------------------------------------------------------------------


def _paimon(cases: Cases) -> list[Case]:
    from pypaimon import CatalogFactory, Schema

    bench = cases.bench
    bucket = bench.bucket("bench-paimon-partitions")
    options = {
        "warehouse": f"s3://{bucket}/warehouse",
        "fs.s3.endpoint": bench.server.endpoint,
        "fs.s3.region": "us-east-1",
        "fs.s3.path-style-access": "true",
    }
    writer = {**options, "fs.s3.accessKeyId": "testing", "fs.s3.accessKeySecret": "testing"}
    plain = create_paimon_table(writer, "benchparts.plain")
    catalog = CatalogFactory.create(writer)
    catalog.create_table("benchparts.daily", Schema.from_pyarrow_schema(ARROW, partition_keys=["dt"]), False)
    daily = catalog.get_table("benchparts.daily")
    paimon_commit(plain, rows(1))
    paimon_commit(daily, cases.frame(1))

    def asset(name: str) -> AssetRegistration:
        properties = {
            **options,
            "fs.s3.accessKeyId": "secretsmanager:bench#id",
            "fs.s3.accessKeySecret": "secretsmanager:bench#secret",
        }
        return AssetRegistration.model_validate(
            {
                "assetKey": f"paimon://bench/benchparts/{name}",
                "format": "paimon",
                "source": {"catalog": "bench", "table": f"benchparts.{name}", "properties": properties},
            }
        )

    return [
        ("unpartitioned", asset("plain"), lambda: paimon_commit(plain, rows(2)), None),
        ("1 partition", asset("daily"), lambda: paimon_commit(daily, cases.frame(1)), 1),
        (f"{WIDE} partitions", asset("daily"), lambda: paimon_commit(daily, cases.frame(WIDE)), WIDE),
    ]


# --- Delta -------------------------------------------------------------------------------------------


def _delta(cases: Cases) -> list[Case]:
    from deltalake import write_deltalake

    bench = cases.bench
    bucket = bench.bucket("bench-delta-partitions")
    options = _storage_options(bench)
    writer = {**options, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    plain, daily = f"s3://{bucket}/lake/plain", f"s3://{bucket}/lake/daily"
    write_deltalake(plain, rows(1), storage_options=writer)
    write_deltalake(daily, cases.frame(1), partition_by=["dt"], storage_options=writer)

    def asset(name: str, location: str) -> AssetRegistration:
        return AssetRegistration.model_validate(
            {
                "assetKey": f"delta://bench/benchparts/{name}",
                "format": "delta",
                "source": {"catalog": "bench", "location": location, "properties": options},
            }
        )

    def append(frame: Callable[[], pa.Table]) -> Callable[[], None]:
        return lambda: write_deltalake(daily, frame(), mode="append", partition_by=["dt"], storage_options=writer)

    return [
        (
            "unpartitioned",
            asset("plain", plain),
            lambda: write_deltalake(plain, rows(2), mode="append", storage_options=writer),
            None,
        ),
        ("1 partition", asset("daily", daily), append(lambda: cases.frame(1)), 1),
        (f"{WIDE} partitions", asset("daily", daily), append(lambda: cases.frame(WIDE)), WIDE),
    ]


# --- Hudi --------------------------------------------------------------------------------------------


class _HudiSample:
    """A sample table on S3 at its first completed instant; :meth:`copy` commits a copy of one of its instants."""

    def __init__(self, cases: Cases, name: str, workdir: Path) -> None:
        from tests.hudi_tables import timeline_dir, unpack

        bench = cases.bench
        self.s3, self.bucket = bench.s3, bench.bucket(f"bench-hudi-{name.replace('_', '-')}")
        self.root = unpack(name, workdir / name)
        self.timeline = timeline_dir(self.root)
        self.completed = sorted(
            p for p in self.timeline.iterdir() if p.is_file() and "_" in p.name and not p.name.endswith(".crc")
        )
        first = self.completed[0].name.split("_")[0]
        self.held = {p.name: p.read_bytes() for p in self.timeline.iterdir() if p.is_file()}
        for path in self.timeline.iterdir():  # the table starts at its first commit
            if path.is_file() and not path.name.startswith(first):
                path.unlink()
        self.prefix = f"lake/{name}"
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                self.s3.upload_file(str(path), self.bucket, f"{self.prefix}/{path.relative_to(self.root)}")
        self.key = f"{self.prefix}/{self.timeline.relative_to(self.root)}"
        self.clock = max(int(p.name.split("_")[1].split(".")[0]) for p in self.completed)
        self.asset = AssetRegistration.model_validate(
            {
                "assetKey": f"hudi://bench/benchparts/{name}",
                "format": "hudi",
                "source": {
                    "catalog": "bench",
                    "location": f"s3://{self.bucket}/{self.prefix}",
                    "properties": _storage_options(bench),
                },
            }
        )

    def instant(self, operation: str) -> tuple[str, bytes, list[tuple[str, bytes]]]:
        """The first completed instant whose metadata is ``operation``: its action, its completed file, and its other
        files (requested, inflight) as Hudi wrote them, each by what follows the instant time in its name."""
        for path in self.completed:
            body = self.held[path.name]
            if _avro_record(body)["operationType"] == operation:
                instant, action = path.name.split("_")[0], path.name.rsplit(".", 1)[1]
                others = [(n.removeprefix(instant), b) for n, b in self.held.items() if n.startswith(f"{instant}.")]
                return action, body, sorted(others)
        raise LookupError(operation)

    def copy(self, action: str, body: bytes, others: list[tuple[str, bytes]]) -> Callable[[], None]:
        """A commit of ``body`` under the next instant time, after its requested and inflight files."""

        def commit() -> None:
            instant, completion = self.clock + 1, self.clock + 2
            self.clock = completion
            for suffix, data in others:
                self.s3.put_object(Bucket=self.bucket, Key=f"{self.key}/{instant}{suffix}", Body=data)
            self.s3.put_object(Bucket=self.bucket, Key=f"{self.key}/{instant}_{completion}.{action}", Body=body)

        return commit


def _avro_record(data: bytes) -> dict[str, Any]:
    import fastavro

    (record,) = list(fastavro.reader(io.BytesIO(data)))
    assert isinstance(record, dict)
    return record


def _wide(data: bytes, partitions: int) -> bytes:
    """Hudi's commit metadata ``data`` naming ``partitions`` partition paths, each with a copy of its first
    write stat."""
    import fastavro

    reader = fastavro.reader(io.BytesIO(data))
    schema = reader.writer_schema
    (record,) = list(reader)
    stats = record["partitionToWriteStats"]
    first = next(iter(stats.values()))[0]
    record["partitionToWriteStats"] = {
        f"p{i:03d}": [{**first, "partitionPath": f"p{i:03d}"}] for i in range(partitions)
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


def _hudi(cases: Cases, workdir: Path) -> list[Case]:
    from tests.hudi_tables import V8_COW, V9_MOR

    plain, daily = _HudiSample(cases, V8_COW, workdir), _HudiSample(cases, V9_MOR, workdir)
    action, insert, others = daily.instant("INSERT")
    return [
        ("unpartitioned", plain.asset, plain.copy(*plain.instant("UPSERT")), None),
        ("1 partition", daily.asset, daily.copy(*daily.instant("UPSERT_PREPPED")), 1),
        (f"{WIDE} partitions", daily.asset, daily.copy(action, _wide(insert, WIDE), others), WIDE),
    ]


TABLES: dict[str, Callable[[Cases], list[Case]]] = {"iceberg": _iceberg, "paimon": _paimon, "delta": _delta}


def run(formats: tuple[str, ...] = FORMATS) -> list[dict[str, Any]]:
    import tempfile

    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as workdir:
        server = TimedMotoServer().start()
        try:
            cases = Cases(Bench(server))
            for fmt in formats:
                made = _hudi(cases, Path(workdir)) if fmt == "hudi" else TABLES[fmt](cases)
                out += cases.run(fmt, made)
        finally:
            server.stop()
    out[-1]["load avg"] = f"{os.getloadavg()[0]:.2f} at the end"
    return out


if __name__ == "__main__":
    from bench.run import markdown_table

    began = time.perf_counter()
    table_rows = run(tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else FORMATS)
    sys.stdout.write(markdown_table(table_rows))
    sys.stdout.write(f"\n{time.perf_counter() - began:.0f} s\n")
