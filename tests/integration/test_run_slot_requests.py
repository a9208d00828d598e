"""Requests per dispatch with ``maxInFlight``, counted on moto, against the same dispatch without it (5 requests:
the rule, the lease, the pinned versions' events, the manifest, the mark; ``test_dispatch_requests``).

With a limit, a claim that takes a slot costs 2 more DynamoDB requests (the scope's slots read and written with one
conditional write): 6 DynamoDB requests and the manifest's PutObject. A claim that waits costs 4 (the rule, the slots,
their write, the claim marked waiting), and nothing reaches the target. The run's completion (the claim read, the
completion written, the rule read) then hands the slot on in 3 more (the slots read and written, the waiting claim
woken), and the record that wakes it dispatches it like a new claim.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.container import Container
from lakehook.handlers import handle_dispatch_batch, handle_stream_batch
from lakehook.local.filters import matches_any
from lakehook.usecases.completion import Caller
from tests.conftest import BUCKET
from tests.fakes.memory_dispatch import InMemoryTargetClient
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, push
from tests.support import RequestCounter

pytestmark = pytest.mark.integration


def claims_in(stream: Stream) -> list[dict[str, Any]]:
    return [r for r in stream.records() if matches_any(r, DISPATCH_FILTER_PATTERNS)]


def test_with_max_in_flight_a_dispatch_costs_two_requests_more_and_a_waiting_one_starts_nothing(
    app: Any, container: Container, stream: Stream, counter: RequestCounter
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    container.overrides["manifest_store"] = S3ManifestStore(s3, BUCKET)
    target = InMemoryTargetClient()
    container.overrides["target_clients"] = {"webhook": target}
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
        "policy": {"maxInFlight": 1, "maxRunSeconds": 3600},
        "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/x", "secretRef": "t/x"},
    }
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="lakehook/t/x", SecretString="k")
    assert call(app, "PUT", "/rules/dwd", rule)[0] == 201
    stream.records()

    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    first = claims_in(stream)
    with counter.measure() as calls:
        assert handle_dispatch_batch({"Records": first}, container) == {"batchItemFailures": []}
    # rule, slots; slots; the pinned events' details; lease, SUCCEEDED
    assert dict(calls) == {"GetItem": 2, "PutItem": 1, "BatchGetItem": 1, "UpdateItem": 2}
    assert sum(target.runs.values()) == 1

    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1002)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    second = claims_in(stream)
    assert len(second) == 1
    with counter.measure() as calls:
        assert handle_dispatch_batch({"Records": second}, container) == {"batchItemFailures": []}
    assert dict(calls) == {"GetItem": 2, "PutItem": 1, "UpdateItem": 1}  # rule, slots; slots; the claim waits
    assert sum(target.runs.values()) == 1
    status, listed = call(app, "GET", "/triggers", query={"ruleId": "dwd"})
    assert status == 200
    shown = [t["waitingForSlot"] for t in listed["items"] if "waitingForSlot" in t]
    assert [(w["position"], w["inFlight"], w["maxInFlight"]) for w in shown] == [(1, 1, 1)]

    [running] = [k for k, n in target.runs.items() if n == 1]
    with counter.measure() as calls:
        container.complete_run(running, {"status": "SUCCEEDED"}, Caller.MANAGEMENT)
    # the claim, the completion, the rule; then the slots read, written, and the waiting claim woken
    assert dict(calls) == {"GetItem": 3, "UpdateItem": 2, "PutItem": 1}
    woken = claims_in(stream)
    assert len(woken) == 1 and woken[0]["eventName"] == "MODIFY"
    assert handle_dispatch_batch({"Records": woken}, container) == {"batchItemFailures": []}
    assert sum(target.runs.values()) == 2 and len(target.runs) == 2
