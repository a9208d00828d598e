"""Hypothesis profiles: ``full`` (the default, what ``make test`` runs) and ``fast`` (``make test-fast``); ``mutation``
(``make mutation``) is ``fast`` derandomized, without an example database, and does not shrink a failing example.

A test that asks for its own number of examples writes ``max_examples=examples(200)``: 200 under ``full``, at most
:data:`FAST_EXAMPLES` under ``fast``. A test without its own number takes the profile's. Choose a profile with
``pytest --hypothesis-profile=fast`` (or ``HYPOTHESIS_PROFILE=fast``).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

FULL = "full"
FAST = "fast"
MUTATION = "mutation"  # make mutation: the fast profile's examples, the same ones on every run (bench/mutation.py)
FAST_EXAMPLES = 10

# No verdict of either profile depends on the clock: no per-example deadline, and no health check failing a test
# whose inputs take long to generate (on a loaded machine they do). A test that lists its own suppressed health
# checks lists too_slow as well (tests/unit/test_no_timing_verdicts.py holds both).
UNTIMED: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile(FULL, settings.get_profile("default"), **UNTIMED)
settings.register_profile(FAST, max_examples=FAST_EXAMPLES, **UNTIMED)
# make mutation asks only whether a mutant fails a test: a failing example is not shrunk (shrinking a list of
# thousands of keys took minutes a mutant), which changes no verdict.
NO_SHRINK = (Phase.explicit, Phase.generate)
settings.register_profile(
    MUTATION, max_examples=FAST_EXAMPLES, derandomize=True, database=None, phases=NO_SHRINK, **UNTIMED
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", FULL))


def examples(wanted: int) -> int:
    """``wanted`` examples under the full profile, at most :data:`FAST_EXAMPLES` under the fast one."""
    return min(wanted, FAST_EXAMPLES) if settings.get_current_profile_name() in (FAST, MUTATION) else wanted
