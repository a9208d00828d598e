"""A scheduled group on moto, through the API: a rule written after a tick fires for it at once, with the tick
in its window and key; then it waits for the next tick, deferred to it (nothing sleeps), and claims nothing
twice. Explain says its ticks and what the next one waits for."""

from __future__ import annotations

import json
from typing import Any

from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.api.app import build_app
from lakehook.api.rule_answers import Explanation
from lakehook.container import Container
from lakehook.domain.rules import Rule
from lakehook.domain.schedule_explanation import local_iso
from lakehook.domain.time import ms_to_iso, now_ms, parse_instant_ms
from lakehook.usecases.freshness import CheckFreshness
from tests.conftest import ADMIN_TOKEN
from tests.support import FakeLambdaContext, api_event, load_handler

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


def test_explain_and_the_freshness_check_say_what_is_overdue_and_since_when(container: Container) -> None:
    app = build_app()
    orders = "paimon://lake/ods_db/orders"
    assert call(app, "PUT", "/assets", {"assetKey": orders, "format": "paimon", "maxAgeSeconds": 3600})[0] == 201
    committed = now_ms() - 2 * 3_600_000
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": orders, "snapshotId": 1, "commitTime": committed}
    assert call(app, "POST", "/asset-events", event)[0] == 200
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": orders, "condition": {"qualityStatus": "PASSED"}}]}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        "freshness": {"maxWaitSeconds": 3600, "expectedBy": {"cron": "30 7 * * *", "timezone": "Europe/Berlin"}},
    }
    assert call(app, "PUT", "/rules/checked", rule)[0] == 201

    freshness = call(app, "GET", "/rules/checked/explain")[1]["freshness"]
    assert freshness["status"] == "OVERDUE"
    [aged] = freshness["overdue"]  # the rule was created just now: only the asset's age is overdue
    assert (aged["kind"], aged["assetKey"]) == ("MAX_AGE", orders)
    assert parse_instant_ms(aged["since"]) == committed + 3_600_000

    swept = load_handler("deferral_sweep")({"check": "freshness"}, FakeLambdaContext())
    waits = swept.pop("waits")
    assert swept == {"notAdvanced": 0, "rulesOverdue": [], "assetsOverdue": [orders], "rulesUnchecked": []}
    # The snapshot is two hours old and still waits for a passing quality check, which the rule requires.
    assert waits["stateLag"]["of"] == orders and 7200 <= waits["stateLag"]["seconds"] < 7300
    assert waits["qualityBlocked"]["of"] == "checked/g" and 7200 <= waits["qualityBlocked"]["seconds"] < 7300
    # Two days on, never triggered (the quality check never passed): the rule is overdue on both counts.
    later = now_ms() + 2 * 86_400_000
    check = CheckFreshness(
        container.rule_store,
        container.trigger_store,
        container.asset_registry,
        container.state_reader,
        lambda: later,
    )
    report = check()
    assert sorted(o.kind.value for o in report.rules["checked"]) == ["EXPECTED_BY", "MAX_WAIT"]
    assert [o.asset_key for o in report.assets] == [orders]


def test_a_stored_rule_whose_deadline_never_fires_silences_no_other_rule(container: Container) -> None:
    # GIVEN two good rules with freshness promises, written through the API, and a rule stored before lakehook
    # refused crons that never fire (written straight to the table: the API refuses it now)
    app = build_app()
    orders = "paimon://lake/ods_db/orders"
    target = {"type": "eventbridge", "eventBusName": "lakehook-runs"}
    group = {"groupId": "g", "members": [{"assetKey": orders}]}
    for rule_id, freshness in (
        ("early", {"maxWaitSeconds": 3600}),
        ("zlate", {"expectedBy": {"cron": "30 7 * * *", "timezone": "Europe/Berlin"}}),
    ):
        body = {"groups": [group], "target": target, "freshness": freshness}
        assert call(app, "PUT", f"/rules/{rule_id}", body)[0] == 201
    never = {"groups": [group], "target": target, "freshness": {"expectedBy": {"cron": "0 0 30 2 *"}}}
    assert call(app, "PUT", "/rules/never", never)[0] == 400  # refused where it is written
    stored = json.dumps({"ruleId": "never", **never})
    container.rule_store.put_rule(Rule.from_stored(stored), now_ms())

    # WHEN the freshness check runs two days on (nothing ever triggered)
    later = now_ms() + 2 * 86_400_000
    check = CheckFreshness(
        container.rule_store, container.trigger_store, container.asset_registry, container.state_reader, lambda: later
    )
    report = check()

    # THEN the good rules' overdue alarms still fire, and the bad one is counted as unchecked, with the reason
    assert sorted(report.rules) == ["early", "zlate"]
    assert list(report.unchecked) == ["never"] and "never fires" in report.unchecked["never"]
    # and explain / evaluate answer it (no 5xx), saying why its promise cannot be checked
    status, explained = call(app, "GET", "/rules/never/explain")
    assert status == 200, explained
    assert explained["freshness"]["status"] == "ERROR" and "0 0 30 2 *" in explained["freshness"]["reason"]
    status, evaluated = call(app, "POST", "/rules/never/evaluate")
    assert status == 200 and evaluated["freshness"]["status"] == "ERROR", evaluated
    swept = load_handler("deferral_sweep")({"check": "freshness"}, FakeLambdaContext())
    assert swept["rulesUnchecked"] == ["never"]


def test_a_stored_rule_that_does_not_load_at_all_hides_no_other_rule_from_the_freshness_check(
    container: Container,
) -> None:
    from lakehook.adapters.dynamodb import keys

    app = build_app()
    good = {
        "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods_db/orders"}]}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        "freshness": {"maxWaitSeconds": 3600},
    }
    for rule_id in ("a_good", "z_good"):
        assert call(app, "PUT", f"/rules/{rule_id}", good)[0] == 201
    # written by a manual edit or an incompatible version: a body that is no rule at all, between the good ones
    container.table.put_item(
        Item={
            **keys.rule_meta_key("m_broken"),
            keys.ITEM_TYPE: "RULE",
            "ruleId": "m_broken",
            "body": '{"ruleId": "m_broken", "groups": "not a list"}',
            "assetKeys": "[]",
            "revision": 1,
            "createdAt": 1,
            "updatedAt": 1,
            "GSI1PK": keys.RULES_INDEX_PK,
            "GSI1SK": "m_broken",
        }
    )
    later = now_ms() + 2 * 86_400_000
    check = CheckFreshness(
        container.rule_store, container.trigger_store, container.asset_registry, container.state_reader, lambda: later
    )
    report = check()
    assert sorted(report.rules) == ["a_good", "z_good"]
    assert list(report.unchecked) == ["m_broken"] and "groups" in report.unchecked["m_broken"]
    status, body = call(app, "GET", "/rules/m_broken/explain")
    assert status == 409 and "PUT it again" in body["message"], body
    status, listed = call(app, "GET", "/rules")
    assert status == 200 and [r["ruleId"] for r in listed["items"]] == ["a_good", "z_good"]
    # a PUT repairs it
    assert call(app, "PUT", "/rules/m_broken", good)[0] in (200, 201)
    assert call(app, "GET", "/rules/m_broken/explain")[0] == 200


def test_explain_says_a_scheduled_groups_ticks_and_what_its_next_tick_waits_for(container: Container) -> None:
    # GIVEN a morning schedule in Berlin on an ODS table, which has a snapshot: written, it runs for the last tick
    app = build_app()
    orders = "paimon://lake/ods_db/orders"
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": orders, "snapshotId": 1}
    assert call(app, "POST", "/asset-events", event)[0] == 200
    cron = {"cron": "0 6 * * *", "timezone": "Europe/Berlin"}
    rule = {
        "groups": [{"groupId": "morning", "members": [{"assetKey": orders}], "schedule": cron}],
        "policy": {"mode": "ALL_UPDATED"},
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }
    assert call(app, "PUT", "/rules/morning", rule)[0] == 201
    schedule = Rule.model_validate({"ruleId": "morning", **rule}).groups[0].schedule
    assert schedule is not None
    [trigger] = call(app, "GET", "/triggers", query={"ruleId": "morning"})[1]["items"]

    # WHEN explained
    status, explained = call(app, "GET", "/rules/morning/explain")

    # THEN it answers the contract's shape; the group ran for the last tick and its next tick waits for orders,
    # which has not changed since that run
    assert status == 200, explained
    Explanation.model_validate(explained)
    [group] = explained["groups"]
    at = parse_instant_ms(explained["evaluatedAt"])
    ticks = group["schedule"]
    assert (ticks["cron"], ticks["timezone"], ticks["neverFires"]) == ("0 6 * * *", "Europe/Berlin", False)
    last, following = schedule.latest_tick(at), schedule.next_tick(at)
    assert ticks["lastTick"] == {"utc": ms_to_iso(last), "local": local_iso(last, "Europe/Berlin")}
    assert ticks["nextTick"] == {"utc": ms_to_iso(following), "local": local_iso(following, "Europe/Berlin")}
    assert ticks["lastTick"]["local"][11:19] == ticks["nextTick"]["local"][11:19] == "06:00:00"
    assert parse_instant_ms(trigger["window"]["end"]) == last and ticks["ranForLastTick"] is True
    assert group["status"] == "WAITING_FOR_SCHEDULE" and ticks["pendingTick"] == ticks["nextTick"]
    [waits] = ticks["waitsFor"]
    assert (waits["assetKey"], waits["status"]) == (orders, "WAITING_FOR_UPDATE") and "1" in waits["reason"]

    # AND once orders has a new snapshot, the next tick waits for no member (only for its time)
    assert call(app, "POST", "/asset-events", {**event, "snapshotId": 2})[0] == 200
    again = call(app, "GET", "/rules/morning/explain")[1]["groups"][0]
    assert again["status"] == "WAITING_FOR_SCHEDULE" and again["schedule"]["waitsFor"] == []


def test_explain_of_a_stored_schedule_that_never_fires_says_so_and_answers_200(container: Container) -> None:
    app = build_app()
    never = {"groups": [{"groupId": "g", "schedule": {"cron": "0 0 30 2 *"}}], "target": RULE["target"]}
    assert call(app, "PUT", "/rules/never", never)[0] == 400  # refused where it is written
    container.rule_store.put_rule(Rule.from_stored(json.dumps({"ruleId": "never", **never})), now_ms())

    status, explained = call(app, "GET", "/rules/never/explain")

    assert status == 200, explained
    [group] = explained["groups"]
    assert group["status"] == "ERROR" and "never fires" in group["reason"]
    ticks = group["schedule"]
    assert ticks["neverFires"] is True and "0 0 30 2 *" in ticks["reason"]
    assert ticks["lastTick"] is None and ticks["nextTick"] is None and ticks["waitsFor"] is None
