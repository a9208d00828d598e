"""A rule per day over two real Delta tables (delta-rs writes them, ``partition_by=["dt"]``), polled into DynamoDB
(moto), its stream through the resolver's FilterCriteria: each day runs once both tables touched it, an overwrite
replacing a day runs it again, explain names the day and what it waits for; and what one commit costs."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakehook.container import Container
from lakehook.domain.assets import AssetRegistration
from lakehook.handlers import handle_stream_batch
from tests.integration.test_resolver_on_moto import Stream, call
from tests.pollers import Lake
from tests.support import RequestCounter
from tests.wiring import dispatch_trigger

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


class Table:
    """One Delta table of the lake and its poller."""

    def __init__(self, container: Container, root: Path, name: str) -> None:
        self.location = str(root / name)
        self.key = f"delta://lake/ods/{name}"
        self.asset = AssetRegistration.model_validate(
            {"assetKey": self.key, "format": "delta", "source": {"catalog": "lake", "location": self.location}}
        )
        self.poll = Lake(container.table, container=container).poll
        self.rows = 0

    def write(self, *days: str, mode: str = "append", predicate: str | None = None) -> None:
        data = pa.Table.from_pylist([{"id": self.rows + i, "dt": d} for i, d in enumerate(days)], schema=SCHEMA)
        self.rows += len(days)
        write_deltalake(self.location, data, mode=mode, partition_by=["dt"], predicate=predicate)  # type: ignore[arg-type]
        self.poll(self.asset)


def put_daily(app: Any, orders: Table, payments: Table, rule_id: str = "daily", mode: str = "ALL_UPDATED") -> None:
    status, body = call(
        app,
        "PUT",
        f"/rules/{rule_id}",
        {
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": orders.key, "partition": {}}, {"assetKey": payments.key, "partition": {}}],
                }
            ],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": mode},
        },
    )
    assert status == 201, body


def runs(app: Any, rule_id: str = "daily") -> list[tuple[str, list[int]]]:
    status, body = call(app, "GET", "/triggers", query={"ruleId": rule_id})
    assert status == 200, body
    return [(t["partition"], [i["snapshotId"] for i in t["inputs"]]) for t in reversed(body["items"])]


@pytest.fixture
def lake(container: Container, tmp_path: Path) -> tuple[Table, Table]:
    return Table(container, tmp_path, "orders"), Table(container, tmp_path, "payments")


def test_each_day_runs_once_both_tables_touched_it_and_an_overwrite_runs_it_again(
    app: Any, container: Container, ddb_client: Any, lake: tuple[Table, Table]
) -> None:
    orders, payments = lake
    orders.write("2026-11-30")  # version 0 creates the table; the poller's first look starts here
    payments.write("2026-12-02")
    put_daily(app, orders, payments)  # LATEST: the newest commits' days become facts (12-02 of payments)
    stream = Stream(ddb_client)
    stream.records()
    orders.write("2026-12-01", "2026-12-02")  # version 1
    payments.write("2026-12-01")  # version 1
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert sorted(runs(app)) == [("dt=2026-12-01", [1, 1]), ("dt=2026-12-02", [1, 0])]
    orders.write("2026-12-03")  # version 2
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    status, explained = call(app, "GET", "/rules/daily/explain")
    assert status == 200, explained
    lines = {p["partition"]: p for p in explained["groups"][0]["partitions"]}
    assert lines["dt=2026-12-03"]["status"] == "WAITING_FOR_PARTITION"
    assert lines["dt=2026-12-03"]["reason"].startswith(f"dt=2026-12-03: waiting for {payments.key}")
    assert explained["groups"][0]["pendingPartitions"] == 2  # 12-03, and 11-30 that orders' version 0 touched

    # payments replaces 2026-12-01 (replaceWhere) and writes 2026-12-02; orders overwrites 2026-12-01 too
    payments.write("2026-12-01", mode="overwrite", predicate="dt = '2026-12-01'")  # version 2
    payments.write("2026-12-03")  # version 3
    orders.write("2026-12-01", mode="overwrite", predicate="dt = '2026-12-01'")  # version 3
    batch = stream.batch()
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert runs(app)[2:] == [("dt=2026-12-03", [2, 3]), ("dt=2026-12-01", [3, 2])]

    # the same records again (a redelivered batch) run nothing twice
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert len(runs(app)) == 4


def test_each_version_runs_each_commit_of_a_day_in_order_once_the_previous_run_succeeded(
    app: Any, container: Container, ddb_client: Any, lake: tuple[Table, Table]
) -> None:
    """EACH_VERSION per partition on DynamoDB: three commits of orders touching a day run it three times, in order;
    each run's SUCCEEDED stream record (inOrder) passes the FilterCriteria and wakes the next; a redelivered batch runs
    nothing twice and records no skip."""
    from tests.support import mark_claims_succeeded

    orders, payments = lake
    orders.write("2026-11-30")  # version 0 creates the table
    payments.write("2026-11-30")
    put_daily(app, orders, payments, mode="EACH_VERSION")  # 11-30 runs with both version 0 (LATEST)
    stream = Stream(ddb_client)
    stream.records()
    payments.write("2026-12-01")  # version 1
    for _ in range(3):
        orders.write("2026-12-01")  # versions 1, 2, 3
    batch = stream.batch()
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    day = [r for r in runs(app) if r[0] == "dt=2026-12-01"]
    assert day == [("dt=2026-12-01", [1, 1])]
    status, explained = call(app, "GET", "/rules/daily/explain")
    lines = {p["partition"]: p for p in explained["groups"][0]["partitions"]}
    assert status == 200 and lines["dt=2026-12-01"]["status"] == "WAITING_FOR_RUN"
    for _ in range(4):
        mark_claims_succeeded(container.table)
        assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}  # redelivered
    day = [r for r in runs(app) if r[0] == "dt=2026-12-01"]
    assert day == [("dt=2026-12-01", [1, 1]), ("dt=2026-12-01", [2, 1]), ("dt=2026-12-01", [3, 1])]
    assert [r for r in runs(app) if r[0] is None] == []


def each(n: int, single: str) -> Counter[str]:
    """What ``write_each`` sends for n conditional writes of one kind: one alone is the single write (``PutItem`` or
    ``DeleteItem``), more go 100 to a ``TransactWriteItems``."""
    if n == 0:
        return Counter()
    return Counter({single: 1}) if n == 1 else Counter({"TransactWriteItems": math.ceil(n / 100)})


@pytest.mark.parametrize("touched", [1, 25])
def test_what_one_commit_touching_n_partitions_costs(
    app: Any,
    container: Container,
    ddb_client: Any,
    counter: RequestCounter,
    lake: tuple[Table, Table],
    touched: int,
) -> None:
    """The request counts docs/partitions.md states: one commit of orders touching N days, which payments touched
    before, with one partitioned rule. (N stays small: moto copies the whole table for every transaction.)"""
    batch = _both_touch(app, lake, ddb_client, container, touched, "ALL_UPDATED")[2]
    with counter.measure() as calls:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert len(container.trigger_store.list_for_rule("daily", limit=1000).items) == touched
    pages = math.ceil(2 * touched / 100)  # the facts of both members, 100 keys per BatchGetItem
    cursors = marks = math.ceil(touched / 100)
    expected = Counter(
        {
            "Query": 1,  # the asset's rules (reverse index); a partitioned member's commit reads no pending page
            "BatchGetItem": 1
            + marks
            + pages
            + cursors,  # states and cursors, the marks, the facts, the partitions' cursors
            "TransactWriteItems": math.ceil(touched / 50),  # the claims of the partitions that run, 50 a transaction
        }
    )
    # the new facts (conditional puts) and the days payments left pending, cleared under the marks they were read with
    assert dict(calls) == dict(expected + each(touched, "PutItem") + each(touched, "DeleteItem"))


@pytest.mark.parametrize("touched", [1, 25])
def test_what_each_version_per_partition_costs(
    app: Any,
    container: Container,
    ddb_client: Any,
    counter: RequestCounter,
    lake: tuple[Table, Table],
    touched: int,
) -> None:
    """The request counts docs/partitions.md states for EACH_VERSION per partition: a first commit of orders touching
    N days payments touched (each day's first run), a second one while those runs are dispatching (head of line: no
    version read), and the wake of the runs' SUCCEEDED (each day's next version read, one query each, and the table's
    commits after the version they ran, one query for them all)."""
    from tests.support import mark_claims_succeeded

    orders = lake[0]
    days, stream, batch = _both_touch(app, lake, ddb_client, container, touched, "EACH_VERSION")
    with counter.measure() as first:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    hundreds, twenty_fives = math.ceil(touched / 100), math.ceil(touched / 25)
    assert dict(first) == dict(
        Counter(
            {
                "Query": 1 + touched,  # the asset's rules; per day its first run's payments version (no cursor yet)
                "BatchGetItem": 1 + hundreds + math.ceil(2 * touched / 100) + hundreds,  # as ALL_UPDATED
                "BatchWriteItem": twenty_fives,  # the commit's versions, 25 a request
                "PutItem": 1,  # the commit in its table's commit log
                "TransactWriteItems": math.ceil(touched / 50),  # the claims, 50 a transaction
            }
        )
        + each(touched, "PutItem")  # the facts
        + each(touched, "DeleteItem")  # the days payments left pending, cleared
    )
    orders.write(*days)
    batch = stream.batch()
    with counter.measure() as held:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert dict(held) == dict(
        Counter(
            {
                "Query": 1,  # no version read: each day's run is dispatching (head of line)
                "BatchGetItem": 1 + hundreds + math.ceil(2 * touched / 100) + hundreds + hundreds,  # + the runs
                "BatchWriteItem": twenty_fives + twenty_fives,  # the versions; the days newly pending
                "PutItem": 1,  # the commit logged
            }
        )
        + each(touched, "PutItem")  # the facts
    )
    mark_claims_succeeded(container.table)
    batch = stream.batch()
    with counter.measure() as woken:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert len([t for t in container.trigger_store.list_for_rule("daily", limit=1000).items]) == 2 * touched
    # the pending page; per day its next version (orders: payments ran with it); orders' commits after the version
    # every day ran (one query for them all: a gap before the next version?)
    assert woken["Query"] == 1 + touched + 1
    cleared = each(touched, "DeleteItem")  # the pending days cleared
    assert woken["TransactWriteItems"] == math.ceil(touched / 50) + cleared["TransactWriteItems"]  # + the claims
    assert woken["DeleteItem"] == cleared["DeleteItem"]


def test_a_forced_partition_and_its_replay_carry_the_partition_through_dispatch(
    app: Any, container: Container, ddb_client: Any, lake: tuple[Table, Table]
) -> None:
    """``POST /rules/daily/evaluate`` with force and partition, dispatched by the dispatcher on DynamoDB and S3:
    the trigger, its key, the run manifest and the payload carry the day; a replay of it (and of a resolver's run
    of a day) keeps the day in its trigger and key, shares the manifest, and its payload names the day too."""
    import boto3

    from lakehook.api.rule_answers import Explanation
    from lakehook.domain.triggers import trigger_key
    from lakehook.receiver import parse_invocation
    from lakehook.usecases.dispatch import DispatchPolicy, DispatchStatus
    from tests.conftest import BUCKET
    from tests.fakes.memory_dispatch import InMemoryTargetClient

    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    orders, payments = lake
    orders.write("2026-12-01")  # version 0
    payments.write("2026-12-02")  # version 0
    put_daily(app, orders, payments)
    orders.write("2026-12-02")  # version 1: the day runs once the resolver handles it
    stream = Stream(ddb_client)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    [(ran, pins)] = runs(app)
    assert (ran, pins) == ("dt=2026-12-02", [1, 0])
    status, explained = call(app, "GET", "/rules/daily/explain")  # the rule's and the group's newest trigger
    assert status == 200 and explained["lastTrigger"]["partition"] == "dt=2026-12-02", explained
    assert explained["groups"][0]["lastTrigger"]["partition"] == "dt=2026-12-02"
    documented = Explanation.model_validate(explained)  # the answer is what the OpenAPI document says it is
    assert documented.last_trigger is not None and documented.last_trigger.partition == "dt=2026-12-02"

    status, refused = call(app, "POST", "/rules/daily/evaluate", {"force": True})
    assert status == 400 and refused["field"] == "partition", refused
    status, refused = call(app, "POST", "/rules/daily/evaluate", {"force": True, "partition": "dt=2026-12-01"})
    assert status == 409 and payments.key in refused["message"], refused  # payments never touched the day
    status, forced = call(app, "POST", "/rules/daily/evaluate", {"force": True, "partition": "dt=2026-12-02"})
    assert status == 200 and forced["manual"] is True, forced
    manual = container.trigger_store.get(forced["triggerKey"])
    assert manual is not None and manual.partition == "dt=2026-12-02"
    assert [p.snapshot_id for p in manual.inputs] == [1, 0]
    assert manual.trigger_key == trigger_key(
        "daily", "g", manual.inputs, None, 0, marker="manual-1", partition="dt=2026-12-02"
    )

    target = InMemoryTargetClient()
    dispatch = dispatch_trigger(
        container.trigger_ledger,
        container.rule_store,
        container.manifest_store,
        {"eventbridge": target},
        DispatchPolicy(),
        sleep=lambda s: None,
        metrics=None,
    )
    resolved = next(
        t for t in container.trigger_store.list_for_rule("daily").items if t.trigger_key != manual.trigger_key
    )
    for original in (manual, resolved):
        assert dispatch(original.trigger_key).status is DispatchStatus.SUCCEEDED
        [payload] = target.payloads(original.trigger_key)
        assert payload["partition"] == "dt=2026-12-02"
        received = parse_invocation(payload)  # what the run's own code reads (lakehook.receiver)
        assert (received.partition, received.partition_values) == ("dt=2026-12-02", {"dt": "2026-12-02"})
        status, shown = call(app, "GET", f"/triggers/{original.trigger_key}")
        assert status == 200 and shown["partition"] == "dt=2026-12-02", shown
        done = container.trigger_store.get(original.trigger_key)
        assert done is not None and done.manifest_uri is not None
        assert container.manifest_store.get(done.manifest_uri).partition == "dt=2026-12-02"

        status, body = call(app, "POST", f"/triggers/{original.trigger_key}/replay")
        assert status == 201, body
        replay = container.trigger_store.get(body["replay"]["triggerKey"])
        assert (
            replay is not None
            and replay.partition == "dt=2026-12-02"
            and body["replay"]["partition"] == replay.partition
        )
        # the next epoch nobody took: replays of a manual run and of the resolver's run of the same pins share them
        assert replay.replay_epoch >= 1 and replay.trigger_key != original.trigger_key
        epoch = replay.replay_epoch
        assert replay.trigger_key == trigger_key("daily", "g", original.inputs, None, epoch, partition="dt=2026-12-02")
        assert replay.manifest_uri == done.manifest_uri  # the replay reads the run manifest of the run it replays
        assert dispatch(replay.trigger_key).status is DispatchStatus.SUCCEEDED
        [again] = target.payloads(replay.trigger_key)
        assert (again["partition"], again["replayOf"], again["triggerKey"]) == (
            "dt=2026-12-02",
            original.trigger_key,
            replay.trigger_key,
        )


def _both_touch(app: Any, lake: Any, ddb_client: Any, container: Any, touched: int, mode: str) -> tuple[Any, ...]:
    """Payments, then orders, commit ``touched`` days under a rule of ``mode`` written when no day had both (nothing
    runs then); payments' batch is resolved. The days, the stream, and orders' batch, not resolved yet."""
    orders, payments = lake
    days = [f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}" for i in range(touched)]
    orders.write("2020-01-01")
    payments.write("2019-12-31")  # no day both touched: nothing runs when the rule is written
    put_daily(app, orders, payments, mode=mode)
    stream = Stream(ddb_client)
    stream.records()
    payments.write(*days)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    orders.write(*days)
    return days, stream, stream.batch()


def test_each_version_with_a_watermark_window_runs_a_days_commits_in_order_once_the_watermark_closed_the_day(
    app: Any, container: Container, ddb_client: Any, lake: tuple[Table, Table]
) -> None:
    """EACH_VERSION per partition with a watermark window member, on DynamoDB through the API and the stream's
    FilterCriteria: the rule is taken (a 400 until 2026-12-07); each day's window is its own span, so a day's three
    commits wait, pending and explained, while the watermark is inside the day, then run in order, each once, the
    watermark's advance waking them; the run's window is the day."""
    from tests.integration.test_resolver_on_moto import push
    from tests.support import mark_claims_succeeded

    orders, _ = lake
    events = "paimon://lake/ods/events"
    day_end = 1_796_169_600_000  # 2026-12-02T00:00Z: the end of dt=2026-12-01
    orders.write("2026-11-30")  # version 0 creates the table
    push(container, "SNAPSHOT_COMMITTED", events, snapshotId=1, watermark=day_end - 86_400_000)  # 12-01T00:00Z
    status, body = call(
        app,
        "PUT",
        "/rules/daily",
        {
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [
                        {"assetKey": orders.key, "partition": {}},
                        {"assetKey": events, "condition": {"watermarkAtLeast": {"window": "PT1H"}}},
                    ],
                }
            ],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": "EACH_VERSION"},
        },
    )
    assert status == 201, body
    stream = Stream(ddb_client)
    stream.records()
    for _ in range(3):
        orders.write("2026-12-01")  # versions 1, 2, 3
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert [r for r in runs(app) if r[0] == "dt=2026-12-01"] == []  # the watermark is inside the day
    status, explained = call(app, "GET", "/rules/daily/explain")
    assert status == 200, explained
    line = {p["partition"]: p for p in explained["groups"][0]["partitions"]}["dt=2026-12-01"]
    assert line["status"] == "BLOCKED_BY_WATERMARK", line
    assert "window [2026-12-01T00:00:00Z, 2026-12-02T00:00:00Z) of dt=2026-12-01 is not closed yet" in line["reason"]
    push(container, "WATERMARK_ADVANCED", events, watermark=day_end)  # closes the day
    for _ in range(4):  # the watermark's record wakes the day; each run's SUCCEEDED wakes the next
        assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
        mark_claims_succeeded(container.table)
    status, body = call(app, "GET", "/triggers", query={"ruleId": "daily"})
    assert status == 200, body
    day = [t for t in reversed(body["items"]) if t["partition"] == "dt=2026-12-01"]
    assert [[i["snapshotId"] for i in t["inputs"] if i["assetKey"] == orders.key] for t in day] == [[1], [2], [3]]
    assert {(t["window"]["start"], t["window"]["end"]) for t in day} == {
        ("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    }, day
