"""EACH_VERSION judging each snapshot by its own quality checks, on moto: the late verdict's state touch (its request
budget, and that its stream record passes the resolver's FilterCriteria), the verdict read (the quality events by
their identity, one batched read) and explain naming the snapshot that holds the line."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader
from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.versions import Verdict
from lakehook.handlers import handle_stream_batch
from tests.integration.test_gap_fill_on_paimon import runs_succeed
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, push, put_rule, triggers_of
from tests.support import RequestCounter

pytestmark = pytest.mark.integration

CHECKED = {"assetKey": ORDERS, "condition": {"qualityStatus": "PASSED"}}


def verdict(passed: bool, sid: int) -> AssetEvent:
    kind = "QUALITY_CHECK_PASSED" if passed else "QUALITY_CHECK_FAILED"
    return AssetEvent(eventType=kind, assetKey=ORDERS, snapshotId=sid)


def test_a_late_verdict_costs_one_more_conditional_write_and_its_redelivery_writes_nothing(
    container: Container, counter: RequestCounter
) -> None:
    ingest = container.ingest  # the ingest path as the functions build it
    ingest.ingest(verdict(True, 2), SourceType.PUSH)
    with counter.measure() as calls:
        late = ingest.ingest(verdict(True, 1), SourceType.PUSH)
    assert late.status is IngestStatus.STALE
    # the transaction the state refuses (nothing written), then the event, the refused advance, the touch, the note
    assert dict(calls) == {"TransactWriteItems": 1, "PutItem": 1, "UpdateItem": 3}
    touched = container.asset_store.get_state(ORDERS)
    with counter.measure() as calls:
        again = ingest.ingest(verdict(True, 1), SourceType.PUSH)
    # settled: the refused record only (the transaction its record's condition cancels)
    assert again.status is IngestStatus.DUPLICATE and dict(calls) == {"TransactWriteItems": 1}
    assert container.asset_store.get_state(ORDERS) == touched  # no write: no stream record, no version
    with counter.measure() as calls:
        assert ingest.ingest(verdict(True, 3), SourceType.PUSH).status is IngestStatus.ACCEPTED
    assert dict(calls) == {"TransactWriteItems": 1}  # an in-order verdict: any novel event's two writes at once


def test_the_verdicts_of_many_snapshots_are_one_batched_read_of_their_quality_events(
    container: Container, table: Any, counter: RequestCounter
) -> None:
    ingest = container.ingest  # the ingest path as the functions build it
    for sid in range(1, 41):
        if sid % 3:
            ingest.ingest(verdict(sid % 3 == 1, sid), SourceType.PUSH)
    ingest.ingest(verdict(True, 11), SourceType.PUSH)  # 11 failed too: a failure outweighs a pass
    reader = DynamoDBStateReader(table)
    with counter.measure() as calls:
        found = reader.quality_verdicts([(ORDERS, sid) for sid in range(1, 41)])
    assert dict(calls) == {"BatchGetItem": 1}  # 80 keys: one page
    assert found[(ORDERS, 1)] is Verdict.PASSED and found[(ORDERS, 2)] is Verdict.FAILED
    assert found[(ORDERS, 11)] is Verdict.FAILED
    assert (ORDERS, 3) not in found  # never checked: UNKNOWN


def test_a_late_snapshot_waits_for_its_own_check_and_the_late_verdict_wakes_the_rule(
    container: Container, ddb_client: Any, counter: RequestCounter
) -> None:
    stream = Stream(ddb_client)
    app = build_app()
    put_rule(app, "checked", CHECKED, mode="EACH_VERSION")
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1)
    push(container, "QUALITY_CHECK_PASSED", ORDERS, snapshotId=1)
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=3)
    push(container, "QUALITY_CHECK_PASSED", ORDERS, snapshotId=3)
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=2)  # late: STALE, logged for the rule
    runs_succeed(container, stream)
    assert triggers_of(app, "checked") == [[1]]
    status, explained = call(app, "GET", "/rules/checked/explain")
    group = explained["groups"][0]
    assert status == 200 and group["status"] == "BLOCKED_BY_QUALITY"
    assert "snapshot 2 has no quality verdict yet" in group["reason"]
    assert group["members"][0]["required"]["snapshotId"] == 2

    push(container, "QUALITY_CHECK_PASSED", ORDERS, snapshotId=2)  # STALE for the state: the touch wakes the rule
    batch = stream.batch()
    assert [r["dynamodb"]["Keys"]["SK"]["S"] for r in batch["Records"]] == ["STATE"]
    with counter.measure() as calls:
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert triggers_of(app, "checked") == [[1], [2]], call(app, "GET", "/rules/checked/explain")[1]["groups"][0][
        "reason"
    ]
    # reads: the asset's rules and its snapshot log (2 queries); states and cursors, the quality events of the
    # logged snapshots whose verdict the state does not hold, and the pinned snapshot's event for the run manifest
    # (3 batched reads); the head-of-line trigger (1 get). Writes: the state image and the snapshot it names
    # (history), and the claim.
    assert dict(calls) == {
        "Query": 2,
        "BatchGetItem": 3,
        "GetItem": 1,
        "BatchWriteItem": 1,
        "PutItem": 1,
        "TransactWriteItems": 1,
    }
    runs_succeed(container, stream)
    assert triggers_of(app, "checked") == [[1], [2], [3]]
