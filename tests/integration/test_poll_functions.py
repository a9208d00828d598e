"""The poll planner and worker handlers with their sample events, on in-process moto and a real Paimon table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3

from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.time import now_ms
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.support import ROOT, FakeLambdaContext, load_handler

EVENTS = ROOT / "events"
ORDERS = "paimon://lake/ods_db/ods_order_latest"


def sample(function: str, name: str) -> dict[str, Any]:
    return json.loads((EVENTS / function / f"{name}.json").read_text())  # type: ignore[no-any-return]


def test_the_planner_queues_every_table_with_a_source_in_batches(container: Container, tmp_path: Path) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="polls")["QueueUrl"]
    container.settings.poll_queue_url = url
    registry = container.asset_registry
    source = {"catalog": "lake", "properties": {"warehouse": str(tmp_path)}, "table": "ods_db.t"}
    for i in range(23):
        registry.put_asset(
            AssetRegistration.model_validate(
                {"assetKey": f"paimon://lake/ods_db/t{i}", "format": "paimon", "source": source}
            ),
            now_ms(),
        )
    registry.put_asset(
        AssetRegistration.model_validate({"assetKey": "custom://push/only", "format": "custom"}), now_ms()
    )

    answer = load_handler("poll_planner")(sample("poll_planner", "poll_schedule"), FakeLambdaContext())

    assert answer == {"mode": "poll", "assets": 23, "messages": 3}
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies += [json.loads(m["Body"]) for m in got]
    keys = sorted(k for b in bodies for k in b["assetKeys"])
    assert keys == sorted(f"paimon://lake/ods_db/t{i}" for i in range(23))
    assert {b["mode"] for b in bodies} == {"poll"} and max(len(b["assetKeys"]) for b in bodies) == 10


def test_the_worker_polls_its_tables_and_drops_a_malformed_message(container: Container, tmp_path: Path) -> None:
    warehouse = {"warehouse": str(tmp_path / "wh")}
    table = create_paimon_table(warehouse, "ods_db.ods_order_latest")
    paimon_commit(table, rows(1))
    container.asset_registry.put_asset(
        AssetRegistration.model_validate(
            {
                "assetKey": ORDERS,
                "format": "paimon",
                "source": {"catalog": "lake", "properties": warehouse, "table": "ods_db.ods_order_latest"},
            }
        ),
        now_ms(),
    )

    answer = load_handler("poll_worker")(sample("poll_worker", "sqs_poll_batch"), FakeLambdaContext())

    assert answer == {"batchItemFailures": []}  # the bad message is logged and dropped, not retried forever
    state = container.asset_store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 1


def test_the_worker_polls_delta_tables_beside_paimon_ones_through_the_container(
    container: Container, tmp_path: Path
) -> None:
    from deltalake import write_deltalake

    warehouse = {"warehouse": str(tmp_path / "wh")}
    paimon = create_paimon_table(warehouse, "ods_db.ods_order_latest")
    paimon_commit(paimon, rows(1))
    location = str(tmp_path / "delta" / "dim_customer")
    write_deltalake(location, rows(1))
    write_deltalake(location, rows(2), mode="append")
    delta_key = "delta://lake/dim_db/dim_customer"
    for body in (
        {
            "assetKey": ORDERS,
            "format": "paimon",
            "source": {"catalog": "lake", "properties": warehouse, "table": "ods_db.ods_order_latest"},
        },
        {"assetKey": delta_key, "format": "delta", "source": {"catalog": "lake", "location": location}},
    ):
        container.asset_registry.put_asset(AssetRegistration.model_validate(body), now_ms())
    event = sample("poll_worker", "sqs_poll_batch")
    event["Records"][1]["body"] = json.dumps({"mode": "poll", "assetKeys": [delta_key]})

    answer = load_handler("poll_worker")(event, FakeLambdaContext())

    assert answer == {"batchItemFailures": []}
    delta = container.asset_store.get_state(delta_key)
    assert delta is not None and (delta.latest_snapshot_id, delta.latest_commit_kind) == (1, "WRITE")
    orders = container.asset_store.get_state(ORDERS)
    assert orders is not None and orders.latest_snapshot_id == 1
