"""EACH_VERSION with a watermark window member on a partitioned group (issue 33): each partition's window is its own
time span, and each commit touching it runs, in order, each once, once the watermark closed the span. Reviewed here
against the resolver's bounds (pages, the resolver queue), other time keys and zones, and the features beside it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.json_form import json_form
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.partition_time import partition_span
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import TriggerStatus
from lakehook.ports.rules import Deferral
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_each_version import InOrderBounded, _claims, _finish, _late
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake

WM = "paimon://lake/ods/events"
DAY = 86_400_000
P, Q, R = "2026-12-01", "2026-12-02", "2026-12-03"
P_END = 1_796_169_600_000  # 2026-12-02T00:00Z: the end of dt=2026-12-01 in UTC
ENDS = {P: P_END, Q: P_END + DAY, R: P_END + 2 * DAY}


def each_windowed(*members: dict[str, Any], gate: dict[str, Any] | None = None, **group: Any) -> Rule:
    window = gate or {"window": "PT1H"}
    members = members or ({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}})
    return Rule.model_validate(
        {
            "ruleId": "daily",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": "EACH_VERSION"},
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [*members, {"assetKey": WM, "condition": {"watermarkAtLeast": window}}],
                    **group,
                }
            ],
        }
    )


@settings(max_examples=examples(200), deadline=None)
@given(
    history=st.lists(
        st.one_of(
            st.tuples(st.sampled_from([ORDERS, PAYMENTS]), st.sets(st.sampled_from([P, Q, R]), min_size=1)),
            st.tuples(st.just(WM), st.sampled_from([P_END - 1, P_END, P_END + DAY, P_END + 2 * DAY])),
        ),
        min_size=1,
        max_size=8,
    ),
    max_facts=st.integers(1, 4),
    max_claims=st.integers(1, 3),
    page=st.integers(1, 3),
    max_reads=st.integers(1, 4),
    data=st.data(),
)
def test_at_any_bound_each_commit_runs_once_the_watermark_closed_its_day_and_never_before(
    history: list[tuple[str, Any]], max_facts: int, max_claims: int, page: int, max_reads: int, data: st.DataObject
) -> None:
    """Commits of two partitioned tables and watermark moves, delivered in batches (tails redelivered), the resolver
    queue's messages in any order and some twice, runs ending between deliveries, at any bounds (a page of pending
    partitions down to one): no day runs before the watermark reached its end; once the watermark closed every day,
    each commit touching a day both tables touched ran for it or is recorded SKIPPED, none twice."""
    bounded = InOrderBounded.of(
        each_windowed(),
        max_facts=max_facts,
        max_partition_claims=max_claims,
        pending_page=page,
        max_version_reads=max_reads,
    )
    lake = bounded.lake
    ids = {ORDERS: 0, PAYMENTS: 100, WM: 200}
    touched: dict[tuple[str, int], set[str]] = {}
    watermark = 0

    def none_open() -> None:
        for t in _claims(lake):
            day = (t.partition or "").removeprefix("dt=")
            assert watermark >= ENDS[day], (t.partition, watermark)

    lake.commit(WM, 200, watermark=P_END - DAY)
    for asset, arg in history:
        ids[asset] += 1
        if asset == WM:
            watermark = max(watermark, arg)
            lake.commit(WM, ids[WM], watermark=watermark)
        else:
            lake.commit(asset, ids[asset], *sorted(arg))
            touched[(asset, ids[asset])] = set(arg)
        bounded.maybe_deliver(data)
        if data.draw(st.booleans()):
            bounded.finish(data)
        none_open()
    ids[WM] += 1
    watermark = ENDS[R]
    lake.commit(WM, ids[WM], watermark=watermark)
    bounded.deliver()
    bounded.drain(data)
    while bounded.finish(data):
        pass
    bounded.bounded()
    runs = [(t.partition, {p.asset_key: p.snapshot_id for p in t.inputs}) for t in _claims(lake)]
    assert len(runs) == len({(p, tuple(sorted(pins.items()))) for p, pins in runs})
    assert not any(p.ready for p in lake.explain().partitions)
    assert not bounded.queue.messages
    skipped = {(t.partition, t.inputs[0].asset_key, t.inputs[0].snapshot_id) for t in _late(lake)}
    for day in (P, Q, R):
        both = all(any(day in t for (a, _), t in touched.items() if a == asset) for asset in (ORDERS, PAYMENTS))
        if not both:
            continue
        for (asset, sid), days in touched.items():
            if day not in days:
                continue
            ran = any(part == f"dt={day}" and pins[asset] == sid for part, pins in runs)
            assert ran != ((f"dt={day}", asset, sid) in skipped), (day, asset, sid, runs)


ZONES = {None: 0, "Asia/Shanghai": 8, "America/New_York": -5}  # December offsets (hours east of UTC)


@settings(max_examples=examples(100), deadline=None)
@given(
    zone=st.sampled_from(sorted(ZONES, key=str)),
    lateness=st.sampled_from([0, 7200]),
    hourly=st.booleans(),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("orders"), st.sets(st.integers(0, 1), min_size=1)),
            st.tuples(st.just("watermark"), st.tuples(st.integers(0, 1), st.integers(-1, 0))),
            st.tuples(st.just("fail"), st.none()),
            st.tuples(st.just("retry"), st.none()),
            st.tuples(st.just("redeliver"), st.none()),
            st.tuples(st.just("sweep"), st.none()),
        ),
        max_size=12,
    ),
)
def test_explain_is_the_resolver_in_any_zone_grain_and_lateness_and_each_commit_runs_once_its_span_closed(
    zone: str | None, lateness: int, hourly: bool, steps: list[tuple[str, Any]]
) -> None:
    """A model of one partitioned member and a watermark window gate with allowed lateness, by day or by hour, in UTC
    or another zone: a partition's commits run in order, each once, none before the watermark reached its span's
    end plus the lateness; a FAILED run holds its partition until it is retried; redelivered batches and the deferral
    sweep change nothing; what explain calls READY is what the next delivery claims first."""
    keys = ["2026-12-01-10", "2026-12-01-11"] if hourly else [P, Q]
    size = 3_600_000 if hourly else DAY
    first_end = (P_END - DAY + 11 * 3_600_000 if hourly else P_END) - ZONES[zone] * 3_600_000
    ends = [first_end, first_end + size]
    gate = {"window": "PT1H", "allowedLatenessSeconds": lateness}
    extra = {"partitionTimezone": zone} if zone else {}
    lake = Lake(each_windowed({"assetKey": ORDERS, "partition": {}}, gate=gate, **extra))
    commits: list[list[int]] = [[], []]
    watermark, wm_sid, sid, failing = None, 0, 0, False
    delivered: list[Any] = []
    for what, arg in steps:
        if what == "orders":
            sid += 1
            lake.commit(ORDERS, sid, *sorted(keys[i] for i in arg))
            for i in arg:
                commits[i].append(sid)
        elif what == "watermark":
            wm_sid += 1
            i, offset = arg
            moved = ends[i] + lateness * 1000 + offset
            watermark = moved if watermark is None else max(watermark, moved)
            lake.commit(WM, wm_sid, watermark=watermark)
        elif what == "fail":
            failing = True
            continue
        elif what == "retry":  # a retried run that SUCCEEDED: its stream record wakes its partition
            for t in list(lake.triggers.triggers.values()):
                if t.status is TriggerStatus.FAILED:
                    lake.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.SUCCEEDED})
        ready = {p.partition: p for p in lake.explain().partitions if p.status is Status.READY}
        if what == "redeliver":
            if not delivered:
                continue
            report = lake.resolve(delivered[-1])
        elif what == "sweep":
            report = lake.sweep(15 * 60_000, dispatch=False)
        elif what == "retry":
            report = lake.resolve(deferred=[Deferral("daily", "g", 0)])
        else:
            delivered.append([c for a in list(lake.stream) for c in lake.stream.pop(a)])
            report = lake.resolve(delivered[-1])
        first = {t.partition: {p.asset_key: p.snapshot_id for p in t.inputs}[ORDERS] for t in report.claimed}
        assert set(first) == set(ready), (steps, what)
        for key, line in ready.items():
            assert {p.snapshot_id for p in line.pins if p.asset_key == ORDERS} == {first[key]}, steps
        lake.dispatch(report, fail=failing)
        failing = False
        failed = {t.partition for t in lake.triggers.triggers.values() if t.status is TriggerStatus.FAILED}
        for i, key in enumerate(keys):
            closed = watermark is not None and watermark >= ends[i] + lateness * 1000
            ran = [
                t.inputs[0].snapshot_id if t.inputs[0].asset_key == ORDERS else None
                for k in lake.triggers.claim_order
                if (t := lake.triggers.triggers[k]).partition == f"dt={key}" and not is_late_skip(t)
            ]
            assert ran == commits[i][: len(ran)], (steps, key)  # in commit order, each once
            if not closed:
                assert ran == [], (steps, key)
            elif f"dt={key}" not in failed:
                assert ran == commits[i], (steps, key)


# --- the features beside it ------------------------------------------------------------------------------


def runs_of(lake: Lake, day: str = P, skipped: bool = False) -> list[tuple[int | None, Any]]:
    """Each run (``skipped``: SKIPPED claim) of ``dt=<day>``: its orders snapshot and window (start, end)."""
    order = [lake.triggers.triggers[k] for k in lake.triggers.claim_order]
    return [
        (
            {p.asset_key: p.snapshot_id for p in t.inputs}.get(ORDERS),
            (t.window.start, t.window.end) if t.window else None,
        )
        for t in order
        if t.partition == f"dt={day}" and (t.status is TriggerStatus.SKIPPED) == skipped and not is_late_skip(t)
    ]


SPAN = (P_END - DAY, P_END)


def test_next_change_runs_only_the_commits_after_the_start_once_the_day_closed() -> None:
    from lakehook.usecases.rule_writes import PutRule

    lake = Lake()
    lake.commit(ORDERS, 1, P)
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.deliver()
    rule = each_windowed({"assetKey": ORDERS, "partition": {}})
    body = {**json_form(rule), "policy": {"mode": "EACH_VERSION", "startFrom": "NEXT_CHANGE"}}
    del body["ruleId"]
    PutRule(lake.rules, lambda: lake.now, resolver=lake.resolve).put("daily", body)
    lake.commit(ORDERS, 2, P)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert runs_of(lake) == []
    lake.commit(WM, 2, watermark=P_END)
    lake.deliver()
    assert runs_of(lake) == [(2, SPAN), (3, SPAN)]


def test_backfill_skip_absorbs_the_backfills_commits_and_runs_the_later_ones_once_the_day_closed() -> None:
    rule = each_windowed({"assetKey": ORDERS, "partition": {}})
    lake = Lake(Rule.model_validate({**json_form(rule), "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"}}))
    lake.commit(WM, 1, watermark=P_END)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    assert runs_of(lake) == [(1, SPAN)]
    lake.push("BACKFILL_STARTED", ORDERS, backfillId="bf1")
    lake.commit(ORDERS, 2, P, Q)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    lake.deliver()
    lake.sweep(0)
    assert runs_of(lake, skipped=True)[-1][0] == 3  # versions 2 and 3 are the backfill's
    assert runs_of(lake) == [(1, SPAN)]
    lake.commit(ORDERS, 4, P)
    lake.deliver()
    assert runs_of(lake) == [(1, SPAN), (4, SPAN)]


def test_backfill_skip_absorbs_the_commits_of_an_open_day_made_before_the_backfill_too() -> None:
    """As documented for any group ("the member's commits the partition had not run when the backfill completed"):
    a day's commits waiting for the watermark when the backfill completed had not run, so its skip absorbs them with
    the backfill's (one SKIPPED claim names it), where without the window the commit before the backfill had run."""
    rule = each_windowed({"assetKey": ORDERS, "partition": {}})
    lake = Lake(Rule.model_validate({**json_form(rule), "policy": {"mode": "EACH_VERSION", "backfill": "SKIP"}}))
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.commit(ORDERS, 1, P)  # a commit of the day, before the backfill: the day is open
    lake.deliver()
    lake.push("BACKFILL_STARTED", ORDERS, backfillId="bf1")
    lake.commit(ORDERS, 2, P)
    lake.deliver()
    lake.push("BACKFILL_COMPLETED", ORDERS, backfillId="bf1")
    lake.deliver()
    lake.commit(ORDERS, 3, P)
    lake.commit(WM, 2, watermark=P_END)
    lake.deliver()
    lake.sweep(0)
    assert runs_of(lake, skipped=True) == [(2, None)] and runs_of(lake) == [(3, SPAN)]
    [skip] = [t for t in lake.triggers.triggers.values() if t.partition and t.status is TriggerStatus.SKIPPED]
    assert "backfill completed on" in (skip.reason or "") and "bf1" in (skip.reason or "")


def test_a_rollup_member_runs_from_the_commit_that_completed_the_day_once_the_day_closed() -> None:
    from tests.unit.test_partition_resolve import CLICKS, hourly

    rollup = {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}}}
    lake = Lake(each_windowed(rollup))
    lake.commit(WM, 1, watermark=P_END - 1)
    for hour in range(24):
        hourly(lake, 900 + hour, f"{P}-{hour:02d}")
    hourly(lake, 924, f"{P}-05")  # an hour rewritten: a version of the day after the one completing it
    lake.deliver()
    assert lake.runs() == []
    line = {p.partition: p for p in lake.explain().partitions}[f"dt={P}"]
    assert line.status is Status.BLOCKED_BY_WATERMARK
    lake.commit(WM, 2, watermark=P_END)
    lake.deliver()
    assert [dict(pins)[CLICKS] for _, pins in lake.runs()] == [923, 924]


def test_cdc_recovered_to_window_holds_the_day_until_the_cdc_source_caught_up_to_its_end() -> None:
    gate = {"assetKey": WM, "condition": {"watermarkAtLeast": {"window": "PT1H"}, "cdcRecoveredTo": "window"}}
    rule = Rule.model_validate(
        {
            "ruleId": "daily",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": "EACH_VERSION"},
            "groups": [
                {"groupId": "g", "partitionBy": ["dt"], "members": [{"assetKey": ORDERS, "partition": {}}, gate]}
            ],
        }
    )
    lake = Lake(rule)
    lake.commit(ORDERS, 1, P)
    lake.commit(WM, 1, watermark=P_END)
    lake.push("CDC_LAG_RECOVERED", WM, watermark=P_END - 1)
    lake.deliver()
    assert runs_of(lake) == []
    line = {p.partition: p for p in lake.explain().partitions}[f"dt={P}"]
    assert line.status is Status.BLOCKED_BY_CDC_LAG, line
    lake.push("CDC_LAG_RECOVERED", WM, watermark=P_END)
    lake.deliver()
    assert runs_of(lake) == [(1, SPAN)]


def test_a_day_held_by_the_watermark_is_pending_and_overdue_past_partition_max_age_until_its_commits_ran() -> None:
    from tests.unit.test_partition_freshness import watching

    rule = each_windowed({"assetKey": ORDERS, "partition": {}})
    lake = Lake(Rule.model_validate({**json_form(rule), "freshness": {"partitionMaxAgeSeconds": 3600}}))
    explainer, check = watching(lake)
    found_at = lake.now
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.commit(ORDERS, 1, P)
    lake.commit(ORDERS, 2, P)
    lake.deliver()
    lake.now = found_at + 3_600_000 - 1
    assert explainer.explain("daily")["freshness"] == {"status": "ON_TIME", "overdue": []}
    lake.now = found_at + 3_600_000
    [overdue] = explainer.explain("daily")["freshness"]["overdue"]
    assert (overdue["kind"], overdue["partition"]) == ("PARTITION_MAX_AGE", f"dt={P}")
    assert [o.partition for o in check().rules["daily"]] == [f"dt={P}"]
    lake.commit(WM, 2, watermark=P_END)
    lake.deliver()
    assert runs_of(lake) == [(1, SPAN), (2, SPAN)]
    assert explainer.explain("daily")["freshness"]["status"] == "ON_TIME"
    assert check().rules == {}


# --- the last day lakehook can show: 9999-12-31 (an open-ended row's date in a zipper table) ---------------


@pytest.mark.parametrize("zone", [None, "Asia/Shanghai", "America/New_York"])
@pytest.mark.parametrize("value", ["9999", "9999-12", "9999-12-31", "9999-12-31-23", "0001-01-01", "0001-01-01-00"])
def test_a_time_value_at_either_end_of_the_calendar_has_a_span_lakehook_can_show_or_none(
    value: str, zone: str | None
) -> None:
    """Until 2026-12-07 ``dt=9999-12-31`` (and ``dt=0001-01-01`` east of UTC) raised OverflowError, and the group it
    came to went to ERROR, every partition of it with it."""
    span = partition_span(f"dt={value}", zone)
    if span is not None:
        assert ms_to_iso(span.start) < ms_to_iso(span.end)  # each an instant lakehook can show


@pytest.mark.parametrize(
    ("zone", "start", "end"),
    [
        (None, "9999-12-31T00:00:00Z", "9999-12-31T23:59:59.999Z"),  # the end of 9999 is its last instant
        ("Asia/Shanghai", "9999-12-30T16:00:00Z", "9999-12-31T16:00:00Z"),
        ("America/New_York", "9999-12-31T05:00:00Z", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_the_last_day_of_9999_is_that_day_in_the_zone_up_to_the_last_instant(
    zone: str | None, start: str, end: str
) -> None:
    span = partition_span("dt=9999-12-31", zone)
    assert span is not None and (ms_to_iso(span.start), ms_to_iso(span.end)) == (start, end)


@pytest.mark.parametrize("zone", [None, "America/New_York"])
@pytest.mark.parametrize("lateness", [0, 3600])
def test_a_commit_touching_the_last_day_of_9999_runs_the_other_days_and_waits_for_that_one_saying_why(
    zone: str | None, lateness: int
) -> None:
    gate = {"window": "PT1H", "allowedLatenessSeconds": lateness}
    lake = Lake(
        each_windowed({"assetKey": ORDERS, "partition": {}}, gate=gate, **({"partitionTimezone": zone} if zone else {}))
    )
    lake.commit(WM, 1, watermark=P_END + DAY)
    lake.commit(ORDERS, 1, P, "9999-12-31")
    lake.deliver()
    assert [p for p, _ in lake.runs()] == [f"dt={P}"]
    stored = lake.rules.get_rule("daily")
    assert stored is not None and stored.last_error is None
    line = {p.partition: p for p in lake.explain().partitions}["dt=9999-12-31"]
    assert line.status is Status.BLOCKED_BY_WATERMARK and line.reason is not None
    assert line.reason.startswith("dt=9999-12-31: ")
    assert ("can never close" if lateness else "is not closed yet") in line.reason


def test_a_pending_last_day_of_9999_is_expected_by_no_deadline_and_breaks_no_freshness_check() -> None:
    from tests.unit.test_partition_freshness import watching

    rule = each_windowed({"assetKey": ORDERS, "partition": {}})
    lake = Lake(Rule.model_validate({**json_form(rule), "freshness": {"expectedBy": {"cron": "0 6 * * *"}}}))
    explainer, check = watching(lake)
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.commit(ORDERS, 1, P, "9999-12-31")
    lake.deliver()
    lake.now = P_END + 6 * 3_600_000  # dt=2026-12-01's deadline: it is overdue, 9999-12-31 never is
    overdue = explainer.explain("daily")["freshness"]["overdue"]
    assert [o["partition"] for o in overdue] == [f"dt={P}"]
    assert [o.partition for o in check().rules["daily"]] == [f"dt={P}"]


def test_a_coverage_group_touched_on_the_last_day_of_9999_runs_its_other_days() -> None:
    """The same day under a coverage member (a partition's span as its window, before issue 33's change): until
    2026-12-07 its OverflowError put the group in ERROR."""
    from tests.unit.test_partition_coverage_window import CoveredLake, covered_rule, day_ms

    d1 = "2025-06-10"
    lake = CoveredLake(covered_rule())
    lake.cover(day_ms(d1), day_ms(d1) + DAY)
    lake.both(1, d1, "9999-12-31")
    lake.deliver()
    assert [p for p, *_ in lake.ran()] == [f"dt={d1}"]
    line = lake.line("dt=9999-12-31")
    assert line.status is Status.BLOCKED_BY_COVERAGE and "is not covered" in (line.reason or "")


# --- the watermark's advance wakes every pending day ---------------------------------------------------


def test_one_watermark_advance_wakes_every_pending_day_past_the_first_page_through_the_resolver_queue() -> None:
    bounded = InOrderBounded.of(
        each_windowed({"assetKey": ORDERS, "partition": {}}), pending_page=1, max_partition_claims=1
    )
    lake = bounded.lake
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.commit(ORDERS, 1, P, Q, R)
    lake.commit(ORDERS, 2, R, Q, P)
    bounded.deliver()
    bounded.drain()
    assert lake.runs() == [] and lake.partitions.count_pending("daily", "g") == 3
    lake.commit(WM, 2, watermark=ENDS[R])  # one record: a page of one pending day, the rest carried over
    report = bounded.deliver()
    assert len(report.claimed) == 1
    bounded.drain()
    while woken := _finish(lake):
        bounded._counted(lambda w=woken: lake.resolve(deferred=w))
        bounded.drain()
    bounded.bounded()
    for day in (P, Q, R):
        assert [dict(pins)[ORDERS] for part, pins in lake.runs() if part == f"dt={day}"] == [1, 2], day
    assert lake.partitions.count_pending("daily", "g") == 0


def test_commits_and_the_watermark_closing_their_day_in_one_batch_run_each_commit_in_order() -> None:
    lake = Lake(each_windowed({"assetKey": ORDERS, "partition": {}}))
    lake.commit(WM, 1, watermark=P_END - 1)
    lake.deliver()
    for sid in (3, 1, 2):  # pushed newest first
        lake.commit(ORDERS, sid, P)
    lake.commit(WM, 2, watermark=P_END)
    lake.deliver()
    assert runs_of(lake) == [(1, SPAN), (2, SPAN), (3, SPAN)]


@pytest.mark.parametrize("mode", ["ALL_UPDATED", "ANY_UPDATED"])
def test_all_and_any_updated_with_the_window_still_step_the_watermarks_windows_not_the_days_span(mode: str) -> None:
    from tests.unit.test_partition_behaviours import windowed

    rule = windowed(mode)
    assert not rule.spans_partitions(rule.groups[0])
    lake = Lake(rule)
    lake.commit(WM, 1, watermark=P_END - 1)  # inside day P: its hour [P_END - 2h, P_END - 1h) closed
    lake.commit(ORDERS, 1, P)
    lake.commit(PAYMENTS, 101, P)
    lake.deliver()
    claims = [lake.triggers.triggers[k] for k in lake.triggers.claim_order]
    hour = 3_600_000
    assert [
        (t.partition, t.window.start if t.window else None, t.window.end if t.window else None) for t in claims
    ] == [
        (f"dt={P}", P_END - 2 * hour, P_END - hour)  # the newest hour the watermark closed, not the day
    ]


@settings(max_examples=examples(60), deadline=None)
@given(
    data=st.data(),
    actions=st.lists(
        st.one_of(
            st.tuples(st.sampled_from([ORDERS, PAYMENTS]), st.sets(st.sampled_from([P, Q]), min_size=1)),
            st.tuples(st.just(WM), st.sampled_from([P_END - 1, P_END, ENDS[Q]])),
        ),
        min_size=1,
        max_size=7,
    ),
)
def test_two_partitioned_members_explain_is_what_the_wakes_claim_in_any_push_order(
    data: st.DataObject, actions: list[tuple[str, Any]]
) -> None:
    """Both partitioned members' commits and the watermark's moves pushed in any order, delivered in any batches
    (some again), runs ending between: what explain calls READY is what the wake of the ended runs claims; no day
    runs before the watermark reached its end; once it closed both days every run ended and nothing is ready, each
    member's pins of a day never go back and its newest commit touching the day ran."""
    from tests.unit.test_partition_each_version import push_in_any_order

    lake = Lake(each_windowed())
    first = {ORDERS: 0, PAYMENTS: 100, WM: 200}
    ids = {n: (a, first[a] + sum(b == a for b, _ in actions[:n])) for n, (a, _) in enumerate(actions, start=1)}
    top = 0

    def push(n: int) -> None:
        nonlocal top
        asset, sid = ids[n]
        arg = actions[n - 1][1]
        if asset == WM:
            top = max(top, arg)
            lake.commit(WM, sid, watermark=arg)
        else:
            lake.commit(asset, sid, *sorted(arg))
        for t in _claims(lake):
            assert top >= ENDS[(t.partition or "").removeprefix("dt=")], (t.partition, top)

    push_in_any_order(lake, data, list(ids), push)
    lake.commit(WM, 299, watermark=ENDS[Q])
    lake.deliver()
    while woken := _finish(lake):
        lake.resolve(deferred=woken)
    assert not any(p.ready for p in lake.explain().partitions)
    for day in (P, Q):
        runs = [{p.asset_key: p.snapshot_id for p in t.inputs} for t in _claims(lake) if t.partition == f"dt={day}"]
        for asset in (ORDERS, PAYMENTS):
            sids = [pins[asset] or 0 for pins in runs]
            assert sids == sorted(sids), (day, asset, runs)
            touched = [ids[n][1] for n, (a, arg) in enumerate(actions, start=1) if a == asset and day in arg]
            both = all(any(a == m and day in arg for a, arg in actions) for m in (ORDERS, PAYMENTS))
            if both:
                assert sids and sids[-1] == max(touched), (day, asset, runs)
