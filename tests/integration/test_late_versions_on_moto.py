"""Truthful EACH_VERSION on moto. A late snapshot a rule already ran past: the push's answer (the container's
ingest reads the asset's rules and their cursors), the SKIPPED trigger the resolver records from the event item's
stream record, and explain listing it, all in the same words; a redelivered batch records nothing twice. A window
backlog caught up a few windows per evaluation, counted in the stored cursor."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.time import MAX_ISO_MS
from lakehook.handlers import handle_stream_batch
from tests.integration.test_api import Api
from tests.integration.test_gap_fill_on_paimon import runs_succeed
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, put_rule

pytestmark = pytest.mark.integration

SKIP = "version 3 arrived after 5 and will not run for rule export"


def snap(sid: int) -> AssetEvent:
    return AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=ORDERS, snapshotId=sid)


def test_pushes_5_then_3_run_5_and_every_answer_says_3_is_skipped(container: Container, ddb_client: Any) -> None:
    stream = Stream(ddb_client)
    app = build_app()
    put_rule(app, "export", {"assetKey": ORDERS}, mode="EACH_VERSION")
    assert container.ingest.ingest(snap(5), SourceType.PUSH).status is IngestStatus.ACCEPTED
    runs_succeed(container, stream)
    late = container.ingest.ingest(snap(3), SourceType.PUSH)
    assert late.status is IngestStatus.STALE
    assert late.reason == f"recorded; the asset state already holds a newer version; {SKIP}"
    batch = stream.batch()
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    assert handle_stream_batch(batch, container) == {"batchItemFailures": []}  # redelivered: written once
    status, page = call(app, "GET", "/triggers", query={"ruleId": "export"})
    assert status == 200
    assert [(t["status"], [i["snapshotId"] for i in t["inputs"]], t["reason"]) for t in page["items"]][:2] == [
        ("SKIPPED", [3], SKIP),
        ("SUCCEEDED", [5], None),
    ] and len(page["items"]) == 2
    status, explained = call(app, "GET", "/rules/export/explain")
    assert status == 200
    skipped = explained["groups"][0]["skipped"]
    assert [(s["assetKey"], s["snapshotId"], s["reason"]) for s in skipped] == [(ORDERS, 3, SKIP)]
    assert explained["groups"][0]["lastTrigger"]["inputs"][0]["snapshotId"] == 5  # the skip moved no cursor


def test_one_request_3_2_1_runs_1_2_3_whichever_batches_its_stream_records_come_in(
    container: Container, ddb_client: Any, api: Api, producer: str
) -> None:
    """Issue 33, through the ingest API and the stream handler: 3, 2, 1 pushed in one request, Lambda handing the
    resolver 3's records before 2's and 1's. 2 and 1 arrived before 3 ran: they run first, in order, as their
    answers say; nothing is skipped, and a redelivered batch claims nothing twice."""
    stream = Stream(ddb_client)
    app = build_app()
    put_rule(app, "export", {"assetKey": ORDERS}, mode="EACH_VERSION")
    answer = api.push(
        {"events": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": s} for s in (3, 2, 1)]}
    )
    assert answer.status == 200
    in_order = "recorded; the asset state already holds a newer version; it runs in order for rule export"
    assert [(r["status"], r["reason"]) for r in answer.body["results"]] == [
        ("ACCEPTED", None),
        ("STALE", in_order),
        ("STALE", in_order),
    ]
    records = stream.batch()["Records"]
    first = [r for r in records if "STATE" in str(r["dynamodb"]["Keys"]) or r is records[0]]
    rest = [r for r in records if r not in first]
    assert len(first) == 2 and len(rest) == 2  # 3's event and the state; then 2's and 1's events
    for batch in ({"Records": first}, {"Records": first}, {"Records": rest}):
        assert handle_stream_batch(batch, container) == {"batchItemFailures": []}
    runs_succeed(container, stream)
    status, page = call(app, "GET", "/triggers", query={"ruleId": "export"})
    assert status == 200
    assert [(t["status"], [i["snapshotId"] for i in t["inputs"]]) for t in reversed(page["items"])] == [
        ("SUCCEEDED", [1]),
        ("SUCCEEDED", [2]),
        ("SUCCEEDED", [3]),
    ]
    status, explained = call(app, "GET", "/rules/export/explain")
    assert status == 200 and explained["groups"][0]["skipped"] == []


def verdict(sid: int) -> AssetEvent:
    return AssetEvent(eventType="QUALITY_CHECK_PASSED", assetKey=ORDERS, snapshotId=sid)


def test_a_version_run_on_its_verdict_before_its_push_is_answered_already_triggered(
    container: Container, ddb_client: Any
) -> None:
    """Snapshot 4's verdict comes before any push of 4: the checked rule runs 4 on it, then 5. 4's push, late, says
    it already triggered the checked rule (the rule's triggers, read newest first from the per-rule index, pin it)
    and will not run for the export rule, which started at 5; the resolver records the skip for export only."""
    stream = Stream(ddb_client)
    app = build_app()
    put_rule(app, "checked", {"assetKey": ORDERS, "condition": {"qualityStatus": "PASSED"}}, mode="EACH_VERSION")
    put_rule(app, "export", {"assetKey": ORDERS}, mode="EACH_VERSION")
    container.ingest.ingest(verdict(4), SourceType.PUSH)
    runs_succeed(container, stream)
    container.ingest.ingest(snap(5), SourceType.PUSH)
    container.ingest.ingest(verdict(5), SourceType.PUSH)
    runs_succeed(container, stream)
    late = container.ingest.ingest(snap(4), SourceType.PUSH)
    assert late.status is IngestStatus.STALE and late.reason is not None
    assert "version 4 already triggered rule checked, before this push" in late.reason
    assert "version 4 arrived after 5 and will not run for rule export" in late.reason
    assert "will not run for rule checked" not in late.reason
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}
    runs = {}
    for rule_id in ("checked", "export"):
        status, page = call(app, "GET", "/triggers", query={"ruleId": rule_id})
        assert status == 200
        runs[rule_id] = sorted((t["status"], [i["snapshotId"] for i in t["inputs"]]) for t in page["items"])
    assert runs == {
        "checked": [("SUCCEEDED", [4]), ("SUCCEEDED", [5])],
        "export": [("SKIPPED", [4]), ("SUCCEEDED", [5])],
    }


def test_a_far_future_watermark_catches_up_a_few_windows_per_evaluation(
    container: Container, ddb_client: Any, table: Any
) -> None:
    """On moto, with the real clock: the catch-up count lives in the stored cursor, so the wake-ups of finished runs
    (each a stream record of their own) stop at maxRunsPerEvaluation; explain shows the backlog and the group is
    deferred to when the next evaluation starts."""
    stream = Stream(ddb_client)
    app = build_app()
    hourly = {"assetKey": ORDERS, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}
    status, body = call(
        app,
        "PUT",
        "/rules/hourly",
        {
            "groups": [{"groupId": "g", "members": [hourly]}],
            "policy": {"mode": "EACH_VERSION", "maxRunsPerEvaluation": 0},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        },
    )
    assert status == 400 and body["field"] == "policy.maxRunsPerEvaluation", body
    put_rule(app, "hourly", hourly, mode="EACH_VERSION", maxRunsPerEvaluation=2)
    base = 1_750_000_000_000 // 3_600_000 * 3_600_000
    container.ingest.ingest(snap(1).model_copy(update={"watermark": base}), SourceType.PUSH)
    runs_succeed(container, stream)
    container.ingest.ingest(snap(2).model_copy(update={"watermark": MAX_ISO_MS}), SourceType.PUSH)
    runs_succeed(container, stream)
    status, page = call(app, "GET", "/triggers", query={"ruleId": "hourly"})
    ends = sorted(t["window"]["end"] for t in page["items"])
    assert len(ends) == 3, ends  # the first window, then two of the millions behind the newest closed one
    status, explained = call(app, "GET", "/rules/hourly/explain")
    group = explained["groups"][0]
    assert group["status"] == "CATCHING_UP" and group["backlog"]["pendingWindows"] > 60_000_000
    deferred = [i for i in table.scan()["Items"] if i.get("itemType") == "DEFERRAL"]
    assert [d["ruleId"] for d in deferred] == ["hourly"]
