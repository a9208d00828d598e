"""InMemoryCoverageStore: each asset's covered intervals, merged under a lock."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from lakehook.domain.coverage import Span, clip, merge
from lakehook.ports.coverage import CoverageStore


class InMemoryCoverageStore(CoverageStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.merged: dict[tuple[str, str | None], list[Span]] = {}

    def add(self, asset_key: str, span: Span, now_ms: int, partition_key: str | None = None) -> bool:
        return self.add_many(asset_key, [span], now_ms, partition_key)

    def add_many(self, asset_key: str, spans: Iterable[Span], now_ms: int, partition_key: str | None = None) -> bool:
        with self._lock:
            old = self.merged.get((asset_key, partition_key), [])
            new = merge([*old, *spans])
            self.merged[(asset_key, partition_key)] = new
            return new != old

    def spans(self, asset_key: str, start: int, end: int, partition_key: str | None = None) -> list[Span]:
        with self._lock:
            return clip(self.merged.get((asset_key, partition_key), []), start, end)
