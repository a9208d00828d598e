"""A small per-process cache of catalogs, so a warm poller does not rebuild clients on every poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class CatalogCache(Generic[T]):
    """Entries live ``ttl_seconds`` (so rotated credentials are picked up) and are dropped on access errors."""

    def __init__(self, ttl_seconds: float = 900.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_seconds
        self._clock = clock
        self._entries: dict[str, tuple[float, T]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, build: Callable[[], T]) -> T:
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now - entry[0] < self._ttl:
                return entry[1]
        value = build()  # outside the lock: building may do network I/O
        with self._lock:
            self._entries[key] = (now, value)
        return value

    def evict(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)
