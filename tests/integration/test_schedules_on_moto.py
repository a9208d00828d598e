"""A scheduled group on moto, through the API: a rule written after a tick fires for it at once, with the tick
in its window and key; then it waits for the next tick, deferred to it (nothing sleeps), and claims nothing
twice."""

from __future__ import annotations

import json
from typing import Any

from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.rules import Rule
from lakehook.domain.time import now_ms, parse_instant_ms
from tests.conftest import ADMIN_TOKEN
from tests.support import api_event

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
RULE = {
    "groups": [{"groupId": "hourly", "schedule": {"cron": "0 * * * *", "timezone": "Asia/Kathmandu"}}],
    "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
}


def call(app: Any, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
    answer = app.resolve(api_event(method, path, body, headers=ADMIN, query=query), None)
    return answer["statusCode"], json.loads(answer["body"]) if answer["body"] else None


def test_a_schedule_alone_fires_for_the_latest_tick_then_waits_for_the_next(container: Container) -> None:
    app = build_app()
    before = now_ms()
    status, body = call(app, "PUT", "/rules/report", RULE)
    assert status == 201, body
    schedule = Rule.model_validate({"ruleId": "report", **RULE}).groups[0].schedule
    assert schedule is not None
    tick = schedule.latest_tick(before)

    [trigger] = call(app, "GET", "/triggers", query={"ruleId": "report"})[1]["items"]
    assert trigger["inputs"] == [] and trigger["triggerKey"].startswith("report.hourly.")
    assert parse_instant_ms(trigger["window"]["end"]) == tick  # Kathmandu's hours are at :15 UTC
    assert parse_instant_ms(trigger["window"]["start"]) == schedule.previous_tick(tick)

    explained = call(app, "GET", "/rules/report/explain")[1]
    [group] = explained["groups"]
    assert group["status"] == "WAITING_FOR_SCHEDULE" and explained["ready"] is False
    assert parse_instant_ms(group["until"]) == schedule.next_tick(before)
    # Nothing sleeps: the group is deferred to its next tick, for the sweep to wake it.
    due = DynamoDBDeferralStore(container.table).due(schedule.next_tick(before) + 1, 10)
    assert [(d.rule_id, d.group_id) for d in due] == [("report", "hourly")]

    status, evaluated = call(app, "POST", "/rules/report/evaluate")
    assert status == 200, evaluated
    assert len(call(app, "GET", "/triggers", query={"ruleId": "report"})[1]["items"]) == 1  # one per tick
