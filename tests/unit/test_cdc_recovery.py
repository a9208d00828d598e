"""``cdcRecoveredTo``: a member waits until its asset's CDC source has caught up (``CDC_LAG_RECOVERED``'s watermark)
to an instant, or to the end of the window its group runs for. The condition on generated states against a
reference, the group's window step, the resolver on the in-memory fakes running exactly when the source recovered,
the rule refused when the condition is misspelt, and the lag metric at ingest."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Metrics
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.conditions import CdcRecoveredAtLeast, CdcRecoveredWindow, conditions_of
from lakehook.domain.errors import ValidationError
from lakehook.domain.evaluation import evaluate_group, select_member
from lakehook.domain.events import AssetEvent, EventResult, IngestStatus, SourceType
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Member, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import GroupCursor, Window
from lakehook.event_metrics import publish_cdc_lag
from lakehook.observability import NAMESPACE, MetricName
from lakehook.usecases.rules import parse_rule
from tests.fakes.memory import InMemoryAssetStore
from tests.unit.test_resolve_usecase import START, World, rule
from tests.unit.test_window_catch_up import explain, window_ends
from tests.wiring import ingest_events

A = "paimon://lake/ods/orders"
B = "paimon://lake/ods/payments"
HOUR = 3_600_000
BASE = (START // HOUR) * HOUR  # a window boundary
instants = st.integers(0, 2**43)
recoveries = st.none() | instants


def cdc_member(key: str = A, **condition: Any) -> Member:
    return Member.model_validate({"assetKey": key, "condition": condition})


def state(key: str = A, **fields: Any) -> AssetState:
    return AssetState(asset_key=key, version=3, **fields)


# --- the condition alone -------------------------------------------------------------------------------------


@given(recovered=recoveries, floor=instants, snapshot=st.none() | st.integers(1, 10**6))
def test_an_instant_holds_exactly_when_the_source_caught_up_to_it(
    recovered: int | None, floor: int, snapshot: int | None
) -> None:
    member = cdc_member(cdcRecoveredTo=floor)
    verdict = select_member(member, state(latest_snapshot_id=snapshot, cdc_recovered_watermark=recovered))
    # the reference: a snapshot first (snapshotRequired precedes), then the recovery watermark at or past the floor
    if snapshot is None:
        assert verdict.status is Status.BLOCKED_BY_SNAPSHOT
    elif recovered is None or recovered < floor:
        seen = "no CDC_LAG_RECOVERED reported yet" if recovered is None else f"caught up to {ms_to_iso(recovered)}"
        assert verdict.status is Status.BLOCKED_BY_CDC_LAG
        assert verdict.reason is not None and seen in verdict.reason and f"needs {ms_to_iso(floor)}" in verdict.reason
    else:
        assert verdict.status is Status.READY and verdict.pin is not None and verdict.pin.snapshot_id == snapshot
    # explain shows what was seen and what is required
    assert verdict.required["cdcRecoveredTo"] == floor
    if snapshot is not None:
        assert verdict.current.get("cdcRecoveredWatermark") == recovered


def test_the_rules_are_built_only_when_asked_and_run_after_the_watermark() -> None:
    assert not any(isinstance(r, CdcRecoveredAtLeast | CdcRecoveredWindow) for r in conditions_of(cdc_member()))
    kinds = [type(r) for r in conditions_of(cdc_member(watermarkAtLeast=5, cdcRecoveredTo=7))]
    assert kinds[-1] is CdcRecoveredAtLeast and kinds.index(CdcRecoveredAtLeast) > 0
    windowed = cdc_member(watermarkAtLeast={"window": "PT1H"}, cdcRecoveredTo="window")
    assert type(conditions_of(windowed)[-1]) is CdcRecoveredWindow
    # the watermark's block comes first, as explain's order says
    both = select_member(cdc_member(watermarkAtLeast=10, cdcRecoveredTo=10), state(latest_snapshot_id=1))
    assert both.status is Status.BLOCKED_BY_WATERMARK


def test_the_instant_may_be_iso_8601_and_is_stored_as_epoch_milliseconds() -> None:
    condition = cdc_member(cdcRecoveredTo="2025-06-01T10:00:00Z").condition
    assert condition.cdc_floor == 1_748_772_000_000 and not condition.cdc_window
    assert json_form(condition)["cdcRecoveredTo"] == 1_748_772_000_000


# --- the window step ---------------------------------------------------------------------------------------------


def windowed_rule(mode: str) -> Rule:
    return rule(
        "w",
        {"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}}},
        {"assetKey": B, "condition": {"cdcRecoveredTo": "window"}},
        mode=mode,
    )


@given(
    watermark=st.integers(BASE, BASE + 48 * HOUR),
    recovered=st.none() | st.integers(BASE - 3 * HOUR, BASE + 48 * HOUR),
    last=st.none() | st.integers(0, 12),
    mode=st.sampled_from(["ALL_UPDATED", "EACH_VERSION"]),
)
def test_the_window_runs_only_once_the_source_caught_up_to_its_end(
    watermark: int, recovered: int | None, last: int | None, mode: str
) -> None:
    r = windowed_rule(mode)
    states = {
        A: state(A, latest_snapshot_id=2, latest_watermark=watermark),
        B: state(B, latest_snapshot_id=2, cdc_recovered_watermark=recovered),
    }
    cursor = None
    if last is not None:
        end = BASE + last * HOUR
        cursor = GroupCursor(ruleId="w", groupId="g", seq=1, window=Window(start=end - HOUR, end=end))
    verdict = evaluate_group(r, r.groups[0], states, cursor, BASE + 49 * HOUR)
    # the reference: the newest window each has closed (the watermark) or caught up to (the CDC source)
    if recovered is None:
        assert verdict.status is Status.BLOCKED_BY_CDC_LAG
        assert "no CDC_LAG_RECOVERED reported yet" in (verdict.reason or "")
        return
    closed, caught_up = (watermark // HOUR) * HOUR, (recovered // HOUR) * HOUR
    newest = min(closed, caught_up)
    need = newest if cursor is None else BASE + (last or 0) * HOUR + HOUR
    if newest < need:
        expected = Status.BLOCKED_BY_WATERMARK if closed < need else Status.BLOCKED_BY_CDC_LAG
        assert verdict.status is expected, verdict
        reason = verdict.reason or ""
        if expected is Status.BLOCKED_BY_CDC_LAG:
            assert f"window ending {ms_to_iso(need)} needs the CDC source caught up to its end" in reason
            assert f"caught up to {ms_to_iso(recovered)}" in reason
        return
    assert verdict.status in (Status.READY, Status.CATCHING_UP), verdict
    assert verdict.window is not None
    assert verdict.window.end <= caught_up <= recovered  # never a window the source has not caught up to
    stepwise = mode == "EACH_VERSION" and cursor is not None
    assert verdict.window.end == (need if stepwise else newest)


# --- the resolver on the in-memory fakes ---------------------------------------------------------------------------


def test_the_resolver_runs_a_window_exactly_when_the_source_recovered_past_its_end() -> None:
    member = {"assetKey": A, "condition": {"watermarkAtLeast": {"window": "PT1H"}, "cdcRecoveredTo": "window"}}
    world = World(rule("w", member))
    world.snap(A, 1, watermark=BASE + HOUR)  # the watermark closed the window ending BASE + 1h
    assert world.deliver().claimed == []
    shown = explain(world)
    assert shown["status"] == "BLOCKED_BY_CDC_LAG" and "no CDC_LAG_RECOVERED reported yet" in shown["reason"]
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE + HOUR - 1)  # one millisecond short of that window's end
    world.deliver()
    assert window_ends(world) == [BASE]  # the window it did catch up to, not the newer one
    world.snap(A, 2, watermark=BASE + 3 * HOUR)
    assert world.deliver().claimed == []
    shown = explain(world)
    assert shown["status"] == "BLOCKED_BY_CDC_LAG"
    (seen,) = shown["members"]
    assert seen["current"]["cdcRecoveredWatermark"] == BASE + HOUR - 1
    assert seen["required"]["cdcRecoveredTo"] == BASE + HOUR
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE + 2 * HOUR)  # exactly the end of the window after BASE + 1h
    world.deliver()
    assert window_ends(world) == [BASE, BASE + 2 * HOUR]  # ALL_UPDATED: the newest window both have closed
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE + 2 * HOUR)  # a redelivery runs nothing again
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE + HOUR)  # nor does an older, late recovery
    world.deliver()
    assert window_ends(world) == [BASE, BASE + 2 * HOUR]


def test_the_resolver_runs_an_instant_member_once_recovered_and_not_before() -> None:
    world = World(rule("w", {"assetKey": A, "condition": {"cdcRecoveredTo": ms_to_iso(BASE)}}))
    world.snap(A, 1)
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE - 1)
    assert world.deliver().claimed == []
    assert explain(world)["status"] == "BLOCKED_BY_CDC_LAG"
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE)
    world.deliver()
    assert world.claimed("w") == [[1]]


def test_each_version_holds_until_the_source_recovered_then_runs_each_later_version_in_order() -> None:
    world = World(rule("w", {"assetKey": A, "condition": {"cdcRecoveredTo": BASE}}, mode="EACH_VERSION"))
    world.snap(A, 1, 2)
    assert world.deliver().claimed == []
    assert explain(world)["status"] == "BLOCKED_BY_CDC_LAG"
    world.push("CDC_LAG_RECOVERED", A, watermark=BASE + 1)
    world.deliver()
    # every version seen while the source lagged runs once it recovered, in order, from the oldest (the first
    # trigger starts at the oldest snapshot seen arrive: docs/rules.md, "Where it starts")
    assert world.claimed("w") == [[1], [2]]
    world.snap(A, 3, 4)
    world.deliver()
    assert world.claimed("w") == [[1], [2], [3], [4]]


# --- the rule is checked when written ----------------------------------------------------------------------------


def with_condition(condition: dict[str, Any], *, windowed: bool = False) -> dict[str, Any]:
    members: list[dict[str, Any]] = [{"assetKey": A, "condition": condition}]
    if windowed:
        members.append({"assetKey": B, "condition": {"watermarkAtLeast": {"window": "PT1H"}}})
    return {"groups": [{"groupId": "g", "members": members}], "target": {"type": "eventbridge", "eventBusName": "b"}}


@pytest.mark.parametrize(
    ("condition", "field", "words"),
    [
        ({"cdcRecoveredTo": "windows"}, "groups.0.members.0.condition.cdcRecoveredTo", '"window"'),
        ({"cdcRecoveredTo": True}, "groups.0.members.0.condition.cdcRecoveredTo", "boolean"),
        ({"cdcRecoveredTo": "2025-06-01T10:00:00"}, "groups.0.members.0.condition.cdcRecoveredTo", "zone"),
        ({"cdcRecoveredTo": 1.5}, "groups.0.members.0.condition.cdcRecoveredTo", "instant"),
        ({"cdcRecoveredTo": {"window": "PT1H"}}, "groups.0.members.0.condition.cdcRecoveredTo", "instant"),
        ({"cdcLagRecovered": True}, "groups.0.members.0.condition.cdcLagRecovered", "Extra inputs"),
        ({"cdcRecoveredTo": "window"}, "groups.0.members", "members.0.condition.cdcRecoveredTo"),
    ],
)
def test_a_misspelt_condition_is_refused_naming_the_field(condition: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_rule("r", with_condition(condition))
    assert refused.value.field == field, refused.value
    assert words in str(refused.value)


def test_a_window_with_a_windowed_member_and_an_instant_anywhere_are_accepted() -> None:
    windowed = parse_rule("r", with_condition({"cdcRecoveredTo": "window"}, windowed=True))
    assert windowed.groups[0].members[0].condition.cdc_window
    instant = parse_rule("r", with_condition({"cdcRecoveredTo": 1_748_772_000_000}))
    assert instant.groups[0].members[0].condition.cdc_floor == 1_748_772_000_000


# --- the lag metric ------------------------------------------------------------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.values: list[tuple[str, str, float]] = []

    def add_metric(self, name: str, unit: str, value: float) -> None:
        self.values.append((name, unit, value))


def test_the_lag_is_published_for_each_accepted_recovery_only() -> None:
    recovered = AssetEvent(eventType="CDC_LAG_RECOVERED", assetKey=A, watermark=START - 90_000)
    ahead = AssetEvent(eventType="CDC_LAG_RECOVERED", assetKey=B, watermark=START + 5_000)
    other = AssetEvent(eventType="WATERMARK_ADVANCED", assetKey=A, watermark=START - 1)
    accepted = EventResult(status=IngestStatus.ACCEPTED)
    duplicate = EventResult(status=IngestStatus.DUPLICATE)
    rejected = EventResult(status=IngestStatus.REJECTED)
    sink = Sink()
    events = [recovered, ahead, other, recovered, rejected]
    publish_cdc_lag(events, [accepted, accepted, accepted, duplicate, rejected], START, sink)
    assert sink.values == [(MetricName.CDC_LAG, "Seconds", 90.0), (MetricName.CDC_LAG, "Seconds", 0.0)]


def test_ingest_publishes_the_lag_of_a_pushed_recovery_through_powertools() -> None:
    sink = Metrics(namespace=NAMESPACE, service="lakehook")  # Powertools' metric set is shared by its instances
    sink.clear_metrics()
    try:
        ingest = ingest_events(InMemoryAssetStore(), clock=lambda: START)
        body = {"eventType": "CDC_LAG_RECOVERED", "assetKey": A, "watermark": START - 42_000}
        assert [r.status for r in ingest.ingest_raw([body], SourceType.PUSH)] == [IngestStatus.ACCEPTED]
        assert [r.status for r in ingest.ingest_raw([body], SourceType.PUSH)] == [IngestStatus.DUPLICATE]
        document = json.loads(json.dumps(sink.serialize_metric_set()))
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Dimensions"] == [["service"]]  # no asset key as a dimension
        assert [(m["Name"], m["Unit"]) for m in directive["Metrics"]] == [(MetricName.CDC_LAG, "Seconds")]
        assert document[MetricName.CDC_LAG] == [42.0]  # one value: the duplicate publishes none
    finally:
        sink.clear_metrics()
