"""Requests per dispatched claim, counted on moto: the dispatcher takes the claim from the stream record that
woke it (no read of it), so a claim costs the rule's read, the lease, the pinned versions' events (one BatchGetItem:
their details for the run, docs/targets.md), the manifest and the mark: 5 requests. That is
the whole cost of a run started: its SUCCEEDED record reaches the resolver only when it releases a next version
(EACH_VERSION, ``releasesNext``); before, every one did and cost 3 more (2 BatchGetItem, a refused claim)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.container import Container
from lakehook.handlers import handle_dispatch_batch, handle_stream_batch
from lakehook.local.filters import matches_any
from tests.conftest import BUCKET
from tests.fakes.memory_dispatch import InMemoryTargetClient
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, push
from tests.support import RequestCounter

pytestmark = pytest.mark.integration


def test_a_claim_is_dispatched_in_five_requests_and_a_redelivered_record_starts_nothing(
    app: Any, container: Container, stream: Stream, counter: RequestCounter
) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    container.overrides["manifest_store"] = S3ManifestStore(s3, BUCKET)
    objects = RequestCounter().attach(s3)
    target = InMemoryTargetClient()
    container.overrides["target_clients"] = {"webhook": target}
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
        "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/x", "secretRef": "t/x"},
    }
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="lakehook/t/x", SecretString="k")
    assert call(app, "PUT", "/rules/dwd", rule)[0] == 201
    stream.records()
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    claims = [r for r in stream.records() if matches_any(r, DISPATCH_FILTER_PATTERNS)]
    assert len(claims) == 1

    with counter.measure() as calls, objects.measure() as puts:
        assert handle_dispatch_batch({"Records": claims}, container) == {"batchItemFailures": []}
    assert dict(calls) == {"GetItem": 1, "BatchGetItem": 1, "UpdateItem": 2}  # the rule; events; lease; SUCCEEDED
    assert dict(puts) == {"PutObject": 1}  # the run manifest
    assert sum(target.runs.values()) == 1

    with counter.measure() as again:  # the same record delivered again: the lease's condition refuses it
        assert handle_dispatch_batch({"Records": claims}, container) == {"batchItemFailures": []}
    assert sum(target.runs.values()) == 1 and again["UpdateItem"] == 1


def _dispatched(app: Any, container: Container, stream: Stream, policy: dict[str, Any] | None, snapshots: int) -> Any:
    """A rule on ORDERS (``policy``), ``snapshots`` commits pushed and resolved, and the first claim dispatched:
    the target that started the run."""
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    container.overrides["manifest_store"] = S3ManifestStore(s3, BUCKET)
    target = InMemoryTargetClient()
    container.overrides["target_clients"] = {"webhook": target}
    rule: dict[str, Any] = {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
        "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/x", "secretRef": "t/x"},
    }
    if policy is not None:
        rule["policy"] = policy
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="lakehook/t/x", SecretString="k")
    assert call(app, "PUT", "/rules/dwd", rule)[0] == 201
    stream.records()
    claims: list[dict[str, Any]] = []
    for n in range(snapshots):
        push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001 + n)
        assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
        claims += [r for r in stream.records() if matches_any(r, DISPATCH_FILTER_PATTERNS)]
    assert len(claims) == 1
    assert handle_dispatch_batch({"Records": claims}, container) == {"batchItemFailures": []}
    return target


def test_a_run_started_costs_the_dispatchers_four_requests_end_to_end(
    app: Any, container: Container, stream: Stream, counter: RequestCounter
) -> None:
    target = _dispatched(app, container, stream, None, 1)
    assert sum(target.runs.values()) == 1
    batch = stream.batch()  # what the resolver's event source hands it after the dispatch: nothing
    assert batch["Records"] == []
    with counter.measure() as calls:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert dict(calls) == {}


def test_an_each_version_run_started_wakes_the_resolver_for_the_next_version(
    app: Any, container: Container, stream: Stream, counter: RequestCounter
) -> None:
    target = _dispatched(app, container, stream, {"mode": "EACH_VERSION"}, 2)  # 1002 waits for 1001's run
    assert sum(target.runs.values()) == 1
    batch = stream.batch()
    assert len(batch["Records"]) == 1  # the first claim's SUCCEEDED: it releases 1002
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    claims = [r for r in stream.records() if matches_any(r, DISPATCH_FILTER_PATTERNS)]
    assert len(claims) == 1
    assert handle_dispatch_batch({"Records": claims}, container) == {"batchItemFailures": []}
    assert sum(target.runs.values()) == 2
