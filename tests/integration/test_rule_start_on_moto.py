"""On moto, through the API routes and the table's own stream: a rule PUT after its inputs are satisfied fires
(startFrom LATEST) or waits for a newer version (NEXT_CHANGE, said by explain); and a stream batch in which one
rule throws still claims the other rule's trigger, while the thrower records lastError."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.container import Container
from lakehook.domain.time import MAX_ISO_MS
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.handlers import handle_stream_batch, sweep_deferred
from lakehook.ports.rules import Claim, ClaimResult
from tests.integration.test_resolver_on_moto import ORDERS, PAYMENTS, Stream, call, push, triggers_of


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

    def claim_many(self, claims: Sequence[Claim]) -> list[ClaimResult]:  # the resolver's claims, a group's included
        if any(c.trigger.rule_id == "broken" for c in claims):
            raise OverflowError("date value out of range")
        return super().claim_many(claims)


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


def test_a_watermark_at_the_last_instant_fires_its_last_window_and_then_explains_why_no_more_can(
    app: Any, container: Container, stream: Stream
) -> None:
    # 9999-12-31T23:59:59.999Z is a watermark ingest accepts; the window after it would end in year 10000,
    # which used to raise in every evaluation of the rule (explain, the resolver, the sweep).
    windowed = {"window": "PT1H", "allowedLatenessSeconds": 300}
    body = {
        "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS, "condition": {"watermarkAtLeast": windowed}}]}],
        "policy": {"mode": "EACH_VERSION"},
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }
    assert call(app, "PUT", "/rules/hourly", body)[0] == 201
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    push(container, "WATERMARK_ADVANCED", ORDERS, watermark=MAX_ISO_MS)
    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}

    status, listed = call(app, "GET", "/triggers", query={"ruleId": "hourly"})
    assert status == 200 and [t["window"] for t in listed["items"]] == [
        {"start": "9999-12-31T22:00:00Z", "end": "9999-12-31T23:00:00Z"}
    ]
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1002)
    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}
    status, explained = call(app, "GET", "/rules/hourly/explain")
    assert status == 200 and explained["ready"] is False and explained.get("lastError") is None, explained
    group = explained["groups"][0]
    assert group["status"] == "BLOCKED_BY_WATERMARK"
    assert "the next window can never close: it ends after 9999-12-31T23:59:59.999Z" in group["reason"]
    status, rules = call(app, "GET", "/rules")
    assert status == 200 and [r.get("lastError") for r in rules["items"]] == [None]


def test_a_corrupted_state_or_cursor_fails_only_the_rules_that_read_it(
    app: Any, container: Container, stream: Stream, table: Any
) -> None:
    # A stored item that no longer parses (a manual edit, an incompatible writer) is a fault of the rules that
    # read it: they record lastError and are retried; the batch, and every other rule in it, goes on.
    poison = "paimon://lake/ods_db/poison"
    assert (
        call(
            app,
            "PUT",
            "/rules/reads_poison",
            {**rule_body(), "groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}, {"assetKey": poison}]}]},
        )[0]
        == 201
    )
    assert call(app, "PUT", "/rules/fine", rule_body())[0] == 201
    push(container, "SNAPSHOT_COMMITTED", poison, snapshotId=1)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2001)
    stream.records()
    table.update_item(
        Key=keys.state_key(poison),
        UpdateExpression="SET latestSnapshotId = :bad",
        ExpressionAttributeValues={":bad": "not a number"},
    )
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)

    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}
    assert triggers_of(app, "fine") == [[1001, 2001]]
    assert triggers_of(app, "reads_poison") == []
    errors = {r["ruleId"]: r.get("lastError") for r in call(app, "GET", "/rules")[1]["items"]}
    assert errors["fine"] is None
    assert errors["reads_poison"]["message"].startswith(f"UnreadableItemError: the stored state of {poison}")
    status, explained = call(app, "GET", "/rules/reads_poison/explain")
    assert status == 200 and explained["groups"][0]["status"] == "ERROR", explained

    # The fine rule's cursor corrupted: its next version fails it alone, with the cursor named.
    table.update_item(
        Key=keys.cursor_key("fine", "g"),
        UpdateExpression="SET #b = :bad",
        ExpressionAttributeNames={"#b": "body"},
        ExpressionAttributeValues={":bad": "{not json"},
    )
    assert call(app, "PUT", "/rules/other", rule_body(mode="ANY_UPDATED"))[0] == 201  # fires on 1001, 2001
    stream.records()
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2002)
    assert handle_stream_batch(stream.batch()) == {"batchItemFailures": []}
    assert triggers_of(app, "other") == [[1001, 2001], [1001, 2002]]
    errors = {r["ruleId"]: r.get("lastError") for r in call(app, "GET", "/rules")[1]["items"]}
    assert "the stored cursor of group 'g' does not parse" in errors["fine"]["message"]


def test_a_forced_run_under_an_idempotency_key_starts_once_however_often_it_is_sent(
    app: Any, container: Container, stream: Stream
) -> None:
    import json

    from tests.integration.test_resolver_on_moto import ADMIN
    from tests.support import api_event

    def force(key: str, body: dict[str, Any]) -> tuple[int, Any, dict[str, Any]]:
        event = api_event("POST", "/rules/r/evaluate", body, headers={**ADMIN, "Idempotency-Key": key})
        answer = app.resolve(event, None)
        headers = {k: v[-1] for k, v in (answer.get("multiValueHeaders") or {}).items()}
        return answer["statusCode"], json.loads(answer["body"]), {**headers, **(answer.get("headers") or {})}

    assert call(app, "PUT", "/rules/r", rule_body())[0] == 201
    push(container, "SNAPSHOT_COMMITTED", ORDERS, snapshotId=1001)
    push(container, "SNAPSHOT_COMMITTED", PAYMENTS, snapshotId=2001)
    handle_stream_batch(stream.batch())
    status, first, headers = force("run-once-1", {"force": True})
    assert status == 200 and ".manual-1." in first["triggerKey"] and "Idempotent-Replayed" not in headers
    # sent again while it is in flight (no 409), and after it succeeded (no second manual run)
    status, again, headers = force("run-once-1", {"force": True})
    assert (status, again, headers.get("Idempotent-Replayed")) == (200, first, "true")
    table = container.table
    table.update_item(
        Key=keys.trigger_item_key(first["triggerKey"]),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": "SUCCEEDED"},
    )
    status, later, headers = force("run-once-1", {"force": True})
    assert (status, later["triggerKey"], headers.get("Idempotent-Replayed")) == (200, first["triggerKey"], "true")
    manual = [k for k in (t["triggerKey"] for t in call(app, "GET", "/triggers", query={"ruleId": "r"})[1]["items"])]
    assert sum(".manual-" in k for k in manual) == 1
    # the same key with another body is refused; a new key is a new manual run
    status, reused, _ = force("run-once-1", {"force": True, "groupId": "g"})
    assert status == 409 and reused["error"] == "IDEMPOTENCY_KEY_REUSED", reused
    status, second, _ = force("run-once-2", {"force": True})
    assert status == 200 and ".manual-2." in second["triggerKey"]
