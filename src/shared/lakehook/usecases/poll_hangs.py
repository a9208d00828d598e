"""A poll that hangs without raising: reported while it hangs, not only once (if ever) it returns.

A read with no timeout of its own (a catalog that accepts the connection and never answers) holds the poller until
Lambda kills it: nothing raises, so the poll status would keep saying the table is fine while no poll of it finishes.
:class:`HangWatch` runs beside each table's poll: when the poll is still running ``after_ms`` after it started (set
below the poll worker's timeout, so the mark is written before Lambda kills the process), it marks the table's poll
status as hanging (``hungSince``: the source BLOCKED, ``POLLER_FAILING``, domain.source_health). The poll that
finishes clears it, whenever it finishes; if none does (the process was killed), the next poll of the table to
finish clears it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

# PollWorkerFunction's Timeout is 150 s (template.yaml): a poll still running at 120 s is killed with its process
HANG_AFTER_MS = 120_000


class HangWatch:
    """Calls ``mark`` once if the watched block is still running ``after_ms`` after it was entered (None: never).
    ``fired`` says whether it did; a mark in progress when the block ends is waited for, so whatever the block's end
    writes next (the status of the finished poll) lands after it."""

    def __init__(self, after_ms: int | None, mark: Callable[[], None]) -> None:
        self._mark = mark
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        self._timer = None if after_ms is None else threading.Timer(after_ms / 1000, self._fire)
        if self._timer is not None:
            self._timer.daemon = True  # a poll that never returns never keeps the process alive

    def __enter__(self) -> HangWatch:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._done = True

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            self._mark()
