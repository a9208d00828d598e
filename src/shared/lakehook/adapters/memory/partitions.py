"""InMemoryPartitionStore: the partition facts and pending partitions of partitioned groups, in dictionaries."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence

from lakehook.domain.commit_pieces import NOTHING, CommitPiece, CommitRef, KnownPieces, by_commit
from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord
from lakehook.ports.partitions import PartitionStore


class InMemoryPartitionStore(PartitionStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.kept: dict[FactKey, PartitionFact] = {}
        self.waiting: dict[tuple[str, str], dict[str, str]] = {}  # partition -> its mark
        self._marks = 0
        self.writes = 0  # one per fact offered (a conditional write each on DynamoDB)
        self.versions: dict[FactKey, dict[int, PartitionFact]] = {}
        self.version_writes = 0  # one per version offered (a put in a batch of 25 on DynamoDB)
        self.version_reads = 0  # one per versions_after (a query on DynamoDB)
        self.commit_log: dict[str, dict[int, LoggedSnapshot]] = {}
        self.log_reads = 0  # one per commits_after (a query on DynamoDB)
        self.stored_reads = 0  # one per version asked of stored_versions (batched reads of 100 on DynamoDB)
        self.pieces: dict[CommitRef, KnownPieces] = {}
        self.piece_reads = 0  # one per commit asked of commit_pieces (batched reads of 100 on DynamoDB)
        self.piece_writes = 0  # one per commit noted (an update on DynamoDB)

    def advance(self, facts: Sequence[PartitionFact], now_ms: int) -> list[PartitionFact]:
        moved: list[PartitionFact] = []
        with self._lock:
            for fact in facts:
                self.writes += 1
                if fact.newer_than(self.kept.get(fact.key)):
                    self.kept[fact.key] = fact
                    moved.append(fact)
        return moved

    def facts(self, wanted: Collection[FactKey]) -> dict[FactKey, PartitionFact]:
        with self._lock:
            return {k: self.kept[k] for k in wanted if k in self.kept}

    def record_versions(self, versions: Sequence[PartitionFact], now_ms: int) -> None:
        with self._lock:
            for version in versions:
                self.version_writes += 1
                self.versions.setdefault(version.key, {})[version.order] = version

    def versions_after(self, key: FactKey, order: int, limit: int) -> list[PartitionFact]:
        with self._lock:
            self.version_reads += 1
            kept = self.versions.get(key, {})
            return [kept[o] for o in sorted(kept) if o > order][:limit]

    def log_commits(
        self,
        commits: Mapping[str, Sequence[SnapshotRecord]],
        now_ms: int,
        in_part: Mapping[str, Sequence[SnapshotRecord]] | None = None,
    ) -> None:
        with self._lock:
            for asset_key, records in (in_part or {}).items():
                for record in records:
                    logged = self.commit_log.setdefault(asset_key, {})
                    logged.setdefault(record.order, LoggedSnapshot(record, now_ms, partial=True))
            for asset_key, records in commits.items():
                logged = self.commit_log.setdefault(asset_key, {})
                for record in records:
                    kept = logged.get(record.order)
                    if kept is None or kept.partial:
                        logged[record.order] = LoggedSnapshot(record, now_ms)

    def commits_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        with self._lock:
            self.log_reads += 1
            kept = self.commit_log.get(asset_key, {})
            return [kept[o] for o in sorted(kept) if o > order][:limit]

    def commit_pieces(self, commits: Collection[CommitRef]) -> dict[CommitRef, KnownPieces]:
        with self._lock:
            self.piece_reads += len(commits)
            return {ref: self.pieces[ref] for ref in commits if ref in self.pieces}

    def note_pieces(self, pieces: Sequence[CommitPiece], now_ms: int) -> dict[CommitRef, SnapshotRecord]:
        whole: dict[CommitRef, SnapshotRecord] = {}
        with self._lock:
            for ref, mine in by_commit(pieces).items():
                self.piece_writes += 1
                known = self.pieces.get(ref, NOTHING).with_pieces(mine)
                self.pieces[ref] = known
                if known.whole:
                    whole[ref] = mine[0].record
        return whole

    def stored_versions(self, wanted: Collection[tuple[FactKey, int]]) -> set[tuple[FactKey, int]]:
        with self._lock:
            self.stored_reads += len(wanted)
            return {(key, order) for key, order in wanted if order in self.versions.get(key, {})}

    def mark_pending(self, rule_id: str, group_id: str, partitions: Collection[str], now_ms: int) -> None:
        with self._lock:
            book = self.waiting.setdefault((rule_id, group_id), {})
            for p in partitions:
                self._marks += 1
                book[p] = f"{now_ms}-{self._marks}"

    def clear_pending(self, rule_id: str, group_id: str, marks: Mapping[str, str]) -> None:
        with self._lock:
            book = self.waiting.get((rule_id, group_id), {})
            for p, mark in marks.items():
                if book.get(p) == mark:
                    del book[p]

    def pending(self, rule_id: str, group_id: str, limit: int, after: str | None = None) -> dict[str, str]:
        with self._lock:
            book = self.waiting.get((rule_id, group_id), {})
            below = [p for p in sorted(book, reverse=True) if after is None or p < after]
            return {p: book[p] for p in below[:limit]}

    def marks(self, rule_id: str, group_id: str, partitions: Collection[str]) -> dict[str, str]:
        with self._lock:
            book = self.waiting.get((rule_id, group_id), {})
            return {p: book[p] for p in partitions if p in book}

    def pending_since(self, rule_id: str, group_id: str) -> dict[str, int]:
        with self._lock:
            book = self.waiting.get((rule_id, group_id), {})
            return {p: int(book[p].split("-")[0]) for p in sorted(book)}  # a mark is <markedAt>-<n>

    def count_pending(self, rule_id: str, group_id: str) -> int:
        with self._lock:
            return len(self.waiting.get((rule_id, group_id), {}))
