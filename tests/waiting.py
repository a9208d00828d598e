"""Waiting for something that runs on its own (a local stack's functions, Airflow's scheduler, a subprocess) to get
somewhere: the one timed loop of the e2e and integration suites.

The time only bounds the wait; the verdict is the caller's assertion on what the check found (:func:`wait_for`) or
the missing thing named (:func:`wait_until`), never how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], seconds: float = 20.0, every: float = 0.1) -> T:
    """``check``'s first truthy answer, asked every ``every`` s; its last (falsy) answer once ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(every)


def wait_until(what: str | Callable[[], Any], check: Callable[[], T], seconds: float = 20.0, every: float = 0.1) -> T:
    """Like :func:`wait_for`; when ``check`` never answered, AssertionError naming ``what`` (a text, or a function
    that describes what was found instead, asked then)."""
    found = wait_for(check, seconds, every)
    if not found:
        described = what() if callable(what) else what
        raise AssertionError(f"{described} (not within {seconds:g} s)")
    return found
