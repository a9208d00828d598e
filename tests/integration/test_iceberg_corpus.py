"""Iceberg metadata written by others (tests/data/iceberg: Java's and iceberg-rust's parser test files, tables
PySpark wrote): lakehook's poller reports what pyiceberg reads from the same file, and its row counts match the
data and delete files the table's manifests list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import StaticTable
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from lakehook.adapters.lakehouse.iceberg import batch_from_metadata, read_metadata
from lakehook.domain.snapshots import SnapshotCursor, SnapshotInfo
from lakehook.ports.lakehouse import CorruptMetadataError, SnapshotBatch

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "data" / "iceberg"
SPARK = CORPUS / "duckdb-iceberg"  # the metadata's paths are relative to this folder
SPARK_TABLES = ("generated_spec1_0_001", "generated_spec2_0_001")
# files pyiceberg refuses but Java's TableMetadataParser reads (format v1 with `schemas` and no `schema`)
JAVA_READS = {"TableMetadataV1Compat.metadata.json"}


def metadata_files() -> list[Path]:
    files = sorted(CORPUS.glob("*/*.metadata.json"))
    for name in SPARK_TABLES:
        files += sorted((SPARK / "data/iceberg" / name / "pyspark_iceberg_table/metadata").glob("v*.metadata.json"))
    return files + sorted((SPARK / "data/iceberg/lineitem_iceberg_gz/metadata").glob("*.gz.metadata.json"))


def lakehook_reads(path: Path, cursor: SnapshotCursor | None = None) -> SnapshotBatch:
    metadata = read_metadata(PyArrowFileIO(), str(path), path.name)
    return batch_from_metadata(metadata, str(path), cursor, limit=10_000)


def main_ancestry(table: StaticTable) -> list[Snapshot]:
    current = table.current_snapshot()
    return list(ancestors_of(current, table.metadata))[::-1] if current is not None else []


def spark_table(name: str, version: int = 9) -> Path:
    return SPARK / "data/iceberg" / name / f"pyspark_iceberg_table/metadata/v{version}.metadata.json"


def test_the_corpus_is_the_documented_one_and_small() -> None:
    files = metadata_files()
    assert len(files) == 37
    assert sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file()) < 500_000


@pytest.mark.parametrize(
    "path", [p for p in metadata_files() if p.name not in JAVA_READS], ids=lambda p: str(p.relative_to(CORPUS))
)
def test_lakehook_reports_what_pyiceberg_reads_from_the_same_file(path: Path) -> None:
    try:
        table = StaticTable.from_metadata(str(path))
    except Exception:  # pyiceberg refuses the file: so does lakehook
        with pytest.raises(CorruptMetadataError):
            lakehook_reads(path)
        return
    batch = lakehook_reads(path)
    metadata = table.metadata
    versioned = metadata.format_version >= 2
    assert batch.latest_snapshot_id == metadata.current_snapshot_id
    expected = main_ancestry(table)
    assert [s.snapshot_id for s in batch.snapshots] == [s.snapshot_id for s in expected]
    for ours, theirs in zip(batch.snapshots, expected, strict=True):
        assert ours.parent_snapshot_id == theirs.parent_snapshot_id
        assert ours.sequence_number == (theirs.sequence_number if versioned else None)
        assert ours.schema_id == theirs.schema_id
        assert ours.commit_time == theirs.timestamp_ms
        summary = theirs.summary
        assert ours.commit_kind == (summary.operation.value.upper() if summary is not None else None)
        properties = summary.additional_properties if summary is not None else {}
        if properties.get("total-delete-files", "0") == "0" and "total-records" in properties:
            assert ours.total_record_count == int(properties["total-records"])  # no deletes: every row is live
    tagged = {t.name: t.snapshot_id for t in batch.tags}
    assert tagged == {name: ref.snapshot_id for name, ref in metadata.refs.items() if name != "main"}


def test_v1_metadata_with_schemas_but_no_schema_is_read_as_java_does() -> None:
    """iceberg-rust's TableMetadataV1Compat: Java takes the schema ``current-schema-id`` names from ``schemas``."""
    path = CORPUS / "iceberg-rust/TableMetadataV1Compat.metadata.json"
    document = json.loads(path.read_text())
    assert "schema" not in document and document["format-version"] == 1
    with pytest.raises(IcebergValidationError):
        StaticTable.from_metadata(str(path))  # pyiceberg's v1 model requires `schema`
    batch = lakehook_reads(path)
    (snapshot,) = document["snapshots"]
    assert batch.latest_snapshot_id == document["current-snapshot-id"] == snapshot["snapshot-id"]
    (read,) = batch.snapshots
    assert (read.snapshot_id, read.schema_id, read.commit_time) == (
        snapshot["snapshot-id"],
        snapshot["schema-id"],
        snapshot["timestamp-ms"],
    )
    assert read.sequence_number is None and read.commit_kind == "OVERWRITE"
    # one 3-row file rewritten as another 3-row file: 3 rows, none added net, but files changed
    assert (read.total_record_count, read.delta_record_count, read.data_changed) == (3, 0, True)
    # and a v1 file whose `schemas` has no `current-schema-id` is refused, as Java refuses it
    with pytest.raises(CorruptMetadataError):
        lakehook_reads(CORPUS / "iceberg-rust/TableMetadataV1NoValidSchema.metadata.json")


# --- row counts against the manifests (the v2 table Spark wrote with merge-on-read deletes) ------------------


def live_files(table: StaticTable, snapshot: Snapshot) -> dict[str, tuple[DataFileContent, int]]:
    """Each live data and delete file of the snapshot, with its content and record count, from its manifests."""
    found = {}
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            found[entry.data_file.file_path] = (entry.data_file.content, entry.data_file.record_count)
    return found


def live_rows(files: dict[str, tuple[DataFileContent, int]]) -> int:
    """Rows in data files less rows position deletes remove (each position delete names one row)."""
    assert not any(content is DataFileContent.EQUALITY_DELETES for content, _ in files.values())
    data = sum(n for content, n in files.values() if content is DataFileContent.DATA)
    return data - sum(n for content, n in files.values() if content is DataFileContent.POSITION_DELETES)


def test_row_counts_match_the_data_and_delete_files_of_each_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SPARK)
    path = spark_table("generated_spec2_0_001")
    table = StaticTable.from_metadata(str(path))
    snapshots = {s.snapshot_id: s for s in lakehook_reads(path).snapshots}
    previous: dict[str, tuple[DataFileContent, int]] = {}
    kinds = set()
    for snapshot in main_ancestry(table):
        files = live_files(table, snapshot)
        ours: SnapshotInfo = snapshots[snapshot.snapshot_id]
        kinds.add(ours.commit_kind)
        assert ours.total_record_count == live_rows(files)
        assert ours.delta_record_count == live_rows(files) - live_rows(previous)
        assert ours.data_changed is (files != previous), snapshot.snapshot_id
        previous = files
    assert kinds == {"APPEND", "OVERWRITE", "DELETE"}
    # Spark's own count after the last step
    expected = int(
        (SPARK / "data/iceberg/generated_spec2_0_001/expected_results/last/count.csv").read_text().split()[1]
    )
    assert snapshots[table.metadata.current_snapshot_id].total_record_count == expected


def test_a_merge_on_read_update_adds_no_rows_and_a_delete_that_matched_nothing_changes_no_data() -> None:
    snapshots = lakehook_reads(spark_table("generated_spec2_0_001")).snapshots
    update = snapshots[1]  # UPDATE: a new data file with the rows, a position delete file for the old ones
    assert update.commit_kind == "OVERWRITE" and update.delta_record_count == 0 and update.data_changed
    noop = snapshots[5]  # DELETE ... WHERE nothing matched: Spark still commits a snapshot
    assert noop.commit_kind == "DELETE" and (noop.delta_record_count, noop.data_changed) == (0, False)
    v1 = lakehook_reads(spark_table("generated_spec1_0_001")).snapshots
    assert [s.snapshot_id for s in v1 if not s.data_changed] == [2276968461870063565]  # an overwrite of nothing
    expected = int(
        (SPARK / "data/iceberg/generated_spec1_0_001/expected_results/last/count.csv").read_text().split()[1]
    )
    assert v1[-1].total_record_count == expected


@pytest.mark.parametrize("name", SPARK_TABLES)
def test_a_commit_that_adds_no_snapshot_reports_nothing_new(name: str) -> None:
    """Spark's ALTER COLUMN writes a new metadata.json (v7, v9) with the same current snapshot: nothing to run."""
    seen = 0
    for version in range(2, 10):
        before = lakehook_reads(spark_table(name, version - 1))
        cursor = SnapshotCursor.of(before.snapshots[-1])
        after = lakehook_reads(spark_table(name, version), cursor)
        if after.latest_snapshot_id == before.latest_snapshot_id:
            seen += 1
            assert after.snapshots == [] and after.gap is None and after.complete
        else:
            assert [s.parent_snapshot_id for s in after.snapshots] == [before.latest_snapshot_id]
    assert seen == 2
