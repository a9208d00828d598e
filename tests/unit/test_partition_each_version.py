"""EACH_VERSION per partition (docs/partitions.md): each data commit of a partitioned member touching a partition runs
it once, in the order of the member's commits, each run once the partition's previous one SUCCEEDED (head of line per
partition; a FAILED run blocks its partition only); an unpartitioned gate pins its newest satisfying version; a
compaction is no version; a commit that touches a partition after it ran a newer one is recorded SKIPPED, never
silently dropped. On the in-memory stores; explain says what the resolver does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.errors import ValidationError
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from lakehook.domain.triggers import TriggerStatus
from lakehook.ports.rules import Deferral, StateChange
from lakehook.usecases.resolve import ResolveReport
from lakehook.usecases.rule_explain import ExplainRule
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_bounds import Bounded, Invocation
from tests.unit.test_partition_resolve import DIM, ORDERS, PAYMENTS, Lake, daily

P, Q = "2026-12-01", "2026-12-02"


def each(*members: dict[str, Any], **policy: Any) -> Rule:
    return daily(*members, mode="EACH_VERSION", **policy)


class InOrder(Lake):
    """The lake whose claims list skipped late versions apart from runs (a run's SUCCEEDED wakes the resolver as the
    stream filter lets it through: ``World.dispatch``)."""

    def runs(self) -> list[tuple[str | None, list[tuple[str, int | None]]]]:
        order = [t for k in self.triggers.claim_order if not is_late_skip(t := self.triggers.triggers[k])]
        return [(t.partition, [(p.asset_key, p.snapshot_id) for p in t.inputs]) for t in order]

    def skips(self) -> dict[tuple[str | None, int | None], str | None]:
        late = [t for t in self.triggers.triggers.values() if is_late_skip(t)]
        return {(t.partition, t.inputs[0].snapshot_id): t.reason for t in late}

    def line(self, partition: str) -> dict[str, Any]:
        lines = GroupExplanation.from_domain(self.explain()).dump()["partitions"]
        return {p["partition"]: p for p in lines}[f"dt={partition}"]


def orders_of(lake: InOrder, partition: str = P) -> list[int | None]:
    return [dict(pins)[ORDERS] for part, pins in lake.runs() if part == f"dt={partition}"]


def test_three_commits_of_a_day_run_it_three_times_in_order_each_after_the_previous_succeeded() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.commit(ORDERS, 2, P)
    lake.commit(ORDERS, 3, P)
    report = lake.deliver(dispatch=False)
    assert [t.partition for t in report.claimed] == [f"dt={P}"]  # one run: the next waits for it
    assert lake.runs() == [(f"dt={P}", [(ORDERS, 1), (PAYMENTS, 7)])]
    line = lake.line(P)
    assert line["status"] == Status.WAITING_FOR_RUN.value and "SUCCEEDED" in line["reason"]
    lake.dispatch(report)
    assert lake.runs() == [
        (f"dt={P}", [(ORDERS, 1), (PAYMENTS, 7)]),
        (f"dt={P}", [(ORDERS, 2), (PAYMENTS, 7)]),
        (f"dt={P}", [(ORDERS, 3), (PAYMENTS, 7)]),
    ]
    assert lake.line(P)["status"] == Status.WAITING_FOR_UPDATE.value
    assert lake.partitions.count_pending("daily", "g") == 0


def test_three_commits_pushed_newest_first_in_one_request_all_run_in_order() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    for sid in (3, 2, 1):  # one request: every stream record of it in one batch, before anything ran
        lake.commit(ORDERS, sid, P)
    lake.deliver()
    assert orders_of(lake) == [1, 2, 3]
    assert lake.skips() == {}


def test_a_failed_run_blocks_its_partition_only() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P, Q)
    lake.commit(ORDERS, 1, P, Q)
    lake.commit(ORDERS, 2, P, Q)
    report = lake.deliver(dispatch=False)
    assert sorted(t.partition or "" for t in report.claimed) == [f"dt={P}", f"dt={Q}"]
    [failed] = [t for t in report.claimed if t.partition == f"dt={P}"]
    lake.triggers.triggers[failed.trigger_key] = failed.model_copy(update={"status": TriggerStatus.FAILED})
    lake.dispatch(ResolveReport(), only=f"dt={Q}")
    assert orders_of(lake, Q) == [1, 2] and orders_of(lake, P) == [1]
    line = lake.line(P)
    assert line["status"] == Status.BLOCKED_BY_FAILED_TRIGGER.value
    assert failed.trigger_key in line["reason"] and "retry" in line["reason"]
    lake.deliver()  # nothing new: the failed run still holds the day
    assert orders_of(lake, P) == [1]


def test_a_compaction_is_no_version() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    lake.commit(ORDERS, 2, P, commitKind="COMPACT")
    lake.deliver()
    assert orders_of(lake) == [1]
    assert lake.line(P)["status"] == Status.WAITING_FOR_UPDATE.value
    assert lake.partitions.versions_after((ORDERS, "dt=dt", f"dt={P}"), 1, 5) == []


def test_a_commit_arriving_after_a_newer_one_ran_is_recorded_skipped_and_explained() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P, Q)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert orders_of(lake) == [3]
    lake.commit(ORDERS, 2, P, Q)  # late for P (3 ran there), the first commit of Q
    lake.deliver()
    assert orders_of(lake) == [3] and orders_of(lake, Q) == [2]
    reason = lake.skips()[(f"dt={P}", 2)]
    assert reason is not None and "after 3 ran" in reason and f"dt={P}" in reason
    assert list(lake.skips()) == [(f"dt={P}", 2)]
    explain = ExplainRule(lake.rules, lake.triggers, lake.reader, clock=lambda: lake.now, resolver=lake.resolve)
    shown = explain.explain("daily")["groups"][0]
    assert [(s["snapshotId"], s["reason"]) for s in shown["skipped"]] == [(2, reason)]
    assert shown["lastTrigger"]["status"] == TriggerStatus.SUCCEEDED.value


def test_a_redelivered_batch_runs_nothing_twice_and_skips_nothing_that_ran() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.commit(ORDERS, 2, P)
    batch = [c for changes in lake.stream.values() for c in changes]
    lake.deliver()
    assert orders_of(lake) == [1, 2]
    lake.dispatch(lake.resolve(batch))  # the same records again, after both ran
    assert orders_of(lake) == [1, 2] and lake.skips() == {}


def test_an_unpartitioned_gate_pins_its_newest_version_and_does_not_step() -> None:
    rule = each({"assetKey": ORDERS, "partition": {}}, {"assetKey": DIM})
    lake = InOrder(rule)
    lake.commit(DIM, 40)
    lake.commit(DIM, 41)
    lake.commit(ORDERS, 1, P)
    lake.commit(ORDERS, 2, P)
    lake.deliver()
    assert [dict(pins) for _, pins in lake.runs()] == [{ORDERS: 1, DIM: 41}, {ORDERS: 2, DIM: 41}]
    lake.commit(DIM, 42)
    lake.deliver()
    assert len(lake.runs()) == 2  # a gate's new version alone runs no partition


def test_a_partitions_run_in_order_wakes_the_resolver_when_it_succeeds_others_do_not() -> None:
    from boto3.dynamodb.types import TypeSerializer

    from lakehook.adapters.dynamodb.stream_records import resolver_input
    from lakehook.adapters.dynamodb.trigger_store import trigger_item

    def serialize(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        old = {k: TypeSerializer().serialize(v) for k, v in before.items()}
        new = {k: TypeSerializer().serialize(v) for k, v in after.items()}
        return {
            "eventName": "MODIFY",
            "eventSource": "aws:dynamodb",
            "dynamodb": {
                "Keys": {"PK": new["PK"], "SK": new["SK"]},
                "NewImage": new,
                "OldImage": old,
                "SequenceNumber": "1",
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }

    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    [run] = lake.deliver(dispatch=False).claimed
    assert run.in_order
    plain = run.model_copy(update={"in_order": False})
    for trigger, woken in ((run, Deferral("daily", "g", 0)), (plain, None)):
        before = trigger_item(trigger)
        after = {**before, "status": "SUCCEEDED", "releasesNext": True}  # as the dispatcher notes EACH_VERSION's
        record = serialize(before, after)
        assert resolver_input(record) == woken


def test_each_version_per_partition_is_refused_where_it_is_not_supported() -> None:
    import pytest

    hourly = {"assetKey": ORDERS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}}}
    gate = {"assetKey": DIM, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}
    windowed = each({"assetKey": ORDERS, "partition": {}}, gate)  # taken: each day's window is its span (a 400 before)
    assert windowed.spans_partitions(windowed.groups[0])

    for bad, words in (
        (lambda: each(hourly, startFrom="NEXT_CHANGE"), "rolls up"),  # each alone is taken (until 2026-12-07 a 400)
        (
            lambda: Rule.model_validate(
                {
                    "ruleId": "daily",
                    "target": {"type": "eventbridge", "eventBusName": "runs"},
                    "policy": {"mode": "EACH_VERSION"},
                    "groups": [
                        {
                            "groupId": "g",
                            "partitionBy": ["dt"],
                            "schedule": {"cron": "0 6 * * *"},
                            "members": [{"assetKey": ORDERS, "partition": {}}],
                        }
                    ],
                }
            ),
            "schedule",
        ),
    ):
        with pytest.raises((ValueError, ValidationError)) as caught:
            bad()
        assert words in str(caught.value)


# --- explain equals the resolver, over generated commit orders, days and redelivered batches ---------------


def _ready_lines(lake: Lake) -> set[tuple[str, frozenset[tuple[str, int]]]]:
    """What explain says is ready now: per partition, the pins it would claim."""
    lines = GroupExplanation.from_domain(lake.explain()).dump()["partitions"]
    return {
        (line["partition"], frozenset((p["assetKey"], p["snapshotId"]) for p in line["pins"]))
        for line in lines
        if line["status"] == Status.READY.value
    }


def _finish(lake: Lake) -> list[Deferral]:
    """Every run started ends SUCCEEDED; the wakes their stream records bring (not delivered yet)."""
    woken = []
    for t in list(lake.triggers.triggers.values()):
        if t.status is TriggerStatus.TRIGGERING:
            lake.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.SUCCEEDED})
            if t.partition is None or t.in_order:
                woken.append(Deferral(t.rule_id, t.group_id, 0))
    return woken


def push_in_any_order(
    lake: Lake, data: st.DataObject, sids: list[int], push: Callable[[int], None], rule_id: str = "daily"
) -> None:
    """Push commit ``sid`` of ``sids`` (``push``) in a generated order, delivering their records in generated batches
    (some again) and ending the runs between; each time every record was delivered, explain's READY partitions of
    ``rule_id`` are what the wake of the ended runs claims. Then deliver the rest, end every run and let every gap of
    the push order settle."""
    delivered: list[list[StateChange]] = []
    for sid in data.draw(st.permutations(sids), label="push order"):
        push(sid)
        if data.draw(st.booleans(), label="deliver now"):
            delivered.append([c for a in list(lake.stream) for c in lake.stream.pop(a)])
            lake.resolve(delivered[-1])
        if data.draw(st.booleans(), label="runs end"):
            woken = _finish(lake) or [Deferral(rule_id, "g", 0)]
            expected = _ready_lines(lake) if not lake.stream else None  # explain, before the wakes are delivered
            report = lake.resolve(deferred=woken)
            claimed = {
                (t.partition, frozenset((p.asset_key, p.snapshot_id) for p in t.inputs))
                for t in report.claimed
                if t.rule_id == rule_id
            }
            assert expected is None or claimed == expected
        if delivered and data.draw(st.booleans(), label="redeliver"):
            lake.resolve(data.draw(st.sampled_from(delivered), label="batch"))
    lake.deliver()
    for _ in range(len(sids) + 1):  # every run ends; every gap of the push order settles
        while woken := _finish(lake):
            lake.resolve(deferred=woken)
        lake.sweep(15 * 60_000)
    assert _ready_lines(lake) == set()


commits = st.lists(st.sets(st.sampled_from([P, Q]), min_size=1), min_size=1, max_size=6)


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data(), touched=commits)
def test_explain_says_what_the_resolver_claims_and_every_commit_runs_in_order_or_is_skipped_visibly(
    data: st.DataObject, touched: list[set[str]]
) -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P, Q)
    lake.deliver()
    sids = list(range(1, len(touched) + 1))
    order = data.draw(st.permutations(sids), label="push order")
    delivered: list[list[StateChange]] = []
    for sid in order:
        lake.commit(ORDERS, sid, *sorted(touched[sid - 1]))
        if data.draw(st.booleans(), label="deliver now"):
            batch = [c for a in list(lake.stream) for c in lake.stream.pop(a)]
            delivered.append(batch)
            lake.resolve(batch)
        if data.draw(st.booleans(), label="runs end"):
            woken = _finish(lake) or [Deferral("daily", "g", 0)]
            # explain, before the wakes are delivered, once every commit's record was (before, it sees the newest
            # commit of the state only, as the resolver's own evaluation does: explain is that evaluation)
            expected = _ready_lines(lake) if not lake.stream else None
            report = lake.resolve(deferred=woken)
            claimed = {(t.partition, frozenset((p.asset_key, p.snapshot_id) for p in t.inputs)) for t in report.claimed}
            assert expected is None or claimed == expected
        if delivered and data.draw(st.booleans(), label="redeliver"):
            lake.resolve(data.draw(st.sampled_from(delivered), label="batch"))
    lake.deliver()
    while woken := _finish(lake):
        lake.resolve(deferred=woken)
    assert _ready_lines(lake) == set()
    skipped = lake.skips()
    for day in (P, Q):
        ran = orders_of(lake, day)
        assert ran == sorted(set(ran))  # in order, each once
        wanted = {sid for sid in sids if day in touched[sid - 1]}
        late = {sid for (part, sid) in skipped if part == f"dt={day}"}
        assert set(ran) | late == wanted and not set(ran) & late  # each commit ran, or its skip is recorded
        assert all(sid < max(ran) for sid in late)  # skipped: a newer one had run


class InOrderBounded(Bounded):
    """Bounded, counting runs only (a late commit's SKIPPED record is no claim: the batch's versions bound them), and
    the version queries of each invocation (``max_version_reads``: next versions, and the commits of a member's table
    after a cursor; a partition's queries are taken whole, so one partition's, two per partitioned member, may pass
    it when it is the invocation's first)."""

    def _counted(self, call: Any) -> Any:
        triggers, store = self.lake.triggers, self.lake.partitions

        def claims() -> int:
            return sum(not is_late_skip(triggers.triggers[k]) for k in triggers.claim_order)

        def reads() -> int:
            return store.version_reads + store.log_reads

        writes, before, read = store.writes, claims(), reads()
        answer = call()
        self.invocations.append(Invocation(store.writes - writes, claims() - before, reads() - read))
        return answer

    def bounded(self, members: int = 2) -> None:
        super().bounded()
        most = max(self.limits.max_version_reads, 2 * members)
        for n, call in enumerate(self.invocations):
            assert call.version_reads <= most, f"invocation {n} read {call.version_reads} next versions"

    def maybe_deliver(self, data: st.DataObject) -> None:
        """Perhaps deliver what the stream holds (a tail of it again, redelivered), then drain the queue."""
        if data.draw(st.booleans()):
            batch = [c for a in list(self.lake.stream) for c in self.lake.stream.pop(a, [])]
            self.deliver(batch + (batch[: data.draw(st.integers(0, len(batch)))]))
            self.drain(data)

    def finish(self, data: st.DataObject) -> bool:
        """Every run started ends SUCCEEDED and its stream record wakes its group; whether any did."""
        woken = _finish(self.lake)
        if woken:
            self._counted(lambda: self.lake.resolve(deferred=woken))
            self.drain(data)
        return bool(woken)


@settings(max_examples=examples(400), deadline=None)
@given(
    history=st.lists(
        st.tuples(st.sampled_from([ORDERS, PAYMENTS, DIM]), st.sets(st.sampled_from([P, Q, "2026-12-03"]), min_size=1)),
        min_size=1,
        max_size=8,
    ),
    max_facts=st.integers(1, 4),
    max_claims=st.integers(1, 3),
    page=st.integers(1, 3),
    max_reads=st.integers(1, 4),
    data=st.data(),
)
def test_at_any_bound_every_commit_of_a_partition_runs_in_order_or_is_recorded_skipped(
    history: list[tuple[str, set[str]]], max_facts: int, max_claims: int, page: int, max_reads: int, data: st.DataObject
) -> None:
    """Commits of two partitioned tables and a gate, delivered in batches (tails redelivered), the resolver queue's
    messages in any order and some twice, runs ending between deliveries, at any bounds (the next-version queries
    too): every invocation stays within them, no run is made twice, a partition's pins never go back, and once
    everything is handed over, every run ended and every gap settled no partition is ready and each commit touching a
    day both tables touched ran for it or is recorded SKIPPED there."""
    rule = each({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}, {"assetKey": DIM})
    bounded = InOrderBounded.of(
        rule, max_facts=max_facts, max_partition_claims=max_claims, pending_page=page, max_version_reads=max_reads
    )
    lake = bounded.lake
    ids = {ORDERS: 0, PAYMENTS: 100, DIM: 200}
    touched: dict[tuple[str, int], set[str]] = {}
    for asset, days in history:
        ids[asset] += 1
        lake.commit(asset, ids[asset], *(sorted(days) if asset != DIM else ()))
        touched[(asset, ids[asset])] = set(days) if asset != DIM else set()
        bounded.maybe_deliver(data)
        if data.draw(st.booleans()):
            bounded.finish(data)
    bounded.deliver()
    bounded.drain(data)
    while bounded.finish(data):
        pass
    # No settle time passes (the clock never moves): a commit the bound cut (its other keys carried to the queue) is
    # known once every piece of it came, so a partition whose next version is past it runs at once, not at the end of
    # the settle time (docs/partitions.md, "EACH_VERSION per partition"; until 2026-12-07 this swept the deferrals at
    # the end of the settle time first)
    bounded.bounded()
    runs = [(t.partition, {p.asset_key: p.snapshot_id for p in t.inputs}) for t in _claims(lake)]
    assert len(runs) == len({(p, tuple(sorted(pins.items()))) for p, pins in runs})
    last: dict[tuple[str | None, str], int] = {}
    for partition, pins in runs:
        for asset in (ORDERS, PAYMENTS):
            sid = pins[asset]
            assert sid is not None and sid >= last.get((partition, asset), -1)
            last[(partition, asset)] = sid
    assert not any(p.ready for p in lake.explain().partitions)
    assert not bounded.queue.messages
    skipped = {(part, t.inputs[0].asset_key, t.inputs[0].snapshot_id) for t in _late(lake) for part in [t.partition]}
    if ids[DIM] == 200:
        assert runs == []
        return
    for day in (P, Q, "2026-12-03"):
        both = all(any(day in t for (a, _), t in touched.items() if a == asset) for asset in (ORDERS, PAYMENTS))
        if not both:
            continue
        for (asset, sid), days in touched.items():
            if asset == DIM or day not in days:
                continue
            ran = any(part == f"dt={day}" and pins[asset] == sid for part, pins in runs)
            assert ran != ((f"dt={day}", asset, sid) in skipped), (day, asset, sid)


def _claims(lake: Lake) -> list[Any]:
    return [t for k in lake.triggers.claim_order if not is_late_skip(t := lake.triggers.triggers[k])]


def _late(lake: Lake) -> list[Any]:
    return [t for t in lake.triggers.triggers.values() if is_late_skip(t)]


def test_a_partition_whose_versions_expired_steps_to_its_newest_commit_not_stuck() -> None:
    """Versions not kept any more (past their retention, or made while no EACH_VERSION rule kept them) are stepped
    over to the newest commit touching the partition, rather than waited for."""
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    for sid in (1, 2, 3):
        lake.commit(ORDERS, sid, P)
    report = lake.deliver(dispatch=False)
    assert orders_of(lake) == [1]
    lake.partitions.versions.clear()  # expired (TTL)
    lake.dispatch(report)
    assert orders_of(lake) == [1, 3]
    assert lake.line(P)["status"] == Status.WAITING_FOR_UPDATE.value


def test_the_next_version_reads_of_an_invocation_are_bounded_and_every_partition_still_runs_in_order() -> None:
    """Twenty days each with three commits of orders: once their first runs succeeded, the wake would read each day's
    next version (one query a day, and one of the table's commits after 1 for them all). At ``max_version_reads`` 5
    an invocation makes five, carries the other days to the resolver queue, and draining it runs every day 1, 2, 3,
    in order, none twice."""
    days = [f"2026-12-{d:02d}" for d in range(1, 21)]
    bounded = InOrderBounded.of(each(), max_version_reads=5, max_claims_per_group=100, max_partition_claims=100)
    lake = bounded.lake
    lake.commit(PAYMENTS, 7, *days)
    for sid in (1, 2, 3):
        lake.commit(ORDERS, sid, *days)
    bounded.deliver()
    assert len(_claims(lake)) == 20  # each day's first version: the batch's own, no query
    while woken := _finish(lake):
        bounded._counted(lambda w=woken: lake.resolve(deferred=w))
        bounded.drain()
    bounded.bounded()
    assert max(call.version_reads for call in bounded.invocations) == 5  # the bound is reached, and held
    for day in days:
        assert [dict(pins)[ORDERS] for part, pins in _runs(lake) if part == f"dt={day}"] == [1, 2, 3]
    assert not any(p.ready for p in lake.explain().partitions)
    assert _late(lake) == []


def _runs(lake: Lake) -> list[tuple[str | None, list[tuple[str, int | None]]]]:
    return [(t.partition, [(p.asset_key, p.snapshot_id) for p in t.inputs]) for t in _claims(lake)]
