"""Run windows (issue 38, the RFC's native gates): a group's runs start only inside its allowed hours; outside them a
ready group waits visibly (WAITING_FOR_RUN_WINDOW) and is deferred to the window's opening, where it runs once for
what it then finds. A partitioned group's partitions wait and run the same way (the step runs per lane)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.run_windows import RunWindow
from lakehook.domain.status import Status
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake
from tests.unit.test_resolve_usecase import World

A = "paimon://lake/ods/a"
MINUTE = 60_000
BERLIN = ZoneInfo("Europe/Berlin")
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: Any = UTC) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=tz).timestamp() * 1000)


def rule(window: dict[str, Any], *, partitioned: bool = False, **policy: Any) -> Rule:
    group: dict[str, Any] = {"groupId": "g", "runWindow": window}
    if partitioned:
        group |= {"partitionBy": ["dt"], "members": [{"assetKey": ORDERS, "partition": {}}]}
    else:
        group |= {"members": [{"assetKey": A}]}
    return Rule.model_validate(
        {
            "ruleId": "daily" if partitioned else "r",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": policy,
            "groups": [group],
        }
    )


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"start": "1:00", "end": "05:00"}, "start '1:00' is not a time of day"),
        ({"start": "01:00", "end": "24:00"}, "end '24:00' is not a time of day"),
        ({"start": "01:00", "end": "05:60"}, "not a time of day"),
        ({"start": "\uff10\uff11:00", "end": "05:00"}, "not a time of day"),  # fullwidth digits
        ({"start": "05:00", "end": "05:00"}, "would be empty"),
        ({"start": "01:00", "end": "05:00", "timezone": "Mars/Olympus"}, "IANA"),
        ({"start": "01:00", "end": "05:00", "days": []}, "at least 1"),
        ({"start": "01:00", "end": "05:00", "days": ["MON", "MON"]}, "twice"),
        ({"start": "01:00", "end": "05:00", "days": ["Monday"]}, "MON"),
        ({"start": "01:00", "end": "05:00", "every": "day"}, "Extra inputs"),
        ({"end": "05:00"}, "start"),
    ],
)
def test_a_run_window_is_checked_when_the_rule_is_written(window: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        rule(window)


def test_a_rule_with_a_run_window_round_trips() -> None:
    written = rule({"start": "22:00", "end": "04:00", "timezone": "Europe/Berlin", "days": ["MON", "FRI"]})
    assert parse_rule("r", json_form(written)) == written
    assert json_form(written)["groups"][0]["runWindow"]["start"] == "22:00"


def _local_minutes(window: RunWindow, instant: int) -> tuple[int, str]:
    local = datetime.fromtimestamp(instant / 1000, UTC).astimezone(ZoneInfo(window.timezone))
    return local.hour * 60 + local.minute, ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")[local.weekday()]


def _inside_by_clock(window: RunWindow, instant: int) -> bool:
    """Inside, read off the local wall clock (the definition the property checks the arithmetic against)."""
    start = int(window.start[:2]) * 60 + int(window.start[3:])
    end = int(window.end[:2]) * 60 + int(window.end[3:])
    minute, day = _local_minutes(window, instant)
    if start < end:
        return start <= minute < end and (window.days is None or day in window.days)
    opened_today = minute >= start and (window.days is None or day in window.days)
    local = datetime.fromtimestamp(instant / 1000, UTC).astimezone(ZoneInfo(window.timezone))
    yesterday = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")[(local - timedelta(days=1)).weekday()]
    opened_yesterday = minute < end and (window.days is None or yesterday in window.days)
    return opened_today or opened_yesterday


clock = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.sampled_from([0, 15, 30, 45]))


@settings(max_examples=examples(300))
@given(
    start=clock,
    end=clock,
    zone=st.sampled_from(ZONES),
    days=st.none()
    | st.lists(st.sampled_from(["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]), min_size=1, max_size=7, unique=True),
    now=st.integers(ms(2026, 1, 1), ms(2027, 1, 1)).map(lambda t: t - t % MINUTE),
)
def test_a_window_is_open_exactly_when_the_local_clock_is_inside_and_opens_next_at_its_start(
    start: str, end: str, zone: str, days: list[str] | None, now: int
) -> None:
    if start == end:
        return
    window = RunWindow.model_validate({"start": start, "end": end, "timezone": zone, "days": days})
    opens = window.opens_after(now)
    if not _near_a_clock_change(zone, now):  # a daylight-saving night is checked by example below
        assert (opens is None) == _inside_by_clock(window, now)
    if opens is None:
        return
    assert now < opens <= now + 8 * 24 * 60 * MINUTE
    assert window.opens_after(opens) is None  # open at its opening ...
    assert window.opens_after(opens - MINUTE) is not None  # ... and closed the minute before


def _near_a_clock_change(zone: str, instant: int) -> bool:
    offsets = {
        datetime.fromtimestamp(at / 1000, UTC).astimezone(ZoneInfo(zone)).utcoffset()
        for at in (instant - 26 * 60 * MINUTE, instant, instant + 26 * 60 * MINUTE)
    }
    return len(offsets) > 1


def test_a_window_across_midnight_and_a_daylight_saving_night() -> None:
    night = RunWindow(start="22:00", end="04:00", timezone="Europe/Berlin")
    assert night.opens_after(ms(2026, 12, 7, 23, 30, tz=BERLIN)) is None
    assert night.opens_after(ms(2026, 12, 8, 3, 59, tz=BERLIN)) is None
    assert night.opens_after(ms(2026, 12, 8, 4, 0, tz=BERLIN)) == ms(2026, 12, 8, 22, 0, tz=BERLIN)
    # 29 March 2026: Berlin skips 02:00-03:00; the window 01:00-05:00 opens at 01:00 CET (00:00 UTC)
    early = RunWindow(start="01:00", end="05:00", timezone="Europe/Berlin")
    assert early.opens_after(ms(2026, 3, 28, 12)) == ms(2026, 3, 29, 0)
    assert early.opens_after(ms(2026, 3, 29, 2, 30)) is None  # 04:30 CEST
    assert early.opens_after(ms(2026, 3, 29, 3, 0)) == ms(2026, 3, 29, 23)  # 05:00 CEST: closed until 01:00 CEST
    weekdays = RunWindow(start="09:00", end="17:00", days=("MON",))
    assert weekdays.opens_after(ms(2026, 12, 8, 10)) == ms(2026, 12, 14, 9)  # Tuesday: next Monday


def test_a_ready_group_waits_outside_its_window_and_runs_once_when_it_opens() -> None:
    opening = ms(2025, 6, 16, 1)  # World starts 2025-06-15 15:06 UTC
    world = World(rule({"start": "01:00", "end": "05:00"}))
    world.snap(A, 1)
    report = world.deliver()
    verdict = report.verdicts[("r", "g")]
    assert verdict.status is Status.WAITING_FOR_RUN_WINDOW and verdict.until == opening
    assert "runWindow (01:00 to 05:00 UTC)" in (verdict.reason or "")
    assert world.claimed() == []
    assert [d.due_at for d in report.deferred] == [opening]
    world.snap(A, 2)  # more data while it waits: the run at the opening takes the newest
    world.deliver()
    world.sweep(opening - world.now)
    assert world.claimed() == [[2]]
    world.sweep(MINUTE)
    assert world.claimed() == [[2]]  # once


def test_each_version_waits_and_then_runs_every_version_in_order() -> None:
    opening = ms(2025, 6, 16, 1)
    world = World(rule({"start": "01:00", "end": "05:00"}, mode="EACH_VERSION"))
    world.snap(A, 1, 2, 3)
    world.deliver()
    assert world.claimed() == []
    world.sweep(opening - world.now)
    assert world.claimed() == [[1], [2], [3]]


def test_each_partition_waits_for_the_window_and_runs_once_when_it_opens() -> None:
    opening = ms(2025, 6, 16, 1)
    lake = Lake(rule({"start": "01:00", "end": "05:00"}, partitioned=True))
    lake.commit(ORDERS, 1, "2025-06-14", "2025-06-15")
    report = lake.deliver(dispatch=False)
    assert lake.runs() == []
    line = {p.partition: p for p in lake.explain().partitions}["dt=2025-06-15"]
    assert line.status is Status.WAITING_FOR_RUN_WINDOW and line.until == opening
    assert opening in {d.due_at for d in report.deferred}
    lake.sweep(opening - lake.now, dispatch=False)
    assert sorted(p for p, _ in lake.runs()) == ["dt=2025-06-14", "dt=2025-06-15"]
    lake.commit(ORDERS, 2, "2025-06-15")  # inside the window: at once
    lake.deliver(dispatch=False)
    assert [p for p, _ in lake.runs()][2:] == ["dt=2025-06-15"]
    assert PAYMENTS not in {a for _, pins in lake.runs() for a, _ in pins}


def test_a_window_the_spring_forward_change_swallows_opens_at_the_change_for_its_usual_length() -> None:
    """Found in review: 02:00 to 03:00 Berlin on 29 March 2026 is [01:00Z, 01:00Z): it never opened that night."""
    swallowed = RunWindow(start="02:00", end="03:00", timezone="Europe/Berlin")
    assert swallowed.opens_after(ms(2026, 3, 28, 23)) == ms(2026, 3, 29, 1)  # 03:00 CEST, the change
    assert swallowed.opens_after(ms(2026, 3, 29, 1, 30)) is None  # open for an hour
    assert swallowed.opens_after(ms(2026, 3, 29, 2)) == ms(2026, 3, 30, 0)  # closed; 02:00 CEST the next night
