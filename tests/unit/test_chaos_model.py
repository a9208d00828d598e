"""The chaos test's model (tests/e2e/chaos_model.py) tells racy phases, coalescing and order apart."""

from __future__ import annotations

from tests.e2e.chaos_model import (
    ALL,
    ANY,
    AssetState,
    Fact,
    Member,
    RuleSpec,
    Schedule,
    apply,
    chain_increases,
    fires,
    order_independent,
)

A, B = "paimon://lake/t/a", "paimon://lake/t/b"
BOTH = RuleSpec("all", ALL, (Member(A), Member(B, "quality")))
EITHER = RuleSpec("any", ANY, (Member(A), Member(B)))


def test_all_updated_fires_only_when_every_member_is_newer() -> None:
    state = apply({}, [Fact(A, "snap", 1), Fact(B, "snap", 1), Fact(B, "pass", 1)])
    assert fires(BOTH, state, None) == (1, 1)
    later = apply(state, [Fact(A, "snap", 2), Fact(B, "snap", 2), Fact(B, "fail", 2)])
    assert fires(BOTH, later, (1, 1)) is None  # B's newest passing snapshot is still 1
    assert fires(EITHER, later, (1, 1)) == (2, 2)


def test_a_phase_whose_intermediate_state_fires_something_else_is_racy() -> None:
    start = apply({}, [Fact(A, "snap", 1), Fact(B, "snap", 1), Fact(B, "pass", 1)])
    # B passes 2 and A commits 2 and 3: a resolver that sees A at 2 with B at 2 fires (2, 2), else (3, 2)
    racy = [Fact(A, "snap", 2), Fact(A, "snap", 3), Fact(B, "snap", 2), Fact(B, "pass", 2)]
    assert not order_independent(BOTH, start, (1, 1), racy)
    assert order_independent(BOTH, start, (1, 1), [Fact(A, "snap", 2), Fact(B, "snap", 2), Fact(B, "pass", 2)])


def test_the_schedule_only_keeps_order_independent_phases_and_expects_their_ends() -> None:
    schedule = Schedule(
        7,
        [BOTH, EITHER],
        snapshot_assets=[A, B],
        quality_assets=[B],
        watermark_assets=[],
        commit_time=0,
        watermark_start=0,
    )
    for n in range(1, 9):
        before = dict(schedule.state)
        last = schedule.last["all"]
        phase = schedule.phase(n)
        assert order_independent(BOTH, before, last, phase.facts)
        newest = before.get(A, AssetState()).snap or 0
        assert {f.value for f in phase.facts if f.kind == "snap" and f.asset == A} <= {newest + 1}
    assert schedule.expected.exact["all"], "eight phases fire the ALL_UPDATED rule at least once"
    assert chain_increases(schedule.expected.required["any"])
    assert set(schedule.expected.required["any"]) <= schedule.expected.allowed["any"]


def test_runs_of_an_any_updated_rule_must_form_a_chain() -> None:
    assert chain_increases([(1, 1), (1, 2), (3, 2)])
    assert not chain_increases([(1, 2), (2, 1)])  # incomparable: one of them went backwards
    assert not chain_increases([(1, 1), (1, 1)])  # the same combination twice
