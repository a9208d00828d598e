"""Waiting on progress, not on a fixed time: the demo's every wait.

A wait keeps going while something it watches advances (a run starts, a trigger changes status, an asset
gets a snapshot) and gives up only after ``patience`` seconds in which nothing did. On a busy machine a
step may take minutes and still be healthy; a stack that is stuck shows no progress at all. When a wait
gives up it says what is still pending, and the demo checks that once more at its end (:func:`recheck`), to
say whether it finished afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

PATIENCE_SECONDS = 180.0  # no progress at all for this long: the wait gives up
EVERY_SECONDS = 0.7
UNNAMED = "nothing named (the check itself did not hold)"


@dataclass(frozen=True)
class Clock:
    """Where a wait reads the time and how it sleeps (a test passes a fake one)."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class Waited:
    """How a wait ended: ``done``, or given up after ``idle`` seconds without progress, ``seconds`` in all."""

    done: bool
    seconds: float
    idle: float
    pending: tuple[str, ...] = ()
    gave_up_at: float = 0.0

    def describe(self) -> list[str]:
        """Readable lines for a wait that gave up: how long, and each thing still pending."""
        if self.done:
            return []
        lines = [f"gave up after {self.idle:.0f} s with no progress ({self.seconds:.0f} s in all); still pending:"]
        return lines + bullets(self.pending)


def wait_on_progress(
    check: Callable[[], bool],
    progress: Callable[[], Hashable],
    pending: Callable[[], list[str]],
    *,
    patience: float = PATIENCE_SECONDS,
    every: float = EVERY_SECONDS,
    clock: Clock | None = None,
) -> Waited:
    """Poll ``check`` until it holds; ``progress`` returns a look at what is moving (any change is progress);
    after ``patience`` seconds with no change, give up and name what is ``pending``."""
    clock = clock or Clock()
    started = moved = clock.now()
    seen = progress()
    while not check():
        now = clock.now()
        if now - moved >= patience:
            return Waited(False, now - started, now - moved, tuple(pending()), now)
        clock.sleep(every)
        look = progress()
        if look != seen:
            seen, moved = look, clock.now()
    return Waited(True, clock.now() - started, 0.0)


@dataclass(frozen=True)
class GaveUp:
    """A wait that gave up, kept to be checked again at the end of the demo."""

    what: str
    check: Callable[[], bool]
    pending: Callable[[], list[str]]
    waited: Waited


def recheck(gave_up: list[GaveUp], clock: Clock | None = None) -> list[str]:
    """Each wait that gave up, checked once more: did it finish afterwards, or what is still pending."""
    clock = clock or Clock()
    lines: list[str] = []
    for late in gave_up:
        later = clock.now() - late.waited.gave_up_at
        if late.check():
            lines.append(f"'{late.what}': finished afterwards (done when checked again, {later:.0f} s after giving up)")
            continue
        lines.append(f"'{late.what}': still not done {later:.0f} s after giving up; pending:")
        lines += [f"  {line}" for line in bullets(late.pending())]
    return lines


def bullets(pending: Sequence[str]) -> list[str]:
    """Pending things as a list: each one a bullet, a line indented under one (its detail) without."""
    return [f"  {p}" if p.startswith(" ") else f"- {p}" for p in pending or (UNNAMED,)]
