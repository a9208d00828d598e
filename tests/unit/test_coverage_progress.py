"""Coverage progress: the covered share of ``[start, end)`` (covered ms / total ms, exact, 4 places), checked on
generated intervals against a millisecond-by-millisecond reference, and as the CLI prints it."""

from __future__ import annotations

import argparse
import io
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lakehook.cli_commands.commands import coverage
from lakehook.cli_commands.output import captured
from lakehook.domain.coverage import CoverageAnswer, covered_ratio, merge

BOUND = 400  # small enough that the reference can walk every millisecond

intervals = st.lists(st.tuples(st.integers(0, BOUND), st.integers(0, BOUND)).map(sorted).map(tuple), max_size=12)
queries = st.tuples(st.integers(0, BOUND - 1), st.integers(1, BOUND)).filter(lambda q: q[0] < q[1])


def reference_covered_ms(spans: list[tuple[int, int]], start: int, end: int) -> int:
    return sum(1 for ms in range(start, end) if any(s <= ms < e for s, e in spans))


def reference_ratio(covered: int, total: int) -> float:
    exact = Decimal(covered) / Decimal(total)  # default context: 28 digits, enough for these
    return float(exact.quantize(Decimal("0.0001"), rounding=ROUND_HALF_EVEN))


@given(intervals, queries)
def test_the_covered_share_matches_a_per_millisecond_reference(spans: list[Any], query: tuple[int, int]) -> None:
    start, end = query
    answer = CoverageAnswer.of("s3://spool/orders", merge(spans), start, end)
    covered = reference_covered_ms(spans, start, end)
    assert (answer.covered_ms, answer.total_ms) == (covered, end - start)
    assert answer.ratio == reference_ratio(covered, end - start)
    assert answer.covered is (covered == end - start)
    if answer.covered:
        assert answer.ratio == 1.0
    if covered == 0:
        assert answer.ratio == 0.0


@given(st.integers(1, 10**12).flatmap(lambda total: st.tuples(st.integers(0, total), st.just(total))))
def test_the_ratio_is_exact_for_spans_of_years_of_milliseconds(pair: tuple[int, int]) -> None:
    covered, total = pair
    assert covered_ratio(covered, total) == reference_ratio(covered, total)


def test_rounding_is_to_four_places_half_to_even() -> None:
    assert covered_ratio(1, 3) == 0.3333
    assert covered_ratio(2, 3) == 0.6667
    assert covered_ratio(12345, 100000) == 0.1234  # 0.12345: half to even
    assert covered_ratio(12355, 100000) == 0.1236
    assert covered_ratio(0, 5) == 0.0 and covered_ratio(5, 5) == 1.0


def test_the_cli_prints_the_progress_and_keeps_the_gap_exit_code() -> None:
    body = {
        "assetKey": "s3://spool/orders",
        "start": "2025-06-14T03:00:00Z",
        "end": "2025-06-14T03:30:00Z",
        "covered": False,
        "missing": [{"start": "2025-06-14T03:10:00Z", "end": "2025-06-14T03:25:00Z"}],
        "coveredRatio": 0.5,
        "coveredMs": 900000,
        "totalMs": 1800000,
    }

    class Answers:
        def get(self, path: str, query: Any = None) -> dict[str, Any]:
            assert path == "/assets/coverage"
            return body

    args = argparse.Namespace(asset="s3://spool/orders", start="a", end="b", partition=None, output="text")
    stdout, stderr = io.StringIO(), io.StringIO()
    with captured(stdout, stderr):
        code = coverage(Answers(), args)  # type: ignore[arg-type]
    assert code == 3
    assert stdout.getvalue().splitlines() == [
        "s3://spool/orders [2025-06-14T03:00:00Z, 2025-06-14T03:30:00Z): NOT covered",
        "  progress 50.00% (900000 of 1800000 ms covered)",
        "  missing [2025-06-14T03:10:00Z, 2025-06-14T03:25:00Z)",
    ]
