"""Group behaviours per partition (issue 33): a partition is judged by the group's own steps under its own cursor
(``evaluate_group`` with a ``PartitionView``), so a schedule (cron), a watermark window and coverage hold per
partition with no code of their own: a partition runs at a tick once its partitioned members touched it since its
last run, at most once per tick; with a windowed gate, once per window the watermark closed; the waits are deferred
to when they end (docs/partitions.md, "Schedules and windows per partition")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake

HOUR = 3_600_000
WM = "paimon://lake/ods/events"  # an unpartitioned member whose watermark closes windows
D1, D2 = "2026-12-01", "2026-12-02"


def scheduled(cron: str = "0 * * * *", mode: str = "ALL_UPDATED", *extra: dict[str, Any]) -> Rule:
    """Orders and payments by day, run at the schedule's ticks."""
    members = [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, *extra]
    return Rule.model_validate(
        {
            "ruleId": "daily",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode},
            "groups": [{"groupId": "g", "partitionBy": ["dt"], "members": members, "schedule": {"cron": cron}}],
        }
    )


def windowed(mode: str = "ALL_UPDATED") -> Rule:
    """Orders and payments by day, gated by an hourly window of the events' watermark."""
    gate = {"assetKey": WM, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}
    members = [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, gate]
    return Rule.model_validate(
        {
            "ruleId": "daily",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode},
            "groups": [{"groupId": "g", "partitionBy": ["dt"], "members": members}],
        }
    )


def at_minute(lake: Lake, minute: int) -> None:
    """Move the clock to ``minute`` past its current hour (forward)."""
    hour_start = lake.now - lake.now % HOUR
    target = hour_start + minute * 60_000
    lake.now = target if target > lake.now else target + HOUR


def both(lake: Lake, sid: int, *days: str) -> None:
    lake.commit(ORDERS, sid, *days)
    lake.commit(PAYMENTS, 100 + sid, *days)


def partitions_run(lake: Lake) -> list[tuple[str | None, Any]]:
    order = [lake.triggers.triggers[k] for k in lake.triggers.claim_order]
    return [(t.partition, t.window.end if t.window is not None else None) for t in order]


def test_a_schedule_and_partition_by_are_a_valid_rule_and_round_trip() -> None:
    rule = scheduled()
    assert parse_rule("daily", json_form(rule)) == rule
    assert rule.groups[0].schedule is not None and rule.groups[0].partition_by == ("dt",)


def test_a_partition_runs_at_most_once_per_tick_and_waits_for_the_next_tick_with_a_deferral() -> None:
    lake = Lake(scheduled())
    at_minute(lake, 10)
    both(lake, 1, D1, D2)
    lake.deliver(dispatch=False)
    tick = lake.now - lake.now % HOUR
    assert sorted(partitions_run(lake)) == [(f"dt={D1}", tick), (f"dt={D2}", tick)]  # the latest tick, as a group
    at_minute(lake, 20)
    both(lake, 2, D1)  # day 1 again, within the same hour: it already ran for this tick
    report = lake.deliver(dispatch=False)
    assert len(partitions_run(lake)) == 2
    line = {p.partition: p for p in lake.explain().partitions}[f"dt={D1}"]
    assert line.status is Status.WAITING_FOR_SCHEDULE and line.until == tick + HOUR
    assert line.schedule is not None  # the partition's ticks are explained as a group's are
    assert [d.due_at for d in report.deferred] == [tick + HOUR]
    lake.sweep(tick + HOUR - lake.now, dispatch=False)  # the next tick: the deferral wakes the group
    assert partitions_run(lake)[2:] == [(f"dt={D1}", tick + HOUR)]  # day 2 had nothing new: it does not run
    assert lake.explain().pending_partitions == 0


def test_all_updated_at_a_tick_waits_for_every_partitioned_member_of_the_partition() -> None:
    lake = Lake(scheduled())
    at_minute(lake, 5)
    both(lake, 1, D1)
    lake.deliver(dispatch=False)
    lake.now += HOUR
    lake.commit(ORDERS, 2, D1)  # payments has not touched day 1 since its run
    lake.deliver(dispatch=False)
    line = {p.partition: p for p in lake.explain().partitions}[f"dt={D1}"]
    assert line.status is Status.WAITING_FOR_UPDATE and "for the tick at" in (line.reason or "")
    assert line.reason is not None and line.reason.startswith(f"dt={D1}: waiting for {PAYMENTS}")
    lake.commit(PAYMENTS, 102, D1)
    lake.deliver(dispatch=False)
    assert [p for p, _ in partitions_run(lake)] == [f"dt={D1}", f"dt={D1}"]


def test_a_windowed_gate_runs_each_partition_once_per_closed_window() -> None:
    lake = Lake(windowed())
    base = lake.now - lake.now % HOUR
    both(lake, 1, D1, D2)
    lake.commit(WM, 1, watermark=base + 10)  # the newest closed window is [base - 1h, base): both days run for it
    lake.deliver(dispatch=False)
    assert sorted(partitions_run(lake)) == [(f"dt={D1}", base), (f"dt={D2}", base)]
    both(lake, 2, D1)  # news for day 1, but the window [base, base + 1h) is still open
    lake.deliver(dispatch=False)
    assert len(partitions_run(lake)) == 2
    board = lake.explain()
    line = {p.partition: p for p in board.partitions}[f"dt={D1}"]
    assert line.status is Status.BLOCKED_BY_WATERMARK and line.reason is not None
    assert line.reason.startswith(f"dt={D1}: ") and "not closed yet" in line.reason
    assert board.pending_partitions == 1  # day 1 waits, visible and counted
    lake.commit(WM, 2, watermark=base + HOUR + 1)  # closes it: day 1 runs for it, day 2 has nothing new
    lake.deliver(dispatch=False)
    assert partitions_run(lake)[2:] == [(f"dt={D1}", base + HOUR)]
    assert lake.explain().pending_partitions == 0


@settings(max_examples=examples(25), deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["orders", "payments", "both", "tick"]), st.sets(st.sampled_from([D1, D2]))),
        max_size=12,
    ),
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
)
def test_per_tick_each_partition_runs_once_for_news_since_its_last_run_and_explain_says_so(
    steps: list[tuple[str, set[str]]], mode: str
) -> None:
    """A model of a scheduled partitioned group: a partition runs at a tick when the mode holds for the members'
    commits touching it since its last run, at most once per tick; explain's READY is what the next delivery claims."""
    lake = Lake(scheduled(mode=mode))
    at_minute(lake, 30)
    sid = 0
    touched: dict[str, set[str]] = {}  # per partition, the members that touched it since its last run
    ever: dict[str, set[str]] = {}
    ran_at: dict[str, int] = {}
    for what, days in steps:
        if what != "tick":
            sid += 1
            members = {"orders": [ORDERS], "payments": [PAYMENTS], "both": [ORDERS, PAYMENTS]}[what]
            for member in members:
                lake.commit(member, sid if member == ORDERS else 1000 + sid, *sorted(days))
                for day in days:
                    touched.setdefault(day, set()).add(member)
                    ever.setdefault(day, set()).add(member)
        before = len(lake.triggers.claim_order)
        if what == "tick":  # an hour passes: the deferral sweep wakes the groups whose wait ends
            lake.now += HOUR
        tick = lake.now - lake.now % HOUR
        lines = {p.partition: p.status for p in lake.explain().partitions}
        if what == "tick":
            lake.sweep(0, dispatch=False)
        else:
            lake.deliver(dispatch=False)
        runs = partitions_run(lake)[before:]
        expected = []
        for day in (D1, D2):
            complete = ever.get(day, set()) == {ORDERS, PAYMENTS}
            news = touched.get(day, set())
            holds = news == {ORDERS, PAYMENTS} if mode == "ALL_UPDATED" or day not in ran_at else bool(news)
            if complete and holds and ran_at.get(day) != tick:
                expected.append((f"dt={day}", tick))
                ran_at[day] = tick
                touched[day] = set()
        assert sorted(runs) == sorted(expected), (steps, mode, what, days)
        for day in (D1, D2):  # what explain called READY before the delivery is what it claimed
            if lines.get(f"dt={day}") is Status.READY:
                assert (f"dt={day}", tick) in runs
