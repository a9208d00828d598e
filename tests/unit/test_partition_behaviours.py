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


# --- EACH_VERSION with a watermark window: a partition's window is its own time span -----------------------

DAY = 24 * HOUR
E1, E2 = "2025-06-14", "2025-06-15"  # days around the lake's clock (2025-06-15T15:06Z)
E1_END = 1_749_945_600_000  # 2025-06-15T00:00Z: the end of day E1's span, the start of E2's


def each_windowed(*partitioned: str) -> Rule:
    """EACH_VERSION by day over ``partitioned`` members, gated by an hourly window of the events' watermark."""
    gate = {"assetKey": WM, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}
    members = [*({"assetKey": a, "partition": {}} for a in partitioned or (ORDERS, PAYMENTS)), gate]
    return Rule.model_validate(
        {
            "ruleId": "daily",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": "EACH_VERSION"},
            "groups": [{"groupId": "g", "partitionBy": ["dt"], "members": members}],
        }
    )


def order_runs(lake: Lake) -> list[tuple[str | None, int | None, Any]]:
    """Each run's partition, orders snapshot and window (start, end), in claim order."""
    order = [lake.triggers.triggers[k] for k in lake.triggers.claim_order]
    pins = [{p.asset_key: p.snapshot_id for p in t.inputs} for t in order]
    return [
        (t.partition, p.get(ORDERS), (t.window.start, t.window.end) if t.window is not None else None)
        for t, p in zip(order, pins, strict=True)
    ]


def test_each_version_with_a_window_runs_every_commit_of_a_day_in_order_once_the_watermark_closed_that_day() -> None:
    lake = Lake(each_windowed())
    lake.commit(PAYMENTS, 101, E1, E2)
    for sid in (1, 2, 3):
        lake.commit(ORDERS, sid, E1)
    lake.commit(ORDERS, 4, E2)
    lake.commit(WM, 1, watermark=E1_END - 1)  # day E1 is not closed yet (a PT1H window would have closed hours ago)
    lake.deliver()
    assert order_runs(lake) == []
    board = lake.explain()
    line = {p.partition: p for p in board.partitions}[f"dt={E1}"]
    assert line.status is Status.BLOCKED_BY_WATERMARK and line.reason is not None
    assert f"window [2025-06-14T00:00:00Z, 2025-06-15T00:00:00Z) of dt={E1} is not closed yet" in line.reason
    assert board.pending_partitions == 2  # both days wait, visible and counted
    lake.commit(WM, 2, watermark=E1_END)  # closes day E1: its three commits run, in order, each once; E2 waits
    lake.deliver()
    span = (E1_END - DAY, E1_END)
    assert order_runs(lake) == [(f"dt={E1}", 1, span), (f"dt={E1}", 2, span), (f"dt={E1}", 3, span)]
    assert lake.explain().pending_partitions == 1
    lake.commit(WM, 3, watermark=E1_END + DAY)
    lake.deliver()
    assert order_runs(lake)[3:] == [(f"dt={E2}", 4, (E1_END, E1_END + DAY))]
    lake.commit(ORDERS, 5, E1)  # a correction of a closed day runs at once, after the ones before it
    lake.deliver()
    assert order_runs(lake)[4:] == [(f"dt={E1}", 5, span)]
    assert lake.explain().pending_partitions == 0


def test_each_version_with_a_window_blocks_a_partition_with_no_time_value_and_says_why() -> None:
    lake = Lake(each_windowed(ORDERS))
    lake.commit(ORDERS, 1, "eu")  # dt=eu names no instants: it has no span for the watermark to close
    lake.commit(WM, 1, watermark=E1_END + DAY)
    lake.deliver()
    assert order_runs(lake) == []
    line = {p.partition: p for p in lake.explain().partitions}["dt=eu"]
    assert line.status is Status.BLOCKED_BY_WATERMARK and line.reason is not None
    assert "dt=eu has no time value" in line.reason and "no window for the watermark to close" in line.reason


@settings(max_examples=examples(30), deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("orders"), st.sets(st.sampled_from([E1, E2]), min_size=1)),
            st.tuples(st.just("watermark"), st.integers(min_value=-2, max_value=2)),
        ),
        max_size=10,
    )
)
def test_each_version_with_a_window_runs_each_commit_of_a_day_once_in_order_after_the_day_closed_as_explain_says(
    steps: list[tuple[str, Any]],
) -> None:
    """A model: a day's commits run in commit order, each once, none before the watermark reached the day's end; what
    explain calls READY before a delivery is what that delivery claims first for the day."""
    lake = Lake(each_windowed(ORDERS))
    ends = {E1: E1_END, E2: E1_END + DAY}
    commits: dict[str, list[int]] = {E1: [], E2: []}
    watermark, wm_sid, sid = None, 0, 0
    for what, arg in steps:
        if what == "orders":
            sid += 1  # the table's snapshots are consecutive: no gap to wait at
            lake.commit(ORDERS, sid, *sorted(arg))
            for day in arg:
                commits[day].append(sid)
        else:
            wm_sid += 1
            moved = E1_END + arg * HOUR * 12
            watermark = moved if watermark is None else max(watermark, moved)  # the state's watermark only advances
            lake.commit(WM, wm_sid, watermark=watermark)
        ready = {p.partition: p for p in lake.explain().partitions if p.status is Status.READY}
        report = lake.deliver(dispatch=False)
        first = {t.partition: {p.asset_key: p.snapshot_id for p in t.inputs}[ORDERS] for t in report.claimed}
        assert set(first) == set(ready), steps
        for key, line in ready.items():
            assert {p.snapshot_id for p in line.pins if p.asset_key == ORDERS} == {first[key]}, steps
        lake.dispatch(report)
        for day in (E1, E2):
            closed = watermark is not None and watermark >= ends[day]
            ran = [o for p, o, _ in order_runs(lake) if p == f"dt={day}"]
            assert ran == (commits[day] if closed else []), (steps, day)
