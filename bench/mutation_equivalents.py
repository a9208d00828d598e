"""Equivalent mutants: survivors no test can kill, because the mutated code behaves as the code does.

Each entry is the mutant's name, the line mutmut wrote (the reason holds for that line only: a mutant renumbered by a
change of its function shows without a reason until it is judged again) and the reason, one line, written into the
survivors list of ``bench/results.md`` by ``bench.mutation``.
"""

from __future__ import annotations

EQUIVALENT: dict[str, tuple[str, str]] = {}
