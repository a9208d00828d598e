"""The resolver runs a partitioned group once per partition and combination of the commits touching it: on the
in-memory fakes, with duplicated, reordered and late events, overwrites that replace a partition, and a gate."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.domain.partitions import canonical_partition_key, format_partition_key
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.domain.status import Status
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.ports.rules import Deferral, StateChange
from lakehook.usecases.resolve import ResolveReport, ResolverLimits, ResolverStores
from lakehook.usecases.rule_explain import ExplainRule
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.hypothesis_profiles import examples
from tests.unit.test_resolve_usecase import World
from tests.wiring import resolve_asset_change

ORDERS = "paimon://lake/ods/orders"
PAYMENTS = "paimon://lake/ods/payments"
CLICKS = "iceberg://glue/ods/clicks"
DIM = "paimon://lake/dim/shops"


def daily(*members: dict[str, Any], rule_id: str = "daily", mode: str = "ALL_UPDATED", **policy: Any) -> Rule:
    members = members or ({"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}})
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "policy": {"mode": mode, **policy},
            "groups": [{"groupId": "g", "partitionBy": ["dt"], "members": list(members)}],
        }
    )


class Lake(World):
    """The resolver's world with a partition store, and pushes that name the partitions their commit touched."""

    def __init__(self, *rules: Rule) -> None:
        super().__init__(*rules)
        self.partitions = InMemoryPartitionStore()
        self.resolve = resolve_asset_change(
            ResolverStores(
                self.rules, self.reader, self.triggers, self.history, self.deferrals, partitions=self.partitions
            ),
            clock=lambda: self.now,
            observer=None,
        )

    def commit(self, asset: str, sid: int, *days: str, **fields: Any) -> None:
        """A commit of ``asset`` touching ``dt=<day>`` for each day; its event's stream record and the state's."""
        before = self.store.get_state(asset)
        keys = [f"dt={d}" for d in days]
        event = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, partitions=keys, **fields)
        result = self.ingest.ingest(event, SourceType.PUSH)
        if result.status is not IngestStatus.DUPLICATE:
            change = StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)
            self.stream.setdefault(asset, []).append(change)
        after = self.store.get_state(asset)
        if after is not None and (before is None or before.version != after.version):
            self.stream.setdefault(asset, []).append(StateChange(asset, after))

    def runs(self) -> list[tuple[str | None, list[tuple[str, int | None]]]]:
        """Each claim's partition and pins, in claim order."""
        order = [self.triggers.triggers[k] for k in self.triggers.claim_order]
        return [(t.partition, [(p.asset_key, p.snapshot_id) for p in t.inputs]) for t in order]

    def explain(self, rule_id: str = "daily") -> Any:
        stored = self.rules.get_rule(rule_id)
        assert stored is not None
        return self.resolve.evaluate(stored.rule, claim=False).verdicts[(rule_id, "g")]


def test_a_day_runs_once_both_tables_touched_it_and_pins_the_partition() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.deliver()
    lake.commit(PAYMENTS, 7, "2026-12-02")
    report = lake.deliver(dispatch=False)
    assert lake.runs() == [("dt=2026-12-02", [(ORDERS, 1), (PAYMENTS, 7)])]
    [trigger] = report.claimed
    assert trigger.partition == "dt=2026-12-02"
    assert TriggerAnswer.from_domain(trigger).dump()["partition"] == "dt=2026-12-02"
    board = lake.explain()
    lines = {p["partition"]: p for p in GroupExplanation.from_domain(board).dump()["partitions"]}
    assert lines["dt=2026-12-01"]["status"] == "WAITING_FOR_PARTITION"
    assert lines["dt=2026-12-01"]["reason"].startswith(f"dt=2026-12-01: waiting for {PAYMENTS}")
    assert lines["dt=2026-12-02"]["status"] == "WAITING_FOR_UPDATE"
    assert GroupExplanation.from_domain(board).dump()["pendingPartitions"] == 1


def test_an_overwrite_replacing_a_partition_runs_it_again_once_every_member_touched_it() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.commit(PAYMENTS, 7, "2026-12-01")
    lake.deliver()
    lake.commit(PAYMENTS, 8, "2026-12-01", commitKind="OVERWRITE")
    lake.deliver()
    assert len(lake.runs()) == 1  # ALL_UPDATED: orders has not touched the day again
    lake.commit(ORDERS, 2, "2026-12-01", commitKind="OVERWRITE")
    lake.deliver()
    assert lake.runs()[1] == ("dt=2026-12-01", [(ORDERS, 2), (PAYMENTS, 8)])


def test_any_updated_runs_the_partition_on_one_members_overwrite() -> None:
    lake = Lake(daily(mode="ANY_UPDATED"))
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.commit(PAYMENTS, 7, "2026-12-01")
    lake.deliver()
    lake.commit(PAYMENTS, 8, "2026-12-01")
    lake.deliver()
    assert lake.runs() == [
        ("dt=2026-12-01", [(ORDERS, 1), (PAYMENTS, 7)]),
        ("dt=2026-12-01", [(ORDERS, 1), (PAYMENTS, 8)]),
    ]


def test_a_compaction_touches_no_partition() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.commit(PAYMENTS, 7, "2026-12-01")
    lake.deliver()
    lake.commit(ORDERS, 2, "2026-12-01", commitKind="COMPACT")
    lake.commit(PAYMENTS, 8, "2026-12-01", commitKind="COMPACT")
    lake.deliver()
    assert len(lake.runs()) == 1


def test_an_unpartitioned_gate_holds_every_partition_and_releases_the_pending_ones() -> None:
    rule = daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": DIM, "condition": {"qualityStatus": "PASSED"}})
    lake = Lake(rule)
    lake.commit(ORDERS, 1, "2026-12-01", "2026-12-02")
    lake.commit(DIM, 40)
    lake.deliver()
    assert lake.runs() == []
    lines = GroupExplanation.from_domain(lake.explain()).dump()["partitions"]
    assert [line["status"] for line in lines] == ["BLOCKED_BY_QUALITY", "BLOCKED_BY_QUALITY"]
    assert lines[0]["reason"].startswith(f"dt=2026-12-02: waiting for {DIM}")
    lake.push("QUALITY_CHECK_PASSED", DIM, snapshotId=40)
    lake.deliver()  # only the dimension's state changed: the group's pending partitions are evaluated again
    assert sorted(lake.runs()) == [
        ("dt=2026-12-01", [(ORDERS, 1), (DIM, 40)]),
        ("dt=2026-12-02", [(ORDERS, 1), (DIM, 40)]),
    ]
    assert lake.partitions.count_pending("daily", "g") == 0
    lake.commit(DIM, 41)
    lake.push("QUALITY_CHECK_PASSED", DIM, snapshotId=41)
    lake.deliver()
    assert len(lake.runs()) == 2  # a new dimension version alone runs no partition


def test_hours_roll_up_to_their_day() -> None:
    rule = daily(
        {"assetKey": ORDERS, "partition": {}},
        {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day"}}}},
    )
    lake = Lake(rule)
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.deliver()
    before = lake.store.get_state(CLICKS)
    event = AssetEvent(
        eventType="SNAPSHOT_COMMITTED",
        assetKey=CLICKS,
        snapshotId=900,
        sequenceNumber=1,
        partitions=["hour=2026-12-01-10", "hour=2026-12-01-11"],
    )
    lake.ingest.ingest(event, SourceType.PUSH)
    assert before is None
    lake.stream[CLICKS] = [StateChange(CLICKS, snapshot=snapshot_record(event), partitions=event.partitions)]
    lake.deliver()
    assert lake.runs() == [("dt=2026-12-01", [(ORDERS, 1), (CLICKS, 900)])]


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_a_commit_touching_a_thousand_partitions_writes_each_fact_once_for_two_rules() -> None:
    """Bounded: the facts of one (asset, mapping) are shared by every rule mapping it alike, one write each."""
    days = [f"2020-01-01-{i:04d}" for i in range(1000)]  # any text is a value; 1000 is one commit's cap
    lake = Lake(daily(), daily(rule_id="other"))
    lake.commit(ORDERS, 1, *days)
    lake.deliver()
    assert lake.partitions.writes == 1000
    assert lake.partitions.count_pending("daily", "g") == 1000 and lake.runs() == []


def test_a_long_backlog_claims_a_bounded_number_per_invocation_and_defers_the_rest() -> None:
    days = [f"d{i:03d}" for i in range(150)]
    lake = Lake(daily())
    lake.resolve = resolve_asset_change(
        ResolverStores(
            lake.rules, lake.reader, lake.triggers, lake.history, lake.deferrals, partitions=lake.partitions
        ),
        limits=ResolverLimits(max_claims_per_group=100),
        clock=lambda: lake.now,
        observer=None,
    )
    lake.commit(ORDERS, 1, *days)
    lake.commit(PAYMENTS, 2, *days)
    report = lake.deliver(dispatch=False)
    assert len(report.claimed) == 100 and report.deferred == [Deferral("daily", "g", lake.now)]
    again = lake.resolve(deferred=report.deferred)
    assert len(again.claimed) == 50
    assert sorted(t.partition for t in lake.triggers.triggers.values()) == sorted(f"dt={d}" for d in days)


# --- any arrival order -----------------------------------------------------------------------------

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]
commits = st.lists(
    st.tuples(st.sampled_from([ORDERS, PAYMENTS]), st.sets(st.sampled_from(DAYS), min_size=1, max_size=3)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=examples(80), deadline=None)
@given(history=commits, mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]), data=st.data())
def test_in_any_arrival_order_each_partition_runs_once_per_combination_and_none_is_left_ready(
    history: list[tuple[str, set[str]]], mode: str, data: st.DataObject
) -> None:
    """The commits (ids growing per table) arrive shuffled, some twice, in batches of any size: no (partition,
    pins) runs twice, a run pins only commits that touched its partition, a partition's pins never go back, once
    everything arrived no partition is left READY, and explain shows each partition's newest commit per table
    (with ANY_UPDATED, the last run pinned exactly those)."""
    ids = {ORDERS: 0, PAYMENTS: 100}
    numbered = []
    for asset, days in history:
        ids[asset] += 1
        numbered.append((asset, ids[asset], sorted(days)))
    arrivals = data.draw(st.permutations(numbered + data.draw(st.lists(st.sampled_from(numbered), max_size=3))))
    cuts = data.draw(st.lists(st.booleans(), min_size=len(arrivals), max_size=len(arrivals)))
    lake = Lake(daily(mode=mode))
    for (asset, sid, days), cut in zip(arrivals, cuts, strict=True):
        lake.commit(asset, sid, *days)
        if cut:
            lake.deliver()
    lake.deliver()
    runs = lake.runs()
    assert len(runs) == len({(p, tuple(pins)) for p, pins in runs})
    touched = {(a, s): set(days) for a, s, days in numbered}
    last: dict[tuple[str | None, str], int] = {}
    for partition, pins in runs:
        assert partition is not None
        moved = []
        for asset, sid in pins:
            assert sid is not None and partition.removeprefix("dt=") in touched[(asset, sid)]
            assert sid >= last.get((partition, asset), -1)
            moved.append(sid > last.get((partition, asset), -1))
            last[(partition, asset)] = sid
        assert all(moved) if mode == "ALL_UPDATED" else any(moved)
    board = lake.explain()
    assert not any(p.ready for p in board.partitions)
    both = {d for d in DAYS if any(d in t for (a, _), t in touched.items() if a == ORDERS)} & {
        d for d in DAYS if any(d in t for (a, _), t in touched.items() if a == PAYMENTS)
    }
    assert {p for p, _ in runs} == {f"dt={d}" for d in both}  # every day both touched ran
    newest = {
        (f"dt={d}", a): max(s for (b, s), t in touched.items() if b == a and d in t)
        for a in (ORDERS, PAYMENTS)
        for d in DAYS
        if any(b == a and d in t for (b, _), t in touched.items())
    }
    shown = {(p.partition, m.asset_key): m.current.get("snapshotId") for p in board.partitions for m in p.members}
    assert all(newest[k] == v for k, v in shown.items() if v is not None)
    assert {(f.partition, f.asset_key): f.snapshot_id for f in lake.partitions.kept.values()} == newest
    if mode == "ANY_UPDATED":
        final = {p: dict(pins) for p, pins in runs}
        assert {(p, a): s for p, pins in final.items() for a, s in pins.items()} == {
            k: v for k, v in newest.items() if k[0] in final
        }


def test_a_report_names_the_partition_in_its_verdict() -> None:
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-01")
    report: ResolveReport = lake.deliver(dispatch=False)
    verdict = report.verdicts[("daily", "g")]
    assert verdict.status is Status.WAITING_FOR_PARTITION
    assert [p.partition for p in verdict.partitions] == ["dt=2026-12-01"]
    assert all(isinstance(t, Trigger) and t.status is TriggerStatus.TRIGGERING for t in report.claimed)
    assert EventType.SNAPSHOT_COMMITTED  # the events above were commits


# --- explain says what the resolver does; what the rule routes refuse --------------------------------


def explainer(lake: Lake) -> ExplainRule:
    return ExplainRule(lake.rules, lake.triggers, lake.reader, clock=lambda: lake.now, resolver=lake.resolve)


@settings(max_examples=examples(40), deadline=None)
@given(
    days=st.lists(st.sets(st.sampled_from(DAYS), min_size=1), min_size=1, max_size=4),
    gate_first=st.booleans(),
    unhandled=st.sets(st.sampled_from([*DAYS, "2026-12-09"])),
)
def test_explain_calls_ready_exactly_the_partitions_the_resolver_then_claims(
    days: list[set[str]], gate_first: bool, unhandled: set[str]
) -> None:
    """Partitions wait behind a gate; the gate opens in the state only (its record not handled yet), and perhaps a
    last commit too: explain's READY partitions are the ones the next evaluation claims, no more and no fewer."""
    rule = daily({"assetKey": ORDERS, "partition": {}}, {"assetKey": DIM, "condition": {"qualityStatus": "PASSED"}})
    lake = Lake(rule)
    lake.commit(DIM, 40)
    if gate_first:
        lake.push("QUALITY_CHECK_PASSED", DIM, snapshotId=40)
    for sid, touched in enumerate(days, start=1):
        lake.commit(ORDERS, sid, *sorted(touched))
        lake.deliver(dispatch=False)
    lake.push("QUALITY_CHECK_PASSED", DIM, snapshotId=40)
    if unhandled:
        lake.commit(ORDERS, 99, *sorted(unhandled))
    lake.stream.clear()  # the gate's own record (and that last commit's) is not handled yet
    said = explainer(lake).explain("daily")["groups"][0]
    ready = {p["partition"] for p in said["partitions"] if p["status"] == "READY"}
    before = len(lake.runs())
    claimed = {t.partition for t in lake.resolve.evaluate(lake.rules.get_rule("daily").rule).claimed}  # type: ignore[union-attr]
    assert claimed == ready
    assert len(lake.runs()) == before + len(ready)
    assert ready >= {f"dt={d}" for d in unhandled}  # the newest commit's days, known from the state
    last = explainer(lake).explain("daily")["groups"][0]["lastTrigger"]
    assert (last is None) == (not lake.runs())  # the group's newest run (of any partition), if it ran


def hourly(lake: Lake, sid: int, *hours: str) -> None:
    event = AssetEvent(
        eventType="SNAPSHOT_COMMITTED",
        assetKey=CLICKS,
        snapshotId=sid,
        sequenceNumber=sid,
        partitions=[f"hour={h}" for h in hours],
    )
    lake.ingest.ingest(event, SourceType.PUSH)
    change = StateChange(CLICKS, snapshot=snapshot_record(event), partitions=event.partitions)
    lake.stream.setdefault(CLICKS, []).append(change)


@settings(max_examples=examples(25), deadline=None)
@given(order=st.permutations(list(range(24))), batch=st.integers(1, 24))
def test_a_rollup_runs_the_day_once_all_24_hours_have_a_commit_in_any_order(order: list[int], batch: int) -> None:
    rule = daily(
        {"assetKey": ORDERS, "partition": {}},
        {"assetKey": CLICKS, "partition": {"fields": {"dt": {"field": "hour", "grain": "day", "complete": True}}}},
        mode="ANY_UPDATED",
    )
    lake = Lake(rule)
    lake.commit(ORDERS, 1, "2026-12-01")
    lake.deliver()
    for n, hour in enumerate(order, start=1):
        hourly(lake, 900 + n, f"2026-12-01-{hour:02d}")
        if n % batch == 0 or n == 23:
            lake.deliver()
        if n == 23:
            assert lake.runs() == []
            [line] = [p for p in lake.explain().partitions if p.partition == "dt=2026-12-01"]
            assert line.status is Status.WAITING_FOR_PARTITION
            missing = f"dt=2026-12-01-{order[23]:02d}"
            assert f"23 of the 24 units of dt=2026-12-01 have a data commit; missing {missing}" in (line.reason or "")
    lake.deliver()
    assert lake.runs() == [("dt=2026-12-01", [(ORDERS, 1), (CLICKS, 924)])]  # the newest hour's commit
    hourly(lake, 950, "2026-12-01-05")  # an hour rewritten: the day runs again (ANY_UPDATED)
    lake.deliver()
    assert lake.runs()[-1] == ("dt=2026-12-01", [(ORDERS, 1), (CLICKS, 950)])


@settings(max_examples=examples(40), deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=1, max_size=5, unique=True))
def test_any_partition_value_runs_once_under_its_canonical_key(values: list[str | None]) -> None:
    """Values with the characters Hive escapes, spaces, non-ASCII text, empty and null: each partition both tables
    touched runs once, and its trigger names the key as lakehook writes it."""
    rule = Rule.model_validate(
        {
            "ruleId": "regional",
            "target": {"type": "eventbridge", "eventBusName": "runs"},
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["region"],
                    "members": [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}],
                }
            ],
        }
    )
    lake = Lake(rule)
    keys = sorted({format_partition_key([("region", v), ("dt", "2026-12-01")]) for v in values})
    for asset, sid in ((ORDERS, 1), (PAYMENTS, 2)):
        event = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid, partitions=keys)
        lake.ingest.ingest(event, SourceType.PUSH)
        lake.stream.setdefault(asset, []).append(
            StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)
        )
    lake.deliver()
    lake.deliver()
    expected = sorted({format_partition_key([("region", v)]) for v in values})
    assert sorted(p or "" for p, _ in lake.runs()) == expected
    assert all(canonical_partition_key(p or "") == p for p, _ in lake.runs())
