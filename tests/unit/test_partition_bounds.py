"""Partitions at any count: each resolver invocation's work is bounded by construction (fact writes, claims, pending
reads), what lies past the bound goes to the resolver's queue and is resolved from there, one message an invocation,
and no accepted partition is dropped: a commit's keys past the bound, a group's ready partitions past its claims and
its pending partitions past one page all run. A rollup's incomplete day stays pending (visible, counted, overdue).

On the in-memory fakes of the ports, the queue's messages handed to the resolver's own handler as SQS records (JSON
through :func:`lakehook.handlers.handle_resolver_queue`), in any order and some twice, as SQS delivers them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.handlers import handle_resolver_queue
from lakehook.ports.rules import AssetRecheck, StateChange
from lakehook.usecases.freshness import CheckFreshness
from lakehook.usecases.resolve import ResolveReport, ResolverLimits, ResolverStores
from lakehook.usecases.resolve_report import OutOfTime
from lakehook.usecases.rules import parse_rule
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryWorkQueue
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_plan import _lake
from tests.unit.test_partition_resolve import CLICKS, DIM, ORDERS, PAYMENTS, Lake, daily, hourly
from tests.wiring import resolve_asset_change


@dataclass
class Invocation:
    """What one resolver invocation did: its fact writes, its claims per group, and (EACH_VERSION per partition)
    its next-version queries."""

    facts: int
    claims: int
    version_reads: int = 0


@dataclass
class Bounded:
    """A lake whose resolver has small bounds and a queue; ``invocations`` records what each call did."""

    lake: Lake
    limits: ResolverLimits
    queue: InMemoryWorkQueue = field(default_factory=InMemoryWorkQueue)
    invocations: list[Invocation] = field(default_factory=list)

    @classmethod
    def of(cls, *rules: Rule, **limits: int) -> Bounded:
        lake = Lake(*rules)
        bounded = cls(lake, ResolverLimits(**limits))
        lake.resolve = resolve_asset_change(
            ResolverStores(
                lake.rules,
                lake.reader,
                lake.triggers,
                lake.history,
                lake.deferrals,
                partitions=lake.partitions,
                resolver_queue=bounded.queue,
                assets=lake.store,
            ),
            limits=bounded.limits,
            clock=lambda: lake.now,
            observer=None,
        )
        return bounded

    def _counted(self, call: Any) -> Any:
        writes, claims = self.lake.partitions.writes, len(self.lake.triggers.claim_order)
        answer = call()
        self.invocations.append(
            Invocation(self.lake.partitions.writes - writes, len(self.lake.triggers.claim_order) - claims)
        )
        return answer

    def deliver(self, batch: list[StateChange] | None = None) -> ResolveReport:
        """The stream's records (or ``batch``) as one stream batch."""
        if batch is None:
            batch = [c for a in list(self.lake.stream) for c in self.lake.stream.pop(a, [])]
        report: ResolveReport = self._counted(lambda: self.lake.resolve(batch))
        return report

    def drain(self, data: st.DataObject | None = None, most: int = 10_000) -> int:
        """Hand the queue's messages to the resolver's handler, one an invocation (``data``: in any order, some twice)
        until none is left; how many invocations that took."""
        done = 0
        wired = SimpleNamespace(resolver=self.lake.resolve)
        while self.queue.messages:
            assert done < most, f"the queue did not drain: {len(self.queue.messages)} messages left"
            at = data.draw(st.integers(0, len(self.queue.messages) - 1)) if data is not None else 0
            message = self.queue.messages[at]
            again = data is not None and data.draw(st.booleans())
            if not again:
                del self.queue.messages[at]
            record = {"messageId": f"m{done}", "body": json.dumps(message), "eventSource": "aws:sqs"}
            answer = self._counted(lambda r=record: handle_resolver_queue({"Records": [r]}, wired))  # type: ignore[arg-type]
            assert answer == {"batchItemFailures": []}
            done += 1
        return done

    def bounded(self) -> None:
        """Every invocation stayed within its bounds (one partitioned group: its claims are the invocation's)."""
        for n, call in enumerate(self.invocations):
            assert call.facts <= self.limits.max_facts, f"invocation {n} wrote {call.facts} facts"
            assert call.claims <= self.limits.max_partition_claims, f"invocation {n} made {call.claims} claims"


def _days(n: int) -> list[str]:
    return [f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}" if i < 336 else f"d{i:05d}" for i in range(n)]


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_a_hundred_commits_in_one_batch_are_bounded_and_every_partition_runs() -> None:
    """The issue's shape at a tenth of its size (bench/ measures it full size): a hundred events of 100 keys each
    arriving in one stream batch. The first invocation writes at most ``max_facts`` facts and carries the rest over;
    draining the queue runs every partition both tables touched, none twice with the same pins, each invocation
    within its bounds; a partition whose newest commits came after its last run (the slices ran in another order
    than the commits) is exactly what stays pending, and none is left ready."""
    bounded = Bounded.of(daily(), max_facts=100, max_partition_claims=10)
    lake = bounded.lake
    keys = _days(1000)
    newest: dict[tuple[str, str], int] = {}
    for n in range(100):  # orders commits 1..50, payments 101..150: 100 events of 100 keys (each key by 5 of each)
        asset, sid = (ORDERS, 1 + n // 2) if n % 2 == 0 else (PAYMENTS, 101 + n // 2)
        named = keys[(n // 2 * 100) % 1000 : (n // 2 * 100) % 1000 + 100]
        lake.commit(asset, sid, *named)
        newest.update({(f"dt={k}", asset): sid for k in named})
    first = bounded.deliver()
    assert bounded.invocations[0].facts <= 100 and first.carried > 0
    bounded.drain()
    bounded.bounded()
    runs = lake.runs()
    assert len(runs) == len({(p, tuple(pins)) for p, pins in runs})
    last = {p: dict(pins) for p, pins in runs}  # each partition's last run
    assert set(last) == {f"dt={k}" for k in keys}
    behind = {p for p, pins in last.items() if any(newest[(p, a)] > s for a, s in pins.items())}
    assert set(lake.partitions.waiting.get(("daily", "g"), {})) == behind
    assert not any(p.ready for p in lake.explain().partitions) and not bounded.queue.messages


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_ready_partitions_past_the_claims_run_from_the_queue_each_read_once() -> None:
    """A commit making 1,000 partitions ready: 100 claims an invocation, the rest carried over in messages of 100
    partitions each (not the deferral sweep's minute, not a re-read of what is left): 10 invocations in all."""
    bounded = Bounded.of(daily(), max_facts=5000, max_partition_claims=100)
    lake = bounded.lake
    keys = _days(1000)
    lake.commit(ORDERS, 1, *keys)
    bounded.deliver()
    lake.commit(PAYMENTS, 101, *keys)
    report = bounded.deliver()
    assert len(report.claimed) == 100 and report.deferred == []
    assert [len(m["partitions"]) for m in bounded.queue.messages] == [100] * 9
    assert bounded.drain() == 9
    bounded.bounded()
    assert sorted(p for p, _ in lake.runs()) == sorted(f"dt={k}" for k in keys)
    assert lake.partitions.count_pending("daily", "g") == 0


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_every_pending_partition_is_evaluated_past_one_page() -> None:
    """A gate holds 1,000 pending partitions; when it opens, the group scans them a page at a time (the next page
    through the queue), so the oldest runs too: no partition waits forever behind a page of newer ones."""
    rule = daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM})
    bounded = Bounded.of(rule, max_facts=5000, max_partition_claims=100, pending_page=150)
    lake = bounded.lake
    keys = _days(1000)
    lake.commit(ORDERS, 1, *keys)
    lake.commit(PAYMENTS, 101, *keys)
    bounded.deliver()
    assert lake.runs() == [] and lake.partitions.count_pending("daily", "g") == 1000
    lake.commit(DIM, 201)
    bounded.deliver()
    bounded.drain()
    bounded.bounded()
    assert sorted(p for p, _ in lake.runs()) == sorted(f"dt={k}" for k in keys)
    assert lake.partitions.count_pending("daily", "g") == 0


def test_a_rollups_partitions_past_the_fact_reads_of_one_invocation_run_from_the_queue() -> None:
    """A day of a rollup over its 24 hours reads 24 facts: with 60 fact reads an invocation evaluates two days and
    carries the others to the queue, so each invocation's reads stay bounded and every complete day runs once."""
    hours = {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}}}
    bounded = Bounded.of(daily(hours), max_facts=5000, max_fact_reads=60)
    lake = bounded.lake
    days = [f"2026-11-{d:02d}" for d in range(1, 11)]
    hourly(lake, 1, *[f"{d}-{h:02d}" for d in days for h in range(24)])
    first = bounded.deliver()
    assert len(first.claimed) == 2 and first.carried >= 1
    bounded.drain()
    assert sorted(p for p, _ in lake.runs()) == sorted(f"dt={d}" for d in days)
    assert lake.partitions.count_pending("daily", "g") == 0


def test_a_rollup_day_missing_an_hour_stays_pending_counted_and_overdue() -> None:
    """23 of a day's 24 hours: the day is pending (explain lists it and counts it, the freshness promise makes it
    overdue), and stays so after another day is committed, until its last hour comes and it runs."""
    rule = parse_rule(
        "daily",
        {
            **json_form(
                daily(
                    {"assetKey": ORDERS, "partition": {}},
                    {
                        "assetKey": CLICKS,
                        "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}},
                    },
                )
            ),
            "freshness": {"partitionMaxAgeSeconds": 3600},
        },
    )
    lake = Lake(rule)
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.deliver()
    start = lake.now
    hourly(lake, 901, *[f"2026-12-01-{h:02d}" for h in range(23)])
    lake.deliver()
    hourly(lake, 902, *[f"2026-12-02-{h:02d}" for h in range(24)])
    lake.deliver()
    assert [p for p, _ in lake.runs()] == ["dt=2026-12-02"]
    board = lake.explain()
    [day] = [p for p in board.partitions if p.partition == "dt=2026-12-01"]
    assert day.status is Status.WAITING_FOR_PARTITION and "missing dt=2026-12-01-23" in (day.reason or "")
    assert board.pending_partitions == 1 and lake.partitions.count_pending("daily", "g") == 1
    lake.now = start + 3600 * 1000
    overdue = CheckFreshness(
        lake.rules, lake.triggers, InMemoryAssetRegistry(), lake.reader, lambda: lake.now, partitions=lake.partitions
    )().rules
    assert [o.partition for o in overdue["daily"]] == ["dt=2026-12-01"]
    hourly(lake, 903, "2026-12-01-23")
    lake.deliver()
    assert [p for p, _ in lake.runs()] == ["dt=2026-12-02", "dt=2026-12-01"]
    assert lake.partitions.count_pending("daily", "g") == 0


DAYS = ["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04", "2026-12-05"]


@settings(max_examples=examples(60), deadline=None)
@given(
    history=st.lists(
        st.tuples(st.sampled_from([ORDERS, PAYMENTS, DIM]), st.sets(st.sampled_from(DAYS), min_size=1, max_size=5)),
        min_size=1,
        max_size=10,
    ),
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
    max_facts=st.integers(1, 6),
    max_claims=st.integers(1, 3),
    page=st.integers(1, 3),
    reads=st.integers(1, 8),
    data=st.data(),
)
def test_at_any_bound_each_partition_runs_once_per_combination_and_none_is_left(
    history: list[tuple[str, set[str]]],
    mode: str,
    max_facts: int,
    max_claims: int,
    page: int,
    reads: int,
    data: st.DataObject,
) -> None:
    """Commits of two partitioned tables and a gate, delivered in batches of any size (some twice), the queue's
    messages handed over in any order and some twice, at any bounds: every invocation stays within them, no
    (partition, pins) runs twice, a partition's pins never go back, and once everything is handed over no partition
    is ready, none a commit of both tables touched is left without a run (once the gate has a version), the queue
    is empty and the pending list holds exactly the partitions touched since their last run."""
    rule = daily(
        {"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM}, mode=mode
    )
    bounded = Bounded.of(
        rule, max_facts=max_facts, max_partition_claims=max_claims, pending_page=page, max_fact_reads=reads
    )
    lake = bounded.lake
    ids = {ORDERS: 0, PAYMENTS: 100, DIM: 200}
    touched: dict[tuple[str, int], set[str]] = {}
    for asset, days in history:
        ids[asset] += 1
        lake.commit(asset, ids[asset], *(sorted(days) if asset != DIM else ()))
        touched[(asset, ids[asset])] = set(days) if asset != DIM else set()
        if data.draw(st.booleans()):
            batch = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
            bounded.deliver(batch + (batch[: data.draw(st.integers(0, len(batch)))]))  # a redelivered tail
            bounded.drain(data)
    bounded.deliver()
    bounded.drain(data)
    bounded.bounded()
    runs = lake.runs()
    assert len(runs) == len({(p, tuple(pins)) for p, pins in runs})
    last: dict[tuple[str, str], int] = {}
    for partition, pins in runs:
        assert partition is not None
        for asset, sid in pins:
            assert sid is not None
            if asset != DIM:
                assert partition.removeprefix("dt=") in touched[(asset, sid)]
                assert sid >= last.get((partition, asset), -1)
                last[(partition, asset)] = sid
    board = lake.explain()
    assert not any(p.ready for p in board.partitions)
    assert not bounded.queue.messages
    by = {a: {d for (b, _), t in touched.items() if b == a for d in t} for a in (ORDERS, PAYMENTS)}
    if ids[DIM] > 200:
        assert {p for p, _ in runs} == {f"dt={d}" for d in by[ORDERS] & by[PAYMENTS]}
        newest = {(d, a): max(s for (b, s), t in touched.items() if b == a and d in t) for a in by for d in by[a]}
        pending = {
            f"dt={d}"
            for d in by[ORDERS] | by[PAYMENTS]
            if any(newest.get((d, a), -1) > last.get((f"dt={d}", a), -1) for a in (ORDERS, PAYMENTS))
        }
        assert set(lake.partitions.waiting.get(("daily", "g"), {})) == pending
    else:
        assert runs == []


def test_a_batch_about_to_time_out_stops_and_its_partitions_run_from_the_queue_even_if_it_is_given_up() -> None:
    """An invocation with less than its margin left stops before its next write and fails (Lambda retries it), after
    leaving its assets' rechecks and sending its commits' partitions to the queue: if Lambda then gives the batch
    up, every partition still runs, once."""
    bounded = Bounded.of(daily(), max_facts=1000, max_partition_claims=100)
    lake = bounded.lake
    keys = _days(300)
    lake.commit(ORDERS, 1, *keys)
    lake.commit(PAYMENTS, 101, *keys)
    batch = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
    with pytest.raises(OutOfTime):
        lake.resolve(batch, time_left=lambda: bounded.limits.margin_ms - 1)
    assert lake.runs() == [] and lake.deferrals.rechecks  # nothing written but what the retry needs
    assert sum(len(m["partitions"]) for m in bounded.queue.messages) == 600
    bounded.drain()  # the batch itself is never delivered again
    assert sorted(p for p, _ in lake.runs()) == sorted(f"dt={k}" for k in keys)


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
@settings(max_examples=examples(30), deadline=None)
@given(calls=st.integers(0, 12), data=st.data())
def test_a_batch_cut_off_at_any_point_by_its_deadline_loses_nothing_and_runs_nothing_twice(
    calls: int, data: st.DataObject
) -> None:
    """The clock runs out after any number of checks: the retried batch (or, if Lambda gives it up, the queue) runs
    every partition, and no (partition, pins) twice."""
    rule = daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM})
    bounded = Bounded.of(rule, max_facts=20, max_partition_claims=5, pending_page=7)
    lake = bounded.lake
    keys = _days(40)
    lake.commit(ORDERS, 1, *keys)
    lake.commit(PAYMENTS, 101, *keys[10:])
    lake.commit(DIM, 201)
    batch = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
    left = iter([60_000] * calls)
    try:
        lake.resolve(batch, time_left=lambda: next(left, 0))
    except OutOfTime:
        if data.draw(st.booleans()):
            bounded.deliver(batch)  # Lambda's retry succeeds; else it gave the batch up
    bounded.drain(data)
    lake.now += 120_000
    lake.resolve(deferred=lake.sweeper())  # the rechecks the failed batch left
    bounded.drain(data)
    runs = lake.runs()
    assert len(runs) == len({(p, tuple(pins)) for p, pins in runs})
    assert {p for p, _ in runs} == {f"dt={k}" for k in keys[10:]}


def test_a_recheck_of_a_partitioned_member_scans_the_groups_pending_partitions() -> None:
    """A recheck (left by a failed batch) of a partitioned member's asset names no partition: it scans the group's
    pending partitions, so one that is ready (its deferral lost) runs."""
    lake = _lake(daily(), 2)  # no resolver queue: the claims past 2 wait for the group's deferral
    lake.commit(ORDERS, 1, *DAYS)
    lake.commit(PAYMENTS, 101, *DAYS)
    assert len(lake.deliver(dispatch=False).claimed) == 2
    lake.deferrals.pending.clear()  # the group's deferral is lost
    report = lake.resolve(deferred=[AssetRecheck(ORDERS, lake.now)])
    assert len(report.claimed) == 2


def test_a_partitions_run_that_succeeded_wakes_no_resolver_a_groups_does() -> None:
    """A trigger turning SUCCEEDED wakes its group for EACH_VERSION's head of line; a partition's run releases
    nothing unless it runs in order (inOrder: EACH_VERSION), so a thousand partition runs finishing cost no scan of the
    group's pending partitions each."""
    from lakehook.adapters.dynamodb.stream_records import resolver_input
    from lakehook.ports.rules import Deferral

    def record(**extra: dict[str, Any]) -> dict[str, Any]:
        image = {
            "PK": {"S": "TRIGGER#daily.g.abc"},
            "SK": {"S": "CLAIM"},
            "itemType": {"S": "TRIGGER"},
            "ruleId": {"S": "daily"},
            "groupId": {"S": "g"},
            **extra,
        }
        keys = {"PK": image["PK"], "SK": image["SK"]}
        return {
            "eventName": "MODIFY",
            "eventSource": "aws:dynamodb",
            "dynamodb": {
                "Keys": keys,
                "NewImage": {**image, "status": {"S": "SUCCEEDED"}},
                "OldImage": {**image, "status": {"S": "TRIGGERING"}},
                "SequenceNumber": "1",
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }

    releases = {"BOOL": True}  # what the dispatcher notes on an EACH_VERSION rule's run (releasesNext)
    assert resolver_input(record(releasesNext=releases)) == Deferral("daily", "g", 0)
    assert resolver_input(record(partition={"S": "dt=2026-12-01"}, releasesNext=releases)) is None
    assert resolver_input(record()) is None  # a run of any other mode releases nothing: it wakes nobody


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_ten_partitioned_rules_share_one_bound_of_claims_per_invocation() -> None:
    """Ten rules over the same two tables, a commit making 100 partitions ready for each: one invocation makes at
    most ``max_partition_claims`` claims in all, the rest run from the queue."""
    rules = [daily(rule_id=f"daily{i}") for i in range(10)]
    bounded = Bounded.of(*rules, max_partition_claims=150)
    lake = bounded.lake
    keys = _days(100)
    lake.commit(ORDERS, 1, *keys)
    lake.commit(PAYMENTS, 101, *keys)
    bounded.deliver()
    assert bounded.invocations[0].claims == 150
    bounded.drain()
    assert all(call.claims <= 150 for call in bounded.invocations)
    ran = [(t.rule_id, t.partition) for t in lake.triggers.triggers.values()]
    assert len(ran) == len(set(ran)) == 1000  # every partition of every rule, once


@settings(max_examples=examples(30), deadline=None)
@given(
    keys=st.lists(st.text(min_size=1, max_size=512), min_size=1, max_size=1000, unique=True),
    per_message=st.integers(1, 1000),
)
def test_a_groups_carried_partitions_go_in_messages_sqs_takes(keys: list[str], per_message: int) -> None:
    """Ready partitions past the claims go to the queue, at most one invocation's claims a message and never past
    SQS's 256 KiB as JSON (keys of up to 512 characters, any text: JSON escapes what is not ASCII): all, in order."""
    from lakehook.usecases.resolve_continue import group_messages

    messages = group_messages("daily", "g", keys, per_message)
    assert [k for m in messages for k in m["partitions"]] == keys
    assert all(len(m["partitions"]) <= per_message for m in messages)
    assert all(len(json.dumps(m).encode()) <= 256 * 1024 for m in messages)
