"""A partitioned group is resolved in the same three steps as any other: gather, a pure plan (per partition its
verdict, its claim, its pending mark, with why; the facts to keep), apply. Planning writes nothing and decides the
same twice; with no racing resolver a claiming call makes exactly its plan's fact writes, claims, pending marks
and deferrals; explain is the plan's verdicts; a lost race plans the partition again and claims nothing twice."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.lanes import DeferWhy
from lakehook.domain.plan_lanes import PartitionsPlan, PendingWhy
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import Claim, ClaimResult, Deferral, StateChange
from lakehook.usecases.resolve import ResolverLimits, ResolverStores
from lakehook.usecases.resolve_plan import Plan
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_resolve import DIM, ORDERS, PAYMENTS, Lake, daily
from tests.wiring import resolve_asset_change

DAYS = ["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]
REF = ("daily", "g")


def _lake(rule: Rule, max_claims: int) -> Lake:
    lake = Lake(rule)
    lake.resolve = resolve_asset_change(
        ResolverStores(
            lake.rules, lake.reader, lake.triggers, lake.history, lake.deferrals, partitions=lake.partitions
        ),
        limits=ResolverLimits(max_claims_per_group=max_claims),
        clock=lambda: lake.now,
        observer=None,
    )
    return lake


def _stored(lake: Lake) -> Any:
    """Everything the resolver may write, as values."""
    return copy.deepcopy(
        (
            lake.triggers.triggers,
            lake.triggers.cursors,
            lake.triggers.claim_order,
            lake.deferrals.pending,
            lake.partitions.kept,
            lake.partitions.waiting,
            lake.partitions.writes,
            lake.rules.rules,
        )
    )


def _group(plan: Plan) -> PartitionsPlan:
    (group,) = plan.groups
    assert group.lane is None and group.per_partition, "a partitioned group is planned per partition"
    return group.lanes


# one step: a commit of orders or payments (or of the gate) touching some days, delivered now or left in the stream,
# then time passing
steps = st.lists(
    st.tuples(
        st.sampled_from([ORDERS, PAYMENTS, DIM]),
        st.sets(st.sampled_from(DAYS), min_size=1, max_size=4),
        st.booleans(),
        st.integers(0, 90_000),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=examples(100), deadline=None)
@given(
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
    cooldown=st.sampled_from([None, 60]),
    quiet=st.sampled_from([None, 30]),
    gated=st.booleans(),
    max_claims=st.integers(1, 3),
    history=steps,
)
def test_a_claiming_call_makes_exactly_its_plans_fact_writes_claims_and_pending_marks(
    mode: str, cooldown: int | None, quiet: int | None, gated: bool, max_claims: int, history: list[Any]
) -> None:
    policy: dict[str, Any] = {}
    if cooldown is not None:
        policy["minIntervalSeconds"] = cooldown
    if quiet is not None:
        policy["quietPeriodSeconds"] = quiet
    members: list[dict[str, Any]] = [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}]
    if gated:
        members.append({"assetKey": DIM})
    lake = _lake(daily(*members, mode=mode, **policy), max_claims)
    sids = {ORDERS: 0, PAYMENTS: 100, DIM: 200}
    for asset, days, deliver, wait in history:
        sids[asset] += 1
        lake.commit(asset, sids[asset], *(sorted(days) if asset != DIM else ()))
        lake.now += wait
        due = [d for d in lake.deferrals.due(lake.now, 100) if isinstance(d, Deferral)]
        if not deliver and not due:
            continue
        batch: list[StateChange] = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])] if deliver else []
        before = _stored(lake)
        plan = lake.resolve.plan(batch, due)
        assert _stored(lake) == before, "planning wrote to a store"
        assert lake.resolve.plan(batch, due) == plan, "the same inputs planned differently"
        if not plan.groups:  # the gate's commit, and no gate in the rule: nothing to resolve
            assert lake.resolve(batch, due).claimed == [] and _stored(lake) == before
            continue
        group = _group(plan)
        kept = dict(lake.partitions.kept)
        book = dict(lake.partitions.waiting.get(REF, {}))
        writes = lake.partitions.writes

        report = lake.resolve(batch, due)

        # the facts: exactly the plan's writes, each newer than what was kept
        assert lake.partitions.writes - writes == len(plan.facts)
        for planned in plan.facts:
            assert planned.fact.newer_than(kept.get(planned.fact.key))
            kept[planned.fact.key] = planned.fact
        assert lake.partitions.kept == kept
        # the claims, in order; at most the cap; each on a partition whose verdict now is READY
        assert [t.trigger_key for t in report.claimed] == [c.trigger.trigger_key for c in group.claims]
        assert len(group.claims) <= max_claims
        assert all(p.verdict.ready for p in group.partitions if p.claim is not None)
        # the pending marks: the plan's marks added, its clears cleared, nothing else
        after = lake.partitions.waiting.get(REF, {})
        marked = {m.partition for m in group.marks}
        cleared = {c.partition for c in group.clears}
        assert set(after) == (set(book) | marked) - cleared
        assert all(after[p] == book[p] for p in set(book) - cleared)  # a partition read pending keeps its mark
        # known when the group read a whole page of its pending partitions (a deferral or a gate woke it)
        assert group.pending in (None, len(after))
        assert group.pending is not None or not (due or (gated and any(c.asset_key == DIM for c in batch)))
        assert all(m.why is PendingWhy.NEWS for m in group.marks) and all(c.why is PendingWhy.RAN for c in group.clears)
        # the deferral, and why
        assert report.deferred == ([group.deferral] if group.deferral is not None else [])
        ready_left = any(p.settled.ready for p in group.partitions)
        assert (group.why is DeferWhy.CLAIMS_USED) == (ready_left and group.deferral is not None)
        if ready_left:
            assert group.deferral == Deferral(*REF, lake.now)
        # the verdict the report keeps is the plan's
        assert report.verdicts[REF] == group.board(lake.rules.get_rule("daily").rule.groups[0], explain=False)  # type: ignore[union-attr]


def test_explain_is_the_plan_of_an_evaluation_without_its_writes() -> None:
    """explain shows the partitions of the plan an evaluation makes, their verdicts before its claims; the
    evaluation then claims exactly the READY ones (of the plan's first page)."""
    lake = _lake(daily(), 100)
    lake.commit(ORDERS, 1, *DAYS)
    lake.deliver()
    lake.commit(PAYMENTS, 101, *DAYS[:2])
    lake.stream.clear()  # not handled yet: an evaluation takes the members' newest commits
    rule = lake.rules.get_rule("daily").rule  # type: ignore[union-attr]
    before = _stored(lake)
    board = lake.resolve.evaluate(rule, claim=False).verdicts[REF]
    assert _stored(lake) == before, "explain wrote to a store"
    assert [p.partition for p in board.partitions] == [f"dt={d}" for d in reversed(DAYS)]  # newest first
    ready = [p.partition for p in board.partitions if p.ready]
    assert ready == ["dt=2026-12-02", "dt=2026-12-01"] and board.pending_partitions == len(DAYS)
    claimed = lake.resolve.evaluate(rule).claimed
    assert [t.partition for t in claimed] == ready


def test_a_claim_lost_to_a_racing_resolver_is_planned_again_and_nothing_runs_twice() -> None:
    """Between this resolver's gather and its claims another resolver claims the same days: each lost claim plans
    its partition again under the cursor that won (nothing left to run), and the pending list ends empty."""
    lake = _lake(daily(), 100)
    racer = resolve_asset_change(
        ResolverStores(
            lake.rules, lake.reader, lake.triggers, lake.history, lake.deferrals, partitions=lake.partitions
        ),
        clock=lambda: lake.now,
        observer=None,
    )
    lake.commit(ORDERS, 1, *DAYS[:3])
    lake.commit(PAYMENTS, 101, *DAYS[:3])
    batch = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
    claim = lake.triggers.claim
    raced: list[int] = []

    def racing(trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        if not raced:  # the other resolver, with the same batch, claims first (its own claims go straight through)
            raced.append(-1)
            raced[0] = len(racer(batch).claimed)
        return claim(trigger, cursor, expected)

    lake.triggers.claim = racing  # type: ignore[method-assign]
    assert len(_group(lake.resolve.plan(batch)).claims) == 3
    report = lake.resolve(batch)
    assert raced == [3] and report.claimed == [] and report.conflicts >= 3
    assert sorted(p for p, _ in lake.runs()) == [f"dt={d}" for d in DAYS[:3]]  # each day ran once
    assert lake.partitions.waiting.get(REF, {}) == {}
    assert not any(p.ready for p in report.verdicts[REF].partitions)


@settings(max_examples=examples(25), deadline=None)
@given(touched=st.integers(1, 130), raced=st.integers(1, 130))
def test_claims_made_in_batches_lose_only_the_raced_partitions_and_run_each_day_once(touched: int, raced: int) -> None:
    """A commit touching up to 130 days, its claims made in transactions of at most 50: a racing resolver that
    claimed the newest of them first (its own, smaller, bound of claims) makes exactly those claims lose, each
    planned again from the cursor that won (nothing left to run); every other claim of their batches is made, and
    every day runs once. (The same racer made each claim lose when each claim was a transaction of its own.)"""
    days = [(date(2026, 1, 1) + timedelta(days=n)).isoformat() for n in range(touched)]
    lake = _lake(daily(), 200)
    racer = resolve_asset_change(
        ResolverStores(
            lake.rules, lake.reader, lake.triggers, lake.history, lake.deferrals, partitions=lake.partitions
        ),
        limits=ResolverLimits(max_claims_per_group=raced, max_partition_claims=raced),
        clock=lambda: lake.now,
        observer=None,
    )
    lake.commit(ORDERS, 1, *days)
    lake.commit(PAYMENTS, 101, *days)
    batch = [c for a in list(lake.stream) for c in lake.stream.pop(a, [])]
    claim_many = lake.triggers.claim_many
    sizes: list[int] = []
    racing_now: list[bool] = []

    def racing(claims: Sequence[Claim]) -> list[ClaimResult]:
        if racing_now:  # the other resolver's own claims go straight through
            return claim_many(claims)
        if not sizes:  # the other resolver, with the same batch, claims first
            racing_now.append(True)
            assert len(racer(batch).claimed) == min(raced, touched)
            racing_now.clear()
        sizes.append(len(claims))
        return claim_many(claims)

    lake.triggers.claim_many = racing  # type: ignore[method-assign]
    report = lake.resolve(batch)

    lost = min(raced, touched)
    assert sizes == [min(50, touched - n) for n in range(0, touched, 50)]  # the planned claims, 50 a transaction
    assert report.conflicts == lost
    assert sorted(t.partition or "" for t in report.claimed) == sorted(f"dt={d}" for d in days[: touched - lost])
    assert sorted(p or "" for p, _ in lake.runs()) == sorted(f"dt={d}" for d in days)  # each day once
    # pending: only days the racer marked past its bound after this resolver read the group (they ran since: their
    # next evaluation clears them)
    assert set(lake.partitions.waiting.get(REF, {})) <= {f"dt={d}" for d in days[: touched - lost]}
