"""The call budget (tests/work_budget.py) that stands in for wall-clock limits: it counts, it stops work that
grows with its input at once, and it leaves the profiler as it found it."""

from __future__ import annotations

import sys

import pytest

from tests.work_budget import WorkBudgetExceeded, call_budget


def _step(n: int) -> int:
    return n + 1


def test_the_calls_of_the_block_are_counted() -> None:
    with call_budget(1_000) as spent:
        for n in range(10):
            _step(n)
    assert 10 <= spent.calls <= 20  # ten steps, and the range and the exit of the block


def test_work_that_grows_with_its_input_is_stopped_past_the_budget() -> None:
    steps: list[int] = []
    with pytest.raises(WorkBudgetExceeded, match="more than 100 calls"), call_budget(100):
        for n in range(1_000_000):
            steps.append(_step(n))
    assert len(steps) < 100  # stopped at once, not after the million


def test_the_previous_profiler_is_restored() -> None:
    before = sys.getprofile()
    with call_budget(10):
        pass
    assert sys.getprofile() is before
    with pytest.raises(WorkBudgetExceeded), call_budget(1):
        _step(1)
        _step(2)
    assert sys.getprofile() is before
