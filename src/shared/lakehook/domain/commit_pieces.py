"""EACH_VERSION per partition: which commits of a table are known whole, when their keys come in pieces.

A commit touching more partitions than its event holds comes in pieces: its event's first keys, then its part items
(docs/partitions.md#limits), and an invocation's bound may cut any of those into slices carried to the resolver's queue.
A partition's next version waits at a commit of its table not known with its partitions
(:mod:`lakehook.domain.partition_gaps`), so such a commit is logged as known once every one of its pieces had its
versions kept, not before (a newer version of a partition the commit touched in a piece still to come would run first
and the piece's version be skipped), and not later (a partition whose versions are all known would wait for the
settle time: a false gap).

A piece is a run of the commit's keys in sorted order: where it starts among them (``start``: the event's keys start
at 0, a part item's after the keys before it, a slice where it was cut) and how many keys it holds; the commit's key
count (``total``: its event's ``count``) is known to the event and what was cut from it, and to a part a poll wrote.
Pieces may overlap (a redelivered batch cut elsewhere): the commit is whole once their union covers every key. A
piece whose start is not known (part 0, a slice of an older release) covers nothing: its commit settles as before.
Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lakehook.domain.versions import SnapshotRecord

Span = tuple[int, int]
"""(start, size): a run of a commit's keys in sorted order"""

CommitRef = tuple[str, int]
"""(asset key, order): one commit of a table"""


@dataclass(frozen=True)
class CommitPiece:
    """Keys ``start`` .. ``start + size - 1`` of a commit (in its sorted keys), whose versions an invocation keeps;
    ``total``: how many keys the commit touched, when the piece knows."""

    asset_key: str
    record: SnapshotRecord
    start: int
    size: int
    total: int | None = None

    @property
    def ref(self) -> CommitRef:
        return (self.asset_key, self.record.order)

    @property
    def span(self) -> Span:
        return (self.start, self.size)


@dataclass(frozen=True)
class KnownPieces:
    """What is known of one commit's pieces: the spans whose versions were kept, and the commit's key count (None:
    no piece that knew it came yet)."""

    spans: frozenset[Span]
    total: int | None

    def with_pieces(self, pieces: Iterable[CommitPiece]) -> KnownPieces:
        spans = set(self.spans)
        total = self.total
        for piece in pieces:
            spans.add(piece.span)
            total = piece.total if piece.total is not None else total
        return KnownPieces(frozenset(spans), total)

    @property
    def whole(self) -> bool:
        """Whether the spans cover every key of the commit (its count known)."""
        return self.total is not None and covers(self.spans, self.total)


NOTHING = KnownPieces(frozenset(), None)


def covers(spans: Iterable[Span], total: int) -> bool:
    """Whether the union of ``spans`` holds every position 0 .. ``total - 1``."""
    reached = 0
    for start, size in sorted(spans):
        if start > reached:
            return False
        reached = max(reached, start + size)
        if reached >= total:
            return True
    return reached >= total


def by_commit(pieces: Iterable[CommitPiece]) -> dict[CommitRef, list[CommitPiece]]:
    found: dict[CommitRef, list[CommitPiece]] = {}
    for piece in pieces:
        found.setdefault(piece.ref, []).append(piece)
    return found


def whole_commits(
    pieces: Iterable[CommitPiece], stored: Mapping[CommitRef, KnownPieces] | None = None
) -> dict[CommitRef, SnapshotRecord]:
    """The commits ``pieces`` (with what ``stored`` holds of them) cover whole."""
    found: dict[CommitRef, SnapshotRecord] = {}
    for ref, mine in by_commit(pieces).items():
        if (stored or {}).get(ref, NOTHING).with_pieces(mine).whole:
            found[ref] = mine[0].record
    return found


def sub_start(start: int | None, keys: Sequence[str], sub: Sequence[str]) -> int | None:
    """Where ``sub`` (cut from ``keys``, which start at ``start`` in their commit) starts in the commit, when it is
    one run of ``keys``; None otherwise (it covers nothing)."""
    if start is None or not sub:
        return None
    try:
        at = keys.index(sub[0])
    except ValueError:
        return None
    return start + at if tuple(keys[at : at + len(sub)]) == tuple(sub) else None
