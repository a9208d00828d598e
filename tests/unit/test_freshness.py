"""Freshness: a rule overdue for its daily deadline or its longest wait, an asset for its age, and since when."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.freshness import Freshness, OverdueKind, asset_overdue, rule_overdue
from lakehook.domain.state import AssetState

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = 3_600_000


def ms(day: int, hour: int, minute: int = 0, tz: Any = BERLIN) -> int:
    return int(datetime(2026, 12, day, hour, minute, tzinfo=tz).timestamp() * 1000)


BY_0730 = Freshness.model_validate({"expectedBy": {"cron": "30 7 * * *", "timezone": "Europe/Berlin"}})


def test_a_rule_is_overdue_from_the_deadline_it_missed_until_it_triggers() -> None:
    created = ms(1, 12)
    # Before the first deadline it lived through a whole day of: nothing promised yet.
    assert rule_overdue(BY_0730, created, None, ms(2, 9)) == []
    [late] = rule_overdue(BY_0730, created, None, ms(3, 8))
    assert (late.kind, late.since) == (OverdueKind.EXPECTED_BY, ms(3, 7, 30))
    assert "never triggered" in late.reason
    assert rule_overdue(BY_0730, created, ms(2, 23), ms(3, 8)) == []  # triggered within the day
    assert rule_overdue(BY_0730, created, ms(3, 7, 45), ms(3, 8)) == []  # late, but it ran: on time again
    [missed] = rule_overdue(BY_0730, created, ms(2, 7, 0), ms(3, 12))  # ran before the 2nd's deadline only
    assert missed.since == ms(3, 7, 30) and "last triggered at 2026-12-02T06:00:00" in missed.reason


def test_a_rule_waits_at_most_max_wait_seconds_between_triggers() -> None:
    wait = Freshness.model_validate({"maxWaitSeconds": 2 * 3600})
    assert rule_overdue(wait, 0, 10 * HOUR, 11 * HOUR) == []
    [over] = rule_overdue(wait, 0, 10 * HOUR, 13 * HOUR)
    assert (over.kind, over.since) == (OverdueKind.MAX_WAIT, 12 * HOUR)
    [never] = rule_overdue(wait, 5 * HOUR, None, 8 * HOUR)
    assert never.since == 7 * HOUR and "since the rule was created" in never.reason


def test_an_asset_is_overdue_once_its_last_snapshot_is_older_than_its_max_age() -> None:
    state = AssetState(asset_key="paimon://lake/db/t", version=3, latest_snapshot_id=3, latest_commit_time=10 * HOUR)
    assert asset_overdue("paimon://lake/db/t", 3600, state, 10 * HOUR + 1) is None
    over = asset_overdue("paimon://lake/db/t", 3600, state, 12 * HOUR)
    assert over is not None and over.since == 11 * HOUR and over.asset_key == "paimon://lake/db/t"
    assert asset_overdue("paimon://lake/db/t", None, state, 12 * HOUR) is None
    assert asset_overdue("paimon://lake/db/t", 3600, None, 12 * HOUR) is None


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"maxWaitSeconds": 10},
        {"maxWaitSeconds": 10**9},
        {"expectedBy": {"cron": "7:30"}},
        {"expectedBy": {"cron": "30 7 * * *", "timezone": "Berlin"}},
        {"expectedBy": {"cron": "0 0 30 2 *"}},  # never fires: a deadline that is never due silences overdue alarms
        {"maxWaitSeconds": 3600, "other": 1},
    ],
)
def test_a_freshness_promise_is_checked_when_written(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Freshness.model_validate(bad)
    with pytest.raises(ValidationError):
        AssetRegistration.model_validate({"assetKey": "paimon://lake/db/t", "format": "paimon", "maxAgeSeconds": 5})


@given(
    created=st.integers(ms(1, 0, tz=UTC), ms(20, 0, tz=UTC)),
    last=st.none() | st.integers(ms(1, 0, tz=UTC), ms(25, 0, tz=UTC)),
    now=st.integers(ms(1, 0, tz=UTC), ms(28, 0, tz=UTC)),
)
def test_overdue_is_never_since_a_moment_after_now_nor_before_the_rule_or_its_last_trigger(
    created: int, last: int | None, now: int
) -> None:
    both = Freshness.model_validate(
        {"expectedBy": {"cron": "30 7 * * *", "timezone": "Europe/Berlin"}, "maxWaitSeconds": 86400}
    )
    if last is not None and (last < created or last > now):
        return
    for overdue in rule_overdue(both, created, last, now):
        assert overdue.since <= now
        assert overdue.since > (last if last is not None else created)
