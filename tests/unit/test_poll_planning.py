"""The poll planner on fakes: which tables a tick queues (each on its own interval, the safety net while notices
arrive), what a notice records, and what a safety-net poll that finds an unannounced commit marks."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.errors import ValidationError
from lakehook.domain.notice_state import NoticeHealth, PollCadence, due
from lakehook.usecases.plan_polls import PlanNotifiedPolls, PlanPolls, RunPollWork, WorkMode, parse_safety_net
from lakehook.usecases.poll import PollOutcome, PollResult
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryWorkQueue
from tests.fakes.memory_notices import InMemoryNoticeStore

CADENCE = PollCadence(default_interval_seconds=60, safety_net_seconds=3_600, quiet_after_seconds=7_200)
T0 = 1_796_000_000_000 // 3_600_000 * 3_600_000
MINUTE = 60_000


def delta(name: str, **extra: Any) -> AssetRegistration:
    source = {"catalog": "lake", "location": f"s3://lake/{name}"}
    return AssetRegistration.model_validate(
        {"assetKey": f"delta://lake/db/{name}", "format": "delta", "source": source, **extra}
    )


class Planner:
    def __init__(self, *assets: AssetRegistration) -> None:
        self.registry = InMemoryAssetRegistry()
        for asset in assets:
            self.registry.put_asset(asset, 1)
        self.notices = InMemoryNoticeStore(self.registry)
        self.queue = InMemoryWorkQueue()
        self.plan = PlanPolls(self.notices, self.queue, CADENCE, per_message=2)

    def queued(self, mode: WorkMode, tick: int) -> list[dict[str, Any]]:
        self.queue.messages.clear()
        self.plan(mode, tick)
        return list(self.queue.messages)

    def polled_in(self, minutes: int, start: int = T0) -> dict[str, int]:
        """How often each table is queued over ``minutes`` ticks."""
        counts: dict[str, int] = {}
        for m in range(minutes):
            for message in self.queued(WorkMode.POLL, start + m * MINUTE):
                for key in message["assetKeys"]:
                    counts[key] = counts.get(key, 0) + 1
        return counts


def test_each_table_is_polled_on_its_own_interval_and_the_safety_net_while_its_notices_arrive() -> None:
    fast, slow, noticed = delta("fast"), delta("slow", pollIntervalSeconds=900), delta("noticed")
    push_only = AssetRegistration.model_validate({"assetKey": "custom://push/only", "format": "custom"})
    planner = Planner(fast, slow, noticed, push_only)
    planner.notices.record_notice([noticed.asset_key], T0)
    assert planner.polled_in(60) == {fast.asset_key: 60, slow.asset_key: 4, noticed.asset_key: 1}
    # a compensation tick takes every table, whatever its interval
    keys = [k for m in planner.queued(WorkMode.COMPENSATE, T0) for k in m["assetKeys"]]
    assert sorted(keys) == sorted(a.asset_key for a in (fast, slow, noticed))


def test_safety_net_polls_are_queued_in_messages_of_their_own() -> None:
    tables = [delta(f"t{i}") for i in range(40)]
    planner = Planner(*tables)
    planner.notices.record_notice([t.asset_key for t in tables[:20]], T0)
    tick = next(T0 + m * MINUTE for m in range(60) if due(tables[0].asset_key, 3_600, T0 + m * MINUTE))
    messages = planner.queued(WorkMode.POLL, tick)
    flagged = {k for m in messages if m.get("safetyNet") for k in m["assetKeys"]}
    plain = {k for m in messages if not m.get("safetyNet") for k in m["assetKeys"]}
    assert tables[0].asset_key in flagged and flagged <= {t.asset_key for t in tables[:20]}
    assert plain == {t.asset_key for t in tables[20:]}  # no notices: every tick
    assert all(len(m["assetKeys"]) <= 2 for m in messages)


def test_notices_that_stop_bring_the_fast_poll_back_by_themselves() -> None:
    table = delta("orders")
    planner = Planner(table)
    planner.notices.record_notice([table.asset_key], T0)
    assert planner.polled_in(60) == {table.asset_key: 1}
    later = T0 + 7_200_000 + MINUTE  # past NoticeQuietSeconds without a notice
    assert planner.notices.notices(table.asset_key).health(later, CADENCE) is NoticeHealth.QUIET
    assert planner.polled_in(10, later) == {table.asset_key: 10}


def test_a_notice_is_recorded_for_the_tables_it_polls_and_a_re_registration_forgets_it() -> None:
    table = delta("orders")
    planner = Planner(table)
    notified = PlanNotifiedPolls(planner.registry, planner.queue, planner.notices, clock=lambda: T0)
    event = {
        "source": "aws.s3",
        "detail-type": "Object Created",
        "detail": {"bucket": {"name": "lake"}, "object": {"key": "orders/_delta_log/00000000000000000003.json"}},
    }
    assert notified(event).asset_keys == (table.asset_key,)
    assert planner.notices.notices(table.asset_key).last_notice_ms == T0
    planner.registry.put_asset(delta("orders", description="again"), 2)
    assert planner.notices.notices(table.asset_key).last_notice_ms is None  # polled fast until the next notice
    planner.notices.record_notice(["delta://lake/db/unregistered"], T0)
    assert planner.notices.notices("delta://lake/db/unregistered").last_notice_ms is None


def test_only_a_safety_net_poll_that_finds_an_unannounced_commit_marks_the_table_quiet() -> None:
    table = delta("orders")
    planner = Planner(table)
    planner.notices.record_notice([table.asset_key], T0)
    now = T0 + 3_600_000
    found: list[PollResult] = []
    work = RunPollWork(planner.registry, lambda assets: found, None, notices=planner.notices, clock=lambda: now)

    found[:] = [PollResult(table.asset_key, PollOutcome.ADVANCED, snapshot_ids=(4,), first_commit_ms=now - 60_000)]
    assert work(WorkMode.POLL, [table.asset_key], safety_net=True)["noticesMissed"] == []  # its notice may be coming
    assert "noticesMissed" not in work(WorkMode.POLL, [table.asset_key])  # a notice's or a fast poll: not a check
    assert planner.notices.notices(table.asset_key).health(now, CADENCE) is NoticeHealth.ARRIVING

    found[:] = [PollResult(table.asset_key, PollOutcome.ADVANCED, snapshot_ids=(5,), first_commit_ms=now - 600_000)]
    assert work(WorkMode.POLL, [table.asset_key], safety_net=True)["noticesMissed"] == [table.asset_key]
    state = planner.notices.notices(table.asset_key)
    assert state.health(now, CADENCE) is NoticeHealth.QUIET and state.fast_since(now, CADENCE) == now


@pytest.mark.parametrize(("body", "flag"), [({}, False), ({"safetyNet": True}, True), ({"safetyNet": False}, False)])
def test_the_safety_net_flag_of_a_message(body: dict[str, Any], flag: bool) -> None:
    assert parse_safety_net(body) is flag


def test_a_malformed_safety_net_flag_is_refused() -> None:
    with pytest.raises(ValidationError, match="safetyNet"):
        parse_safety_net({"safetyNet": "yes"})
