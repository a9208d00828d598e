"""One snapshot as the state and the resolver remember it, and which snapshots change data.

A :class:`SnapshotRecord` is what a pin needs of a snapshot that may no longer be the newest one: its
id, its place in the table's history, its schema, commit time and (Iceberg) metadata location, and its
parent, so lineage tells whether a snapshot between two known ones is missing.

A compaction rewrites files without changing what the table holds: Paimon commits it as ``COMPACT``
(and statistics as ``ANALYZE``), Iceberg as a ``replace`` operation, Delta as ``OPTIMIZE`` (and a
vacuum as ``VACUUM START`` / ``VACUUM END``), Hudi as a compaction (``COMPACT``, ``LOG_COMPACT``) or
a clustering ``replacecommit`` (``CLUSTER``). Such a snapshot is not an update for a member unless the
member asks for it (``includeCompaction: true``).

A commit kind is a name, not proof: an Iceberg ``overwrite`` or ``delete`` whose summary shows no file and no
row added or removed changed nothing either (:mod:`lakehook.wire.iceberg_counts`). Where the table's own log
shows that, the snapshot carries ``dataChanged: false`` and counts as no data change whatever its kind; a
snapshot without the flag is judged by its kind alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

# commitKind values (upper case, as lakehook reads them) of snapshots that change no data
NO_DATA_CHANGE_KINDS = frozenset(
    {"COMPACT", "ANALYZE", "REPLACE", "OPTIMIZE", "VACUUM START", "VACUUM END", "CLUSTER", "LOG_COMPACT"}
)


def changes_data(commit_kind: str | None, data_changed: bool | None = None) -> bool:
    """Whether a snapshot of this commit kind changes the table's data (unknown kinds count as changes);
    ``data_changed=False`` (the table's log shows no change) says no whatever the kind."""
    if data_changed is False:
        return False
    return commit_kind is None or commit_kind.upper() not in NO_DATA_CHANGE_KINDS


class SnapshotRecord(BaseModel):
    """A snapshot as pinned: id, order in the table's history, parent, and what a reader needs of it."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    snapshot_id: int = Field(alias="snapshotId")
    order: int = Field(
        description="the snapshot's place in history: Paimon id, Iceberg sequence number, Delta version, "
        "Hudi instant time"
    )
    parent_snapshot_id: int | None = Field(default=None, alias="parentSnapshotId")
    schema_id: int | None = Field(default=None, alias="schemaId")
    commit_time: int | None = Field(default=None, alias="commitTime")
    commit_kind: str | None = Field(default=None, alias="commitKind")
    metadata_location: str | None = Field(default=None, alias="metadataLocation")
    watermark: int | None = None
    data_changed: bool | None = Field(
        default=None, alias="dataChanged", description="False: the commit changed no data (None: its kind decides)"
    )

    @property
    def changes_data(self) -> bool:
        return changes_data(self.commit_kind, self.data_changed)


# --- the snapshot log: every accepted snapshot of an asset, by order (EACH_VERSION) ----------------


class Lineage(StrEnum):
    """How a table tells that no snapshot is missing between two known ones."""

    CONSECUTIVE = "CONSECUTIVE"  # Paimon: snapshot ids are 1, 2, 3 …; Delta: versions are 0, 1, 2 …
    PARENT = "PARENT"  # Iceberg: each snapshot names its parent
    NONE = "NONE"  # Hudi (instant times) and other assets: any newer snapshot follows


def lineage_of(asset_key: str) -> Lineage:
    """The lineage rule of an asset's format (its key's scheme)."""
    if asset_key.startswith(("paimon://", "delta://")):
        return Lineage.CONSECUTIVE
    if asset_key.startswith("iceberg://"):
        return Lineage.PARENT
    return Lineage.NONE


def starts_history(asset_key: str, record: SnapshotRecord) -> bool:
    """Whether ``record`` is its table's first snapshot: Delta version 0, Paimon snapshot 1, an Iceberg snapshot
    without parent; never known for other assets (Hudi instant times, pushed assets)."""
    if asset_key.startswith("delta://"):
        return record.order == 0
    if asset_key.startswith("paimon://"):
        return record.order == 1
    if asset_key.startswith("iceberg://"):
        return record.parent_snapshot_id is None
    return False


def follows(lineage: Lineage, previous_id: int, previous_order: int, record: SnapshotRecord) -> bool:
    """Whether ``record`` is the snapshot right after (previous_id, previous_order): no snapshot between."""
    if lineage is Lineage.CONSECUTIVE:
        return record.order == previous_order + 1
    if lineage is Lineage.PARENT:
        if record.parent_snapshot_id is not None:
            return record.parent_snapshot_id == previous_id
        return record.order == previous_order + 1  # no parent known: Iceberg sequence numbers step by one
    return True


class Verdict(StrEnum):
    """A quality check's verdict on one snapshot: any FAILED check fails it, else a PASSED one passes it."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"  # no check has reported on this snapshot yet


@dataclass(frozen=True)
class LoggedSnapshot:
    """A snapshot in the log, when lakehook first recorded it (a gap before it settles from then), and the verdict
    of its quality checks when a member gated on them needs it (None: not looked up). ``late``: logged by the push
    of a snapshot older than its asset's state, before the resolver handled the stream records of the snapshots
    accepted before it (so it says nothing of them); else logged by the resolver, in stream order, or by a claim.
    ``partial`` (EACH_VERSION per partition, a table's commit log): the commit is known to exist, with its place in
    the lineage, but not yet with every partition it touched (its keys came in part,
    :mod:`lakehook.domain.commit_pieces`)."""

    record: SnapshotRecord
    recorded_at: int
    quality: Verdict | None = None
    late: bool = False
    partial: bool = False


@dataclass(frozen=True)
class SnapshotLog:
    """The known snapshots of one asset newer than some order, oldest first, and how long a gap may stay open.

    A gap (a snapshot the lineage says exists but nobody recorded) holds the versions after it until
    ``settle_ms`` after the snapshot behind the gap was recorded; then it is stepped over (an expired or
    never-pushed snapshot must not block a rule forever)."""

    entries: tuple[LoggedSnapshot, ...]
    lineage: Lineage = Lineage.NONE
    settle_ms: int = 15 * 60_000

    @classmethod
    def of(cls, entries: Sequence[LoggedSnapshot], lineage: Lineage, settle_ms: int) -> SnapshotLog:
        by_order: dict[int, LoggedSnapshot] = {}
        for entry in entries:
            kept = by_order.get(entry.record.order)  # known whole before known in part, then the first recorded
            if kept is None or (entry.partial, entry.recorded_at) < (kept.partial, kept.recorded_at):
                by_order[entry.record.order] = entry
        return cls(tuple(by_order[o] for o in sorted(by_order)), lineage, settle_ms)

    def after(self, order: int) -> list[LoggedSnapshot]:
        return [e for e in self.entries if e.record.order > order]

    def oldest(self) -> LoggedSnapshot | None:
        return self.entries[0] if self.entries else None

    def with_quality(self, verdicts: Mapping[int, Verdict]) -> SnapshotLog:
        """The log with each entry's quality verdict (by snapshot id; a snapshot not named is UNKNOWN)."""
        entries = tuple(replace(e, quality=verdicts.get(e.record.snapshot_id, Verdict.UNKNOWN)) for e in self.entries)
        return replace(self, entries=entries)


def quality_verdict(passed: bool, failed: bool) -> Verdict:
    """One snapshot's verdict from the checks recorded on it: a failure outweighs a pass, whichever came first."""
    if failed:
        return Verdict.FAILED
    return Verdict.PASSED if passed else Verdict.UNKNOWN
