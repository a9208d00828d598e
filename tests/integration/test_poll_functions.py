"""The poll planner and worker handlers with their sample events, on in-process moto and a real Paimon table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import boto3

from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration, AssetSource
from lakehook.domain.snapshots import OFFSET_KEY, POLLER_NAMESPACE
from lakehook.domain.time import now_ms
from lakehook.ports.lakehouse import SnapshotBatch, SnapshotSource
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.support import ROOT, FakeLambdaContext, RequestCounter, load_handler

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


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    while got := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [json.loads(m["Body"]) for m in got]
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
        )
    return bodies


def test_a_commit_notice_queues_a_poll_of_exactly_its_table_in_one_lookup(
    container: Container, counter: RequestCounter
) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="polls")["QueueUrl"]
    container.settings.poll_queue_url = url
    registry = container.asset_registry
    paimon = {
        "catalog": "lake",
        "properties": {"warehouse": "s3a://lakehook-warehouse/paimon/"},
        "table": "ods_db.orders",
    }
    glue = {
        "catalog": "glue",
        "properties": {"type": "glue", "glue.id": "123456789012"},
        "table": "dw_db.dwd_trade_event_fact",
    }
    sql = {"catalog": "lake", "properties": {"type": "sql", "uri": "sqlite://"}, "table": "dw_db.dwd_trade_event_fact"}
    for key, fmt, source in [
        ("paimon://lake/ods_db/orders", "paimon", paimon),
        ("iceberg://glue/dw_db/dwd_trade_event_fact", "iceberg", glue),
        ("iceberg://lake/dw_db/dwd_trade_event_fact", "iceberg", sql),  # the same name in another catalog
        ("paimon://lake/ods_db/other", "paimon", {**paimon, "table": "ods_db.other"}),
    ]:
        registry.put_asset(AssetRegistration.model_validate({"assetKey": key, "format": fmt, "source": source}), 1)
    planner = load_handler("poll_planner")

    counter.reset()
    s3_answer = planner(sample("poll_planner", "s3_commit_file_created"), FakeLambdaContext())
    assert counter.calls == {"Query": 1, "UpdateItem": 1}  # one lookup, no scan; the notice recorded on the table
    assert s3_answer["assetKeys"] == ["paimon://lake/ods_db/orders"]
    glue_answer = planner(sample("poll_planner", "glue_table_change"), FakeLambdaContext())
    assert glue_answer["assetKeys"] == ["iceberg://glue/dw_db/dwd_trade_event_fact"]  # a Glue catalog's only
    assert _drain(sqs, url) == [
        {"mode": "poll", "assetKeys": ["paimon://lake/ods_db/orders"]},
        {"mode": "poll", "assetKeys": ["iceberg://glue/dw_db/dwd_trade_event_fact"]},
    ]

    # Foreign, malformed and uninteresting events are ignored with the reason, never a crash, nothing queued.
    s3 = sample("poll_planner", "s3_commit_file_created")
    data_file = {**s3, "detail": {**s3["detail"], "object": {"key": "paimon/ods_db.db/orders/bucket-0/data-1.orc"}}}
    other_account = {**sample("poll_planner", "glue_table_change"), "account": "999999999999"}
    partition = {
        **other_account,
        "account": "123456789012",
        "detail": {**other_account["detail"], "typeOfChange": "CreatePartition"},
    }
    for event, reason in [
        (data_file, "is not a table's commit file"),
        (other_account, "no registered table is watched"),
        (partition, "is not a commit"),
        ({"source": "aws.s3", "detail-type": "Object Created", "detail": "x"}, "has no detail object"),
        ({"source": "aws.glue", "detail-type": "Glue Data Catalog Table State Change", "detail": {}}, "without"),
    ]:
        answer = planner(event, FakeLambdaContext())
        assert reason in answer["ignored"], answer
    assert _drain(sqs, url) == []

    # A registration that moves to another table leaves the old table's notices.
    moved = {**paimon, "table": "ods_db.orders_v2"}
    registry.put_asset(
        AssetRegistration.model_validate(
            {"assetKey": "paimon://lake/ods_db/orders", "format": "paimon", "source": moved}
        ),
        2,
    )
    assert (
        "no registered table"
        in planner(sample("poll_planner", "s3_commit_file_created"), FakeLambdaContext())["ignored"]
    )


class CountingSource(SnapshotSource):
    """The real snapshot source, counting its pointer reads and snapshot reads (storage reads by kind)."""

    def __init__(self, inner: SnapshotSource, counts: Counter[str]) -> None:
        self._inner = inner
        self._counts = counts

    def pointer(self, source: AssetSource) -> str:
        self._counts["pointer"] += 1
        return self._inner.pointer(source)

    def snapshots_since(self, source: AssetSource, *args: Any, **kwargs: Any) -> SnapshotBatch:
        self._counts["snapshots"] += 1
        return self._inner.snapshots_since(source, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # anything else the source offers, uncounted
        return getattr(self._inner, name)


def _worker_event(*asset_keys: str) -> dict[str, Any]:
    event = sample("poll_worker", "sqs_poll_batch")
    event["Records"] = event["Records"][:1]
    event["Records"][0]["body"] = json.dumps({"mode": "poll", "assetKeys": list(asset_keys)})
    return event


def _polled_once(container: Container, tmp_path: Path) -> tuple[Any, Counter[str]]:
    """A real Paimon table with one snapshot, registered and polled once by the worker; its storage reads counted."""
    warehouse = {"warehouse": str(tmp_path / "wh")}
    paimon_commit(create_paimon_table(warehouse, "ods_db.ods_order_latest"), rows(1))
    registration = {
        "assetKey": ORDERS,
        "format": "paimon",
        "source": {"catalog": "lake", "properties": warehouse, "table": "ods_db.ods_order_latest"},
    }
    container.asset_registry.put_asset(AssetRegistration.model_validate(registration), now_ms())
    storage: Counter[str] = Counter()
    real = container.snapshot_sources
    container.overrides["snapshot_sources"] = lambda fmt: CountingSource(real(fmt), storage)
    worker = load_handler("poll_worker")
    assert worker(_worker_event(ORDERS), FakeLambdaContext()) == {"batchItemFailures": []}
    return worker, storage


def test_an_unchanged_healthy_poll_reads_its_offset_and_its_pointer_and_writes_nothing(
    container: Container, counter: RequestCounter, tmp_path: Path
) -> None:
    # GIVEN a real Paimon table polled once by the worker, through the container's own sources
    worker, storage = _polled_once(container, tmp_path)
    first = container.poll_status_store.get(ORDERS)
    assert first is not None and first.last_snapshot_id == 1

    # WHEN the table has not changed since
    counter.reset()
    storage.clear()
    assert worker(_worker_event(ORDERS), FakeLambdaContext()) == {"batchItemFailures": []}

    # THEN: the registration and the offset are read, the table's pointer once; nothing is written
    assert dict(counter.calls) == {"GetItem": 2}
    assert dict(storage) == {"pointer": 1}
    assert container.poll_status_store.get(ORDERS) == first  # unchanged: the status says what changed last


def test_a_failing_table_shows_its_error_is_held_back_then_shows_its_recovery(
    container: Container, counter: RequestCounter, tmp_path: Path
) -> None:
    worker, storage = _polled_once(container, tmp_path)

    # WHEN the table's warehouse disappears (a bucket policy, a moved path): the poll fails
    moved = tmp_path / "moved"
    (tmp_path / "wh").rename(moved)
    assert worker(_worker_event(ORDERS), FakeLambdaContext()) == {"batchItemFailures": []}
    failing = container.poll_status_store.get(ORDERS)
    assert failing is not None and failing.consecutive_failures == 1 and failing.last_error
    assert failing.next_attempt_at is not None

    # THEN inside its backoff window it is not read at all: the offset alone says it is held back
    counter.reset()
    storage.clear()
    worker(_worker_event(ORDERS), FakeLambdaContext())
    assert dict(counter.calls) == {"GetItem": 2} and dict(storage) == {}
    assert container.poll_status_store.get(ORDERS) == failing

    # WHEN the window has passed (the offset's hold is moved into the past) and the table is back
    watermarks = container.watermark_store
    record = watermarks.get(POLLER_NAMESPACE, ORDERS, OFFSET_KEY)
    assert record is not None and record.value["retryAt"] == failing.next_attempt_at
    past = {**record.value, "retryAt": now_ms() - 1}
    watermarks.put(POLLER_NAMESPACE, ORDERS, OFFSET_KEY, past, now_ms(), expected_version=record.version)
    moved.rename(tmp_path / "wh")
    worker(_worker_event(ORDERS), FakeLambdaContext())

    # THEN the status shows the recovery (its last error kept as history), and the hold is gone
    healed = container.poll_status_store.get(ORDERS)
    assert healed is not None and healed.consecutive_failures == 0 and healed.next_attempt_at is None
    assert healed.last_error == failing.last_error and (healed.last_success_at or 0) > (failing.last_error_at or 0)
    after = watermarks.get(POLLER_NAMESPACE, ORDERS, OFFSET_KEY)
    assert after is not None and "retryAt" not in after.value

    # and the next unchanged poll is a healthy one again: nothing written
    counter.reset()
    storage.clear()
    worker(_worker_event(ORDERS), FakeLambdaContext())
    assert dict(counter.calls) == {"GetItem": 2} and dict(storage) == {"pointer": 1}
