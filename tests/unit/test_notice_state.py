"""The notice state of a table and the schedule it gives (domain/notice_state.py), and the registration's poll
interval."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.answers.assets import NoticesAnswer
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.notice_state import (
    NOTICE_GRACE_MS,
    TICK_SECONDS,
    NoticeHealth,
    NoticeState,
    PollCadence,
    describe,
    due,
    stack_cadence,
    unannounced,
)
from lakehook.settings import Settings

CADENCE = PollCadence(default_interval_seconds=60, safety_net_seconds=3_600, quiet_after_seconds=86_400)
T0 = 1_796_000_000_000 // 3_600_000 * 3_600_000  # an hour's first tick
keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_/", min_size=1, max_size=40).map(
    lambda s: f"delta://lake/db/{s.replace('/', '_')}"
)
intervals = st.integers(min_value=1, max_value=1_440).map(lambda minutes: minutes * TICK_SECONDS)


@given(key=keys, interval=intervals, start=st.integers(min_value=0, max_value=10_000))
def test_a_table_is_due_on_exactly_one_tick_in_each_of_its_intervals(key: str, interval: int, start: int) -> None:
    ticks = interval // TICK_SECONDS
    first = T0 + start * TICK_SECONDS * 1000
    hits = [i for i in range(2 * ticks) if due(key, interval, first + i * TICK_SECONDS * 1000)]
    assert len(hits) == 2 and hits[1] - hits[0] == ticks  # once per interval, an interval apart
    # a tick's time within its minute does not matter (a scheduled invocation is a few seconds late)
    assert due(key, interval, first + hits[0] * TICK_SECONDS * 1000 + 59_999)


def test_an_hourly_fleet_is_spread_over_the_hour() -> None:
    per_tick = [sum(due(f"delta://lake/db/t{i}", 3_600, T0 + m * 60_000) for i in range(1_000)) for m in range(60)]
    assert sum(per_tick) == 1_000 and max(per_tick) < 40  # about 17 a minute, not 1,000 on one tick


@given(
    notice=st.one_of(st.none(), st.integers(min_value=0, max_value=10**13)),
    missed=st.one_of(st.none(), st.integers(min_value=0, max_value=10**13)),
    now=st.integers(min_value=0, max_value=10**13),
    own=st.one_of(st.none(), intervals),
)
def test_the_safety_net_only_while_notices_arrive(
    notice: int | None, missed: int | None, now: int, own: int | None
) -> None:
    state = NoticeState(notice, missed if notice is not None else None)
    health = state.health(now, CADENCE)
    interval = state.interval_seconds(own, now, CADENCE)
    fast = own or CADENCE.default_interval_seconds
    if health is NoticeHealth.ARRIVING:
        assert interval == max(fast, CADENCE.safety_net_seconds) and state.fast_since(now, CADENCE) is None
        assert notice is not None and missed is None and now - notice <= CADENCE.quiet_after_seconds * 1000
    else:
        assert interval == fast  # never slower than its own interval when notices do not arrive
    if health is NoticeHealth.QUIET:
        since = state.fast_since(now, CADENCE)
        assert since is not None and describe(health, since).startswith("notices: QUIET (fast poll since ")


def test_notices_that_stop_make_the_table_quiet_by_themselves() -> None:
    state = NoticeState(last_notice_ms=T0)
    assert state.health(T0 + 86_400_000, CADENCE) is NoticeHealth.ARRIVING
    later = T0 + 86_400_001
    assert state.health(later, CADENCE) is NoticeHealth.QUIET
    assert state.fast_since(later, CADENCE) == T0 + 86_400_000
    assert NoticesAnswer.from_domain(state, None, later, CADENCE).dump() == {
        "state": "QUIET",
        "pollIntervalSeconds": 60,
        "lastNoticeAt": "2026-11-30T00:00:00Z",
        "fastPollSince": "2026-12-01T00:00:00Z",
        "summary": "notices: QUIET (fast poll since 2026-12-01T00:00:00Z)",
    }
    missed = NoticeState(last_notice_ms=T0, missed_since_ms=T0 + 60_000)
    assert missed.health(T0 + 120_000, CADENCE) is NoticeHealth.QUIET
    assert missed.fast_since(T0 + 120_000, CADENCE) == T0 + 60_000
    assert NoticesAnswer.from_domain(NoticeState(), 600, T0, CADENCE).dump() == {
        "state": "NONE",
        "pollIntervalSeconds": 600,
        "summary": "notices: NONE",
    }


def test_only_a_commit_older_than_a_notice_takes_shows_a_lost_notice() -> None:
    assert unannounced(T0, T0 + NOTICE_GRACE_MS + 1)
    assert not unannounced(T0, T0 + NOTICE_GRACE_MS)  # its notice may be in flight
    assert not unannounced(None, T0)  # nothing new


def asset(**extra: object) -> dict[str, object]:
    return {
        "assetKey": "delta://lake/db/orders",
        "format": "delta",
        "source": {"catalog": "lake", "location": "/t"},
    } | extra


@pytest.mark.parametrize("value", [0, 59, 90, 86_460, True, "600", 60.5])
def test_a_poll_interval_that_is_no_whole_minutes_in_a_day_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        AssetRegistration.model_validate(asset(pollIntervalSeconds=value))
    assert "pollIntervalSeconds" in str(refused.value)


def test_a_poll_interval_is_for_a_table_with_a_source() -> None:
    assert AssetRegistration.model_validate(asset(pollIntervalSeconds=600)).poll_interval_seconds == 600
    assert AssetRegistration.model_validate(asset(pollIntervalSeconds=600)).poll_interval_seconds == 600
    with pytest.raises(ValidationError, match="pollIntervalSeconds is for a table with a source"):
        AssetRegistration.model_validate({"assetKey": "custom://a/b", "format": "custom", "pollIntervalSeconds": 600})


def test_the_cadence_is_checked_and_a_stacks_parameters_are_rounded_to_one() -> None:
    with pytest.raises(ValueError, match="PollIntervalSeconds"):
        PollCadence(default_interval_seconds=30)
    with pytest.raises(ValueError, match="NoticeQuietSeconds"):
        PollCadence(safety_net_seconds=7_200, quiet_after_seconds=3_600)
    # the parameters every function starts with are never refused: whole minutes up, the quiet time at least the net
    assert stack_cadence(90, 7_200, 600) == PollCadence(120, 7_200, 7_200)
    assert stack_cadence(1, 100_000, 86_400) == PollCadence(60, 86_400, 86_400)
    assert Settings(poll_interval_seconds=90).poll_cadence.default_interval_seconds == 120


@given(
    interval=st.integers(min_value=-10, max_value=200_000),
    net=st.integers(min_value=-10, max_value=200_000),
    quiet=st.integers(min_value=-10, max_value=10**7),
)
def test_any_stack_parameters_give_a_valid_cadence(interval: int, net: int, quiet: int) -> None:
    cadence = stack_cadence(interval, net, quiet)
    assert cadence.default_interval_seconds >= min(max(interval, 60), 86_400)
    assert cadence.default_interval_seconds - max(interval, 60) < 60 or interval > 86_400
