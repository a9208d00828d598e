"""OpenLineage's own Python client, HTTP transport and api_key auth, posting RunEvents to the local stack.

A COMPLETE event about a real Iceberg table and a poll of that table's same snapshot are one event; the
producer's key and prefixes hold; what the client can send that lakehook does not read is a clear 4xx.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import dataset_version_dataset, output_statistics_output_dataset, schema_dataset
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpCompression, HttpConfig, HttpTransport
from pyiceberg.catalog import load_catalog

from lakehook.local.runtime import LocalStack
from tests.lakehouse import create_iceberg_table, rows
from tests.waiting import wait_until

GLUE_NAMESPACE = "arn:aws:glue:us-east-1:123456789012"  # OpenLineage's naming for a Glue catalog's tables
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark"


def client_for(stack: LocalStack, api_key: str, compression: HttpCompression | None = None) -> OpenLineageClient:
    config = HttpConfig(
        url=stack.api_url, auth=ApiKeyTokenProvider({"apiKey": api_key}), compression=compression, retry={"total": 0}
    )
    return OpenLineageClient(transport=HttpTransport(config))


def run_event(state: RunState, run_id: str, *outputs: OutputDataset) -> RunEvent:
    return RunEvent(
        eventType=state,
        eventTime=datetime.now(tz=UTC).isoformat(),
        run=Run(runId=run_id),
        job=Job(namespace="spark", name="etl.load_orders"),
        producer=PRODUCER,
        outputs=list(outputs),
    )


def written(name: str, snapshot_id: int, namespace: str = GLUE_NAMESPACE) -> OutputDataset:
    """An output as Spark's Iceberg integration reports it: the snapshot id in the dataset version facet."""
    return OutputDataset(
        namespace=namespace,
        name=name,
        facets={
            "version": dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(snapshot_id)),
            "schema": schema_dataset.SchemaDatasetFacet(fields=[schema_dataset.SchemaDatasetFacetFields(name="id")]),
        },
        outputFacets={
            "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(rowCount=1)
        },
    )


def wait_for(probe: Callable[[], Any], seconds: float = 20) -> Any:
    return wait_until("not seen", probe, seconds, every=0.2)


class Lake:
    def __init__(self, stack: LocalStack, admin: dict[str, str], tmp_path: Path) -> None:
        self.stack, self.admin = stack, admin
        self.table = f"orders_{uuid.uuid4().hex[:8]}"  # one table per test on the module's stack
        self.asset = f"iceberg://glue/ods_db/{self.table}"
        self.dataset = f"table/ods_db/{self.table}"  # as Spark names a Glue table
        self.paimon_asset = f"paimon://lake/ods_db/{self.table}"  # push-only: the default mapping names it
        properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
        self.orders = create_iceberg_table(load_catalog("glue", **properties), f"ods_db.{self.table}")
        registration = {
            "assetKey": self.asset,
            "format": "iceberg",
            "source": {"catalog": "glue", "properties": properties, "table": f"ods_db.{self.table}"},
        }
        answer = requests.put(f"{stack.api_url}/assets", headers=admin, json=registration, timeout=30)
        assert answer.status_code == 201, answer.text
        mapping = {"namespace": GLUE_NAMESPACE, "namePrefix": "table/", "assetKeyPrefix": "iceberg://glue/"}
        spec = {
            "assetKeyPrefixes": ["iceberg://glue/ods_db/", "paimon://lake/ods_db/"],
            "lineageDatasets": [mapping],
            "lineageBearer": True,  # OpenLineage's api_key auth sends the key as a bearer: opted in
        }
        created = requests.put(f"{stack.api_url}/producers/spark-etl", headers=admin, json=spec, timeout=30)
        assert created.status_code in (200, 201), created.text
        rotated = requests.put(
            f"{stack.api_url}/producers/spark-etl",
            headers=admin,
            params={"rotateSecret": "true"},
            json=spec,
            timeout=30,
        )
        self.api_key = rotated.json()["apiKey"]  # created by an earlier test, or not: a rotation answers the key
        assert self.api_key.startswith("spark-etl:")

    def commit(self, *ids: int) -> int:
        self.orders.append(rows(*ids))
        return int(self.orders.current_snapshot().snapshot_id)

    def events(self, asset: str | None = None) -> list[dict[str, Any]]:
        answer = requests.get(
            f"{self.stack.api_url}/assets/events",
            params={"assetKey": asset or self.asset},
            headers=self.admin,
            timeout=30,
        )
        return [e for e in answer.json()["items"] if e["eventType"] == "SNAPSHOT_COMMITTED"]

    def of(self, snapshot_id: int) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["snapshotId"] == snapshot_id]


@pytest.fixture
def lake(stack: LocalStack, admin: dict[str, str], tmp_path: Path) -> Iterator[Lake]:
    yield Lake(stack, admin, tmp_path)


def test_a_complete_event_records_its_outputs_once_whichever_way_they_arrive(stack: LocalStack, lake: Lake) -> None:
    client = client_for(stack, lake.api_key)
    transport = client.transport
    assert isinstance(transport, HttpTransport)
    first = lake.commit(1)
    run_id = str(uuid.uuid4())
    paimon = written(f"ods_db.{lake.table}", 3, namespace="paimon://lake")  # the default mapping
    client.emit(run_event(RunState.START, run_id, written(lake.dataset, first), paimon))
    assert lake.events() == [] and lake.events(lake.paimon_asset) == []  # a started run committed nothing yet

    client.emit(run_event(RunState.COMPLETE, run_id, written(lake.dataset, first), paimon))
    # Paimon's snapshot id is its order: the output is recorded as it is, its facets kept.
    [recorded] = lake.events(lake.paimon_asset)
    assert (recorded["source"], recorded["producerId"], recorded["snapshotId"]) == ("LINEAGE", "spark-etl", 3)
    lineage = recorded["payload"]["openlineage"]
    assert (lineage["runId"], lineage["job"]) == (run_id, "spark/etl.load_orders")
    assert [f["name"] for f in lineage["facets"]["schema"]["fields"]] == ["id"]
    assert lineage["facets"]["output.outputStatistics"]["rowCount"] == 1
    # Iceberg's order is the sequence number, which lineage does not carry: the table is polled at once.
    [polled] = wait_for(lambda: lake.of(first))
    assert polled["source"] == "POLL"
    state = requests.get(
        f"{stack.api_url}/assets/state", params={"assetKey": lake.asset}, headers=lake.admin, timeout=30
    ).json()
    assert state["latestSnapshotId"] == first

    # The client retried, the job re-ran its last step, or both: the same snapshots are the same events.
    again = transport.emit(run_event(RunState.COMPLETE, str(uuid.uuid4()), written(lake.dataset, first), paimon))
    assert [r["status"] for r in again.json()["results"]] == ["POLL_QUEUED", "DUPLICATE"]

    # A commit the scheduled poll sees first, reported after, also by the default mapping: one event.
    second = lake.commit(2)
    stack.fire_schedule("PollPlannerFunction")
    [seen] = wait_for(lambda: lake.of(second))
    assert seen["source"] in ("POLL", "COMPENSATION")
    late = transport.emit(
        run_event(
            RunState.COMPLETE,
            str(uuid.uuid4()),
            written(lake.dataset, second),
            written(f"ods_db.{lake.table}", second, namespace="iceberg://glue"),  # the default mapping, same asset
        )
    )
    assert [r["status"] for r in late.json()["results"]] == ["POLL_QUEUED", "POLL_QUEUED"]
    assert stack.wait_idle(10)
    wait_for(lambda: not _poll_queue_busy(stack))
    assert len(lake.of(first)) == 1 and len(lake.of(second)) == 1


def _poll_queue_busy(stack: LocalStack) -> bool:
    sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name=stack.region)
    for url in sqs.list_queues().get("QueueUrls", []):
        counts = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        if any(int(v) for v in counts.values()):
            return True
    return False


def test_what_lakehook_cannot_read_is_a_clear_4xx_and_records_nothing(stack: LocalStack, lake: Lake) -> None:
    snapshot = lake.commit(1)
    complete = run_event(RunState.COMPLETE, str(uuid.uuid4()), written(lake.dataset, snapshot))

    def status_of(client: OpenLineageClient, event: RunEvent = complete) -> int:
        with pytest.raises(requests.HTTPError) as raised:
            client.emit(event)
        assert raised.value.response is not None
        return raised.value.response.status_code

    assert status_of(client_for(stack, "spark-etl:not-the-secret")) == 401
    assert status_of(client_for(stack, "no-such-producer:" + "0" * 64)) == 401
    assert status_of(client_for(stack, lake.api_key, HttpCompression.GZIP)) == 415
    outside = run_event(RunState.COMPLETE, str(uuid.uuid4()), written("table/dw_db/gmv", 1))
    assert status_of(client_for(stack, lake.api_key), outside) == 403
    assert lake.events() == []

    unmapped = client_for(stack, lake.api_key).transport
    assert isinstance(unmapped, HttpTransport)
    answer = unmapped.emit(
        run_event(
            RunState.COMPLETE,
            str(uuid.uuid4()),
            written(f"warehouse/ods_db.db/{lake.table}", snapshot, namespace="s3://lake-bucket"),
            written(lake.dataset, snapshot),
        )
    )
    first, second = answer.json()["results"]
    assert first["status"] == "REJECTED" and "no lineageDatasets mapping covers" in first["reason"]
    assert second["status"] == "POLL_QUEUED"
    assert len(wait_for(lambda: lake.of(snapshot))) == 1
