"""POST /sensors/evaluate (RFC §4, Strategy A): a run in progress asks whether an asset condition holds, through the
API's own resolver on the in-memory fakes. The verdicts are explain's; the sensor adds the long-poll and refuses what
it cannot evaluate."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook import container
from lakehook.api.app import build_app
from lakehook.container import Container
from lakehook.domain.sensors import MAX_WAIT_SECONDS, SensorRequest
from lakehook.settings import Settings
from lakehook.usecases.sensors import EvaluateSensor
from tests import wiring
from tests.support import FakeLambdaContext, api_event

TOKEN = "sensor-admin"
A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
TARGET = {"type": "eventbridge", "eventBusName": "lakehook-runs"}


@pytest.fixture
def box() -> Iterator[Container]:
    built = wiring.in_memory(Settings(admin_token=TOKEN))
    container.use(built)
    yield built
    container.use(None)


def call(method: str, path: str, body: Any = None, *, raw: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    answer = build_app().resolve(api_event(method, path, body, headers=headers, raw=raw), FakeLambdaContext())
    return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None


def push(asset_key: str, snapshot_id: int, **fields: Any) -> None:
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset_key, "snapshotId": snapshot_id}
    status, body = call("POST", "/asset-events", {"events": [{**event, "commitTime": 1_750_000_000_000, **fields}]})
    assert status == 200 and body["results"][0]["status"] == "ACCEPTED", body


def put_rule(rule_id: str, groups: list[dict[str, Any]]) -> None:
    status, body = call("PUT", f"/rules/{rule_id}", {"groups": groups, "target": TARGET, "enabled": False})
    assert status == 201, body


def sense(body: dict[str, Any]) -> tuple[int, Any]:
    return call("POST", "/sensors/evaluate", body)


def test_an_ad_hoc_group_is_ready_with_the_versions_that_satisfy_it(box: Container) -> None:
    group = {"members": [{"assetKey": A}, {"assetKey": B, "condition": {"minSnapshotId": 5}}]}
    status, body = sense({"group": group})
    assert status == 200 and body["ready"] is False
    assert body["verdict"] == "BLOCKED_BY_UNKNOWN_ASSET" and body["pins"] == [], body
    push(A, 1)
    push(B, 4)
    status, body = sense({"group": group})
    assert (status, body["ready"], body["verdict"]) == (200, False, "BLOCKED_BY_SNAPSHOT"), body
    assert body["reason"].startswith(B) and body["pins"] == []
    push(B, 5)
    status, body = sense({"group": group})
    assert (status, body["ready"], body["verdict"], body["groupId"]) == (200, True, "READY", "sensor"), body
    assert sorted((p["assetKey"], p["snapshotId"]) for p in body["pins"]) == [(A, 1), (B, 5)]
    assert body["ruleId"] is None and body["evaluations"] == 1
    assert [m["status"] for m in body["explanation"]["groups"][0]["members"]] == ["READY", "READY"]


def test_a_rule_is_ready_whatever_its_run_history(box: Container) -> None:
    """A sensor asks about the condition: once the rule has run these versions explain waits for an update, the
    sensor still answers READY with them."""
    groups = [{"groupId": "g1", "members": [{"assetKey": A}]}, {"groupId": "g2", "members": [{"assetKey": B}]}]
    status, body = call("PUT", "/rules/orders", {"groups": groups, "target": TARGET})
    assert status == 201, body
    push(B, 7)
    box.resolver.evaluate(box.rule_store.get_rule("orders").rule)  # the rule claims B's snapshot 7
    assert [t.inputs[0].snapshot_id for t in box.trigger_store.list_for_rule("orders", limit=10).items] == [7]
    assert call("GET", "/rules/orders/explain")[1]["ready"] is False
    status, body = sense({"ruleId": "orders"})
    assert (status, body["ready"], body["groupId"], body["ruleId"]) == (200, True, "g2", "orders"), body
    assert [(p["assetKey"], p["snapshotId"]) for p in body["pins"]] == [(B, 7)]
    status, body = sense({"ruleId": "orders", "groupId": "g1"})
    assert (status, body["ready"], body["groupId"]) == (200, False, "g1"), body
    assert [g["groupId"] for g in body["explanation"]["groups"]] == ["g1"]
    assert len(box.trigger_store.list_for_rule("orders", limit=10).items) == 1  # the sensor claimed nothing


def test_missing_rule_or_group_is_a_404(box: Container) -> None:
    assert sense({"ruleId": "nope"})[0] == 404
    put_rule("orders", [{"groupId": "g1", "members": [{"assetKey": A}]}])
    status, body = sense({"ruleId": "orders", "groupId": "g9"})
    assert status == 404 and "g9" in body["message"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"ruleId": "orders", "bogus": 1}, "bogus"),
        ({"group": {"members": [{"assetKey": A, "colour": "red"}]}}, "group.members.0.colour"),
        ({"group": {"members": [{"assetKey": A, "condition": {"nope": 1}}]}}, "group.members.0.condition.nope"),
        ({"group": {"members": [{"assetKey": "not a key"}]}}, "group.members.0.assetKey"),
        ({"ruleId": "orders", "group": {"members": []}}, "exactly one of ruleId"),
        ({}, "exactly one of ruleId"),
        ({"group": {"members": []}, "groupId": "g"}, "groupId picks a group"),
        ({"ruleId": "orders", "waitSeconds": MAX_WAIT_SECONDS + 1}, "waitSeconds"),
        ({"ruleId": "orders", "waitSeconds": -1}, "waitSeconds"),
        ({"group": {"members": [{"assetKey": A}], "schedule": {"cron": "* * * * *"}}}, "schedule"),
    ],
)
def test_bad_requests_are_a_400_naming_what_was_wrong(box: Container, body: dict[str, Any], named: str) -> None:
    status, answer = sense(body)
    assert status == 400, answer
    assert named in answer["message"], answer


def test_a_partitioned_group_of_a_rule_is_a_400(box: Container) -> None:
    group = {"groupId": "p", "partitionBy": ["dt"], "members": [{"assetKey": A, "partition": {}}]}
    status, answer = call("PUT", "/rules/parts", {"groups": [group], "target": TARGET, "enabled": False})
    assert status == 201, answer
    status, answer = sense({"ruleId": "parts"})
    assert status == 400 and "partitionBy" in answer["message"], answer


def test_the_sensor_writes_nothing(box: Container) -> None:
    put_rule("orders", [{"groupId": "g1", "members": [{"assetKey": A}]}])
    push(A, 1)
    assert sense({"ruleId": "orders"})[1]["ready"] is True
    assert box.trigger_store.list_for_rule("orders", limit=10).items == []
    assert box.trigger_store.list_for_rule("~sensor", limit=10).items == []


class Clock:
    """The monotonic clock and sleep the long-poll runs on: sleeping advances time, and runs what a test scheduled
    for that moment (a producer pushing while the sensor waits)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self.at: dict[int, Any] = {}

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        action = self.at.pop(len(self.sleeps), None)
        if action is not None:
            action()


def sensor(box: Container, clock: Clock) -> EvaluateSensor:
    return EvaluateSensor(box.rule_store, box.explain_rule, box.alias_store, clock=clock, sleep=clock.sleep, interval=2)


def test_a_long_poll_answers_as_soon_as_the_condition_holds(box: Container) -> None:
    clock = Clock()
    clock.at[3] = lambda: push(A, 1)  # the producer commits during the third pause
    answer = sensor(box, clock).evaluate(
        SensorRequest.model_validate({"group": {"members": [{"assetKey": A}]}, "waitSeconds": 20})
    )
    assert answer["ready"] is True and answer["evaluations"] == 4 and clock.sleeps == [2, 2, 2]
    assert answer["waitedSeconds"] == 6


def test_a_long_poll_gives_up_when_the_wait_is_over(box: Container) -> None:
    clock = Clock()
    request = SensorRequest.model_validate({"group": {"members": [{"assetKey": A}]}, "waitSeconds": 7})
    answer = sensor(box, clock).evaluate(request)
    assert answer["ready"] is False and answer["verdict"] == "BLOCKED_BY_UNKNOWN_ASSET"
    assert clock.sleeps == [2, 2, 2, 1] and answer["evaluations"] == 5  # the last evaluation at the end of the wait
    assert answer["waitedSeconds"] == 7


@settings(max_examples=40, deadline=None)
@given(wait=st.integers(min_value=0, max_value=MAX_WAIT_SECONDS), interval=st.sampled_from([0.5, 1.0, 2.0, 3.0]))
def test_a_long_poll_waits_exactly_its_wait(wait: int, interval: float) -> None:
    """Whatever the wait and the interval, a condition that never holds is evaluated at the start, every interval, and
    at the end of the wait: never past it, never short of it."""
    built = wiring.in_memory(Settings(admin_token=TOKEN))
    clock = Clock()
    use = EvaluateSensor(built.rule_store, built.explain_rule, clock=clock, sleep=clock.sleep, interval=interval)
    answer = use.evaluate(SensorRequest.model_validate({"group": {"members": [{"assetKey": A}]}, "waitSeconds": wait}))
    assert sum(clock.sleeps) == pytest.approx(wait)
    assert all(0 < s <= interval for s in clock.sleeps)
    assert answer["evaluations"] == len(clock.sleeps) + 1 == math.ceil(wait / interval) + 1
    assert answer["ready"] is False
