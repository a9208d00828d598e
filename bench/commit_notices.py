"""Commit notices: commit -> asset state on the local stack, the poll schedule at ten minutes.

Real tables on the local stack's moto: a Paimon table in an S3 warehouse (the S3 "Object Created" of its
snapshot file) and Iceberg tables in the Glue catalog (Glue's "Table State Change", put on the local bus as
Glue would; and the S3 "Object Created" of the metadata.json). Each commit is timed from the writer's commit
call returning (for the Glue event, from putting the event) to `GET /assets/state` answering the committed
snapshot, polled every 20 ms. The poll schedule is ten minutes, so only the notice can bring a commit in.
`LAKEHOOK_BENCH_NOTICE_COMMITS` commits per path (default 30). The machine is shared (2 cores).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import boto3
import pyarrow as pa
import requests

from lakehook.demo.lake import ORDERS_SCHEMA, REGION, WAREHOUSE_BUCKET, Lake
from lakehook.local.runtime import LocalStack

ADMIN = "bench-admin"
COMMITS = int(os.environ.get("LAKEHOOK_BENCH_NOTICE_COMMITS", "30"))
FACTS = pa.schema([("order_id", pa.int64()), ("amount_cents", pa.int64())])


def _latency(stack: LocalStack, asset: str, commit: Callable[[int], int], timeout: float = 30) -> float:
    """Seconds from ``commit`` returning to the state holding its snapshot."""
    snapshot = commit(0)
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        state = requests.get(
            f"{stack.api_url}/assets/state",
            params={"assetKey": asset},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=30,
        ).json()
        if state.get("latestSnapshotId") == snapshot:
            return time.perf_counter() - began
        time.sleep(0.02)
    raise RuntimeError(f"{asset}: snapshot {snapshot} not in the state after {timeout} s")


def _row(path: str, seconds: list[float]) -> dict[str, Any]:
    ordered = sorted(seconds)
    return {
        "path": path,
        "commits": len(ordered),
        "p50 ms": round(statistics.median(ordered) * 1000),
        "p90 ms": round(ordered[max(0, int(len(ordered) * 0.9) - 1)] * 1000),
        "max ms": round(ordered[-1] * 1000),
        "load avg": f"{os.getloadavg()[0]:.1f}",
    }


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with LocalStack(
        port=0,
        admin_token=ADMIN,
        schedule_rates={"PollPlannerFunction": 600},
        parameters={"WarehouseBucketName": WAREHOUSE_BUCKET},
    ) as stack:
        lake = Lake(stack.endpoint_url)
        lake.create_storage()
        boto3.client("s3", endpoint_url=stack.endpoint_url, region_name=REGION).put_bucket_notification_configuration(
            Bucket=WAREHOUSE_BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
        events = boto3.client("events", endpoint_url=stack.endpoint_url, region_name=REGION)
        admin = {"Authorization": f"Bearer {ADMIN}"}

        def register(asset: str, fmt: str, source: dict[str, Any]) -> None:
            body = {"assetKey": asset, "format": fmt, "source": source}
            requests.put(f"{stack.api_url}/assets", headers=admin, json=body, timeout=30).raise_for_status()

        lake.create_paimon_table("bench_db.orders", ORDERS_SCHEMA)
        register(
            "paimon://lake/bench_db/orders",
            "paimon",
            {"catalog": "lake", "properties": lake.paimon_options(True), "table": "bench_db.orders"},
        )

        def paimon_commit(_: int) -> int:
            row = {"order_id": 1, "order_date": "2026-12-01", "amount_cents": 1}
            return lake.paimon_append("bench_db.orders", [row], ORDERS_SCHEMA).snapshot_id

        rows.append(
            _row(
                "Paimon, S3 snapshot file",
                [_latency(stack, "paimon://lake/bench_db/orders", paimon_commit) for _ in range(COMMITS)],
            )
        )

        glue_only = {k: v for k, v in lake.iceberg_properties(True).items() if k != "warehouse"}
        lake.create_iceberg_table("bench_db.glue_facts", FACTS)
        register(
            "iceberg://glue/bench_db/glue_facts",
            "iceberg",
            {"catalog": "glue", "properties": glue_only, "table": "bench_db.glue_facts"},
        )
        data = pa.table({"order_id": [1], "amount_cents": [1]}, FACTS)

        def iceberg_glue_commit(_: int) -> int:
            snapshot = lake.iceberg_overwrite("bench_db.glue_facts", data).snapshot_id
            detail = {"databaseName": "bench_db", "tableName": "glue_facts", "typeOfChange": "UpdateTable"}
            events.put_events(
                Entries=[
                    {
                        "Source": "aws.glue",
                        "DetailType": "Glue Data Catalog Table State Change",
                        "Detail": json.dumps(detail),
                    }
                ]
            )
            return snapshot

        rows.append(
            _row(
                "Iceberg (Glue), Glue table change",
                [_latency(stack, "iceberg://glue/bench_db/glue_facts", iceberg_glue_commit) for _ in range(COMMITS)],
            )
        )

        lake.create_iceberg_table("bench_db.s3_facts", FACTS)
        register(
            "iceberg://glue/bench_db/s3_facts",
            "iceberg",
            {"catalog": "glue", "properties": lake.iceberg_properties(True), "table": "bench_db.s3_facts"},
        )

        def iceberg_s3_commit(_: int) -> int:
            return lake.iceberg_overwrite("bench_db.s3_facts", data).snapshot_id

        rows.append(
            _row(
                "Iceberg (Glue), S3 metadata.json",
                [_latency(stack, "iceberg://glue/bench_db/s3_facts", iceberg_s3_commit) for _ in range(COMMITS)],
            )
        )
    return rows


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
