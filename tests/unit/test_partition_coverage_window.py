"""A coverage member in a partitioned group (issue 33): a partition's window is its own time span (``dt=2025-06-10``:
that day, in the group's ``partitionTimezone``, UTC by default), so a day runs once the coverage member's intervals
cover that day and its allowed lateness passed; explain names what is missing for that partition, and agrees with
what the resolver claims (docs/partitions.md, "Coverage per partition")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lakehook.domain.coverage import Span
from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_time import partition_span
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.ports.rules import StateChange
from lakehook.usecases.coverage import RecordCoverage
from lakehook.usecases.late_versions import LateSnapshotNotice
from lakehook.usecases.resolve import ResolverStores
from lakehook.usecases.rules import parse_rule
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake
from tests.wiring import ingest_events, resolve_asset_change

SPOOL = "s3://spool/orders"  # spooled output, reported as INTERVAL_COVERED
HOUR = 3_600_000
DAY = 24 * HOUR
D1, D2 = "2025-06-10", "2025-06-11"  # days before the worlds' clock (2025-06-15)


def day_ms(day: str, zone: str = "UTC") -> int:
    moment = datetime.fromisoformat(day).replace(tzinfo=ZoneInfo(zone))
    return int(moment.astimezone(UTC).timestamp() * 1000)


def body(*, mode: str = "ALL_UPDATED", lateness: int = 0, zone: str | None = None, **extra: Any) -> dict[str, Any]:
    cover = {"assetKey": SPOOL, "condition": {"coverage": {"window": "P1D", "allowedLatenessSeconds": lateness}}}
    group: dict[str, Any] = {
        "groupId": "g",
        "partitionBy": ["dt"],
        "members": [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, cover],
        **extra,
    }
    if zone is not None:
        group["partitionTimezone"] = zone
    return {"target": {"type": "eventbridge", "eventBusName": "runs"}, "policy": {"mode": mode}, "groups": [group]}


def covered_rule(**options: Any) -> Rule:
    return parse_rule("daily", body(**options))


class CoveredLake(Lake):
    """The partitioned resolver's world with a coverage store, which INTERVAL_COVERED pushes fill."""

    def __init__(self, *rules: Rule) -> None:
        super().__init__(*rules)
        self.coverage = InMemoryCoverageStore()
        late = LateSnapshotNotice(self.rules, self.triggers, self.history)
        record = RecordCoverage(self.coverage, clock=lambda: self.now)
        self.ingest = ingest_events(self.store, clock=lambda: self.now, late=late, coverage=record)
        stores = ResolverStores(
            self.rules,
            self.reader,
            self.triggers,
            self.history,
            self.deferrals,
            partitions=self.partitions,
            coverage=self.coverage,
        )
        self.resolve = resolve_asset_change(stores, clock=lambda: self.now, observer=None)

    def cover(self, start: int, end: int) -> None:
        self.push("INTERVAL_COVERED", SPOOL, interval={"start": start, "end": end})

    def both(self, sid: int, *days: str) -> None:
        self.commit(ORDERS, sid, *days)
        self.commit(PAYMENTS, 100 + sid, *days)

    def ran(self) -> list[tuple[str | None, str | None, str | None]]:
        """Each claim's partition and window, in claim order."""
        order = [self.triggers.triggers[k] for k in self.triggers.claim_order]
        return [
            (t.partition, *((ms_to_iso(t.window.start), ms_to_iso(t.window.end)) if t.window else (None, None)))
            for t in order
        ]

    def line(self, partition: str) -> Any:
        return {p.partition: p for p in self.explain().partitions}[partition]


def test_a_coverage_member_in_a_partitioned_group_is_a_valid_rule_and_round_trips() -> None:
    rule = covered_rule(zone="Europe/Berlin")
    assert rule.spans_partitions(rule.groups[0]) and rule.groups[0].partition_timezone == "Europe/Berlin"
    assert parse_rule("daily", json_form(rule)) == rule


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (body(zone="Mars/Olympus"), "groups.0.partitionTimezone", "is not an IANA time zone"),
        (
            {**body(), "groups": [{"groupId": "g", "partitionTimezone": "UTC", "members": [{"assetKey": ORDERS}]}]},
            "groups.0",
            "partitionTimezone: the group has no partitionBy",
        ),
    ],
)
def test_a_bad_partition_timezone_is_a_400_naming_it(data: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rule("daily", data)
    assert caught.value.field == field and words in str(caught.value)


EVENTS = "paimon://lake/ods/events"  # a watermark window gate beside the coverage member


def watermarked(*, mode: str = "ALL_UPDATED", lateness: int = 0, zone: str | None = None) -> Rule:
    """The covered daily rule with a watermark window member too (its window is the partition's span as well)."""
    data = body(mode=mode, zone=zone)
    gate = {"window": "P1D", "allowedLatenessSeconds": lateness}  # the coverage member's size; the span is the window
    data["groups"][0]["members"].append({"assetKey": EVENTS, "condition": {"watermarkAtLeast": gate}})
    return parse_rule("daily", data)


def test_a_watermark_window_beside_a_coverage_member_of_a_partitioned_group_is_accepted_and_round_trips() -> None:
    """Until 2026-12-07 a 400 (a partition has one window): the watermark member is judged against the same span."""
    for mode in ("ALL_UPDATED", "ANY_UPDATED", "EACH_VERSION"):
        rule = watermarked(mode=mode)
        assert rule.spans_partitions(rule.groups[0]) and parse_rule("daily", json_form(rule)) == rule


def test_a_day_runs_once_covered_and_the_watermark_passed_its_end_and_explain_names_each_member() -> None:
    lake = CoveredLake(watermarked(lateness=600))
    lake.push("SNAPSHOT_COMMITTED", EVENTS, snapshotId=1)
    start = day_ms(D1)
    lake.cover(start, start + 10 * HOUR)
    lake.push("WATERMARK_ADVANCED", EVENTS, watermark=start + 20 * HOUR)
    lake.both(1, D1)
    lake.deliver()
    assert lake.ran() == []
    line = lake.line(f"dt={D1}")
    assert line.status is Status.BLOCKED_BY_COVERAGE
    assert line.reason == (
        f"dt={D1}: waiting for {SPOOL} (window [{D1}T00:00:00Z, {D2}T00:00:00Z) is not covered; missing "
        f"[{D1}T10:00:00Z, {D2}T00:00:00Z)); and for {EVENTS} (window [{D1}T00:00:00Z, {D2}T00:00:00Z) of "
        f"dt={D1} is not closed yet: the watermark is {D1}T20:00:00Z, it closes at a watermark of {D2}T00:10:00Z)"
    )
    gate = next(m for m in line.members if m.asset_key == EVENTS)
    assert gate.status is Status.BLOCKED_BY_WATERMARK and gate.required["watermarkAtLeast"] == start + DAY + 600_000
    lake.cover(start + 10 * HOUR, start + DAY)  # covered; the watermark still holds the day
    lake.deliver()
    assert lake.ran() == []
    line = lake.line(f"dt={D1}")
    assert line.status is Status.BLOCKED_BY_WATERMARK and f"it closes at a watermark of {D2}T00:10:00Z" in line.reason
    assert lake.partitions.count_pending("daily", "g") == 1
    lake.push("WATERMARK_ADVANCED", EVENTS, watermark=start + DAY + 600_000)  # its state change wakes the day
    lake.deliver()
    assert lake.ran() == [(f"dt={D1}", f"{D1}T00:00:00Z", f"{D2}T00:00:00Z")]  # the run's window: the span
    assert lake.partitions.count_pending("daily", "g") == 0


def test_each_version_beside_a_coverage_member_and_a_watermark_steps_a_days_commits_once_both_hold() -> None:
    lake = CoveredLake(watermarked(mode="EACH_VERSION"))
    lake.push("SNAPSHOT_COMMITTED", EVENTS, snapshotId=1)
    lake.cover(day_ms(D1), day_ms(D2))
    lake.both(1, D1)
    lake.commit(ORDERS, 2, D1)
    lake.deliver()
    assert lake.ran() == []  # covered, but the watermark has not passed the day's end
    lake.push("WATERMARK_ADVANCED", EVENTS, watermark=day_ms(D2))
    lake.deliver()
    assert [[(p.asset_key, p.snapshot_id) for p in t.inputs][:2] for t in lake.triggers.triggers.values()] == [
        [(ORDERS, 1), (PAYMENTS, 101)],
        [(ORDERS, 2), (PAYMENTS, 101)],
    ]


def test_a_day_runs_once_the_coverage_member_covers_that_day_and_explain_names_what_is_missing() -> None:
    lake = CoveredLake(covered_rule())
    start = day_ms(D1)
    lake.cover(start, start + 10 * HOUR)
    lake.both(1, D1, D2)
    lake.deliver()
    assert lake.ran() == []
    line = lake.line(f"dt={D1}")
    assert line.status is Status.BLOCKED_BY_COVERAGE
    assert line.reason == (
        f"dt={D1}: waiting for {SPOOL} (window [{D1}T00:00:00Z, {D2}T00:00:00Z) is not covered; "
        f"missing [{D1}T10:00:00Z, {D2}T00:00:00Z))"
    )
    member = next(m for m in line.members if m.asset_key == SPOOL)
    assert member.current["coveredRatio"] == pytest.approx(10 / 24, abs=1e-4)
    assert member.required["window"] == {"start": f"{D1}T00:00:00Z", "end": f"{D2}T00:00:00Z"}
    assert lake.explain().pending_partitions == 2
    lake.cover(start + 10 * HOUR, start + DAY)  # the rest of day 1: its state change wakes the pending partitions
    lake.deliver()
    assert lake.ran() == [(f"dt={D1}", f"{D1}T00:00:00Z", f"{D2}T00:00:00Z")]  # day 2 is still not covered
    assert lake.line(f"dt={D2}").status is Status.BLOCKED_BY_COVERAGE
    assert lake.partitions.count_pending("daily", "g") == 1


def test_a_covered_day_waits_for_its_allowed_lateness_with_a_deferral_to_when_it_closes() -> None:
    lake = CoveredLake(covered_rule(lateness=3600))
    day = datetime.fromtimestamp(lake.now / 1000, tz=UTC).date() - timedelta(days=1)  # yesterday
    start = day_ms(day.isoformat())
    lake.now = start + DAY + 10 * 60_000  # ten minutes past its end: its hour of lateness has not passed
    lake.cover(start, start + DAY)
    lake.both(1, day.isoformat())
    report = lake.deliver()
    assert lake.ran() == []
    line = lake.line(f"dt={day}")
    assert line.status is Status.BLOCKED_BY_COVERAGE and line.until == start + DAY + HOUR
    assert "is covered; it closes at" in (line.reason or "")
    assert [d.due_at for d in report.deferred] == [start + DAY + HOUR]
    lake.sweep(start + DAY + HOUR - lake.now)
    assert [p for p, _, _ in lake.ran()] == [f"dt={day}"]


def test_a_day_is_its_day_in_the_groups_partition_timezone() -> None:
    lake = CoveredLake(covered_rule(zone="Europe/Berlin"))
    start = day_ms(D1, "Europe/Berlin")  # 2025-06-09T22:00Z
    lake.cover(day_ms(D1), day_ms(D2))  # the UTC day: Berlin's day lacks its first two hours
    lake.both(1, D1)
    lake.deliver()
    assert lake.ran() == []
    assert "missing [2025-06-09T22:00:00Z, 2025-06-10T00:00:00Z)" in (lake.line(f"dt={D1}").reason or "")
    lake.cover(start, start + 2 * HOUR)
    lake.deliver()
    assert lake.ran() == [(f"dt={D1}", "2025-06-09T22:00:00Z", "2025-06-10T22:00:00Z")]


def test_a_partition_with_no_time_value_blocks_on_the_coverage_member_saying_why() -> None:
    data = body()
    data["groups"][0]["partitionBy"] = ["region"]
    lake = CoveredLake(parse_rule("daily", data))
    lake.cover(0, lake.now)
    for asset, sid in ((ORDERS, 1), (PAYMENTS, 2)):
        event = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, partitions=["region=eu"])
        lake.ingest.ingest(event, SourceType.PUSH)
        lake.stream.setdefault(asset, []).append(
            StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)
        )
    lake.deliver()
    assert lake.ran() == []
    line = lake.line("region=eu")
    assert line.status is Status.BLOCKED_BY_COVERAGE
    assert "region=eu has no time value" in (line.reason or "") and "no window for the coverage member" in (
        line.reason or ""
    )


def test_all_updated_runs_a_covered_day_again_once_every_partitioned_member_touched_it_again() -> None:
    lake = CoveredLake(covered_rule())
    lake.cover(day_ms(D1), day_ms(D2))
    lake.both(1, D1)
    lake.deliver()
    lake.commit(ORDERS, 2, D1)
    lake.deliver()
    assert len(lake.ran()) == 1
    assert lake.line(f"dt={D1}").status is Status.WAITING_FOR_UPDATE
    lake.commit(PAYMENTS, 102, D1)
    lake.deliver()
    assert [p for p, _, _ in lake.ran()] == [f"dt={D1}", f"dt={D1}"]  # the same day's window, new pins: a new run


def test_each_version_steps_through_a_covered_days_commits_in_order() -> None:
    lake = CoveredLake(covered_rule(mode="EACH_VERSION"))
    lake.both(1, D1)
    lake.commit(ORDERS, 2, D1)
    lake.deliver()
    assert lake.ran() == []  # not covered yet: neither version runs
    lake.cover(day_ms(D1), day_ms(D2))
    lake.deliver()
    assert [[(p.asset_key, p.snapshot_id) for p in t.inputs][:2] for t in lake.triggers.triggers.values()] == [
        [(ORDERS, 1), (PAYMENTS, 101)],
        [(ORDERS, 2), (PAYMENTS, 101)],
    ]


@settings(max_examples=examples(25), deadline=None)
@given(
    data=st.data(),
    covers=st.lists(st.tuples(st.integers(0, 4 * 24), st.integers(1, 30)), max_size=8),
    watermark=st.none() | st.integers(0, 5 * 24 * 60),
)
def test_explain_shows_ready_exactly_the_days_the_resolver_runs_and_a_day_runs_iff_covered(
    data: Any, covers: list[tuple[int, int]], watermark: int | None
) -> None:
    """Generated intervals over four days, each day touched by both tables (and, beside the coverage member, a
    watermark window member at a generated watermark, in minutes): explain's READY days are the ones the next
    delivery claims, and a day runs exactly when the intervals cover it whole (and the watermark reached its end)."""
    lake = CoveredLake(covered_rule() if watermark is None else watermarked())
    days = [(datetime(2025, 6, 8, tzinfo=UTC) + timedelta(days=i)).date().isoformat() for i in range(4)]
    base = day_ms(days[0])
    if watermark is not None:
        lake.push("SNAPSHOT_COMMITTED", EVENTS, snapshotId=1)
        lake.push("WATERMARK_ADVANCED", EVENTS, watermark=base + watermark * 60_000)
    lake.both(1, *days)
    lake.deliver(dispatch=False)
    spans: list[Span] = []
    for start_hour, hours in covers:
        span = Span(base + start_hour * HOUR, base + (start_hour + hours) * HOUR)
        spans.append(span)
        lake.cover(*span)
    ready = {p.partition for p in lake.explain().partitions if p.status is Status.READY}
    lake.deliver(dispatch=False)
    claimed = {p for p, _, _ in lake.ran()}
    assert ready == claimed
    for day in days:
        window = partition_span(f"dt={day}")
        assert window is not None
        hours = {h for s in spans for h in range(s.start, s.end, HOUR)}
        whole = all(h in hours for h in range(window.start, window.end, HOUR))
        passed = watermark is None or base + watermark * 60_000 >= window.end
        assert (f"dt={day}" in claimed) == (whole and passed), day


@given(
    day=st.dates(min_value=date(1971, 1, 1), max_value=date(9998, 12, 30)),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]),
)
@example(day=date(2026, 3, 29), zone="Europe/Berlin")  # 23 hours: 02 is skipped
@example(day=date(2026, 10, 25), zone="Europe/Berlin")  # 25 hours: 02 is two
@example(day=date(2026, 4, 5), zone="Australia/Lord_Howe")  # a half-hour change
def test_a_days_span_is_local_midnight_to_the_next_local_midnight(day: Any, zone: str) -> None:
    """dt=<day> in a zone is [its local midnight, the next day's local midnight), as an independent zoneinfo reading
    says (23, 24 or 25 hours around a daylight-saving change); its hours tile it exactly, none skipped or twice."""
    span = partition_span(f"dt={day.isoformat()}", zone)
    following = day + timedelta(days=1)
    assert span == Span(day_ms(day.isoformat(), zone), day_ms(following.isoformat(), zone))
    hours = [partition_span(f"dt={day.isoformat()}-{h:02d}", zone) for h in range(24)]
    covered = sorted(s for s in hours if s is not None)
    assert sum(s.length for s in covered) == span.length
    assert all(a.end == b.start for a, b in pairwise(covered))
