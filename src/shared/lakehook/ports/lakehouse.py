"""Ports of the lakehouse side: reading table snapshots, and keeping per-asset poll health."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.errors import LakehookError
from lakehook.domain.snapshots import PollStatus, SnapshotCursor, SnapshotGap, SnapshotInfo, TagInfo


class TableNotFoundError(LakehookError):
    """The catalog has no such table (or no such database)."""


class SourceAccessError(LakehookError):
    """The catalog or the table's storage could not be reached, refused access, or is misconfigured."""


class CorruptMetadataError(LakehookError):
    """The table's metadata or snapshot files exist but cannot be read as what they claim to be."""


@dataclass(frozen=True)
class SnapshotBatch:
    """What a read of a table found after a cursor.

    ``snapshots`` are new, in commit order, at most the limit asked for (``complete`` is False
    when more remain). ``tags`` are the tags and branches not among the known ones;
    ``tag_names`` are all of them as events name them. ``gap`` is set when the cursor's
    successors expired before they were read. ``warnings`` say what the reader found wrong with the
    table without failing the poll (a Hudi instant dated in the future); the poll status keeps them.
    ``blockers`` name versions the table has that the reader cannot represent (a Hudi instant whose time cannot be a
    date): they are not read, and the source is BLOCKED while a read finds any (domain.source_health).
    """

    pointer: str
    snapshots: list[SnapshotInfo] = field(default_factory=list)
    tags: list[TagInfo] = field(default_factory=list)
    tag_names: frozenset[str] = frozenset()
    latest_snapshot_id: int | None = None
    oldest_retained_snapshot_id: int | None = None
    gap: SnapshotGap | None = None
    complete: bool = True
    warnings: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()


class SnapshotSource(ABC):
    """Reads one table format's snapshots through its catalog. Errors are the three above."""

    @abstractmethod
    def pointer(self, source: AssetSource) -> str:
        """The cheap "did anything change?" read: a value that changes with every commit.

        Iceberg: the current metadata location; Paimon: the ``LATEST`` hint ("" when the table
        has no snapshot yet). Costs one catalog or storage read and never grows with history.
        """

    def unchanged_since(self, source: AssetSource, cursor: SnapshotCursor) -> bool:
        """A check cheaper than :meth:`pointer`: True only when the table certainly committed nothing after
        ``cursor`` (the last snapshot read); False when it did or the format cannot tell this cheaply (then the
        pointer is read, and says what is wrong with a table that is gone). Delta: a HEAD of the next version's
        commit file and a GET of ``_last_checkpoint`` (and, before the first checkpoint, a HEAD of the version
        read), S3 GET-class requests, where the pointer lists the log."""
        return False

    @abstractmethod
    def snapshots_since(
        self,
        source: AssetSource,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        """The table's snapshots after ``cursor`` as of ``pointer``, oldest first.

        With a cursor: the first ``limit`` snapshots after it (``SnapshotCursor.beginning()``: from
        the table's first snapshot); if the cursor's successors have expired, reading resumes at the
        oldest retained snapshot and the batch names the gap. Without a cursor (a first look: there
        is no history to catch up on): the newest ``limit`` snapshots. Snapshots carry ``schemaChanged``.
        """


SnapshotSources = Callable[[AssetFormat], SnapshotSource]
"""Picks the SnapshotSource for an asset format (the factory imports the heavy library on first use)."""


class PollStatusStore(ABC):
    """Per-asset poll health: last poll, last error, consecutive failures, next attempt."""

    @abstractmethod
    def get(self, asset_key: str) -> PollStatus | None:
        """The asset's status, or None if it was never polled."""

    @abstractmethod
    def put(self, status: PollStatus) -> None:
        """Replace the asset's status (the last poll to finish wins; it is a report, not a lock)."""

    def get_many(self, asset_keys: Collection[str]) -> dict[str, PollStatus]:
        """The statuses of those of ``asset_keys`` that were polled (a store may read them in one batch)."""
        return {k: s for k in asset_keys if (s := self.get(k)) is not None}
