"""POST /api/v1/lineage through the ingest API's handler on in-process moto (SQS for the poll queue).

An output that reports no version (and every Iceberg output) is polled instead of recorded: POLL_QUEUED
when its asset is registered with a poll source, REJECTED naming why when it is not; a dataset with more
facets or symlinks than the limits is a 400 naming the limit, before anything is recorded.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from lakehook.container import Container
from lakehook.domain.limits import MAX_DATASET_FACETS, MAX_SYMLINKS
from lakehook.settings import Settings
from tests.conftest import ADMIN_TOKEN, BUCKET, TABLE
from tests.integration.test_api import Api

pytestmark = pytest.mark.integration

HIVE = "hudi://warehouse/default/orders"


@pytest.fixture
def settings() -> Settings:
    return Settings(
        table_name=TABLE,
        bucket_name=BUCKET,
        admin_token=ADMIN_TOKEN,
        region="us-east-1",
        poll_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/lakehook-polls",
    )


@pytest.fixture
def queue(aws: None) -> Any:
    sqs = boto3.client("sqs", region_name="us-east-1")
    sqs.create_queue(QueueName="lakehook-polls")
    return sqs


@pytest.fixture
def api(container: Container, settings: Settings, queue: Any) -> Api:
    return Api(settings.admin_token or "")


def complete(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": "2026-12-01T10:00:00Z",
        "run": {"runId": "0193a7c4-0000-7000-8000-000000000003"},
        "job": {"namespace": "spark", "name": "etl.orders"},
        "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.40.0/integration/spark",
        "outputs": outputs,
    }


def hive_output(**facets: Any) -> dict[str, Any]:
    return {"namespace": "hudi://warehouse", "name": "default.orders", "facets": facets}


def polls_sent(queue: Any, settings: Settings) -> list[dict[str, Any]]:
    answer = queue.receive_message(QueueUrl=settings.poll_queue_url, MaxNumberOfMessages=10)
    return [json.loads(m["Body"]) for m in answer.get("Messages", [])]


def test_a_complete_output_without_a_version_queues_a_poll_of_its_registered_table(
    api: Api, queue: Any, settings: Settings
) -> None:
    unregistered = api.call("POST", "/api/v1/lineage", complete([hive_output()]))
    assert unregistered.status == 200
    [result] = unregistered.body["results"]
    assert result["status"] == "REJECTED"
    assert "reports no version" in result["reason"] and "not registered" in result["reason"]
    assert polls_sent(queue, settings) == []

    source = {"catalog": "warehouse", "location": "s3://lake-bucket/warehouse/default/orders", "properties": {}}
    registered = api.call("PUT", "/assets", {"assetKey": HIVE, "format": "hudi", "source": source})
    assert registered.status == 201, registered.body
    answer = api.call("POST", "/api/v1/lineage", complete([hive_output(version={})]))
    assert answer.status == 200
    [result] = answer.body["results"]
    assert (result["status"], result["eventId"]) == ("POLL_QUEUED", None)
    assert polls_sent(queue, settings) == [{"mode": "poll", "assetKeys": [HIVE]}]


def test_an_output_registered_without_a_source_is_rejected_saying_so(api: Api, queue: Any, settings: Settings) -> None:
    assert api.call("PUT", "/assets", {"assetKey": HIVE, "format": "hudi"}).status == 201
    [result] = api.call("POST", "/api/v1/lineage", complete([hive_output()])).body["results"]
    assert result["status"] == "REJECTED" and "registered without a source" in result["reason"]
    assert polls_sent(queue, settings) == []


def test_too_many_facets_or_symlinks_is_a_400_naming_the_limit(api: Api, queue: Any, settings: Settings) -> None:
    many = {f"f{i}": {"n": i} for i in range(MAX_DATASET_FACETS + 1)}
    answer = api.call("POST", "/api/v1/lineage", complete([hive_output(**many)]))
    assert answer.status == 400 and "MAX_DATASET_FACETS" in answer.body["message"], answer.body
    links = [{"namespace": "hive://m", "name": f"db.t{i}", "type": "TABLE"} for i in range(MAX_SYMLINKS + 1)]
    answer = api.call("POST", "/api/v1/lineage", complete([hive_output(symlinks={"identifiers": links})]))
    assert answer.status == 400 and "MAX_SYMLINKS" in answer.body["message"], answer.body
    assert polls_sent(queue, settings) == []
