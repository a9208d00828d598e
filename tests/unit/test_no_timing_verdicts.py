"""No verdict of the test suite depends on how busy the machine is: no unit test times itself, no Hypothesis
test has a deadline or fails because its inputs were slow to generate. Bounded work is checked by counting calls
(tests/work_budget.py); a test that hangs is stopped by pytest-timeout."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, settings

from tests.hypothesis_profiles import FAST, FULL
from tests.support import ROOT

CLOCKS = re.compile(r"\b(?:time\.)?(?:monotonic|perf_counter)(?:_ns)?\(\)")
TIMED_DEADLINE = re.compile(r"\bsettings\((?:[^()]|\([^()]*\))*?\bdeadline\s*=\s*(?!None\b)")  # in a settings(...)
SUPPRESSED = re.compile(r"suppress_health_check\s*=\s*\[([^\]]*)\]")


def _sources(folder: str) -> list[tuple[str, str]]:
    return [
        (path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / "tests" / folder).rglob("*.py"))
        if path.name != "test_no_timing_verdicts.py"
    ]


@pytest.mark.parametrize("profile", [FULL, FAST])
def test_no_hypothesis_profile_has_a_deadline_or_the_too_slow_health_check(profile: str) -> None:
    chosen = settings.get_profile(profile)
    assert chosen.deadline is None
    assert HealthCheck.too_slow in chosen.suppress_health_check


def test_no_unit_test_reads_a_clock_to_decide() -> None:
    timed = [path for path, text in _sources("unit") if CLOCKS.search(text)]
    assert timed == [], f"unit tests timing themselves (count calls with tests/work_budget.py instead): {timed}"


def test_no_hypothesis_test_sets_a_deadline_or_leaves_too_slow_checked() -> None:
    found = []
    for path, text in _sources(""):
        if TIMED_DEADLINE.search(text):
            found.append(f"{path}: a deadline")
        found += [f"{path}: [{listed}]" for listed in SUPPRESSED.findall(text) if "too_slow" not in listed]
    assert found == [], f"a test's own settings bring a clock back into its verdict: {found}"
