"""On moto, through the API routes and the table's own stream: a rule PUT after its inputs are satisfied fires
(startFrom LATEST) or waits for a newer version (NEXT_CHANGE, said by explain); and a stream batch in which one
rule throws still claims the other rule's trigger, while the thrower records lastError."""

from __future__ import annotations

from typing import Any

from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.container import Container
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import ClaimResult
from lakehook.wiring_rules import handle_stream_batch, sweep_deferred
from tests.integration.test_resolver_on_moto import ORDERS, PAYMENTS, Stream, app, call, push, stream, triggers_of

__all__ = ["app", "stream"]  # fixtures


def rule_body(**policy: Any) -> dict[str, Any]:
    return {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}, {"assetKey": PAYMENTS}]}],
        "policy": {"mode": "ALL_UPDATED", **policy},
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }


def test_a_rule_put_after_its_inputs_fires_with_latest_and_waits_with_next_change(
    app: Any, container: Container, stream: Stream
) -> None:
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2001)
    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}  # no rule yet

    assert call(app, "PUT", "/rules/latest", rule_body())[0] == 201
    assert call(app, "PUT", "/rules/next", rule_body(startFrom="NEXT_CHANGE"))[0] == 201

    assert triggers_of(app, "latest") == [[1001, 2001]]
    status, explained = call(app, "GET", "/rules/next/explain")
    assert status == 200 and explained["ready"] is False
    assert explained["groups"][0]["status"] == "WAITING_FOR_UPDATE"
    assert "startFrom is NEXT_CHANGE" in explained["groups"][0]["reason"]

    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1002)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2002)
    handle_stream_batch(stream.batch())
    status, body = call(app, "GET", "/triggers", query={"ruleId": "next"})
    runs = [[i["snapshotId"] for i in t["inputs"]] for t in body["items"] if t["status"] != "SKIPPED"]
    assert runs == [[1002, 2002]]


def test_evaluate_route_claims_once_and_force_runs_manually(app: Any, container: Container, stream: Stream) -> None:
    assert call(app, "PUT", "/rules/r", rule_body())[0] == 201
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2001)

    status, first = call(app, "POST", "/rules/r/evaluate")  # before the stream got there
    assert status == 200 and first["claimed"] == [first["triggerKey"]]
    handle_stream_batch(stream.batch())
    assert triggers_of(app, "r") == [[1001, 2001]]

    status, forced = call(app, "POST", "/rules/r/evaluate", {"force": True})
    assert status == 200 and ".manual-1." in forced["triggerKey"]
    status, refused = call(app, "POST", "/rules/r/evaluate", {"force": True})
    assert status == 409 and "in flight" in refused["message"]
    status, bad = call(app, "POST", "/rules/r/evaluate", {"force": 1})
    assert status == 400 and bad["field"] == "force"


class OneRuleThrows(DynamoDBTriggerStore):
    """The real trigger store, with a fault injected into the claims of one rule (a bug in that rule)."""

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        if trigger.rule_id == "broken":
            raise OverflowError("date value out of range")
        return super().claim(trigger, cursor, expected)


def test_a_batch_with_one_throwing_rule_still_claims_the_other_rules_trigger(
    app: Any, container: Container, stream: Stream, table: Any
) -> None:
    container.overrides["trigger_store"] = OneRuleThrows(table)
    assert call(app, "PUT", "/rules/broken", rule_body())[0] == 201
    assert call(app, "PUT", "/rules/fine", rule_body())[0] == 201
    stream.records()
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2001)

    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}

    assert triggers_of(app, "fine") == [[1001, 2001]]
    assert triggers_of(app, "broken") == []
    status, listed = call(app, "GET", "/rules")
    assert status == 200
    errors = {r["ruleId"]: r.get("lastError") for r in listed["items"]}
    assert errors["fine"] is None
    assert errors["broken"]["message"] == "OverflowError: date value out of range"
    status, explained = call(app, "GET", "/rules/broken/explain")
    assert status == 200 and explained["lastError"]["groupId"] == "g"
    assert sweep_deferred() == 0  # its retry is due after a minute, not now
