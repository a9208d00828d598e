"""A budget of work that does not depend on the machine: the number of Python and C function calls made.

``with call_budget(10_000): ...`` fails with :class:`WorkBudgetExceeded` as soon as the block has made more calls
than that (counted by ``sys.setprofile``, so the count is the same on a quiet machine and on a loaded one). It says
"this work is bounded, not proportional to the size of its input" without a wall-clock limit deciding the verdict,
and it stops a runaway loop at once instead of after a timeout. A call inside C code (a regex engine's own steps,
``json``'s scanner) is one call: budget Python-level work with it, and give C-level work an input so large that
anything but a linear algorithm cannot finish at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

COUNTED = frozenset({"call", "c_call"})


class WorkBudgetExceeded(AssertionError):
    """The block made more calls than its budget."""


@dataclass
class Spent:
    """The calls a block made (read it after the block)."""

    budget: int
    calls: int = 0


@contextmanager
def call_budget(budget: int) -> Iterator[Spent]:
    """Count the calls the block makes on this thread; raise :class:`WorkBudgetExceeded` past ``budget``."""
    spent = Spent(budget)
    previous = sys.getprofile()

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event in COUNTED:
            spent.calls += 1
            if spent.calls > budget:
                sys.setprofile(None)
                raise WorkBudgetExceeded(f"more than {budget} calls: the work grows with its input")

    sys.setprofile(count)
    try:
        yield spent
    finally:
        sys.setprofile(previous)
