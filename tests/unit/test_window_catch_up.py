"""A window backlog is caught up at a bounded pace: one far-future watermark must not start a run per window as
fast as the target answers. A group stepping through windows starts at most ``maxRunsPerEvaluation`` windows behind
the newest closed one per evaluation (a minute); explain counts the rest ("N windows pending, next at …"), and they
start in later evaluations, in order, each exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.coverage import Span
from lakehook.domain.errors import ValidationError
from lakehook.domain.evaluation import Status, evaluate_group
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import DEFAULT_RUNS_PER_EVALUATION, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.time import MAX_ISO_MS, ms_to_iso
from lakehook.domain.triggers import CATCH_UP_PERIOD_MS, GroupCursor, PinnedInput, Trigger, Window
from lakehook.usecases.rules import parse_rule
from tests.hypothesis_profiles import examples
from tests.unit.test_resolve_usecase import START, World, rule
from tests.work_budget import call_budget

A = "paimon://lake/ods/a"
HOUR = 3_600_000
BASE = (START // HOUR) * HOUR  # a window boundary
# Calls (tests/work_budget.py), about ten times what the bounded work takes: a step per window would be millions.
DELIVERY_CALLS = 100_000
EVALUATION_CALLS = 2_000


def hourly(cap: int | None = None) -> Rule:
    policy: dict[str, Any] = {} if cap is None else {"maxRunsPerEvaluation": cap}
    member = {"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}}}
    return rule("w", member, mode="EACH_VERSION", **policy)


def window_ends(world: World) -> list[int]:
    return [t.window.end for k in world.triggers.claim_order if (t := world.triggers.triggers[k]).window is not None]


def explain(world: World) -> dict[str, Any]:
    stored = world.rules.get_rule("w")
    assert stored is not None
    return GroupExplanation.from_domain(world.resolve.evaluate(stored.rule, claim=False).verdicts[("w", "g")]).dump()


@pytest.mark.parametrize("cap", [None, 3])
def test_a_maximal_watermark_starts_at_most_cap_windows_per_evaluation_and_shows_the_backlog(cap: int | None) -> None:
    limit = cap or DEFAULT_RUNS_PER_EVALUATION
    world = World(hourly(cap))
    world.snap(A, 1, watermark=BASE)
    world.deliver()
    assert window_ends(world) == [BASE]
    world.snap(A, 2, watermark=MAX_ISO_MS)  # billions of minutes, tens of millions of hours ahead
    with call_budget(DELIVERY_CALLS):  # bounded work, never a step per window (tens of millions of them)
        world.deliver()  # a target that succeeds at once: each success wakes the group again
    # the first window after the cursor, then ``limit`` catch-up windows, all in one evaluation
    assert window_ends(world) == [BASE + i * HOUR for i in range(limit + 1)]
    newest = (MAX_ISO_MS // HOUR) * HOUR
    shown = explain(world)
    pending = (newest - (BASE + (limit + 1) * HOUR)) // HOUR + 1
    resumes = "2025-06-15T15:07:40Z"  # START + CATCH_UP_PERIOD_MS
    assert shown["status"] == "CATCHING_UP" and shown["until"] == resumes
    assert shown["backlog"] == {
        "pendingWindows": pending,
        "next": {"start": ms_to_iso(BASE + limit * HOUR), "end": ms_to_iso(BASE + (limit + 1) * HOUR)},
        "nextAt": resumes,
    }
    assert f"{pending} windows pending" in shown["reason"] and resumes in shown["reason"]
    # nothing runs before the next evaluation, then the next ``limit`` windows, in order
    world.sweep(CATCH_UP_PERIOD_MS // 2)
    assert len(window_ends(world)) == limit + 1
    world.sweep(CATCH_UP_PERIOD_MS // 2)
    assert window_ends(world) == [BASE + i * HOUR for i in range(2 * limit + 1)]


def test_a_group_not_behind_is_not_held_by_the_cap() -> None:
    world = World(hourly(1))
    for i in range(6):  # one window closes per push: never behind, so no pause
        world.snap(A, i + 1, watermark=BASE + i * HOUR)
        world.deliver()
    assert window_ends(world) == [BASE + i * HOUR for i in range(6)]
    assert "backlog" not in explain(world)


@settings(max_examples=examples(40), deadline=None)
@given(
    cap=st.integers(1, 4),
    jumps=st.lists(st.integers(0, 30), min_size=1, max_size=6),
    shuffle=st.randoms(use_true_random=False),
    waits=st.lists(st.sampled_from([0, 10_000, 30_000, 60_000]), min_size=1, max_size=6),
)
def test_every_window_runs_exactly_once_in_order_at_most_cap_per_evaluation(
    cap: int, jumps: list[int], shuffle: Any, waits: list[int]
) -> None:
    """Snapshots (each with a watermark) pushed out of order and twice, sweeps at any pace: every closed window runs
    once, in order, and no evaluation starts more than ``cap`` windows behind the newest closed one."""
    world = World(hourly(cap))
    world.snap(A, 1, watermark=BASE)
    world.deliver()
    marks = {sid: BASE + sum(jumps[: i + 1]) * HOUR for i, sid in enumerate(range(2, len(jumps) + 2))}
    pushes = list(marks) + shuffle.sample(list(marks), k=len(marks) // 2)
    shuffle.shuffle(pushes)
    for i, sid in enumerate(pushes):
        world.snap(A, sid, watermark=marks[sid])
        world.deliver()
        world.sweep(waits[i % len(waits)])
    for _ in range(max(jumps) * len(jumps)):  # later evaluations drain the backlog, cap windows each at least
        if explain(world)["status"] != "CATCHING_UP":
            break
        world.sweep(CATCH_UP_PERIOD_MS)
    ends = window_ends(world)
    assert ends == [BASE + i * HOUR for i in range(len(ends))], "a window skipped, repeated or out of order"
    assert ends[-1] == max(marks.values()), "a closed window never ran"
    assert explain(world)["status"] != "CATCHING_UP"
    # the bound, from what the claims show: a claim behind the newest closed window of the watermark it pinned
    # counts in the evaluation (a minute) the first such claim opened; one that is not behind ends it
    since: int | None = None
    count = 0
    for key in world.triggers.claim_order:
        claim = world.triggers.triggers[key]
        assert claim.window is not None and claim.inputs[0].watermark is not None
        if claim.window.end >= (claim.inputs[0].watermark // HOUR) * HOUR:
            since, count = None, 0
            continue
        if since is None or claim.created_at >= since + CATCH_UP_PERIOD_MS:
            since, count = claim.created_at, 0
        count += 1
        assert count <= cap, "an evaluation started more windows behind than maxRunsPerEvaluation"


@pytest.mark.parametrize("value", [0, -1, 101, "ten", 2.5])
def test_max_runs_per_evaluation_is_validated_when_the_rule_is_written(value: Any) -> None:
    body = json_form(hourly())
    body["policy"]["maxRunsPerEvaluation"] = value
    with pytest.raises(ValidationError) as caught:
        parse_rule("w", body)
    assert caught.value.field == "policy.maxRunsPerEvaluation"


def test_one_interval_covering_years_of_minute_windows_is_not_enumerated() -> None:
    """A coverage group stepping from a cursor years back: the evaluation is arithmetic, not one step per window."""
    minute = 60_000
    group_rule = Rule.model_validate(
        {
            "ruleId": "c",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": "EACH_VERSION"},
            "groups": [{"groupId": "g", "members": [{"assetKey": A, "condition": {"coverage": {"window": "PT1M"}}}]}],
        }
    )
    now = START
    start = now - 20 * 365 * 86_400_000  # twenty years of minute windows: ten million of them
    start -= start % minute
    last = Trigger(
        trigger_key="k",
        rule_id="c",
        group_id="g",
        inputs=(PinnedInput(asset_key=A, snapshot_id=1, state_version=1),),
        window=Window(start=start - minute, end=start),
        created_at=0,
        updated_at=0,
    )
    cursor = GroupCursor.initial("c", "g").after(last, {})
    state = AssetState(asset_key=A, version=2, latest_snapshot_id=1)
    spans = {A: [Span(start, now)]}
    with call_budget(EVALUATION_CALLS):  # never a step per window (ten million of them)
        verdict = evaluate_group(group_rule, group_rule.groups[0], {A: state}, cursor, now, coverage=spans)
    assert verdict.status is Status.READY and verdict.window == Window(start=start, end=start + minute)
    assert verdict.backlog is not None and verdict.backlog.pending == (now - start) // minute
