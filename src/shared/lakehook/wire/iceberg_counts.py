"""Row counts and "did it change data" from an Iceberg snapshot summary, read as Java's writer defines it.

Java's ``SnapshotSummary`` writes each change counter only when it is above zero (``setIf(count > 0)``), so
once a summary shows it was written by such a writer, a missing counter is 0. That writer also writes the
``total-*`` properties (``SnapshotProducer.updateTotal``) whenever the previous snapshot's totals are known, and
``changed-partition-count`` whenever partition metrics are trusted; a summary with neither (the bare
``{"operation": "append"}`` other writers and old tests leave) says nothing, and nothing is inferred from it.

Rows are live rows. ``total-records`` counts every row of the live data files, also those a position delete
(or deletion vector) removed, so the table holds ``total-records - total-position-deletes`` rows. A commit adds
``added-records - added-position-deletes`` rows and removes ``deleted-records - removed-position-deletes``
(a removed data file takes its deletes with it). With equality deletes the rows they remove are unknown until a
scan matches them, so the counts are unknown (None). Java leaves the delete counters out when it could not
trust them (a delete manifest appended whole): delete files added or removed without any delete counter also
make the change unknown.

A commit changes no data when its operation is ``replace`` (Iceberg's ``DataOperations.REPLACE``: files are
rewritten without changing the table's rows, as compaction does), or when a summary that carries the writer's
counters shows no data or delete file and no row added or removed (an ``overwrite`` or ``delete`` that matched
nothing; Spark commits one for a ``DELETE`` whose filter matched no rows). This module reads a plain mapping:
the adapter hands it the summary's properties, so the domain imports no Iceberg library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

REPLACE = "replace"

# Counters Java's SnapshotSummary writes only when above zero: together they describe everything a commit changed.
_FILE_CHANGES = (
    "added-data-files",
    "deleted-data-files",
    "added-delete-files",
    "removed-delete-files",
    "added-position-delete-files",
    "removed-position-delete-files",
    "added-equality-delete-files",
    "removed-equality-delete-files",
    "added-dvs",
    "removed-dvs",
)
_ROW_CHANGES = (
    "added-records",
    "deleted-records",
    "added-position-deletes",
    "removed-position-deletes",
    "added-equality-deletes",
    "removed-equality-deletes",
)
_EQUALITY = (
    "added-equality-delete-files",
    "removed-equality-delete-files",
    "added-equality-deletes",
    "removed-equality-deletes",
)
_DELETE_ROWS = (
    "added-position-deletes",
    "removed-position-deletes",
    "added-equality-deletes",
    "removed-equality-deletes",
)
# Present in every summary a Java-style writer computed: the evidence that a missing counter means 0.
_WRITER_MARKS = ("total-records", "total-data-files", "changed-partition-count")


@dataclass(frozen=True)
class IcebergCounts:
    """What one snapshot's summary tells: live rows after it, rows it added net, and whether it changed data."""

    total_rows: int | None
    delta_rows: int | None
    data_changed: bool


def counts_from_summary(operation: str | None, summary: Mapping[str, str]) -> IcebergCounts:
    """The counts of a snapshot with this operation (``append``, ``overwrite`` …) and summary properties."""
    operation = (operation or "").lower()
    counted = any(key in summary for key in _WRITER_MARKS)
    changes = {key: _count(summary, key, counted) for key in (*_FILE_CHANGES, *_ROW_CHANGES)}
    if operation == REPLACE:
        return IcebergCounts(_live_rows(summary), 0, data_changed=False)
    nothing = counted and all(value == 0 for value in changes.values())
    return IcebergCounts(_live_rows(summary), 0 if nothing else _delta(changes), data_changed=not nothing)


def _delta(changes: Mapping[str, int | None]) -> int | None:
    if any(changes[key] for key in _EQUALITY):
        return None  # equality deletes: which rows they remove is known only to a scan
    delete_files = (changes["added-delete-files"] or 0) + (changes["removed-delete-files"] or 0)
    if delete_files and not any(changes[key] for key in _DELETE_ROWS):
        return None  # delete files without delete counts: Java did not trust them enough to write them
    parts = [
        changes[key]
        for key in ("added-records", "added-position-deletes", "deleted-records", "removed-position-deletes")
    ]
    if any(part is None for part in parts):
        return None
    added, added_deletes, deleted, removed_deletes = (part or 0 for part in parts)
    return (added - added_deletes) - (deleted - removed_deletes)


def _live_rows(summary: Mapping[str, str]) -> int | None:
    """``total-records - total-position-deletes``; unknown with equality deletes or without the totals."""
    records = _int(summary.get("total-records"))
    if records is None or (_int(summary.get("total-equality-deletes")) or 0) > 0:
        return None
    positions = _int(summary.get("total-position-deletes"))
    if positions is None:
        if (_int(summary.get("total-delete-files")) or 0) > 0:
            return None  # deletes exist, but not how many rows they remove
        positions = 0
    live = records - positions
    return live if live >= 0 else None


def _count(summary: Mapping[str, str], key: str, counted: bool) -> int | None:
    """A change counter; missing is 0 in a summary its writer counted, else unknown."""
    value = summary.get(key)
    if value is None:
        return 0 if counted else None
    return _int(value)


def _int(value: object) -> int | None:
    try:
        number = int(str(value)) if value is not None else None
    except ValueError:
        return None
    return number if number is None or number >= 0 else None
