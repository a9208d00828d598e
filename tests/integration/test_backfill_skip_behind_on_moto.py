"""``EACH_VERSION`` with ``backfill: SKIP`` on moto: a backfill's skip made while the group's run is in flight (or
FAILED) stays behind it through the real trigger store (the claim's transaction conditional on the cursor) and the
table's stream through the resolver's FilterCriteria: run 1's SUCCEEDED record (a FAILED one once retried through the
ledger) wakes the group, and the next version runs then, once; explain says what the stream does."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.rules import Rule
from lakehook.handlers import handle_stream_batch
from lakehook.ports.rules import Deferral, StateChange
from tests.integration.test_claims_concurrency import TABLE, resolver_at
from tests.integration.test_resolver_on_moto import ORDERS, Stream, call, push, put_rule
from tests.racing import atomic_dynamodb_server, race, table_at
from tests.support import mark_claims_succeeded
from tests.wiring import ingest_events


def _claims(app: Any) -> list[tuple[str, int, str]]:
    """(status, snapshot, key) of each of the rule's claims, oldest first."""
    status, body = call(app, "GET", "/triggers", query={"ruleId": "each"})
    assert status == 200, body
    return [(t["status"], t["inputs"][0]["snapshotId"], t["triggerKey"]) for t in reversed(body["items"])]


def _runs(app: Any) -> list[int]:
    return [sid for status, sid, _ in _claims(app) if status != "SKIPPED"]


def _explained(app: Any, last: str | None = None) -> str:
    """The group's status in explain (``last``: the key its lastTrigger must name)."""
    status, body = call(app, "GET", "/rules/each/explain")
    assert status == 200, body
    if last is not None:
        assert body["groups"][0]["lastTrigger"]["triggerKey"] == last, body["groups"][0]["lastTrigger"]
    return str(body["groups"][0]["status"])


def _deliver(container: Container, stream: Stream) -> None:
    assert handle_stream_batch(stream.batch(), container) == {"batchItemFailures": []}


@pytest.mark.parametrize("end", ["TRIGGERING", "FAILED"])
def test_the_skip_stays_behind_the_run_until_its_succeeded_record_wakes_the_group(
    app: Any, container: Container, stream: Stream, end: str
) -> None:
    put_rule(app, "each", {"assetKey": ORDERS}, mode="EACH_VERSION", backfill="SKIP")
    stream.records()
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1)
    _deliver(container, stream)
    ((_, _, first),) = _claims(app)
    if end == "FAILED":  # as the dispatcher leaves a run whose target refused it
        container.table.update_item(
            Key={"PK": f"TRIGGER#{first}", "SK": "CLAIM"},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": "FAILED"},
        )
    for backfill, made in (("bf1", [2]), ("bf2", []), ("bf3", [3])):  # bf2 committed nothing
        push(container, "BACKFILL_STARTED", ORDERS, backfillId=backfill)
        for sid in made:
            push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=sid)
        _deliver(container, stream)
        push(container, "BACKFILL_COMPLETED", ORDERS, backfillId=backfill)
        _deliver(container, stream)
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=4)
    _deliver(container, stream)
    # three skips, each its own claim, behind run 1: no other run while it has not SUCCEEDED
    assert [(status, sid) for status, sid, _ in _claims(app)] == [
        (end, 1),
        ("SKIPPED", 2),
        ("SKIPPED", 2),
        ("SKIPPED", 3),
    ]
    cursor = container.trigger_store.get_cursors([("each", "g")])[("each", "g")]
    assert (cursor.trigger_key, cursor.pins[ORDERS].snapshot_id) == (first, 3)  # names run 1, pins the skips'
    assert cursor.backfills[ORDERS].startswith("bf3"), cursor.backfills
    waits = "WAITING_FOR_RUN" if end == "TRIGGERING" else "BLOCKED_BY_FAILED_TRIGGER"
    assert _explained(app, last=first) == waits  # lastTrigger: the run the group waits for (its failure shown)
    if end == "FAILED":
        call(app, "POST", f"/triggers/{first}/retry")
        assert _explained(app) == "WAITING_FOR_RUN"
        _deliver(container, stream)  # the retry's own record is the dispatcher's, not the resolver's
        assert _runs(app) == [1]
    assert mark_claims_succeeded(container.table) == 1  # run 1 started: its record passes the filter
    _deliver(container, stream)
    assert _runs(app) == [1, 4]
    _deliver(container, stream)  # nothing more: 4 waits for nothing else
    assert _runs(app) == [1, 4]


@pytest.mark.slow  # racers against a moto server: the full gate only
def test_resolvers_racing_at_the_backfills_completion_and_the_runs_success_claim_the_skip_once() -> None:
    # GIVEN run 1 in flight and a backfill that committed 2, completed (on a server that applies one request at a time)
    with atomic_dynamodb_server(TABLE) as url:
        table = table_at(url, TABLE)
        rule = {
            "ruleId": "each",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"},
            "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}],
        }
        DynamoDBRuleStore(table).put_rule(Rule.model_validate(rule), 1)
        store = DynamoDBAssetStore(table)
        ingest = ingest_events(store)

        def push_event(event_type: str, **fields: object) -> StateChange:
            ingest.ingest(AssetEvent(eventType=event_type, assetKey=ORDERS, **fields), SourceType.PUSH)
            return StateChange(ORDERS, store.get_state(ORDERS))

        resolver_at(url)([push_event("SNAPSHOT_COMMITTED", snapshotId=1)])
        triggers = DynamoDBTriggerStore(table)
        (first,) = triggers.list_for_rule("each").items
        push_event("BACKFILL_STARTED", backfillId="bf1")
        push_event("SNAPSHOT_COMMITTED", snapshotId=2)
        completed = push_event("BACKFILL_COMPLETED", backfillId="bf1")

        # WHEN four resolvers take the backfill's completion, four the group's wake, while run 1 turns SUCCEEDED
        resolvers = [resolver_at(url) for _ in range(8)]

        def work(i: int) -> object:
            if i == 8:
                return table_at(url, TABLE).update_item(
                    Key={"PK": f"TRIGGER#{first.trigger_key}", "SK": "CLAIM"},
                    UpdateExpression="SET #s = :s",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={":s": "SUCCEEDED"},
                )
            if i % 2:
                return resolvers[i](deferred=[Deferral("each", "g", 0)])
            return resolvers[i]([completed])

        reports = race(9, work)[:8]
        claimed = [t.trigger_key for r in reports for t in r.claimed]  # type: ignore[attr-defined]
        assert len(claimed) == len(set(claimed)) == 1, claimed  # the skip, by one resolver
        # THEN the backfill is absorbed by one skip, no run beside it; the next commit runs once, after it
        claims = [(t.status.value, t.inputs[0].snapshot_id) for t in reversed(triggers.list_for_rule("each").items)]
        assert claims == [("SUCCEEDED", 1), ("SKIPPED", 2)]
        resolver_at(url)([push_event("SNAPSHOT_COMMITTED", snapshotId=3)])
        claims = [(t.status.value, t.inputs[0].snapshot_id) for t in reversed(triggers.list_for_rule("each").items)]
        assert claims == [("SUCCEEDED", 1), ("SKIPPED", 2), ("TRIGGERING", 3)]
