"""Port of the partition facts a partitioned group runs on, and of the partitions it still waits for."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence

from lakehook.domain.commit_pieces import CommitPiece, CommitRef, KnownPieces
from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord


class PartitionStore(ABC):
    """Per (asset, mapping, partition) the newest data commit that touched it (advance-only), for EACH_VERSION groups
    every data commit that touched it (its versions), and per partitioned group the partitions that are pending: a
    member touched them since their last run, and they have not run."""

    @abstractmethod
    def advance(self, facts: Sequence[PartitionFact], now_ms: int) -> list[PartitionFact]:
        """Keep each fact unless one at least as new is kept (one conditional write each); the ones that advanced."""

    @abstractmethod
    def facts(self, wanted: Collection[FactKey]) -> dict[FactKey, PartitionFact]:
        """The kept facts among ``wanted`` (batched reads)."""

    @abstractmethod
    def record_versions(self, versions: Sequence[PartitionFact], now_ms: int) -> None:
        """EACH_VERSION: keep each data commit touching a partition as one version of it (batched puts; one kept
        already is written again as it was), kept for the state history's retention."""

    @abstractmethod
    def versions_after(self, key: FactKey, order: int, limit: int) -> list[PartitionFact]:
        """EACH_VERSION: at most ``limit`` kept versions of ``key`` with an order above ``order``, oldest first (one
        query)."""

    @abstractmethod
    def log_commits(
        self,
        commits: Mapping[str, Sequence[SnapshotRecord]],
        now_ms: int,
        in_part: Mapping[str, Sequence[SnapshotRecord]] | None = None,
    ) -> None:
        """EACH_VERSION per partition: log these commits of each asset (by asset key) as commits whose partitions are
        known (a commit logged before keeps when it was first logged: a gap before it settles from then; one logged
        in part is replaced, from now), and those of ``in_part`` as known only in part (``LoggedSnapshot.partial``:
        some of their keys are still to come; one logged before, whole or in part, is kept), kept for the state
        history's retention."""

    @abstractmethod
    def commits_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        """EACH_VERSION per partition: at most ``limit`` logged commits of the asset with an order above ``order``,
        oldest first (one query)."""

    @abstractmethod
    def commit_pieces(self, commits: Collection[CommitRef]) -> dict[CommitRef, KnownPieces]:
        """EACH_VERSION per partition: what is kept of these commits' pieces (those with none are left out; batched
        reads)."""

    @abstractmethod
    def note_pieces(self, pieces: Sequence[CommitPiece], now_ms: int) -> dict[CommitRef, SnapshotRecord]:
        """EACH_VERSION per partition: keep these pieces of commits known in part (their versions kept: one update per
        commit, a piece kept before changes nothing), kept for the state history's retention; the commits whose kept
        pieces now cover every key they touched (:mod:`lakehook.domain.commit_pieces`)."""

    @abstractmethod
    def stored_versions(self, wanted: Collection[tuple[FactKey, int]]) -> set[tuple[FactKey, int]]:
        """EACH_VERSION: those of ``wanted`` (a key and a version's order) kept as versions (batched reads)."""

    @abstractmethod
    def mark_pending(self, rule_id: str, group_id: str, partitions: Collection[str], now_ms: int) -> None:
        """Remember these partitions of the group as pending, each under a new mark (batched writes)."""

    @abstractmethod
    def clear_pending(self, rule_id: str, group_id: str, marks: Mapping[str, str]) -> None:
        """Forget these partitions as pending (they ran, or have nothing new), each only while it holds the mark it
        was read with: one a racing resolver marked again since stays pending."""

    @abstractmethod
    def pending(self, rule_id: str, group_id: str, limit: int, after: str | None = None) -> dict[str, str]:
        """At most ``limit`` pending partitions of the group (newest keys first), each with its mark; ``after``: only
        the keys below it (the next page of a scan whose last page ended there)."""

    @abstractmethod
    def marks(self, rule_id: str, group_id: str, partitions: Collection[str]) -> dict[str, str]:
        """The marks of those of ``partitions`` that are pending (batched reads)."""

    @abstractmethod
    def pending_since(self, rule_id: str, group_id: str) -> dict[str, int]:
        """Every pending partition of the group, the lowest keys first (query pages of only the key and the time),
        each with when it was found pending (epoch ms): what a freshness promise over partition runs measures."""

    @abstractmethod
    def count_pending(self, rule_id: str, group_id: str) -> int:
        """How many partitions of the group are pending."""
