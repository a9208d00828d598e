"""Snapshots as the table formats record them, and what a poller keeps between polls.

A :class:`SnapshotInfo` is one committed snapshot (Iceberg or Paimon), a :class:`TagInfo` one
tag or branch. Both become :class:`~lakehook.domain.events.AssetEvent` s with the identity a
push of the same snapshot or tag has (asset, type, snapshot id or tag name), so a polled and a
pushed copy are one event. The keys a snapshot touched past its event's bound become
:class:`PartitionPart` s (:func:`partition_parts`), recorded beside the event.

A :class:`PollOffset` is what the poller stores per asset (in the watermark store): the last
snapshot it ingested, the pointer it saw (Iceberg metadata location, Paimon ``LATEST`` hint) and
the tags it knows. A :class:`PollStatus` is the per-asset health of polling, with backoff.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.partitions import Chunks, ReadPartitions, TouchedPartitions
from lakehook.domain.state import snapshot_record
from lakehook.domain.versions import SnapshotRecord

POLLER_NAMESPACE = "lakehook.poller"
OFFSET_KEY = "offset"
BRANCH_TAG_PREFIX = "branch:"


class RefKind(StrEnum):
    TAG = "TAG"
    BRANCH = "BRANCH"


class SnapshotInfo(BaseModel):
    """One committed snapshot, with the fields both formats can report (absent ones are None)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    snapshot_id: int = Field(alias="snapshotId", ge=0)
    parent_snapshot_id: int | None = Field(default=None, alias="parentSnapshotId", ge=0)
    sequence_number: int | None = Field(default=None, alias="sequenceNumber", ge=0)
    commit_time: int = Field(alias="commitTime", ge=0, description="epoch milliseconds")
    commit_kind: str | None = Field(default=None, alias="commitKind")
    schema_id: int | None = Field(default=None, alias="schemaId", ge=0)
    watermark: int | None = Field(default=None, ge=0, description="epoch milliseconds")
    total_record_count: int | None = Field(default=None, alias="totalRecordCount", ge=0)
    delta_record_count: int | None = Field(default=None, alias="deltaRecordCount")
    changelog_record_count: int | None = Field(default=None, alias="changelogRecordCount", ge=0)
    commit_user: str | None = Field(default=None, alias="commitUser")
    commit_identifier: int | None = Field(default=None, alias="commitIdentifier")
    schema_changed: bool | None = Field(default=None, alias="schemaChanged")
    metadata_location: str | None = Field(default=None, alias="metadataLocation")
    data_changed: bool = Field(
        default=True,
        alias="dataChanged",
        description="False when the table's own log shows the commit changed no data (see domain/versions.py)",
    )
    partitions: TouchedPartitions | None = Field(
        default=None, description="the partitions the commit touched; None for an unpartitioned table or not known"
    )
    trigger_key: str | None = Field(
        default=None,
        alias="triggerKey",
        description="the trigger key the commit's metadata carries (lakehook.trigger-key): the run that wrote it",
    )

    @property
    def more_partitions(self) -> Chunks:
        """The keys the commit touched past ``partitions.keys``, in chunks of one event's bound: what the reader
        found past the bound (its :class:`~lakehook.domain.partitions.ReadPartitions`), which the poll records as
        part items (docs/partitions.md#limits). Read off ``partitions``, so a reader sets both with its one value."""
        return self.partitions.more if isinstance(self.partitions, ReadPartitions) else ()


class TagInfo(BaseModel):
    """A tag (or an Iceberg branch other than ``main``) and the snapshot it points to."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str = Field(min_length=1)
    snapshot_id: int | None = Field(default=None, alias="snapshotId", ge=0)
    kind: RefKind = RefKind.TAG
    sequence_number: int | None = Field(
        default=None, alias="sequenceNumber", ge=0, description="Iceberg: the tagged snapshot's place in history"
    )

    @property
    def event_tag(self) -> str:
        """The tag as events carry it: a tag's name, or ``branch:<name>`` for a branch."""
        return self.name if self.kind is RefKind.TAG else f"{BRANCH_TAG_PREFIX}{self.name}"


class SnapshotCursor(BaseModel):
    """Where reading resumes: the last snapshot taken, with what is needed to compare the next one."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    snapshot_id: int = Field(alias="snapshotId", ge=0)
    schema_id: int | None = Field(default=None, alias="schemaId", ge=0)
    sequence_number: int | None = Field(default=None, alias="sequenceNumber", ge=0)

    @classmethod
    def beginning(cls) -> SnapshotCursor:
        """Before the table's first snapshot: the table had none when it was last read, so all are new."""
        return cls(snapshot_id=0, sequence_number=0)

    @classmethod
    def of(cls, snapshot: SnapshotInfo) -> SnapshotCursor:
        return cls(
            snapshot_id=snapshot.snapshot_id, schema_id=snapshot.schema_id, sequence_number=snapshot.sequence_number
        )


class SnapshotGap(BaseModel):
    """Snapshots that expired before they were read: reading resumed at the oldest retained one."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    after_snapshot_id: int = Field(alias="afterSnapshotId", description="the last snapshot read before the gap")
    resumed_at_snapshot_id: int | None = Field(alias="resumedAtSnapshotId", description="the first read after it")
    missed: int | None = Field(default=None, ge=1, description="how many snapshots were skipped, when known")


class UnrecordedPartitions(BaseModel):
    """A snapshot a poll recorded although some of the partition keys it touched could not be (its event's
    ``partitions.unrecorded``): which snapshot, how many keys, the first of them named, and when it was found."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    snapshot_id: int = Field(alias="snapshotId")
    count: int = Field(ge=1, description="partition keys of the snapshot that could not be recorded")
    keys: tuple[str, ...] = Field(default=(), description="the first of them, as the event's unrecordedKeys")
    found_at: int = Field(alias="foundAt", description="epoch milliseconds")

    @classmethod
    def of(cls, snapshot: SnapshotInfo, found_at: int) -> UnrecordedPartitions | None:
        """What ``snapshot`` left unrecorded, or None when it recorded every key it touched."""
        touched = snapshot.partitions
        if touched is None or not touched.unrecorded:
            return None
        return cls(
            snapshot_id=snapshot.snapshot_id, count=touched.unrecorded, keys=touched.unrecorded_keys, found_at=found_at
        )

    def describe(self) -> str:
        """The poll status warning: ``snapshot 7: 1 partition key not recorded: a=xxxx… (608 characters): …``."""
        noun = "key" if self.count == 1 else "keys"
        named = "; ".join(self.keys)
        return f"snapshot {self.snapshot_id}: {self.count} partition {noun} not recorded (docs/partitions.md): {named}"


class PollOffset(BaseModel):
    """What the poller stores per asset: the stored value of watermark ``lakehook.poller`` / ``offset``.

    ``pointer`` is None when the last poll stopped before the end of what the pointer announced
    (a bounded batch), so the next poll reads on even though the pointer did not move.
    ``retryAt`` is set while the table fails (the poll status's ``nextAttemptAt``): the offset is read
    by every poll anyway, so a healthy table's poll needs no poll-status read to know it is not held.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    cursor: SnapshotCursor | None = None
    pointer: str | None = None
    tags: tuple[str, ...] = ()
    retry_at: int | None = Field(default=None, alias="retryAt")

    def due(self, now_ms: int) -> bool:
        """Whether polling may run now (not inside a failing table's backoff window)."""
        return self.retry_at is None or now_ms >= self.retry_at

    @classmethod
    def from_value(cls, value: Any) -> PollOffset:
        """Parse a stored value; anything unreadable counts as no offset (the next poll starts afresh)."""
        if not isinstance(value, dict):
            return cls()
        try:
            return cls.model_validate(value)
        except PydanticValidationError:
            return cls()

    def to_value(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)

    def unchanged(self, pointer: str) -> bool:
        """Whether the table's pointer is the one this offset finished reading."""
        return self.pointer is not None and self.pointer == pointer

    def advanced(
        self, snapshots: Sequence[SnapshotInfo], pointer: str, tag_names: Iterable[str], complete: bool
    ) -> PollOffset:
        """The offset after ingesting ``snapshots``; the pointer is kept only when the batch was complete.

        A table read while it had no snapshot gets the cursor :meth:`SnapshotCursor.beginning`, so
        its first snapshots are all taken later (a missing cursor means "never read").
        """
        cursor = SnapshotCursor.of(snapshots[-1]) if snapshots else (self.cursor or SnapshotCursor.beginning())
        return PollOffset(cursor=cursor, pointer=pointer if complete else None, tags=tuple(sorted(set(tag_names))))


def mark_schema_changes(snapshots: Sequence[SnapshotInfo], previous_schema_id: int | None) -> list[SnapshotInfo]:
    """Set ``schemaChanged`` on snapshots in commit order.

    A snapshot's schema changed when its schema id differs from the previous snapshot's. The
    first snapshot of a table (no parent) did not change it; where the previous schema is not
    known the flag stays None rather than guess.
    """
    marked: list[SnapshotInfo] = []
    previous = previous_schema_id
    for snapshot in snapshots:
        if snapshot.schema_id is None:
            changed: bool | None = None
        elif previous is not None:
            changed = snapshot.schema_id != previous
        elif snapshot.parent_snapshot_id is None:
            changed = False
        else:
            changed = None
        marked.append(snapshot.model_copy(update={"schema_changed": changed}))
        if snapshot.schema_id is not None:
            previous = snapshot.schema_id
    return marked


def snapshot_event(asset_key: str, snapshot: SnapshotInfo) -> AssetEvent:
    """``SNAPSHOT_COMMITTED`` for the snapshot: the identity a push of this snapshot id has. Its ``partitions`` is the
    bounded value (the keys past it are the snapshot's ``more_partitions``, which no event carries)."""
    partitions = snapshot.partitions
    if isinstance(partitions, ReadPartitions):
        partitions = partitions.recorded
    return AssetEvent(
        event_type=EventType.SNAPSHOT_COMMITTED,
        asset_key=asset_key,
        snapshot_id=snapshot.snapshot_id,
        parent_snapshot_id=snapshot.parent_snapshot_id,
        sequence_number=snapshot.sequence_number,
        schema_id=snapshot.schema_id,
        watermark=snapshot.watermark,
        commit_kind=snapshot.commit_kind,
        commit_time=snapshot.commit_time,
        commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier,
        total_record_count=snapshot.total_record_count,
        delta_record_count=snapshot.delta_record_count,
        changelog_record_count=snapshot.changelog_record_count,
        schema_changed=snapshot.schema_changed,
        metadata_location=snapshot.metadata_location,
        # only a "no" is news: a snapshot that says nothing more is judged by its commit kind
        data_changed=None if snapshot.data_changed else False,
        partitions=partitions,
    )


@dataclass(frozen=True)
class PartitionPart:
    """One chunk of the keys a commit touched past its event's bounded ``partitions`` (at most
    ``MAX_TOUCHED_PARTITIONS`` keys and ``MAX_TOUCHED_PARTITION_BYTES``, validated as one event's), with the snapshot
    as the event records it. Recorded as its own item beside the event; its stream record hands the resolver these
    keys alone, as a slice of the commit (docs/partitions.md#limits). ``part`` counts from 1: the event holds the
    first keys."""

    asset_key: str
    snapshot: SnapshotRecord
    part: int
    partitions: TouchedPartitions
    # where its keys start among the commit's sorted keys (after its event's and the parts' before it) and how many
    # keys the commit touched (its event's count), when the poll that wrote it recorded the event itself: then the
    # resolver knows the commit whole once every part came (domain/commit_pieces.py). None: not known (part 0, a
    # part behind a push that recorded the snapshot first, a part written by an older release)
    offset: int | None = None
    total: int | None = None

    @classmethod
    def of(
        cls,
        asset_key: str,
        snapshot: SnapshotRecord,
        part: int,
        keys: Sequence[str],
        offset: int | None = None,
        total: int | None = None,
    ) -> PartitionPart:
        """A part of these keys, held as an event holds a pushed list (made canonical, sorted, unique); a ValueError
        for a key that is none, or more keys or bytes than one event holds."""
        return cls(asset_key, snapshot, part, TouchedPartitions.model_validate(list(keys)), offset, total)

    @property
    def keys(self) -> tuple[str, ...]:
        return self.partitions.keys


def partition_parts(
    event: AssetEvent, more: Chunks, recorded: Sequence[str] | Literal[False] | None = False
) -> list[PartitionPart]:
    """The parts of a recorded ``SNAPSHOT_COMMITTED`` event: one per chunk its reader found past the event's keys
    (its snapshot's ``more_partitions``), from part 1; none when the event holds every key.

    ``recorded``: when another event recorded the snapshot first (a push before the poll), the keys that one names
    (None: it names none). Then the keys of this event that it left out are part 0, so they reach the resolver too:
    the state and the recorded event keep the first recording's keys. ``False``: this event is the recorded one."""
    if event.event_type is not EventType.SNAPSHOT_COMMITTED or (not more and recorded is False):
        return []
    record = snapshot_record(event)
    first = event.partitions.keys if event.partitions is not None else None
    if first is not None and (recorded is False or tuple(recorded or ()) == first):
        return _placed_parts(event, record, more)  # the recorded keys are this event's: the parts follow them
    return _parts_after_another_recording(event, record, more, recorded)


def _parts_after_another_recording(
    event: AssetEvent, record: SnapshotRecord, more: Chunks, recorded: Sequence[str] | Literal[False] | None
) -> list[PartitionPart]:
    """The parts of an event whose keys are not the recorded ones: one per further chunk from part 1, and when
    another event recorded the data commit first, part 0 with this event's keys that one left out."""
    parts = [PartitionPart.of(event.asset_key, record, n, chunk) for n, chunk in enumerate(more, start=1)]
    if recorded is False or event.partitions is None or not record.changes_data:
        return parts
    known = set(recorded or ())
    missed = [k for k in event.partitions.keys if k not in known]
    return [PartitionPart.of(event.asset_key, record, 0, missed), *parts] if missed else parts


def _placed_parts(event: AssetEvent, record: SnapshotRecord, more: Chunks) -> list[PartitionPart]:
    """The parts past the event's keys, each knowing where its keys start among the commit's and their count."""
    assert event.partitions is not None
    offset, total = len(event.partitions.keys), event.partitions.count
    parts: list[PartitionPart] = []
    for n, chunk in enumerate(more, start=1):
        parts.append(PartitionPart.of(event.asset_key, record, n, chunk, offset, total))
        offset += len(parts[-1].keys)
    return parts


def tag_event(asset_key: str, tag: TagInfo) -> AssetEvent:
    """``TAG_CREATED`` for the tag or branch: identified by its name, like a pushed tag."""
    payload = {"refType": tag.kind.value} if tag.kind is RefKind.BRANCH else None
    return AssetEvent(
        event_type=EventType.TAG_CREATED,
        asset_key=asset_key,
        tag=tag.event_tag,
        snapshot_id=tag.snapshot_id,
        sequence_number=tag.sequence_number,
        payload=payload,
    )


# --- poll status ----------------------------------------------------------------------------


class BackoffPolicy(BaseModel):
    """Exponential backoff after consecutive failures: base, doubled each time, capped."""

    model_config = ConfigDict(frozen=True)

    base_ms: int = Field(default=30_000, ge=1)
    max_ms: int = Field(default=3_600_000, ge=1)

    def delay_ms(self, consecutive_failures: int) -> int:
        if consecutive_failures <= 0:
            return 0
        exponent = min(consecutive_failures - 1, 40)  # 2**40 * base is far past any cap
        return int(min(self.max_ms, self.base_ms * 2**exponent))


class PollStatus(BaseModel):
    """How polling one asset went lately; failures push the next attempt back."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    asset_key: str = Field(alias="assetKey")
    last_polled_at: int | None = Field(default=None, alias="lastPolledAt")
    last_success_at: int | None = Field(default=None, alias="lastSuccessAt")
    last_snapshot_id: int | None = Field(default=None, alias="lastSnapshotId")
    consecutive_failures: int = Field(default=0, alias="consecutiveFailures", ge=0)
    last_error: str | None = Field(default=None, alias="lastError")
    last_error_kind: str | None = Field(default=None, alias="lastErrorKind")
    last_error_at: int | None = Field(default=None, alias="lastErrorAt")
    next_attempt_at: int | None = Field(default=None, alias="nextAttemptAt")
    last_gap: SnapshotGap | None = Field(default=None, alias="lastGap")
    warnings: tuple[str, ...] = Field(
        default=(), description="what the last read of the table found wrong without failing (e.g. a future instant)"
    )
    last_unrecorded_partitions: UnrecordedPartitions | None = Field(
        default=None,
        alias="lastUnrecordedPartitions",
        description="the newest snapshot recorded with partition keys that could not be (kept, as lastGap is)",
    )
    # What the source health (domain.source_health) is derived from: each kept until a read says otherwise.
    failing_since: int | None = Field(default=None, alias="failingSince", description="the current failures' first")
    blockers: tuple[str, ...] = Field(
        default=(), description="versions the last read of the table found and cannot represent (the source BLOCKED)"
    )
    blocked_since: int | None = Field(default=None, alias="blockedSince")
    open_gap: SnapshotGap | None = Field(
        default=None, alias="openGap", description="the gap the last read of new versions found (None: it found none)"
    )
    gap_since: int | None = Field(default=None, alias="gapSince")
    head_snapshot_id: int | None = Field(
        default=None, alias="headSnapshotId", description="the table's head when the last read stopped short of it"
    )
    lagging_since: int | None = Field(default=None, alias="laggingSince")
    hung_since: int | None = Field(
        default=None,
        alias="hungSince",
        description="when a poll started that was still running past the poller's hang bound (it hangs without "
        "raising; the source BLOCKED): cleared by the next poll of the table that finishes",
    )

    def due(self, now_ms: int) -> bool:
        """Whether polling may run now (not inside a backoff window)."""
        return self.next_attempt_at is None or now_ms >= self.next_attempt_at

    def succeeded(
        self,
        now_ms: int,
        snapshot_id: int | None,
        gap: SnapshotGap | None,
        warnings: tuple[str, ...] | None = None,
        unrecorded: UnrecordedPartitions | None = None,
        read: PollRead | None = None,
    ) -> PollStatus:
        """After a poll that read the table; ``warnings`` replace the kept ones when the table was read; ``unrecorded``
        (a snapshot with partition keys that could not be recorded) replaces the kept one; ``read`` (None: the table
        was not read) replaces what the source health is derived from."""
        return self.model_copy(
            update={
                **(read.health_fields(self, now_ms, snapshot_id is not None, gap) if read is not None else {}),
                "failing_since": None,
                "hung_since": None,
                "last_polled_at": now_ms,
                "last_success_at": now_ms,
                "last_snapshot_id": snapshot_id if snapshot_id is not None else self.last_snapshot_id,
                "consecutive_failures": 0,
                "next_attempt_at": None,
                "last_gap": gap if gap is not None else self.last_gap,
                "warnings": self.warnings if warnings is None else warnings,
                "last_unrecorded_partitions": unrecorded or self.last_unrecorded_partitions,
            }
        )

    def failed(self, now_ms: int, kind: str, message: str, policy: BackoffPolicy) -> PollStatus:
        failures = self.consecutive_failures + 1
        return self.model_copy(
            update={
                # a run of failures keeps its first (a status written before failingSince was: its last error's)
                "failing_since": (self.failing_since or self.last_error_at or now_ms)
                if self.consecutive_failures
                else now_ms,
                "last_polled_at": now_ms,
                "consecutive_failures": failures,
                "last_error": message[:1024],
                "last_error_kind": kind,
                "last_error_at": now_ms,
                "next_attempt_at": now_ms + policy.delay_ms(failures),
                "hung_since": None,
            }
        )

    def hanging(self, started_at: int) -> PollStatus:
        """A poll that started at ``started_at`` has not finished within the poller's hang bound (the first such
        start of a run of them kept)."""
        return self.model_copy(update={"hung_since": self.hung_since or started_at})


@dataclass(frozen=True)
class PollRead:
    """What a poll that read the table found that the source health is derived from: versions it cannot represent
    (``blockers``), and the table's head when it stopped short of it (``behind_head``)."""

    blockers: tuple[str, ...] = ()
    behind_head: int | None = None

    def health_fields(
        self, status: PollStatus, now_ms: int, found_versions: bool, gap: SnapshotGap | None
    ) -> dict[str, Any]:
        """The status fields this read replaces; a run of the same trouble keeps its first time."""
        fields: dict[str, Any] = {
            "blockers": self.blockers,
            "blocked_since": _since(now_ms, bool(self.blockers), bool(status.blockers), status.blocked_since),
            "head_snapshot_id": self.behind_head,
            "lagging_since": _since(
                now_ms, self.behind_head is not None, status.head_snapshot_id is not None, status.lagging_since
            ),
        }
        if found_versions or gap is not None:  # a read of new versions says whether a gap is open
            fields["open_gap"] = gap
            fields["gap_since"] = _since(now_ms, gap is not None, status.open_gap is not None, status.gap_since)
        return fields


def _since(now_ms: int, now_on: bool, was_on: bool, was_since: int | None) -> int | None:
    """When a trouble that is ``now_on`` began: kept from before when it ``was_on``, else now (None: it is not on)."""
    if not now_on:
        return None
    return (was_since or now_ms) if was_on else now_ms
