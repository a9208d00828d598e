"""Group schedules: cron ticks in a time zone, once per tick after it passed and the members are satisfied."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.evaluation import Status, evaluate_group
from lakehook.domain.rules import Rule
from lakehook.domain.schedules import GroupSchedule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, Window
from tests.hypothesis_profiles import examples

A = "paimon://lake/ods/a"
MINUTE = 60_000
BERLIN = ZoneInfo("Europe/Berlin")


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: Any = UTC) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=tz).timestamp() * 1000)


def scheduled_rule(
    cron: str, timezone: str = "UTC", members: list[dict[str, Any]] | None = None, **policy: Any
) -> Rule:
    return Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": policy,
            "groups": [{"groupId": "g", "members": members or [], "schedule": {"cron": cron, "timezone": timezone}}],
        }
    )


def claimed(cursor: GroupCursor | None, window: Window, pins: tuple[PinnedInput, ...], at: int) -> GroupCursor:
    trigger = Trigger(
        trigger_key=f"k{window.end}",
        rule_id="r",
        group_id="g",
        inputs=pins,
        window=window,
        created_at=at,
        updated_at=at,
    )
    return (cursor or GroupCursor.initial("r", "g")).after(trigger, {})


def test_ticks_follow_the_time_zone_across_daylight_saving() -> None:
    six = GroupSchedule(cron="0 6 * * *", timezone="Europe/Berlin")
    # 29 March 2026: Berlin moves from UTC+1 to UTC+2; 06:00 local is 05:00 UTC before, 04:00 UTC after.
    assert six.latest_tick(ms(2026, 3, 28, 12)) == ms(2026, 3, 28, 6, tz=BERLIN) == ms(2026, 3, 28, 5)
    assert six.next_tick(ms(2026, 3, 28, 12)) == ms(2026, 3, 29, 6, tz=BERLIN) == ms(2026, 3, 29, 4)
    assert six.previous_tick(ms(2026, 3, 29, 4)) == ms(2026, 3, 28, 5)
    at_tick = ms(2026, 3, 29, 4)
    assert six.latest_tick(at_tick) == at_tick  # a tick counts from its own instant
    assert six.next_tick(at_tick) == ms(2026, 3, 30, 4)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"cron": "0 6 * *"}, "five-field"),
        ({"cron": "0 0 6 * * *"}, "five-field"),
        ({"cron": "61 * * * *"}, "five-field"),
        ({"cron": "0 6 * * *", "timezone": "Mars/Olympus"}, "IANA"),
        ({"cron": "0 6 * * *", "every": "day"}, "Extra inputs"),
        ({"cron": "0 0 30 2 *"}, "never fires"),
        ({"cron": "0 0 31 4,6,9,11 *"}, "never fires"),
    ],
)
def test_a_schedule_is_checked_when_the_rule_is_written(schedule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GroupSchedule.model_validate(schedule)


def test_what_a_scheduled_group_cannot_be_is_refused_when_written() -> None:
    with pytest.raises(ValidationError, match="once per tick, not once per version"):
        scheduled_rule("0 6 * * *", mode="EACH_VERSION")
    windowed = [{"assetKey": A, "condition": {"coverage": {"window": "PT1H"}}}]
    with pytest.raises(ValidationError, match="no windowed members"):
        scheduled_rule("0 6 * * *", members=windowed)
    with pytest.raises(ValidationError, match="members, a schedule, or both"):
        Rule.model_validate(
            {"ruleId": "r", "target": {"type": "eventbridge", "eventBusName": "b"}, "groups": [{"groupId": "g"}]}
        )


def test_a_schedule_alone_fires_once_per_tick_and_waits_for_the_next_with_its_time() -> None:
    rule = scheduled_rule("*/15 * * * *")
    group = rule.groups[0]
    now = ms(2026, 12, 1, 10, 7)
    first = evaluate_group(rule, group, {}, None, now)
    assert first.status is Status.READY and first.pins == ()
    assert first.window == Window(start=ms(2026, 12, 1, 9, 45), end=ms(2026, 12, 1, 10, 0))
    cursor = claimed(None, first.window, first.pins, now)

    waiting = evaluate_group(rule, group, {}, cursor, now + MINUTE)
    assert waiting.status is Status.WAITING_FOR_SCHEDULE and waiting.until == ms(2026, 12, 1, 10, 15)
    assert "the next tick is at 2026-12-01T10:15:00" in (waiting.reason or "")

    second = evaluate_group(rule, group, {}, cursor, ms(2026, 12, 1, 10, 15))
    assert second.status is Status.READY and second.window == Window(
        start=first.window.end, end=ms(2026, 12, 1, 10, 15)
    )


def test_with_all_updated_a_tick_waits_for_every_member_to_change_since_the_last_run() -> None:
    rule = scheduled_rule("0 * * * *", members=[{"assetKey": A}], mode="ALL_UPDATED")
    group = rule.groups[0]
    old = {A: AssetState(asset_key=A, version=1, latest_snapshot_id=1)}
    first = evaluate_group(rule, group, old, None, ms(2026, 12, 1, 10, 5))
    assert first.status is Status.READY and [p.snapshot_id for p in first.pins] == [1]
    cursor = claimed(None, first.window, first.pins, ms(2026, 12, 1, 10, 5))
    unchanged = evaluate_group(rule, group, old, cursor, ms(2026, 12, 1, 11, 5))
    assert unchanged.status is Status.WAITING_FOR_UPDATE and "for the tick at 2026-12-01T11:00:00" in (
        unchanged.reason or ""
    )
    new = {A: AssetState(asset_key=A, version=2, latest_snapshot_id=2)}
    late = evaluate_group(rule, group, new, cursor, ms(2026, 12, 1, 11, 40))  # data after the tick: its run
    assert late.status is Status.READY and late.window is not None and late.window.end == ms(2026, 12, 1, 11)


def test_a_member_not_satisfied_holds_the_tick_and_says_why() -> None:
    rule = scheduled_rule("0 6 * * *", members=[{"assetKey": A, "condition": {"qualityStatus": "PASSED"}}])
    verdict = evaluate_group(
        rule, rule.groups[0], {A: AssetState(asset_key=A, version=1, latest_snapshot_id=3)}, None, ms(2026, 12, 1, 7)
    )
    assert verdict.status is Status.BLOCKED_BY_QUALITY


@settings(max_examples=examples(150), deadline=None)
@given(
    cron=st.sampled_from(["* * * * *", "*/7 * * * *", "0 * * * *", "30 2 * * *", "0 6 * * 1-5"]),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu"]),
    start=st.integers(ms(2026, 1, 1), ms(2027, 1, 1)),
    steps=st.lists(st.integers(1, 3 * 86_400_000), min_size=1, max_size=40),
)
def test_evaluated_at_any_times_a_schedule_claims_each_tick_at_most_once_never_early(
    cron: str, zone: str, start: int, steps: list[int]
) -> None:
    rule = scheduled_rule(cron, zone)
    schedule = rule.groups[0].schedule
    assert schedule is not None
    cursor: GroupCursor | None = None
    now = start
    ends: list[int] = []
    for step in steps:
        now += step
        verdict = evaluate_group(rule, rule.groups[0], {}, cursor, now)
        if verdict.status is Status.READY:
            assert verdict.window is not None
            assert verdict.window.end <= now < schedule.next_tick(verdict.window.end)  # the latest tick, not early
            assert verdict.window.start == schedule.previous_tick(verdict.window.end)
            ends.append(verdict.window.end)
            cursor = claimed(cursor, verdict.window, (), now)
        else:
            assert verdict.status is Status.WAITING_FOR_SCHEDULE
            assert verdict.until is not None and verdict.until > now
    assert ends == sorted(set(ends))  # strictly increasing: never a tick twice


_DAYS_IN_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


@given(day=st.integers(min_value=1, max_value=31), months=st.sets(st.integers(1, 12), min_size=1, max_size=3))
def test_a_cron_is_accepted_exactly_when_some_date_matches_it_and_then_it_has_ticks(day: int, months: set[int]) -> None:
    cron = f"0 0 {day} {','.join(map(str, sorted(months)))} *"
    fires = any(day <= _DAYS_IN_MONTH[month] for month in months)
    if not fires:
        with pytest.raises(ValidationError, match="never fires"):
            GroupSchedule(cron=cron)
        return
    schedule = GroupSchedule(cron=cron)
    now = ms(2026, 12, 1, 10)
    assert schedule.latest_tick(now) <= now < schedule.next_tick(now)


def test_a_rule_stored_before_the_never_fires_check_still_loads() -> None:
    stored = scheduled_rule("0 6 * * *").to_json().replace('"0 6 * * *"', '"0 0 30 2 *"')
    with pytest.raises(ValidationError, match="never fires"):
        Rule.model_validate_json(stored)
    assert Rule.from_stored(stored).groups[0].schedule == GroupSchedule.model_construct(cron="0 0 30 2 *")
