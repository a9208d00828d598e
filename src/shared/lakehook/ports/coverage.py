"""Port of interval coverage: the merged ``[start, end)`` intervals kept per asset (and partition)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from lakehook.domain.coverage import Span


class CoverageStore(ABC):
    """Merged coverage intervals per asset, or per (asset, partition key) when one is given.

    Adding is a read-modify-write of the day segments the interval touches, each made a
    conditional write on the segment's version, so concurrent writers never lose an interval.
    """

    @abstractmethod
    def add(self, asset_key: str, span: Span, now_ms: int, partition_key: str | None = None) -> bool:
        """Unite ``span`` into the coverage. True if it covered anything that was not covered before.

        Idempotent: adding a covered interval again writes nothing. Raises ConflictError when the
        segment kept moving under it (after many retries) and CoverageTooFragmentedError when a
        day would hold more fragments than a segment can store.
        """

    @abstractmethod
    def add_many(self, asset_key: str, spans: Iterable[Span], now_ms: int, partition_key: str | None = None) -> bool:
        """Unite many intervals at once (a backfill, a batch of events): one write per day touched.

        True if any of them covered something new; otherwise as :meth:`add`.
        """

    @abstractmethod
    def spans(self, asset_key: str, start: int, end: int, partition_key: str | None = None) -> list[Span]:
        """The merged intervals within ``[start, end)``, clipped to it, oldest first."""
