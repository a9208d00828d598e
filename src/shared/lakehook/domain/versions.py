"""One snapshot as the state and the resolver remember it, and which snapshots change data.

A :class:`SnapshotRecord` is what a pin needs of a snapshot that may no longer be the newest one: its
id, its place in the table's history, its schema, commit time and (Iceberg) metadata location, and its
parent, so lineage tells whether a snapshot between two known ones is missing.

A compaction rewrites files without changing what the table holds: Paimon commits it as ``COMPACT``
(and statistics as ``ANALYZE``), Iceberg as a ``replace`` operation. Such a snapshot is not an update
for a member unless the member asks for it (``includeCompaction: true``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# commitKind values (upper case, as lakehook reads them) of snapshots that change no data
NO_DATA_CHANGE_KINDS = frozenset({"COMPACT", "ANALYZE", "REPLACE"})


def changes_data(commit_kind: str | None) -> bool:
    """Whether a snapshot of this commit kind changes the table's data (unknown kinds count as changes)."""
    return commit_kind is None or commit_kind.upper() not in NO_DATA_CHANGE_KINDS


class SnapshotRecord(BaseModel):
    """A snapshot as pinned: id, order in the table's history, parent, and what a reader needs of it."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    snapshot_id: int = Field(alias="snapshotId")
    order: int = Field(description="the snapshot's place in history: Paimon id, Iceberg sequence number")
    parent_snapshot_id: int | None = Field(default=None, alias="parentSnapshotId")
    schema_id: int | None = Field(default=None, alias="schemaId")
    commit_time: int | None = Field(default=None, alias="commitTime")
    commit_kind: str | None = Field(default=None, alias="commitKind")
    metadata_location: str | None = Field(default=None, alias="metadataLocation")
    watermark: int | None = None

    @property
    def changes_data(self) -> bool:
        return changes_data(self.commit_kind)

    def to_item(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)
