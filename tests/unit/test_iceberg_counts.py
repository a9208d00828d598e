"""Row counts from Iceberg snapshot summaries, against a model of the table the summaries describe.

The summaries are written here as Java's writer writes them (``SnapshotSummary``: a counter only when above zero;
``SnapshotProducer.updateTotal``: each total is the previous one plus added less removed, from zero at the first
snapshot), for random histories of appends, copy-on-write and merge-on-read deletes, dropped files, rewrites
(``replace``) and commits that match nothing. The model knows the live rows; the summary reading must agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.wire.iceberg_counts import IcebergCounts, counts_from_summary
from tests.hypothesis_profiles import examples

TOTALS = {
    "total-records": ("added-records", "deleted-records"),
    "total-data-files": ("added-data-files", "deleted-data-files"),
    "total-delete-files": ("added-delete-files", "removed-delete-files"),
    "total-position-deletes": ("added-position-deletes", "removed-position-deletes"),
    "total-equality-deletes": ("added-equality-deletes", "removed-equality-deletes"),
}


@dataclass
class DataFile:
    records: int
    deleted: int = 0  # rows of this file that position delete files remove
    delete_files: int = 0


@dataclass
class Table:
    """The live files, and the summaries a Java writer wrote for each commit."""

    files: list[DataFile] = field(default_factory=list)
    previous: dict[str, str] | None = None

    @property
    def live(self) -> int:
        return sum(f.records - f.deleted for f in self.files)

    def commit(self, operation: str, changes: dict[str, int]) -> dict[str, str]:
        summary = {k: str(v) for k, v in changes.items() if v > 0}  # setIf(count > 0)
        previous = self.previous or dict.fromkeys(TOTALS, "0")
        for total, (added, removed) in TOTALS.items():
            summary[total] = str(int(previous[total]) + changes.get(added, 0) - changes.get(removed, 0))
        summary["changed-partition-count"] = "1" if any(changes.values()) else "0"
        self.previous = summary
        return summary

    def removed(self, data: DataFile) -> dict[str, int]:
        """A data file leaves the table with the position deletes against it."""
        self.files.remove(data)
        return {
            "deleted-data-files": 1,
            "deleted-records": data.records,
            "removed-delete-files": data.delete_files,
            "removed-position-delete-files": data.delete_files,
            "removed-position-deletes": data.deleted,
        }


@st.composite
def step(draw: st.DrawFn, table: Table) -> tuple[str, dict[str, int]]:
    kinds = ["append", "noop"] + (["cow", "mor", "drop", "rewrite"] if table.files else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "append":
        n = draw(st.integers(1, 1000))
        table.files.append(DataFile(n))
        return "append", {"added-data-files": 1, "added-records": n}
    if kind == "noop":  # an overwrite or delete whose filter matched nothing, or an empty append
        return draw(st.sampled_from(["overwrite", "delete", "append"])), {}
    target = draw(st.sampled_from(table.files))
    alive = target.records - target.deleted
    if kind == "mor":  # a position delete file removing k live rows of one file
        k = draw(st.integers(1, max(1, alive))) if alive else 0
        if k == 0:
            return "delete", {}
        target.deleted += k
        target.delete_files += 1
        return "delete", {"added-delete-files": 1, "added-position-delete-files": 1, "added-position-deletes": k}
    if kind == "drop":
        return "delete", table.removed(target)
    if kind == "cow":  # the file rewritten without k of its live rows
        k = draw(st.integers(0, alive))
        changes = table.removed(target)
        if alive - k:
            table.files.append(DataFile(alive - k))
            changes.update({"added-data-files": 1, "added-records": alive - k})
        return "overwrite", changes
    # rewrite (compaction): every file becomes one file of the live rows, deletes applied
    live = table.live
    changes: dict[str, int] = {}
    for data in list(table.files):
        for key, value in table.removed(data).items():
            changes[key] = changes.get(key, 0) + value
    if live:
        table.files.append(DataFile(live))
        changes.update({"added-data-files": 1, "added-records": live})
    return "replace", changes


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_counts_follow_the_live_rows_of_the_table_the_summaries_describe(data: st.DataObject) -> None:
    table = Table()
    for _ in range(data.draw(st.integers(1, 12))):
        before = table.live
        operation, changes = data.draw(step(table))
        summary = table.commit(operation, changes)
        counts = counts_from_summary(operation, summary)
        assert counts.total_rows == table.live
        assert counts.delta_rows == table.live - before
        assert counts.data_changed is (operation != "replace" and any(changes.values()))


def test_a_commit_that_matched_nothing_changes_no_data_whatever_its_operation() -> None:
    totals = {"total-records": "7690", "total-position-deletes": "0", "changed-partition-count": "0"}
    for operation in ("overwrite", "delete", "append"):
        assert counts_from_summary(operation, totals) == IcebergCounts(7690, 0, data_changed=False)
    # a replace rewrites files without changing rows: no data change even though files moved
    rewrite = {**totals, "added-data-files": "1", "deleted-data-files": "2", "added-records": "7690"}
    assert counts_from_summary("replace", {**rewrite, "deleted-records": "7690"}).data_changed is False


def test_a_summary_without_the_writers_counters_says_nothing() -> None:
    """Java's own test metadata has ``{"operation": "append"}`` only: no counter is known to be 0."""
    assert counts_from_summary("append", {}) == IcebergCounts(None, None, data_changed=True)
    assert counts_from_summary("overwrite", {"added-records": "3"}) == IcebergCounts(None, None, data_changed=True)
    assert counts_from_summary(None, {}) == IcebergCounts(None, None, data_changed=True)


def test_equality_deletes_make_the_rows_unknown() -> None:
    summary = {
        "added-delete-files": "1",
        "added-equality-delete-files": "1",
        "added-equality-deletes": "5",
        "total-records": "100",
        "total-position-deletes": "0",
        "total-equality-deletes": "5",
    }
    assert counts_from_summary("delete", summary) == IcebergCounts(None, None, data_changed=True)
    # a table with equality deletes from earlier: this append's delta is known, the live total is not
    append = {"added-data-files": "1", "added-records": "4", "total-records": "104", "total-equality-deletes": "5"}
    assert counts_from_summary("append", append) == IcebergCounts(None, 4, data_changed=True)


def test_delete_files_without_delete_counts_are_untrusted() -> None:
    """Java leaves the delete counters out when a delete manifest was appended whole."""
    summary = {"added-delete-files": "2", "total-records": "10", "total-delete-files": "2"}
    assert counts_from_summary("delete", summary) == IcebergCounts(None, None, data_changed=True)


def test_unreadable_counters_are_unknown_never_zero() -> None:
    summary = {"added-records": "many", "total-records": "-1", "changed-partition-count": "1"}
    assert counts_from_summary("append", summary) == IcebergCounts(None, None, data_changed=True)
