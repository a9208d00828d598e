"""EACH_VERSION per partition: a gap of a table's commits before a partition's next version.

A partition's versions are the commits known to touch it (their partitions came with their event, a part of it, or
a poll). A commit of the table whose partitions are not known yet (its event came without them, or it came not at
all: an order missing between two known commits) could touch the partition too, so the partition's next version
waits at it, as an unpartitioned group's snapshot log waits at a lineage gap (:mod:`lakehook.domain.evaluation`):
until the commit comes with its partitions, or until the settle time after the commit behind the gap was known
(an expired or never-pushed commit must not hold a partition forever; one that comes later is recorded SKIPPED
there, :mod:`lakehook.domain.late_versions`). A table whose lineage shows no gap (Hudi instant times, pushed assets
of no known format) shows none here either. Pure."""

from __future__ import annotations

from lakehook.domain.triggers import PinnedInput
from lakehook.domain.verdicts import Gap
from lakehook.domain.versions import Lineage, SnapshotLog, follows, lineage_of


def gaps_shown(asset_key: str) -> bool:
    """Whether the commits of the asset's table show a gap (its lineage tells what follows what)."""
    return lineage_of(asset_key) is not Lineage.NONE


def gap_before(asset_key: str, last: PinnedInput, next_order: int, log: SnapshotLog, now: int) -> Gap | None:
    """The first gap of ``log`` (the table's commits known with their partitions, after ``last``) up to the commit of
    order ``next_order`` (the partition's next version), unless settled: its end (``until``) is the settle time after
    the commit behind it was logged. None when the commits up to the next version follow each other, or when the
    next version was not logged (kept before its table's commits were: nothing to tell a gap by).

    A commit logged as known only in part (``partial``: some of its keys are still to come) is no link of the chain
    before the next version: a key still to come could be this partition's, so the next version waits at it as at a
    commit not logged. It is the chain's end when it is the next version itself (the partition's version of it was
    kept, and its lineage tells what came before it): a newer commit's piece that came first never lets the next
    version skip an older commit whose pieces are still on their way."""
    if last.snapshot_id is None or not any(e.record.order == next_order for e in log.entries):
        return None
    previous_id, previous_order = last.snapshot_id, last.ordinal[0]
    for entry in log.after(previous_order):
        record = entry.record
        if record.order > next_order:
            break
        if entry.partial and record.order < next_order:
            continue
        until = entry.recorded_at + log.settle_ms
        if not follows(log.lineage, previous_id, previous_order, record) and until > now:
            return Gap(asset_key, previous_id, previous_order, record.snapshot_id, until)
        previous_id, previous_order = record.snapshot_id, record.order
    return None
