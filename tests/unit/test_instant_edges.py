"""Every instant ingest accepts can be evaluated: windows, lateness and coverage near 1970 and near the last
instant lakehook holds (9999-12-31T23:59:59.999Z) never make an evaluation raise, and what explain shows of
them is always valid JSON with ISO 8601 instants."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.explain import GroupExplanation
from lakehook.domain.coverage import Span
from lakehook.domain.evaluation import Status, evaluate_group
from lakehook.domain.rules import MAX_LATENESS_SECONDS, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.time import MAX_ISO_MS
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, Window
from tests.hypothesis_profiles import examples

A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"
WINDOWS = {"PT1M": 60_000, "PT15M": 900_000, "PT1H": 3_600_000, "P1D": 86_400_000, "P31D": 31 * 86_400_000}
EDGE = 40 * 86_400_000  # a little more than the longest window plus the longest lateness

# Instants anywhere in the accepted range, weighted to both of its ends.
instants = st.one_of(
    st.integers(0, MAX_ISO_MS), st.integers(MAX_ISO_MS - EDGE, MAX_ISO_MS), st.integers(0, EDGE), st.just(MAX_ISO_MS)
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Rule, dict[str, AssetState], GroupCursor | None, int, dict[str, list[Span]]]:
    window = draw(st.sampled_from(sorted(WINDOWS)))
    size = WINDOWS[window]
    spec = {"window": window, "allowedLatenessSeconds": draw(st.integers(0, MAX_LATENESS_SECONDS))}
    members: list[dict[str, Any]] = [{"assetKey": A, "condition": {"watermarkAtLeast": spec}}]
    covered = draw(st.booleans())
    if covered:
        members.append({"assetKey": B, "condition": {"coverage": {**spec, "allowedLatenessSeconds": 0}}})
    rule = Rule.model_validate(
        {
            "ruleId": "r",
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "policy": {"mode": draw(st.sampled_from(["ALL_UPDATED", "EACH_VERSION", "ANY_UPDATED"]))},
            "groups": [{"groupId": "g", "members": members}],
        }
    )
    watermark = draw(instants)
    now = draw(st.integers(0, MAX_ISO_MS - EDGE))  # the server's clock, not an input: well before year 9999
    states = {
        A: AssetState(asset_key=A, version=2, latest_snapshot_id=draw(st.integers(1, 5)), latest_watermark=watermark),
        B: AssetState(asset_key=B, version=2, latest_snapshot_id=1),
    }
    cursor = None
    if draw(st.booleans()):
        # A triggered window had closed: its end plus lateness was at most a watermark (or the clock).
        # A coverage member's windows close by the clock, so a group with one triggered no window after now.
        closed = min(draw(instants), now) if covered else draw(instants)
        end = (max(0, closed - spec["allowedLatenessSeconds"] * 1000) // size) * size
        pins = [PinnedInput(asset_key=A, snapshot_id=1, state_version=1)]
        if covered:
            pins.append(PinnedInput(asset_key=B, snapshot_id=1, state_version=1))
        last = Trigger(
            trigger_key="k",
            rule_id="r",
            group_id="g",
            inputs=tuple(pins),
            window=Window(start=max(0, end - size), end=end),
            created_at=0,
            updated_at=0,
        )
        cursor = GroupCursor.initial("r", "g").after(last, {})
    spans: list[Span] = []
    for _ in range(draw(st.integers(0, 3))):
        start = draw(instants)
        spans.append(Span(start, draw(st.integers(start + 1, MAX_ISO_MS + 1))))
    spans.sort()
    return rule, states, cursor, now, {B: spans} if covered else {}


@settings(max_examples=examples(400), deadline=None)
@given(cases())
def test_no_instant_ingest_accepts_makes_an_evaluation_raise(
    case: tuple[Rule, dict[str, AssetState], GroupCursor | None, int, dict[str, list[Span]]],
) -> None:
    rule, states, cursor, now, coverage = case
    verdict = evaluate_group(rule, rule.groups[0], states, cursor, now, coverage=coverage)
    shown = json.loads(json.dumps(GroupExplanation.from_domain(verdict).dump()))
    assert shown["status"] == verdict.status.value
    if verdict.status is Status.READY and verdict.window is not None:
        assert 0 <= verdict.window.start < verdict.window.end <= MAX_ISO_MS  # closed: its end was passed
