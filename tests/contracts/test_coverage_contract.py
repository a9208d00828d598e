"""The CoverageStore contract (ports.coverage), on the fake and on DynamoDB (day segments): intervals unite, an
interval already covered writes nothing and says so, a partition's coverage is its own; and both driven by the
same generated additions answer every question alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.coverage import Span
from tests.contracts.conftest import Backend
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

ASSET = "s3://spool/orders"
DAY = 86_400_000
T0 = 20_000 * DAY  # a day boundary


def test_intervals_unite_and_a_covered_one_adds_nothing(backend: Backend) -> None:
    coverage = backend.coverage
    assert coverage.add(ASSET, Span(T0, T0 + 10), 1) is True
    assert coverage.add(ASSET, Span(T0 + 20, T0 + 30), 1) is True
    assert coverage.add(ASSET, Span(T0 + 10, T0 + 20), 1) is True  # fills the gap: one interval
    assert coverage.add(ASSET, Span(T0 + 5, T0 + 25), 1) is False

    assert coverage.spans(ASSET, T0 - DAY, T0 + DAY) == [Span(T0, T0 + 30)]
    assert coverage.spans(ASSET, T0 + 5, T0 + 7) == [Span(T0 + 5, T0 + 7)]  # clipped
    assert coverage.spans(ASSET, T0 + 30, T0 + 40) == []


def test_an_interval_across_days_is_one_interval(backend: Backend) -> None:
    coverage = backend.coverage
    assert coverage.add_many(ASSET, [Span(T0 - 100, T0 + 2 * DAY + 100), Span(T0 + 5 * DAY, T0 + 5 * DAY + 1)], 1)
    assert coverage.add_many(ASSET, [Span(T0, T0 + DAY)], 2) is False

    assert coverage.spans(ASSET, T0 - DAY, T0 + 6 * DAY) == [
        Span(T0 - 100, T0 + 2 * DAY + 100),
        Span(T0 + 5 * DAY, T0 + 5 * DAY + 1),
    ]


def test_a_partitions_coverage_is_its_own(backend: Backend) -> None:
    coverage = backend.coverage
    coverage.add(ASSET, Span(T0, T0 + 10), 1, partition_key="region=eu")

    assert coverage.spans(ASSET, T0, T0 + DAY) == []
    assert coverage.spans(ASSET, T0, T0 + DAY, partition_key="region=us") == []
    assert coverage.spans(ASSET, T0, T0 + DAY, partition_key="region=eu") == [Span(T0, T0 + 10)]


# quarter hours from half a day before T0 to three days after: intervals touch, overlap and cross days
QUARTER = 15 * 60_000
POINTS = st.integers(-48, 3 * 96).map(lambda q: T0 + q * QUARTER)
SPANS = st.tuples(POINTS, POINTS).filter(lambda p: p[0] != p[1]).map(lambda p: Span(min(p), max(p)))
PARTITIONS = st.sampled_from([None, None, "region=eu"])


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    additions=st.lists(st.tuples(st.lists(SPANS, min_size=1, max_size=4), PARTITIONS), min_size=1, max_size=12),
    asked=st.lists(st.tuples(SPANS, PARTITIONS), min_size=1, max_size=4),
)
def test_the_fake_covers_what_dynamodb_covers(
    both: Callable[[], tuple[Backend, Backend]],
    additions: list[tuple[list[Span], str | None]],
    asked: list[tuple[Span, str | None]],
) -> None:
    fake, adapter = both()
    for n, (spans, partition) in enumerate(additions):
        said = fake.coverage.add_many(ASSET, spans, n, partition)
        truth = adapter.coverage.add_many(ASSET, spans, n, partition)
        assert said == truth, f"addition {n} {spans} ({partition}): the fake said {said}, DynamoDB {truth}"
    for window, partition in [
        *asked,
        (Span(T0 - DAY, T0 + 4 * DAY), None),
        (Span(T0 - DAY, T0 + 4 * DAY), "region=eu"),
    ]:
        said_spans = fake.coverage.spans(ASSET, window.start, window.end, partition)
        assert said_spans == adapter.coverage.spans(ASSET, window.start, window.end, partition), (window, partition)
