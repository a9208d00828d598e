"""Commits the lakehouse announces itself, on the local stack with real tables: no writer change, no poll tick.

The poll schedule is set to ten minutes, so within a test only a notice brings a commit in: S3's "Object
Created" for a Paimon snapshot file and a Delta log file (the warehouse bucket sends its events to
EventBridge, moto's S3 does so too), and Glue's "Table State Change" for an Iceberg commit to the Glue catalog
on moto (put on the local bus, as Glue would). Then every way in at once - push, the bus, scheduled poll, S3
notice, Glue notice, OpenLineage - for one snapshot: one event.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pyarrow as pa
import pytest
import requests
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import dataset_version_dataset
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

from lakehook.client import PushClient
from lakehook.demo.lake import CALENDAR_SCHEMA, ORDERS_SCHEMA, REGION, WAREHOUSE_BUCKET, Lake
from lakehook.local.runtime import LocalStack
from tests.waiting import wait_until

ADMIN = "notices-admin"
FACTS_SCHEMA = pa.schema([("order_id", pa.int64()), ("amount_cents", pa.int64())])


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(
        port=0,
        admin_token=ADMIN,
        schedule_rates={"PollPlannerFunction": 600},
        parameters={"WarehouseBucketName": WAREHOUSE_BUCKET},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def lake(stack: LocalStack) -> Lake:
    lake = Lake(stack.endpoint_url)
    lake.create_storage()
    s3 = boto3.client("s3", endpoint_url=stack.endpoint_url, region_name=REGION)
    s3.put_bucket_notification_configuration(
        Bucket=WAREHOUSE_BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    return lake


def api(stack: LocalStack, method: str, path: str, **kwargs: Any) -> Any:
    answer = requests.request(
        method, stack.api_url + path, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30, **kwargs
    )
    assert answer.status_code < 300, answer.text
    return answer.json()


def register(stack: LocalStack, asset: str, fmt: str, source: dict[str, Any]) -> None:
    api(stack, "PUT", "/assets", json={"assetKey": asset, "format": fmt, "source": source})


def events_of(stack: LocalStack, asset: str, snapshot_id: int) -> list[dict[str, Any]]:
    items = api(stack, "GET", "/assets/events", params={"assetKey": asset})["items"]
    return [e for e in items if e["eventType"] == "SNAPSHOT_COMMITTED" and e["snapshotId"] == snapshot_id]


def wait_for(probe: Callable[[], Any], seconds: float = 30) -> Any:
    return wait_until("not seen (the poll schedule is 600 s: only a notice brings it)", probe, seconds)


def glue_table_change(database: str, table: str) -> dict[str, str]:
    """The event Glue puts on the default bus when a table's metadata_location moves (an Iceberg commit)."""
    return {
        "Source": "aws.glue",
        "DetailType": "Glue Data Catalog Table State Change",
        "Resources": f"arn:aws:glue:{REGION}:123456789012:table/{database}/{table}",
        "Detail": json.dumps({"databaseName": database, "tableName": table, "typeOfChange": "UpdateTable"}),
    }


def put_glue_event(stack: LocalStack, database: str, table: str) -> None:
    entry = glue_table_change(database, table)
    events = boto3.client("events", endpoint_url=stack.endpoint_url, region_name=REGION)
    answer = events.put_events(Entries=[{**entry, "Resources": [entry["Resources"]]}])
    assert answer["FailedEntryCount"] == 0


def put_on_bus(stack: LocalStack, source: str, *events: dict[str, Any]) -> None:
    """What a Glue job or a Step Functions state does instead of signing HTTP: PutEvents on the stack's bus."""
    bus = stack.names["LakehookEventBus"]
    client = boto3.client("events", endpoint_url=stack.endpoint_url, region_name=REGION)
    detail = json.dumps({"events": list(events)})
    entry = {"EventBusName": bus, "Source": source, "DetailType": "Lakehook Asset Events", "Detail": detail}
    assert client.put_events(Entries=[entry])["FailedEntryCount"] == 0


def queues_drained(stack: LocalStack) -> bool:
    sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name=REGION)
    for url in sqs.list_queues().get("QueueUrls", []):
        counts = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        if any(int(v) for v in counts.values()):
            return False
    return stack.wait_idle(5)


def test_a_paimon_commit_is_polled_from_its_s3_notice(stack: LocalStack, lake: Lake) -> None:
    lake.create_paimon_table("ods_db.orders", ORDERS_SCHEMA)
    asset = "paimon://lake/ods_db/orders"
    register(
        stack, asset, "paimon", {"catalog": "lake", "properties": lake.paimon_options(True), "table": "ods_db.orders"}
    )
    committed = lake.paimon_append(
        "ods_db.orders", [{"order_id": 1, "order_date": "2026-12-01", "amount_cents": 5}], ORDERS_SCHEMA
    )

    [event] = wait_for(lambda: events_of(stack, asset, committed.snapshot_id))
    assert event["source"] == "POLL"
    state = api(stack, "GET", "/assets/state", params={"assetKey": asset})
    assert state["latestSnapshotId"] == committed.snapshot_id


def test_a_push_put_on_the_event_bus_is_the_producers_push(stack: LocalStack, lake: Lake) -> None:
    asset = "paimon://lake/bus_db/orders"
    api(
        stack,
        "PUT",
        "/producers/step-functions",
        json={"assetKeyPrefixes": ["paimon://lake/bus_db/"], "eventSources": ["com.example.sfn"]},
    )
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": 5, "commitTime": 1796119253000}
    put_on_bus(stack, "com.example.sfn", event)
    [recorded] = wait_for(lambda: events_of(stack, asset, 5))
    assert (recorded["source"], recorded["producerId"]) == ("EVENTBRIDGE", "step-functions")
    # Another source, or a producer's source writing outside its prefixes: delivered, rejected, nothing recorded.
    delivered = sum(d.delivered for d in stack.rule_deliveries)
    put_on_bus(stack, "com.example.stranger", {**event, "snapshotId": 6})
    put_on_bus(stack, "com.example.sfn", {**event, "assetKey": "paimon://lake/other_db/t", "snapshotId": 6})
    wait_for(lambda: sum(d.delivered for d in stack.rule_deliveries) >= delivered + 2)
    assert events_of(stack, asset, 6) == [] and events_of(stack, "paimon://lake/other_db/t", 6) == []
    taken = requests.put(
        f"{stack.api_url}/producers/impostor",
        headers={"Authorization": f"Bearer {ADMIN}"},
        json={"assetKeyPrefixes": ["paimon://lake/"], "eventSources": ["com.example.sfn"]},
        timeout=30,
    )
    assert taken.status_code == 409 and "belongs to producer 'step-functions'" in taken.json()["message"]


def test_a_delta_commit_is_polled_from_the_s3_notice_of_its_log_file(stack: LocalStack, lake: Lake) -> None:
    day = {"order_date": "2026-12-01", "week": "2026-W49"}
    lake.delta_write("notice_db.calendar", [day], CALENDAR_SCHEMA)  # version 0, before lakehook knows the table
    asset = "delta://lake/notice_db/calendar"
    location = lake.delta_location("notice_db.calendar")
    register(stack, asset, "delta", {"catalog": "lake", "location": location, "properties": lake.delta_options(True)})
    committed = lake.delta_write("notice_db.calendar", [day], CALENDAR_SCHEMA)  # _delta_log/...001.json
    assert committed.snapshot_id == 1
    [event] = wait_for(lambda: events_of(stack, asset, 1))
    assert event["source"] == "POLL"
    # the notice is recorded on the table: from now on the schedule polls it only as the hourly safety net
    notices = api(stack, "GET", "/assets/state", params={"assetKey": asset})["notices"]
    assert (notices["state"], notices["pollIntervalSeconds"], notices["summary"]) == (
        "ARRIVING",
        3600,
        "notices: ARRIVING",
    )


def test_an_iceberg_commit_to_glue_is_polled_from_the_glue_event(stack: LocalStack, lake: Lake) -> None:
    lake.create_iceberg_table("dw_db.facts", FACTS_SCHEMA)
    asset = "iceberg://glue/dw_db/facts"
    # No warehouse in the registration: the table is watched by its Glue name only, so only Glue's event finds it.
    properties = {k: v for k, v in lake.iceberg_properties(True).items() if k != "warehouse"}
    register(stack, asset, "iceberg", {"catalog": "glue", "properties": properties, "table": "dw_db.facts"})
    committed = lake.iceberg_overwrite("dw_db.facts", pa.table({"order_id": [1], "amount_cents": [5]}, FACTS_SCHEMA))

    put_glue_event(stack, "dw_db", "facts")
    [event] = wait_for(lambda: events_of(stack, asset, committed.snapshot_id))
    assert event["source"] == "POLL"


def test_every_way_in_for_one_snapshot_is_one_event(stack: LocalStack, lake: Lake) -> None:
    lake.create_iceberg_table("dw_db.gmv", FACTS_SCHEMA)
    asset = "iceberg://glue/dw_db/gmv"
    # With its warehouse: watched by its Glue name and by its location (the S3 notice of metadata.json).
    register(
        stack, asset, "iceberg", {"catalog": "glue", "properties": lake.iceberg_properties(True), "table": "dw_db.gmv"}
    )
    mapping = {
        "namespace": f"arn:aws:glue:{REGION}:123456789012",
        "namePrefix": "table/",
        "assetKeyPrefix": "iceberg://glue/",
    }
    producer = api(
        stack,
        "PUT",
        "/producers/gmv-job",
        json={
            "assetKeyPrefixes": ["iceberg://glue/dw_db/"],
            "lineageDatasets": [mapping],
            "eventSources": ["com.example.gmv-job"],
            "lineageBearer": True,  # the OpenLineage client below sends the apiKey as a bearer
        },
    )
    delivered_before = sum(d.delivered for d in stack.rule_deliveries)

    committed = lake.iceberg_overwrite("dw_db.gmv", pa.table({"order_id": [7], "amount_cents": [70]}, FACTS_SCHEMA))
    snapshot = committed.snapshot_id
    put_glue_event(stack, "dw_db", "gmv")
    stack.fire_schedule("PollPlannerFunction")  # the scheduled poll and compensation, as if both ticked now
    pushed = PushClient(stack.api_url, "gmv-job", producer["secret"]).send(committed.event(asset))
    put_on_bus(stack, "com.example.gmv-job", committed.event(asset))  # the same push, by PutEvents
    lineage = OpenLineageClient(
        transport=HttpTransport(HttpConfig(url=stack.api_url, auth=ApiKeyTokenProvider({"apiKey": producer["apiKey"]})))
    )
    lineage.emit(
        RunEvent(
            eventType=RunState.COMPLETE,
            eventTime=datetime.now(tz=UTC).isoformat(),
            run=Run(runId=str(uuid.uuid4())),
            job=Job(namespace="glue", name="gmv-job"),
            producer="https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark",
            outputs=[
                OutputDataset(
                    namespace=mapping["namespace"],
                    name="table/dw_db/gmv",
                    facets={
                        "version": dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(snapshot))
                    },
                )
            ],
        )
    )

    # The notices (the Glue event, the S3 metadata.json) and the bus push delivered, every queue empty.
    wait_for(lambda: sum(d.delivered for d in stack.rule_deliveries) >= delivered_before + 3)
    wait_for(lambda: queues_drained(stack))
    found = events_of(stack, asset, snapshot)
    assert len(found) == 1, found
    assert pushed[0].status in ("ACCEPTED", "DUPLICATE")
