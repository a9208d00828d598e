"""The RFC's waits (seed 000 section 6.3), measured by the freshness check on a fake clock and published as
Powertools metrics: the age of an asset's newest snapshot, how far its watermark is behind, and how long a group
has been BLOCKED_BY_QUALITY."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Metrics
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.freshness import Lag, longer, state_lag_seconds, watermark_lag_seconds
from lakehook.domain.state import AssetState
from lakehook.freshness_metrics import publish_freshness
from lakehook.observability import NAMESPACE, MetricName
from lakehook.usecases.freshness import CheckFreshness, FreshnessReport
from tests.fakes.memory import InMemoryAssetRegistry
from tests.unit.test_resolve_usecase import START, A, B, World, rule

MINUTE = 60_000
GATED = {"assetKey": A, "condition": {"qualityStatus": "PASSED"}}


def registered(*keys: str) -> InMemoryAssetRegistry:
    registry = InMemoryAssetRegistry()
    for key in keys:
        registry.put_asset(AssetRegistration.model_validate({"assetKey": key, "format": "paimon"}), START)
    return registry


def check(world: World, registry: InMemoryAssetRegistry, *, evaluate: bool = True) -> FreshnessReport:
    verdicts = (lambda r: world.resolve.evaluate(r, claim=False).verdicts) if evaluate else None
    return CheckFreshness(world.rules, world.triggers, registry, world.reader, lambda: world.now, verdicts)()


@given(
    commit=st.integers(START - 10**10, START),
    now=st.integers(START, START + 10**10),
    watermark=st.integers(START - 10**10, START + 10**10),
)
def test_the_lags_are_the_clock_minus_the_commit_time_and_the_watermark(commit: int, now: int, watermark: int) -> None:
    state = AssetState(assetKey=A, latestCommitTime=commit, latestWatermark=watermark)
    assert state_lag_seconds(state, now) == (now - commit) / 1000
    assert watermark_lag_seconds(state, now) == (now - watermark) / 1000  # negative: the watermark is ahead
    assert state_lag_seconds(AssetState(assetKey=A), now) is None and watermark_lag_seconds(None, now) is None


@given(st.lists(st.tuples(st.floats(-1e9, 1e9), st.sampled_from("abc")), min_size=1))
def test_the_longest_wait_is_kept_with_whose_it_is(waits: list[tuple[float, str]]) -> None:
    found: Lag | None = None
    for seconds, of in waits:
        found = longer(found, seconds, of)
    assert found is not None and found.seconds == max(s for s, _ in waits)
    assert found.of == next(of for s, of in waits if s == found.seconds)  # the first of equal ones


def test_the_check_measures_the_oldest_snapshot_and_the_furthest_watermark_of_registered_assets() -> None:
    world = World()
    world.snap(A, 1, commitTime=START - 90 * MINUTE, watermark=START - 5 * MINUTE)
    world.snap(B, 7, commitTime=START - 10 * MINUTE)
    world.push("WATERMARK_ADVANCED", B, watermark=START - 20 * MINUTE)
    world.now = START + 30 * MINUTE

    report = check(world, registered(A, B, "paimon://lake/ods/never_seen"))

    assert report.state_lag == Lag(120 * 60, A)  # A's snapshot is from 90 minutes before START
    assert report.watermark_lag == Lag(50 * 60, B)  # B's watermark is 20 minutes before START
    assert report.waits() == {"stateLag": {"seconds": 7200.0, "of": A}, "watermarkLag": {"seconds": 3000.0, "of": B}}
    assert report.quality_blocked is None and report.quality_gated == 0  # no rule waits on quality


def test_an_unregistered_asset_is_not_measured() -> None:
    world = World()
    world.snap(A, 1, commitTime=START - 90 * MINUTE)
    assert check(world, registered()).state_lag is None


def test_a_group_blocked_by_quality_is_measured_from_the_commit_that_waits_until_a_check_passes() -> None:
    world = World(rule("gated", GATED, {"assetKey": B}), rule("plain", {"assetKey": B}))
    world.snap(A, 1, commitTime=START - 5 * MINUTE)
    world.snap(B, 7, commitTime=START)
    world.deliver()
    world.now = START + 40 * MINUTE

    report = check(world, registered())
    assert report.quality_blocked == Lag(45 * 60, "gated/g") and report.quality_gated == 1
    assert report.waits()["qualityBlocked"] == {"seconds": 2700.0, "of": "gated/g"}

    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)
    world.deliver()
    passed = check(world, registered())
    assert passed.quality_blocked is None and passed.quality_gated == 1
    assert world.claimed("gated") == [[1, 7]]


def test_a_newer_snapshot_without_a_verdict_waits_from_its_own_commit_once_the_last_one_ran() -> None:
    world = World(rule("gated", GATED))
    world.snap(A, 1, commitTime=START)
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)
    world.deliver()
    assert world.claimed("gated") == [[1]]
    world.snap(A, 2, commitTime=START + 10 * MINUTE)
    world.deliver()
    world.now = START + 25 * MINUTE

    assert check(world, registered()).quality_blocked == Lag(15 * 60, "gated/g")


def test_a_disabled_rule_or_a_check_without_the_resolver_measures_no_quality_wait() -> None:
    world = World(rule("off", GATED, enabled=False))
    world.snap(A, 1, commitTime=START)
    world.now = START + 60 * MINUTE
    assert check(world, registered()).quality_gated == 0
    world.rules.put_rule(rule("on", GATED), world.now)
    assert check(world, registered(), evaluate=False).quality_blocked is None
    assert check(world, registered()).quality_blocked == Lag(3600, "on/g")


# --- the metrics -------------------------------------------------------------------------------------------


@pytest.fixture
def powertools() -> Any:
    sink = Metrics(namespace=NAMESPACE, service="lakehook")
    sink.clear_metrics()
    yield sink
    sink.clear_metrics()


def published(sink: Metrics) -> dict[str, tuple[str, list[float]]]:
    """What Powertools would print: each metric's unit and values."""
    document = json.loads(json.dumps(sink.serialize_metric_set()))
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == NAMESPACE and directive["Dimensions"] == [["service"]]
    return {m["Name"]: (m["Unit"], document[m["Name"]]) for m in directive["Metrics"]}


def test_the_waits_are_published_in_seconds_with_no_asset_dimension(powertools: Metrics) -> None:
    world = World(rule("gated", GATED))
    world.snap(A, 1, commitTime=START - 30 * MINUTE, watermark=START - 11 * MINUTE)
    world.now = START + 2 * MINUTE

    publish_freshness(check(world, registered(A)), powertools)

    assert published(powertools) == {
        MetricName.RULES_OVERDUE: ("Count", [0.0]),
        MetricName.ASSETS_OVERDUE: ("Count", [0.0]),
        MetricName.RULES_UNCHECKED: ("Count", [0.0]),
        MetricName.STATE_LAG: ("Seconds", [32 * 60.0]),
        MetricName.WATERMARK_LAG: ("Seconds", [13 * 60.0]),
        MetricName.BLOCKED_BY_QUALITY: ("Seconds", [32 * 60.0]),
    }


def test_quality_gated_rules_none_blocked_publish_zero_and_nothing_measured_publishes_no_wait(
    powertools: Metrics,
) -> None:
    world = World(rule("gated", GATED))
    world.snap(A, 1)  # no commit time, no watermark: no lag to tell
    world.push("QUALITY_CHECK_PASSED", A, snapshotId=1)
    publish_freshness(check(world, registered(A)), powertools)
    assert published(powertools)[MetricName.BLOCKED_BY_QUALITY] == ("Seconds", [0.0])
    assert MetricName.STATE_LAG not in published(powertools)

    powertools.clear_metrics()
    publish_freshness(FreshnessReport(), powertools)
    assert set(published(powertools)) == {
        MetricName.RULES_OVERDUE,
        MetricName.ASSETS_OVERDUE,
        MetricName.RULES_UNCHECKED,
    }
