"""The resolver on moto, fed by the table's own DynamoDB stream through the FilterCriteria it ships
with; explain and triggers through the API routes."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from lakehook.adapters.dynamodb.stream_records import RESOLVER_FILTER_PATTERNS
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.handlers import handle_stream_batch, handle_stream_record, sweep_deferred
from lakehook.local.filters import matches_any
from tests.conftest import ADMIN_TOKEN, TABLE
from tests.support import RequestCounter, api_event, mark_claims_succeeded

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
# Newer botocore addresses streams by account endpoint, which moto does not route; name the old one.
STREAMS_ENDPOINT = "https://streams.dynamodb.us-east-1.amazonaws.com"


class Stream:
    """Reads the table's stream like an event source mapping: in order, from where it left off."""

    def __init__(self, ddb_client: Any) -> None:
        self.arn = ddb_client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        self.client = boto3.client("dynamodbstreams", region_name="us-east-1", endpoint_url=STREAMS_ENDPOINT)
        shards = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        self.iterators = {
            s["ShardId"]: self.client.get_shard_iterator(
                StreamArn=self.arn, ShardId=s["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            for s in shards
        }

    def records(self) -> list[dict[str, Any]]:
        """Every new record, as Lambda hands them over (eventSourceARN added)."""
        found: list[dict[str, Any]] = []
        for shard, iterator in self.iterators.items():
            answer = self.client.get_records(ShardIterator=iterator, Limit=1000)
            self.iterators[shard] = answer["NextShardIterator"]
            found.extend({**r, "eventSourceARN": self.arn} for r in answer["Records"])
        return [json.loads(json.dumps(r, default=str)) for r in found]

    def batch(self) -> dict[str, Any]:
        """The next batch, filtered by the resolver's FilterCriteria as Lambda would."""
        return {"Records": [r for r in self.records() if matches_any(r, RESOLVER_FILTER_PATTERNS)]}


def call(app: Any, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
    answer = app.resolve(api_event(method, path, body, headers=ADMIN, query=query), None)
    return answer["statusCode"], json.loads(answer["body"]) if answer["body"] else None


def put_rule(app: Any, rule_id: str, *members: dict[str, Any], mode: str = "ALL_UPDATED", **policy: Any) -> None:
    status, body = call(
        app,
        "PUT",
        f"/rules/{rule_id}",
        {
            "groups": [{"groupId": "g", "members": list(members)}],
            "policy": {"mode": mode, **policy},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        },
    )
    assert status == 201, body


def push(container: Container, event_type: str, asset: str, **fields: Any) -> None:
    container.ingest.ingest(AssetEvent(eventType=event_type, assetKey=asset, **fields), SourceType.PUSH)


def triggers_of(app: Any, rule_id: str) -> list[list[int]]:
    status, body = call(app, "GET", "/triggers", query={"ruleId": rule_id})
    assert status == 200, body
    return [[i["snapshotId"] for i in t["inputs"]] for t in reversed(body["items"])]


def test_a_rule_over_two_assets_fires_when_the_second_arrives_within_budget(
    app: Any,
    container: Container,
    stream: Stream,
    counter: RequestCounter,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    put_rule(app, "dwd", {"assetKey": ORDERS}, {"assetKey": PAYMENTS})
    stream.records()  # the rule's own items: none of them passes the filter anyway
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001, schemaId=5)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    assert triggers_of(app, "dwd") == []
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=77)
    batch = stream.batch()
    assert {r["eventName"] for r in batch["Records"]} == {"INSERT"}  # the state item, created
    with counter.measure() as calls:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert dict(calls) == {"Query": 1, "BatchGetItem": 1, "TransactWriteItems": 1}
    assert triggers_of(app, "dwd") == [[1001, 77]]
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert any(m.get("lakehouse_asset_dependency_ready_total") == [1.0] for m in metrics)
    assert any(m.get("blocked_by") == "unknown_asset" for m in metrics)  # the first change: PAYMENTS unknown
    (claimed,) = [r for r in caplog.records if r.getMessage() == "trigger claimed"]
    assert claimed.rule_id == "dwd" and claimed.trigger_key.startswith("dwd.g.")  # type: ignore[attr-defined]


def test_only_state_changes_snapshots_and_due_deferrals_pass_the_filter(container: Container, stream: Stream) -> None:
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1)  # an event item and the state item
    push(container, "WATERMARK_ADVANCED", ORDERS, watermark=1)  # an event item EACH_VERSION does not log
    records = stream.records()
    passed = [r for r in records if matches_any(r, RESOLVER_FILTER_PATTERNS)]
    events = [r for r in records if r["dynamodb"]["Keys"]["SK"]["S"].startswith("EVENT#")]
    assert [r["eventName"] for r in events].count("MODIFY") == 0  # each event recorded settled: no note written
    sks = [r["dynamodb"]["Keys"]["SK"]["S"] for r in passed]
    # the snapshot's event item (logged for EACH_VERSION) and the state writes; moto's keys-only INSERT is dropped
    assert [sk.split("#")[0] for sk in sks] == ["EVENT", "STATE", "STATE"]


def test_four_snapshots_in_one_batch(app: Any, container: Container, stream: Stream) -> None:
    put_rule(app, "each", {"assetKey": ORDERS}, mode="EACH_VERSION")
    put_rule(app, "any", {"assetKey": ORDERS}, mode="ANY_UPDATED")
    for sid in (1, 2, 3, 4):
        push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=sid)
    batch = stream.batch()
    assert len(batch["Records"]) == 8  # each snapshot's event item and state write
    handle_stream_batch(batch, container)
    assert triggers_of(app, "each") == [[1]]  # head of line: 2 waits until 1's run started
    assert triggers_of(app, "any") == [[4]]
    handle_stream_batch(batch, container)  # the same batch, delivered again
    for record in batch["Records"]:  # and record by record, as a Powertools record handler gets them
        handle_stream_record(DynamoDBRecord(record), container)
    assert triggers_of(app, "each") == [[1]]
    for _ in range(4):  # the dispatcher marks each run SUCCEEDED; that write's stream record wakes the group
        mark_claims_succeeded(container.table)
        handle_stream_batch(stream.batch(), container)
    assert triggers_of(app, "each") == [[1], [2], [3], [4]]
    assert triggers_of(app, "any") == [[4]]


def test_an_and_over_sixteen_assets_never_fires_on_fifteen(app: Any, container: Container, stream: Stream) -> None:
    assets = [f"paimon://lake/ods_db/t{i:02d}" for i in range(16)]
    put_rule(app, "wide", *({"assetKey": a} for a in assets))
    for asset in assets[:15]:
        push(container, "SNAPSHOT_COMMITTED", asset, snapshotId=1)
        handle_stream_batch(stream.batch(), container)
    assert triggers_of(app, "wide") == []
    status, explained = call(app, "GET", "/rules/wide/explain")
    assert status == 200 and explained["ready"] is False
    (group,) = explained["groups"]
    assert group["status"] == "BLOCKED_BY_UNKNOWN_ASSET"
    assert [m["status"] for m in group["members"]].count("READY") == 15
    push(container, "SNAPSHOT_COMMITTED", assets[15], snapshotId=1)
    handle_stream_batch(stream.batch(), container)
    assert triggers_of(app, "wide") == [[1] * 16]


def test_explain_says_why_not_then_what_fired(app: Any, container: Container, stream: Stream) -> None:
    put_rule(
        app,
        "dwd",
        {"assetKey": ORDERS, "condition": {"qualityStatus": "PASSED"}},
        {"assetKey": PAYMENTS, "condition": {"schemaStatus": "COMPATIBLE"}},
    )
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001, schemaId=5)
    push(container, "QUALITY_CHECK_FAILED", ORDERS, snapshotId=1001)
    handle_stream_batch(stream.batch(), container)

    status, body = call(app, "GET", "/rules/dwd/explain")
    assert status == 200
    assert set(body) >= {"ruleId", "ready", "groups", "lastTrigger", "evaluatedAt"}
    assert body["ready"] is False and body["lastTrigger"] is None and body["evaluatedAt"].endswith("Z")
    orders, payments = body["groups"][0]["members"]
    assert orders["status"] == "BLOCKED_BY_QUALITY" and "1001 failed" in orders["reason"]
    assert orders["current"]["qualityFailedSnapshotId"] == 1001 and orders["required"]["qualityStatus"] == "PASSED"
    assert payments["status"] == "BLOCKED_BY_UNKNOWN_ASSET"

    # registered, the asset is no longer unknown: it just has no snapshot yet
    status, _ = call(app, "PUT", "/assets", {"assetKey": PAYMENTS, "format": "paimon"})
    assert status == 201
    payments = call(app, "GET", "/rules/dwd/explain")[1]["groups"][0]["members"][1]
    assert payments["status"] == "BLOCKED_BY_SNAPSHOT"

    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1002, schemaId=5)
    push(container, "QUALITY_CHECK_PASSED", ORDERS, snapshotId=1002)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=7, schemaId=1)
    handle_stream_batch(stream.batch(), container)
    body = call(app, "GET", "/rules/dwd/explain")[1]
    assert body["lastTrigger"]["inputs"][0]["snapshotId"] == 1002
    assert body["groups"][0]["status"] == "WAITING_FOR_UPDATE"  # ALL_UPDATED: both already fired

    status, listed = call(app, "GET", "/triggers", query={"ruleId": "dwd"})
    assert status == 200 and len(listed["items"]) == 1 and listed["nextToken"] is None
    key = listed["items"][0]["triggerKey"]
    assert key.startswith("dwd.g.") and "/" not in key
    status, one = call(app, "GET", f"/triggers/{key}")
    assert status == 200 and one["status"] == "TRIGGERING" and one["attempts"] == 0
    assert [i["snapshotId"] for i in one["inputs"]] == [1002, 7] and one["inputs"][1]["schemaId"] == 1
    assert call(app, "GET", "/triggers", query={"ruleId": "dwd", "status": "SUCCEEDED"})[1]["items"] == []


def test_quiet_period_fires_through_a_swept_deferral(app: Any, container: Container, stream: Stream) -> None:
    put_rule(app, "quiet", {"assetKey": ORDERS}, mode="ANY_UPDATED", quietPeriodSeconds=1)
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1)
    handle_stream_batch(stream.batch(), container)
    assert triggers_of(app, "quiet") == []
    assert call(app, "GET", "/rules/quiet/explain")[1]["groups"][0]["status"] == "QUIET_PERIOD"
    assert sweep_deferred(container) == 0  # not due yet
    time.sleep(1.1)
    assert sweep_deferred(container) == 1
    batch = stream.batch()
    assert [r["dynamodb"]["NewImage"]["status"]["S"] for r in batch["Records"]] == ["DUE"]
    handle_stream_batch(batch, container)
    assert triggers_of(app, "quiet") == [[1]]


def test_a_failing_batch_reports_its_first_record_for_a_retry(container: Container, stream: Stream) -> None:
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1)
    batch = stream.batch()

    class Broken(Exception):
        """The resolver's dependencies are down."""

    def broken(*_: Any, **__: Any) -> Any:
        raise Broken("down")

    container.overrides["resolver"] = broken
    try:
        answer = handle_stream_batch(batch, container)
    finally:
        del container.overrides["resolver"]
    first = batch["Records"][0]["dynamodb"]["SequenceNumber"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": first}]}


def test_rules_crud_and_bad_rules_through_the_api(app: Any, container: Container) -> None:
    put_rule(app, "r.1", {"assetKey": ORDERS})
    status, body = call(app, "GET", "/rules/r.1")
    assert status == 200 and body["revision"] == 1 and body["groups"][0]["members"][0]["assetKey"] == ORDERS
    status, body = call(
        app,
        "PUT",
        "/rules/r.1",
        {**{k: v for k, v in body.items() if k not in ("revision", "createdAt", "updatedAt")}, "enabled": False},
    )
    assert status == 200 and body["revision"] == 2 and body["enabled"] is False
    status, body = call(
        app,
        "PUT",
        "/rules/bad",
        {
            "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS, "condition": {"qualityStatus": "MAYBE"}}]}],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        },
    )
    assert status == 400 and body["field"] == "groups.0.members.0.condition.qualityStatus"
    status, body = call(app, "PUT", "/rules/has space", {"groups": [], "target": {"type": "x"}})
    assert status == 400 and body["field"] == "ruleId"
    assert call(app, "GET", "/rules")[1]["items"][0]["ruleId"] == "r.1"
    assert call(app, "DELETE", "/rules/r.1")[0] == 204
    assert call(app, "GET", "/rules/r.1")[0] == 404
    assert call(app, "DELETE", "/rules/r.1")[0] == 404
    assert call(app, "GET", "/rules/nope/explain")[0] == 404
    assert call(app, "GET", "/triggers/nope.g.0")[0] == 404
    assert call(app, "GET", "/triggers", query={"ruleId": "r", "status": "MAYBE"})[1]["field"] == "status"
    answer = app.resolve(api_event("GET", "/rules/r.1", headers={"Content-Type": "application/json"}), None)
    assert answer["statusCode"] == 401
