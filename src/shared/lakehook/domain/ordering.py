"""How the state's latest-wins fields are ordered, so a late or redelivered event never rolls one back.

Fields with a version of their own (a snapshot's order, a watermark, a schema id) compare that
version. The others (the latest tag, the current spool manifest) compare an *order key*: the event's
time (its ``commitTime``, or, when the producer sent none, when lakehook first recorded that event
identity: a redelivery keeps its first time) and then the event id as a tie-break. A key is one
string, so DynamoDB compares it with ``<`` in the update's condition exactly as Python does
(UTF-8 byte order is code point order).

Backfills need no clock at all: the state keeps the set of started and the set of completed
backfill ids, and both only grow (see :func:`backfill_view`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lakehook.domain.events import AssetEvent

_SEP = "\x1f"  # between a tag log entry's parts; the key before it has a fixed alphabet


def sortable(n: int) -> str:
    """A non-negative integer as a string that sorts like the number (its length first, then its digits)."""
    if n < 0:
        raise ValueError("an order is never negative")
    digits = str(n)
    return f"{len(digits):02d}{digits}"


def event_time(event: AssetEvent, recorded_at: int) -> int:
    """The event's own time (``commitTime``), else when lakehook first recorded the event."""
    return event.commit_time if event.commit_time is not None else recorded_at


def order_key(event: AssetEvent, recorded_at: int, rank: int = 0) -> str:
    """(time, rank, event id) as one sortable string; ``rank`` breaks a tie between kinds (0-9)."""
    return f"{sortable(event_time(event, recorded_at))}.{rank}.{event.event_id}"


@dataclass(frozen=True)
class TagEntry:
    """One tag in the state's tag log: its order key, the tag and the snapshot it names."""

    key: str
    tag: str
    snapshot_id: int | None

    def encode(self) -> str:
        sid = "" if self.snapshot_id is None else str(self.snapshot_id)
        return f"{self.key}{_SEP}{sid}{_SEP}{self.tag}"

    @classmethod
    def decode(cls, text: str) -> TagEntry:
        key, sid, tag = text.split(_SEP, 2)  # the tag goes last: it may hold any character
        return cls(key, tag, int(sid) if sid else None)


def latest_tag(log: set[str]) -> TagEntry | None:
    """The newest tag by its order key."""
    return TagEntry.decode(max(log)) if log else None


@dataclass(frozen=True)
class BackfillView:
    """The backfill status derived from the grow-only started and completed sets."""

    status: str  # NONE | RUNNING | COMPLETED
    backfill_id: str | None


def backfill_view(started: set[str], completed: set[str]) -> BackfillView:
    """RUNNING while a started backfill has not completed; else COMPLETED once any has.

    The id names the running backfill(s); once none runs, it names the completed set so that it
    changes whenever a backfill completes (a rule's cursor compares it to absorb each backfill
    once): the sole id, or the greatest id and how many more.
    """
    running = sorted(started - completed)
    if running:
        return BackfillView("RUNNING", ", ".join(running))
    if not completed:
        return BackfillView("NONE", None)
    if len(completed) == 1:
        return BackfillView("COMPLETED", next(iter(completed)))
    return BackfillView("COMPLETED", f"{max(completed)} and {len(completed) - 1} more")
