"""Explain of a scheduled group: its cron and zone, its last and next tick (UTC and local), and what the tick waits for,
taken from the group's own evaluation (the one the resolver acts on)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.evaluation import GroupEvaluation, Status, evaluate_group
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor
from lakehook.observability import logger
from lakehook.usecases.resolve import ResolverStores
from lakehook.usecases.rule_explain import ExplainRule
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.hypothesis_profiles import examples
from tests.unit.test_explain_agrees import ExplainMachine
from tests.unit.test_schedules import claimed, ms, scheduled_rule
from tests.wiring import resolve_asset_change

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
BERLIN = ZoneInfo("Europe/Berlin")


def schedule_of(verdict: GroupEvaluation) -> dict[str, Any]:
    data = GroupExplanation.from_domain(verdict).dump()
    assert "schedule" in data, data
    schedule: dict[str, Any] = data["schedule"]
    return schedule


@pytest.mark.parametrize(
    ("cron", "zone", "now", "last", "following"),
    [
        # Berlin springs forward on 29 March 2026 (UTC+1 -> UTC+2): 06:00 local is 05:00 UTC, then 04:00 UTC
        (
            "0 6 * * *",
            "Europe/Berlin",
            ms(2026, 3, 28, 12),
            ("2026-03-28T05:00:00Z", "2026-03-28T06:00:00+01:00"),
            ("2026-03-29T04:00:00Z", "2026-03-29T06:00:00+02:00"),
        ),
        # and falls back on 25 October 2026: 06:00 local is 04:00 UTC, then 05:00 UTC
        (
            "0 6 * * *",
            "Europe/Berlin",
            ms(2026, 10, 25, 4, 30),
            ("2026-10-24T04:00:00Z", "2026-10-24T06:00:00+02:00"),
            ("2026-10-25T05:00:00Z", "2026-10-25T06:00:00+01:00"),
        ),
        # 02:30 local does not exist on the spring-forward day: croniter's tick is 03:00 local, the gap's end
        (
            "30 2 * * *",
            "Europe/Berlin",
            ms(2026, 3, 29, 0, 10),
            ("2026-03-28T01:30:00Z", "2026-03-28T02:30:00+01:00"),
            ("2026-03-29T01:00:00Z", "2026-03-29T03:00:00+02:00"),
        ),
        # and 02:30 local happens twice on the fall-back day: croniter ticks at both, the offset tells them apart
        (
            "30 2 * * *",
            "Europe/Berlin",
            ms(2026, 10, 25, 0, 45),
            ("2026-10-25T00:30:00Z", "2026-10-25T02:30:00+02:00"),
            ("2026-10-25T01:30:00Z", "2026-10-25T02:30:00+01:00"),
        ),
        (
            "*/15 * * * *",
            "UTC",
            ms(2026, 12, 1, 10, 7),
            ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00+00:00"),
            ("2026-12-01T10:15:00Z", "2026-12-01T10:15:00+00:00"),
        ),
        # a zone 5:45 ahead of UTC, and weekdays only: Friday 4 December 2026, then Monday
        (
            "0 9 * * 1-5",
            "Asia/Kathmandu",
            ms(2026, 12, 4, 12),
            ("2026-12-04T03:15:00Z", "2026-12-04T09:00:00+05:45"),
            ("2026-12-07T03:15:00Z", "2026-12-07T09:00:00+05:45"),
        ),
        (
            "0 0 1 * *",
            "America/New_York",
            ms(2026, 12, 3, 8),
            ("2026-12-01T05:00:00Z", "2026-12-01T00:00:00-05:00"),
            ("2027-01-01T05:00:00Z", "2027-01-01T00:00:00-05:00"),
        ),
    ],
)
def test_explain_says_the_schedule_and_its_ticks_in_utc_and_in_its_zone(
    cron: str, zone: str, now: int, last: tuple[str, str], following: tuple[str, str]
) -> None:
    rule = scheduled_rule(cron, zone)
    verdict = evaluate_group(rule, rule.groups[0], {}, None, now)
    schedule = schedule_of(verdict)
    assert (schedule["cron"], schedule["timezone"], schedule["neverFires"]) == (cron, zone, False)
    assert schedule["lastTick"] == {"utc": last[0], "local": last[1]}
    assert schedule["nextTick"] == {"utc": following[0], "local": following[1]}
    # never run: the group fires for the last tick now, waiting for nothing
    assert verdict.status is Status.READY and schedule["ranForLastTick"] is False
    assert schedule["pendingTick"] == schedule["lastTick"] and schedule["waitsFor"] == []
    assert GroupExplanation.from_domain(verdict).dump()["window"]["end"] == last[0]


def test_after_its_run_the_group_waits_for_the_next_tick_and_names_the_members_that_tick_will_wait_for() -> None:
    rule = scheduled_rule("0 6 * * *", "Europe/Berlin", members=[{"assetKey": A}, {"assetKey": B}], mode="ALL_UPDATED")
    group = rule.groups[0]
    old = {k: AssetState(asset_key=k, version=1, latest_snapshot_id=1) for k in (A, B)}
    first = evaluate_group(rule, group, old, None, ms(2026, 3, 28, 7, tz=BERLIN))
    assert first.status is Status.READY and first.window is not None
    cursor = claimed(None, first.window, first.pins, ms(2026, 3, 28, 7, tz=BERLIN))

    # WHEN B changed since the run and A did not, before the next tick
    moved = {**old, B: AssetState(asset_key=B, version=2, latest_snapshot_id=2)}
    waiting = evaluate_group(rule, group, moved, cursor, ms(2026, 3, 28, 20, tz=BERLIN))

    # THEN explain says the next tick (after the DST change) and that it waits for A, and why
    schedule = schedule_of(waiting)
    assert waiting.status is Status.WAITING_FOR_SCHEDULE and schedule["ranForLastTick"] is True
    assert (
        schedule["pendingTick"]
        == schedule["nextTick"]
        == {
            "utc": "2026-03-29T04:00:00Z",
            "local": "2026-03-29T06:00:00+02:00",
        }
    )
    assert [(w["assetKey"], w["status"]) for w in schedule["waitsFor"]] == [(A, "WAITING_FOR_UPDATE")]
    # the group's own members are as before (the resolver has not judged them for the next tick yet)
    assert [m.status for m in waiting.members] == [Status.READY, Status.READY]

    # AND at that tick, on the same state, the resolver's evaluation waits for exactly that, for the same reason
    at_tick = evaluate_group(rule, group, moved, cursor, ms(2026, 3, 29, 4))
    held = [(m.asset_key, m.status.value, m.reason) for m in at_tick.members if m.status is not Status.READY]
    assert held == [(w["assetKey"], w["status"], w["reason"]) for w in schedule["waitsFor"]]
    assert schedule_of(at_tick)["waitsFor"] == schedule["waitsFor"]
    assert schedule_of(at_tick)["pendingTick"]["utc"] == "2026-03-29T04:00:00Z"

    # AND once A changed too, the next tick waits for nothing but itself, and fires then
    both = {**moved, A: AssetState(asset_key=A, version=2, latest_snapshot_id=2)}
    assert schedule_of(evaluate_group(rule, group, both, cursor, ms(2026, 3, 28, 21, tz=BERLIN)))["waitsFor"] == []
    assert evaluate_group(rule, group, both, cursor, ms(2026, 3, 29, 4)).status is Status.READY


def test_a_member_not_satisfied_is_what_the_due_tick_waits_for_with_its_own_status_and_reason() -> None:
    rule = scheduled_rule("0 6 * * *", members=[{"assetKey": A, "condition": {"qualityStatus": "PASSED"}}])
    state = {A: AssetState(asset_key=A, version=1, latest_snapshot_id=3)}
    verdict = evaluate_group(rule, rule.groups[0], state, None, ms(2026, 12, 1, 7))
    schedule = schedule_of(verdict)
    assert verdict.status is Status.BLOCKED_BY_QUALITY
    member = verdict.members[0]
    assert schedule["waitsFor"] == [{"assetKey": A, "status": "BLOCKED_BY_QUALITY", "reason": member.reason}]
    assert schedule["ranForLastTick"] is False and schedule["pendingTick"]["utc"] == "2026-12-01T06:00:00Z"


def test_a_group_without_a_schedule_says_none() -> None:
    rule = Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "groups": [{"groupId": "g", "members": [{"assetKey": A}]}],
        }
    )
    assert (
        "schedule"
        not in GroupExplanation.from_domain(evaluate_group(rule, rule.groups[0], {}, None, ms(2026, 12, 1))).dump()
    )


CRONS = ["* * * * *", "*/7 * * * *", "0 * * * *", "30 2 * * *", "0 6 * * 1-5", "15 3 1 * *", "0 0 29 2 *"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe"]


@settings(max_examples=examples(200), deadline=None)
@given(
    cron=st.sampled_from(CRONS),
    zone=st.sampled_from(ZONES),
    now=st.integers(ms(2025, 1, 1), ms(2030, 1, 1)),
    ran=st.booleans(),
)
def test_the_next_tick_is_after_now_and_is_croniters_next_and_the_local_time_is_the_same_instant(
    cron: str, zone: str, now: int, ran: bool
) -> None:
    rule = scheduled_rule(cron, zone)
    group = rule.groups[0]
    cursor: GroupCursor | None = None
    if ran:  # it ran for the latest tick: it now waits for the next
        due = evaluate_group(rule, group, {}, None, now)
        assert due.window is not None
        cursor = claimed(None, due.window, (), now)
    verdict = evaluate_group(rule, group, {}, cursor, now)
    schedule = schedule_of(verdict)
    expected = croniter(cron, datetime.fromtimestamp(now / 1000, tz=UTC).astimezone(ZoneInfo(zone))).get_next(datetime)
    following = datetime.fromisoformat(schedule["nextTick"]["utc"].replace("Z", "+00:00"))
    # as instants: an aware time in a repeated hour (fall back) never equals one in another zone (PEP 495)
    assert following.timestamp() == expected.timestamp() and following.timestamp() * 1000 > now
    last = datetime.fromisoformat(schedule["lastTick"]["utc"].replace("Z", "+00:00"))
    assert last.timestamp() * 1000 <= now
    for tick in (schedule["lastTick"], schedule["nextTick"]):
        local = datetime.fromisoformat(tick["local"])
        assert local.timestamp() == datetime.fromisoformat(tick["utc"].replace("Z", "+00:00")).timestamp()
        assert local.utcoffset() == local.astimezone(ZoneInfo(zone)).utcoffset()
    assert schedule["ranForLastTick"] is ran
    assert schedule["pendingTick"] == (schedule["nextTick"] if ran else schedule["lastTick"])
    assert verdict.status is (Status.WAITING_FOR_SCHEDULE if ran else Status.READY)
    if ran:
        assert verdict.until == int(following.timestamp() * 1000)


def _explainer(rules: InMemoryRuleStore, now: int) -> ExplainRule:
    store, triggers = InMemoryAssetStore(), InMemoryTriggerStore()
    reader = InMemoryStateReader(store.get_state, triggers)
    resolver = resolve_asset_change(
        ResolverStores(rules, reader, triggers, InMemoryStateHistory(), InMemoryDeferralStore()),
        clock=lambda: now,
        observer=None,
    )
    return ExplainRule(rules, triggers, reader, clock=lambda: now, resolver=resolver)


@pytest.mark.parametrize("members", [[], [{"assetKey": A}]])
def test_a_stored_schedule_that_never_fires_is_explained_as_such_not_failed(members: list[dict[str, Any]]) -> None:
    # a rule stored before lakehook refused crons that never fire (the API refuses it now)
    stored = scheduled_rule("0 6 * * *", members=members).to_json().replace('"0 6 * * *"', '"0 0 30 2 *"')
    rules = InMemoryRuleStore()
    rules.put_rule(Rule.from_stored(stored), ms(2026, 12, 1))
    explained = _explainer(rules, ms(2026, 12, 3)).explain("r")
    (group,) = explained["groups"]
    schedule = group["schedule"]
    assert schedule["neverFires"] is True and "0 0 30 2 *" in schedule["reason"] and "never fires" in schedule["reason"]
    assert schedule["lastTick"] is None and schedule["nextTick"] is None and schedule["pendingTick"] is None


class ScheduledExplainMachine(ExplainMachine):
    """test_explain_agrees's histories (its cron rules among them), each explain also checked for what a scheduled
    group's ``schedule`` block says against the group's verdict."""

    def _check(self, rule_id: str) -> None:
        for group in self.explainer.explain(rule_id)["groups"]:
            self._check_schedule(group)
        super()._check(rule_id)

    @staticmethod
    def _check_schedule(group: dict[str, Any]) -> None:
        """A scheduled group's ticks and waitsFor say what its verdict does: READY only for a tick it has not run
        for and waits for no member; WAITING_FOR_SCHEDULE after its run, until the next tick; a member it waits
        for while due is one the verdict names, with the same status and reason."""
        schedule = group.get("schedule")
        if schedule is None:
            return
        status, waits = group["status"], schedule["waitsFor"]
        if status == "READY":
            assert schedule["ranForLastTick"] is False and waits == [], group
            assert group["window"]["end"] == schedule["lastTick"]["utc"] == schedule["pendingTick"]["utc"], group
        if status == "WAITING_FOR_SCHEDULE":
            assert schedule["ranForLastTick"] is True and group["until"] == schedule["nextTick"]["utc"], group
            assert schedule["pendingTick"] == schedule["nextTick"], group
        elif status != "DISABLED" and schedule["ranForLastTick"] is False:
            members = {m["assetKey"]: (m["status"], m["reason"]) for m in group["members"]}
            assert all(members[w["assetKey"]] == (w["status"], w["reason"]) for w in waits), group
            assert (status == "READY") is (not waits and status not in ("COOLDOWN", "QUIET_PERIOD")), group


ScheduledExplainMachine.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestScheduleBlockAgreesWithTheVerdict = ScheduledExplainMachine.TestCase


def setup_module() -> None:
    logger.setLevel("WARNING")


def teardown_module() -> None:
    logger.setLevel("INFO")
