"""Stop a long-running command on Ctrl-C or SIGTERM, however many threads it runs.

Python runs a signal handler in the main thread only, and only when that thread runs Python code. A signal
the kernel hands to another thread (any of the local stack's server or poller threads) does not wake a main
thread blocked in ``Event.wait()`` with no timeout (CPython issue #85300), so the command would never stop.
Waiting in short slices lets the main thread run the handler within one slice.
"""

from __future__ import annotations

import signal
import threading

SLICE_SECONDS = 0.25


def stop_on_signals() -> threading.Event:
    """An event set by SIGINT or SIGTERM (call from the main thread, before the work starts)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_until_set(stop: threading.Event) -> None:
    """Block until ``stop`` is set, waking every slice so that a pending signal handler runs."""
    while not stop.wait(SLICE_SECONDS):
        pass
