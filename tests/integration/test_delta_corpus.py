"""Delta tables nobody on this project wrote (tests/data/delta: delta-rs's and Delta's own test tables) read as
the reference reader, the ``deltalake`` package, reads them: the same newest version, the same row counts, and
the same version when log cleanup has left a checkpoint alone or ``_last_checkpoint`` is unreadable."""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.lakehouse.delta import (
    LAST_CHECKPOINT,
    LOG_DIR,
    LogListing,
    PartitionLayout,
    checkpoint_metadata,
)
from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.adapters.lakehouse.table_files import LocalTableFiles
from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.snapshots import SnapshotCursor, SnapshotGap, SnapshotInfo
from lakehook.ports.lakehouse import SnapshotBatch, SnapshotSource
from tests.delta_tables import CHECKPOINTED, CORPUS, DATA, copy, rows_at
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

# the Delta protocol's checkpoint names: classic, multi-part (part i of n) and v2 (a unique id, JSON or Parquet)
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.(?:parquet|(\d+)\.(\d+)\.parquet|[^.]+\.(?:json|parquet))$")


def checkpoint_part(name: str) -> tuple[int, int, int] | None:
    """(version, part, parts) of a checkpoint file's name, else None."""
    match = _CHECKPOINT.match(name)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 1), int(match.group(3) or 1)


@pytest.fixture(scope="module")
def source() -> SnapshotSource:
    return snapshot_sources(InMemorySecretStore())(AssetFormat.DELTA)


def at(location: Path | str) -> AssetSource:
    return AssetSource(catalog="lake", location=str(Path(location).resolve()))


def everything(source: SnapshotSource, location: Path | str) -> SnapshotBatch:
    """Every version lakehook reads from the table's beginning (as a poller that saw it empty)."""
    where = at(location)
    return source.snapshots_since(where, SnapshotCursor.beginning(), source.pointer(where), limit=1000)


def reference_version(location: Path | str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return int(DeltaTable(str(location)).version())


def reference_history(location: Path | str) -> dict[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {int(h["version"]): str(h.get("operation")) for h in DeltaTable(str(location)).history()}


def test_the_corpus_is_small_and_every_table_is_one_the_reference_reader_opens() -> None:
    assert len(CORPUS) >= 20 and CHECKPOINTED
    size = sum(f.stat().st_size for f in DATA.rglob("*") if f.is_file())
    assert size < 1_000_000
    assert all(reference_version(DATA / name) >= 0 for name in CORPUS)


@pytest.mark.parametrize("name", CORPUS)
def test_every_table_reports_the_version_and_row_counts_deltalake_reports(name: str, source: SnapshotSource) -> None:
    location = DATA / name
    batch = everything(source, location)
    version = reference_version(location)
    assert source.pointer(at(location)) == str(version) and batch.latest_snapshot_id == version
    assert batch.complete and batch.snapshots and batch.snapshots[-1].snapshot_id == version
    # every commit deltalake lists, with its operation as the commit kind; the versions before the oldest
    # retained one (log cleanup) are the batch's gap
    history = reference_history(location)
    seen = {s.snapshot_id: s for s in batch.snapshots}
    assert {v: seen[v].commit_kind for v in history} == {v: op.upper() for v, op in history.items()}
    first = batch.snapshots[0].snapshot_id
    assert list(seen) == list(range(first, version + 1))
    assert (batch.gap is None) == (first == 0)
    for snapshot in batch.snapshots:
        rows = rows_at(location, snapshot.snapshot_id)
        before = 0 if snapshot.snapshot_id == 0 else rows_at(location, snapshot.snapshot_id - 1)
        if snapshot.total_record_count is not None and rows is not None:
            assert snapshot.total_record_count == rows, snapshot
        if snapshot.delta_record_count is not None and rows is not None and before is not None:
            assert snapshot.delta_record_count == rows - before, snapshot
        if not snapshot.data_changed and rows is not None and before is not None:
            assert rows == before, snapshot  # a version that changed no data changed no row count


def test_a_spark_merge_counts_the_rows_it_inserted_minus_those_it_deleted(source: SnapshotSource) -> None:
    location = DATA / "delta" / "basic-with-inserts-merge"
    merge = everything(source, location).snapshots[-1]
    metrics = json.loads((location / LOG_DIR / "00000000000000000001.json").read_text().splitlines()[0])
    metrics = metrics["commitInfo"]["operationMetrics"]
    # numOutputRows (140) is every row the MERGE wrote: inserted 50, updated 50 and copied 40; 10 were deleted
    assert (metrics["numOutputRows"], metrics["numTargetRowsInserted"], metrics["numTargetRowsDeleted"]) == (
        "140",
        "50",
        "10",
    )
    assert (merge.commit_kind, merge.delta_record_count) == ("MERGE", 40)
    assert rows_at(location, 1) == 140 and rows_at(location, 0) == 100


def test_commits_that_change_no_data_say_so_whatever_their_operation(source: SnapshotSource) -> None:
    seen: dict[str, dict[int, tuple[str | None, bool | None]]] = {}
    for name in ("delta/data-skipping-change-stats-collected-across-versions", "delta/snapshot-vacuumed"):
        seen[name] = {s.snapshot_id: (s.commit_kind, s.data_changed) for s in everything(source, DATA / name).snapshots}
    skipping = seen["delta/data-skipping-change-stats-collected-across-versions"]
    assert skipping[1] == skipping[3] == ("SET TBLPROPERTIES", False)
    assert skipping[2] == skipping[4] == ("WRITE", True)
    # Spark rewrote the files of version 4 with dataChange=false (a repartition): named WRITE, it changed nothing
    assert seen["delta/snapshot-vacuumed"][5] == ("WRITE", False)


# --- a log that cleanup left with a checkpoint alone ---------------------------------------------------


def strip_commits(root: Path, keep_hint: bool) -> int:
    """Leave the log with its checkpoints alone, the newest one the table's newest version (a log cleanup right
    after that checkpoint): every commit and checksum file goes. Answers the newest checkpoint's version."""
    log = root / LOG_DIR
    newest = max(found[0] for e in log.iterdir() if (found := checkpoint_part(e.name)) is not None)
    for entry in log.iterdir():
        if entry.is_file() and entry.name[:20].isdigit() and checkpoint_part(entry.name) is None:
            entry.unlink()  # a commit, a checksum (.crc) or a compacted log file
        elif (found := checkpoint_part(entry.name)) is not None and found[0] > newest:
            entry.unlink()
    if not keep_hint:
        (log / LAST_CHECKPOINT).unlink(missing_ok=True)
    elif (log / LAST_CHECKPOINT).exists():
        hint = json.loads((log / LAST_CHECKPOINT).read_text() or "{}")
        (log / LAST_CHECKPOINT).write_text(json.dumps({**hint, "version": newest}))
    return newest


@pytest.mark.parametrize("keep_hint", [True, False], ids=["with_last_checkpoint", "without_last_checkpoint"])
@pytest.mark.parametrize("name", CHECKPOINTED)
def test_a_log_holding_only_checkpoints_is_the_newest_checkpoints_version(
    name: str, keep_hint: bool, tmp_path: Path, source: SnapshotSource
) -> None:
    root = copy(name, tmp_path)
    newest = strip_commits(root, keep_hint)
    assert reference_version(root) == newest  # deltalake reads the table from its checkpoint
    where = at(root)
    pointer = source.pointer(where)
    assert pointer == str(newest)

    first = source.snapshots_since(where, None, pointer, limit=10)  # a first look
    assert [s.snapshot_id for s in first.snapshots] == [newest] and first.complete
    (snapshot,) = first.snapshots
    checkpoint = next(e for e in (root / LOG_DIR).iterdir() if (checkpoint_part(e.name) or (-1,))[0] == newest)
    assert snapshot == SnapshotInfo(
        snapshotId=newest,
        parentSnapshotId=newest - 1 if newest else None,
        commitTime=os.stat(checkpoint).st_mtime_ns // 1_000_000,  # the only time the log records for it
    )
    # a poller that had read version 0 resumes at the oldest retained checkpoint, then the next, naming the
    # versions it could not read, until it reaches the newest
    checkpoints = sorted({f[0] for e in (root / LOG_DIR).iterdir() if (f := checkpoint_part(e.name)) is not None})
    cursor, read = SnapshotCursor(snapshotId=0), []
    while batch := source.snapshots_since(where, cursor, pointer, limit=10).snapshots:
        read.extend(s.snapshot_id for s in batch)
        cursor = SnapshotCursor.of(batch[-1])
    assert read == [v for v in checkpoints if v > 0]
    assert source.snapshots_since(where, SnapshotCursor.of(snapshot), pointer, limit=10).snapshots == []
    if newest > 1:
        resumed = source.snapshots_since(where, SnapshotCursor(snapshotId=0), pointer, limit=10)
        oldest = read[0]
        expected = SnapshotGap(afterSnapshotId=0, resumedAtSnapshotId=oldest, missed=oldest - 1) if oldest > 1 else None
        assert resumed.gap == expected


def test_an_incomplete_multi_part_checkpoint_is_no_version(tmp_path: Path, source: SnapshotSource) -> None:
    root = copy("delta/multi-part-checkpoint", tmp_path)
    strip_commits(root, keep_hint=False)
    (root / LOG_DIR / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    with pytest.raises(Exception, match="does not exist"):
        source.pointer(at(root))


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_every_checkpoint_holds_the_metadata_deltalake_reads_at_its_version(name: str) -> None:
    """The ``metaData`` lakehook reads from each checkpoint (Spark's and delta-rs's: classic, multi-part, v2 JSON and
    v2 Parquet) is the table's metadata at that version as deltalake loads it."""
    root = DATA / name
    listing = LogListing.of(sorted(e.name for e in (root / LOG_DIR).iterdir()))
    assert listing.parts
    for version, parts in listing.parts.items():
        meta = checkpoint_metadata(LocalTableFiles(str(root)), parts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = DeltaTable(str(root), version=version).metadata()
        assert meta is not None, (name, version)
        assert (meta["id"], meta["partitionColumns"], meta["configuration"]) == (
            reference.id,
            reference.partition_columns,
            reference.configuration,
        ), (name, version)
        assert PartitionLayout.of(meta).columns == tuple(reference.partition_columns)


# --- an unreadable _last_checkpoint is only a missing hint ---------------------------------------------


def test_an_empty_last_checkpoint_is_listed_past_as_delta_does(source: SnapshotSource) -> None:
    location = DATA / "delta" / "corrupted-last-checkpoint-kernel"  # Delta's own table: a 0-byte _last_checkpoint
    assert (location / LOG_DIR / LAST_CHECKPOINT).stat().st_size == 0
    assert source.pointer(at(location)) == "11" == str(reference_version(location))


def names_a_version(data: bytes) -> bool:
    try:
        version = json.loads(data)["version"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(version, int)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    hint=st.one_of(
        st.binary(max_size=40),
        st.text(max_size=40).map(str.encode),
        st.sampled_from([b"", b"{}", b'{"version": "10"}', b'{"version": -1}', b"null", b"[10]", b'{"size": 13}']),
    ).filter(lambda data: not names_a_version(data))
)
def test_any_unreadable_last_checkpoint_reads_the_version_deltalake_reads(
    hint: bytes, tmp_path_factory: pytest.TempPathFactory, source: SnapshotSource
) -> None:
    root = copy("delta-rs/simple_table_with_checkpoint", tmp_path_factory.mktemp("hint"))
    (root / LOG_DIR / LAST_CHECKPOINT).write_bytes(hint)
    assert source.pointer(at(root)) == str(reference_version(root)) == "10"
    assert everything(source, root).snapshots[-1].snapshot_id == 10


def test_a_stale_last_checkpoint_still_finds_the_newest_version(tmp_path: Path, source: SnapshotSource) -> None:
    location = DATA / "delta-rs" / "table_failed_last_checkpoint_update"  # the hint names 1, a checkpoint at 3
    assert json.loads((location / LOG_DIR / LAST_CHECKPOINT).read_text())["version"] == 1
    assert source.pointer(at(location)) == "3" == str(reference_version(location))
