"""The Delta and Hudi log readers' parsing: what other writers (Spark, concurrent Hudi 1.x writers) leave.

Real tables written by delta-rs and by Hudi are polled in tests/integration/test_delta_source.py and
test_hudi_source.py; these cover the shapes those writers do not produce here.
"""

from __future__ import annotations

import calendar
import json
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.delta import (
    LogListing,
    PartitionLayout,
    checkpoint_part,
    commit_file,
    commit_version,
    parse_commit,
    touched_partitions,
)
from lakehook.adapters.lakehouse.hudi import (
    HudiSnapshotSource,
    Instant,
    Layout,
    _after,
    _completed_versions,
    instant_millis,
    instant_snapshot,
    parse_properties,
)
from lakehook.domain.assets import AssetSource
from lakehook.domain.partitions import format_partition_key
from lakehook.domain.snapshots import PollOffset, SnapshotCursor
from lakehook.ports.lakehouse import CorruptMetadataError
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples


def _commit(*actions: dict[str, object]) -> bytes:
    return "\n".join(json.dumps(a) for a in actions).encode()


# --- Delta ----------------------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=10**20 - 1))
def test_a_commit_file_name_reads_back_as_its_version(version: int) -> None:
    assert commit_version(commit_file(version)) == version


@pytest.mark.parametrize(
    "name", ["_last_checkpoint", "00000000000000000010.checkpoint.parquet", "00000000000000000010.crc", "10.json"]
)
def test_only_commit_files_have_a_version(name: str) -> None:
    assert commit_version(name) is None


def test_spark_metrics_are_strings_and_merge_counts_inserted_minus_deleted() -> None:
    spark = {
        "timestamp": 1_700_000_000_000,
        "inCommitTimestamp": 1_700_000_000_123,
        "operation": "MERGE",
        "operationMetrics": {"numTargetRowsInserted": "7", "numTargetRowsDeleted": "2", "numTargetRowsUpdated": "4"},
        "userName": "etl@example.com",
        "lakehook.watermark": "1699999990000",
    }
    info = parse_commit(12, _commit({"commitInfo": spark}, {"add": {"path": "p", "modificationTime": 1}})).info
    assert (info.snapshot_id, info.parent_snapshot_id, info.commit_kind) == (12, 11, "MERGE")
    assert (info.commit_time, info.delta_record_count, info.total_record_count) == (1_700_000_000_123, 5, None)
    assert (info.commit_user, info.watermark) == ("etl@example.com", 1_699_999_990_000)


def test_a_spark_overwrite_reports_the_rows_it_wrote_as_the_total() -> None:
    info = parse_commit(
        3,
        _commit(
            {
                "commitInfo": {
                    "timestamp": 5,
                    "operation": "WRITE",
                    "operationParameters": {"mode": "Overwrite"},
                    "operationMetrics": {"numOutputRows": "40"},
                }
            },
            {"add": {"path": "p", "modificationTime": 1, "dataChange": True}},
        ),
    ).info
    assert (info.total_record_count, info.delta_record_count) == (40, None)


def test_a_commit_without_commit_info_takes_its_time_from_its_files_and_metadata_is_noticed() -> None:
    commit = parse_commit(0, _commit({"protocol": {}}, {"metaData": {"id": "x"}}, {"add": {"modificationTime": 99}}))
    assert (commit.info.commit_time, commit.info.commit_kind, commit.writes_metadata) == (99, None, True)
    assert commit.info.parent_snapshot_id is None


@pytest.mark.parametrize("data", [b'{"commitInfo": {"trunc', b"[1, 2]", b"\xff\xfe"])
def test_a_file_that_is_not_a_commit_is_corrupt_metadata(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match=re.escape("00000000000000000004.json")):
        parse_commit(4, data, "s3://lake/t")


@given(st.integers(min_value=0, max_value=10**20 - 1), st.integers(min_value=1, max_value=9), st.uuids())
def test_checkpoint_names_read_back_as_their_version_and_part(version: int, parts: int, unique: object) -> None:
    stem = f"{version:020d}.checkpoint"
    assert checkpoint_part(f"{stem}.parquet") == (version, 1, 1)
    assert checkpoint_part(f"{stem}.{parts:010d}.{parts:010d}.parquet") == (version, parts, parts)
    assert checkpoint_part(f"{stem}.{unique}.json") == checkpoint_part(f"{stem}.{unique}.parquet") == (version, 1, 1)


@pytest.mark.parametrize(
    "name",
    [
        "00000000000000000010.json",
        "_last_checkpoint",
        "00000000000000000010.crc",
        "10.checkpoint.parquet",
        "00000000000000000010.checkpoint.0000000003.0000000002.parquet",
        "00000000000000000000.00000000000000000003.compacted.json",
        ".00000000000000000010.checkpoint.parquet.crc",
    ],
)
def test_other_log_files_are_no_checkpoint(name: str) -> None:
    assert checkpoint_part(name) is None


def test_a_listing_counts_a_multi_part_checkpoint_only_with_every_part() -> None:
    listing = LogListing.of(
        [
            "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
            "00000000000000000004.json",
            "00000000000000000005.checkpoint.0000000001.0000000002.parquet",
            "00000000000000000005.checkpoint.0000000002.0000000002.parquet",
            "_last_checkpoint",
        ]
    )
    assert listing.commits == {4} and set(listing.checkpoints) == {5} and listing.versions == {4, 5}


@given(st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.sampled_from([True, False, None])), max_size=6))
def test_a_commit_changes_data_exactly_when_an_add_or_remove_says_data_changed(
    files: list[tuple[str, bool | None]],
) -> None:
    actions: list[dict[str, object]] = [{"commitInfo": {"timestamp": 1, "operation": "WRITE"}}]
    for kind, flag in files:
        action: dict[str, object] = {"path": "p", "modificationTime": 1}
        if flag is not None:
            action["dataChange"] = flag
        actions.append({kind: action})
    info = parse_commit(3, _commit(*actions)).info
    changed = any(flag is not False for _, flag in files)  # a writer that leaves the flag out changed data
    assert info.data_changed is changed
    if not changed:
        assert (info.delta_record_count, info.total_record_count) == (0, None)


def _metrics(operation: str, metrics: dict[str, object], **parameters: object) -> tuple[int | None, int | None]:
    commit_info = {"timestamp": 1, "operation": operation, "operationMetrics": metrics}
    if parameters:
        commit_info["operationParameters"] = parameters
    info = parse_commit(2, _commit({"commitInfo": commit_info}, {"add": {"path": "p", "dataChange": True}})).info
    return info.total_record_count, info.delta_record_count


def test_row_counts_follow_what_delta_defines_each_operations_metrics_as() -> None:
    # Spark's MERGE numOutputRows counts inserted + updated + copied rows, not a change in the table's size
    spark_merge = {"numOutputRows": "140", "numTargetRowsInserted": "50", "numTargetRowsDeleted": "10"}
    assert _metrics("MERGE", spark_merge) == (None, 40)
    delta_rs_merge = {"num_output_rows": 9, "num_target_rows_inserted": 1, "num_target_rows_deleted": 3}
    assert _metrics("MERGE", delta_rs_merge) == (None, -2)
    assert _metrics("UPDATE", {"numUpdatedRows": "50", "numCopiedRows": "0"}) == (None, 0)
    assert _metrics("UPDATE", {"num_updated_rows": 2, "num_copied_rows": 1}) == (None, 0)
    # replaceWhere: an overwrite of part of the table is written minus deleted, not the table's total
    assert _metrics("WRITE", {"numOutputRows": "5", "numDeletedRows": "3"}, mode="Overwrite", predicate='["x"]') == (
        None,
        2,
    )
    assert _metrics("WRITE", {"numOutputRows": "5"}, mode="Overwrite") == (5, None)
    assert _metrics("STREAMING UPDATE", {"numOutputRows": "7"}, outputMode="Complete") == (7, None)
    assert _metrics("CREATE OR REPLACE TABLE AS SELECT", {"numOutputRows": "8"}) == (8, None)
    assert _metrics("DELETE", {"numDeletedRows": "4"}) == (None, -4)
    assert _metrics("RESTORE", {"numRestoredFiles": "2"}) == (None, None)


# --- Hudi -----------------------------------------------------------------------------------------


def test_the_versions_of_a_1x_timeline_listing_and_what_their_plans_say() -> None:
    names = [
        "20260307135827749.deltacommit.requested",
        "20260307135827749.deltacommit.inflight",
        "20260307135827749_20260307135829538.deltacommit",
        "20260307135839895.compaction.requested",
        "20260307135839895.compaction.inflight",
        "20260307135839895_20260307135840408.commit",
        "20260307135840454.clustering.requested",
        "20260307135840454_20260307135840902.replacecommit",
        "20260307135841200_20260307135841300.clean",
        "20260307135842000.deltacommit.requested",  # still in flight: not a version yet
        "history",
    ]
    versions = _completed_versions(names)
    assert [(v.instant, v.action, v.planned_as) for v in versions] == [
        (20260307135827749, "deltacommit", None),
        (20260307135839895, "commit", "compaction"),
        (20260307135840454, "replacecommit", "clustering"),
    ]
    assert versions[0].completion == 20260307135829538
    kinds = [instant_snapshot(v, {}).commit_kind for v in versions]
    assert kinds == ["DELTACOMMIT", "COMPACT", "CLUSTER"]  # without operationType, the plan decides


def test_a_0x_listing_has_no_completion_times() -> None:
    (version,) = _completed_versions(["20240418173550988.commit", "20240418173550988.inflight", "hoodie.properties"])
    assert (version.instant, version.completion, version.completed) == (20240418173550988, None, 20240418173550988)


def test_a_commit_that_completes_after_a_later_instant_was_read_is_still_new() -> None:
    """Hudi 1.x concurrent writers: instant A starts first, B starts and completes, then A completes."""
    a = Instant(instant=20260101000000100, action="deltacommit", file="a", completion=20260101000000900)
    b = Instant(instant=20260101000000200, action="deltacommit", file="b", completion=20260101000000300)
    after_b = SnapshotCursor(snapshot_id=b.instant, sequence_number=b.completed)
    assert _after((a, b), after_b) == (a,)
    assert _after((a, b), SnapshotCursor.beginning()) == (b, a)  # completion order
    # a cursor without a completion time (a targeted fill) compares instant times
    assert _after((a, b), SnapshotCursor(snapshot_id=a.instant)) == (b,)


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
)
def test_instant_times_read_as_utc_milliseconds_in_their_own_order(first: datetime, second: datetime) -> None:
    def instant(moment: datetime) -> int:
        return int(moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}")

    for moment in (first, second):
        expected = calendar.timegm(moment.utctimetuple()) * 1000 + moment.microsecond // 1000
        assert instant_millis(instant(moment)) == expected
    assert (instant(first) < instant(second)) == (instant_millis(instant(first)) < instant_millis(instant(second)))


def test_hoodie_properties_unescape_as_java_writes_them() -> None:
    text = b'#Updated at 2026-03-07\nhoodie.table.version=9\nhoodie.table.create.schema={"type"\\:"record"}\n\n'
    assert parse_properties(text) == {"hoodie.table.version": "9", "hoodie.table.create.schema": '{"type":"record"}'}


def _hudi_commit(schema: dict[str, object], inserts: int) -> bytes:
    stats = {"p": [{"numInserts": inserts, "numDeletes": 0, "numUpdateWrites": 0}]}
    meta = {"partitionToWriteStats": stats, "operationType": "UPSERT", "extraMetadata": {"schema": json.dumps(schema)}}
    return json.dumps(meta).encode()


def test_a_hudi_schema_id_is_the_instant_that_introduced_the_writer_schema(tmp_path: Path) -> None:
    """No sample table evolves its schema, so this timeline is written here: commit metadata as 0.x writes it,
    the fields the reader uses only (a unit test of the schema-id rule, not a stand-in for a Hudi table)."""
    narrow = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "int"}]}
    wide = {**narrow, "fields": [*narrow["fields"], {"name": "note", "type": ["null", "string"]}]}
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    (hoodie / "hoodie.properties").write_text("hoodie.table.version=6\n")
    for instant, schema in ((1, narrow), (2, narrow), (3, wide), (4, wide)):
        (hoodie / f"2025010100000000{instant}.commit").write_bytes(_hudi_commit(schema, instant))
    src = AssetSource(catalog="lake", location=str(tmp_path))
    source = HudiSnapshotSource(CredentialResolver(InMemorySecretStore()))
    pointer = source.pointer(src)
    first = source.snapshots_since(src, SnapshotCursor.beginning(), pointer, limit=2).snapshots
    assert [(s.schema_id, s.schema_changed) for s in first] == [(20250101000000001, False), (20250101000000001, False)]
    rest = source.snapshots_since(src, SnapshotCursor.of(first[-1]), pointer, limit=10).snapshots
    assert [(s.schema_id, s.schema_changed) for s in rest] == [(20250101000000003, True), (20250101000000003, False)]
    # a poller that never saw the table reads back to where the schema in force began
    fresh = HudiSnapshotSource(CredentialResolver(InMemorySecretStore()))
    (newest,) = fresh.snapshots_since(src, None, fresh.pointer(src), limit=1).snapshots
    assert (newest.snapshot_id, newest.schema_id) == (20250101000000004, 20250101000000003)


@pytest.mark.parametrize(
    ("properties", "directory"),
    [
        ({}, ".hoodie"),  # no table version: layout 1, as hudi-rs's TimelineBuilder reads it
        ({"hoodie.table.version": "6", "hoodie.timeline.layout.version": "1"}, ".hoodie"),
        ({"hoodie.table.version": "8"}, ".hoodie/timeline"),  # layout 2 is the default from version 8
        ({"hoodie.table.version": "8", "hoodie.timeline.layout.version": "1"}, ".hoodie"),
        ({"hoodie.table.version": "9", "hoodie.timeline.path": "tl"}, ".hoodie/tl"),
        ({"hoodie.table.version": "6", "hoodie.timeline.path": "timeline"}, ".hoodie"),  # mid-upgrade: still 0.x
    ],
)
def test_hoodie_properties_say_where_the_timeline_is(properties: dict[str, str], directory: str) -> None:
    assert Layout.of(properties).directory == directory


@pytest.mark.parametrize(("written", "zone"), [(None, "Asia/Tokyo"), ("LOCAL", "Asia/Tokyo"), ("utc", "UTC")])
def test_a_timelines_zone_is_the_writers_unless_the_table_says_utc(written: str | None, zone: str) -> None:
    layout = Layout.of({"hoodie.table.timeline.timezone": written} if written else {})
    source = AssetSource.model_validate({"catalog": "lake", "location": "/t", "timeZone": "Asia/Tokyo"})
    assert getattr(layout.zone(source), "key", "UTC") == zone
    assert layout.zone(AssetSource(catalog="lake", location="/t")) is UTC


@pytest.mark.parametrize("bad", ["Mars/Olympus", "../../etc/passwd", "", "+09:00", "/usr/share/zoneinfo/UTC"])
def test_a_source_time_zone_must_be_an_iana_zone(bad: str) -> None:
    with pytest.raises(ValueError, match="timeZone"):
        AssetSource.model_validate({"catalog": "lake", "location": "/t", "timeZone": bad})


def _instant_at(ms: int) -> int:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return int(moment.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}")


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10_000), st.sampled_from([0, 0, 0, 60_000, 86_400_000])), max_size=12))
def test_polls_take_every_commit_once_whatever_clocks_the_writers_have(commits: list[tuple[int, int]]) -> None:
    """0.x writers commit at a real time (``step`` ms after the last), some with a clock ``ahead``; a poll
    follows each commit. Every commit is taken exactly once, none before the clock reaches it."""
    clock = [1_767_225_600_000]  # 2026-01-01
    source = HudiSnapshotSource(CredentialResolver(InMemorySecretStore()), clock=lambda: clock[0])
    with tempfile.TemporaryDirectory() as root:
        hoodie = Path(root) / ".hoodie"
        hoodie.mkdir()
        (hoodie / "hoodie.properties").write_text("hoodie.table.version=6\n")
        src = AssetSource(catalog="lake", location=root)
        offset = PollOffset()
        taken: list[int] = []
        written: set[int] = set()

        def poll() -> None:
            nonlocal offset
            pointer = source.pointer(src)
            if offset.unchanged(pointer):
                return
            batch = source.snapshots_since(src, offset.cursor or SnapshotCursor.beginning(), pointer, limit=100)
            assert all(instant_millis(s.snapshot_id) <= clock[0] for s in batch.snapshots)
            taken.extend(s.snapshot_id for s in batch.snapshots)
            offset = offset.advanced(batch.snapshots, pointer, (), batch.complete)

        for step, ahead in commits:
            clock[0] += step
            instant = _instant_at(clock[0] + ahead)
            if instant in written:
                continue
            written.add(instant)
            (hoodie / f"{instant}.commit").write_bytes(b"")
            poll()
        clock[0] += 2 * 86_400_000  # every clock is passed
        poll()
        assert sorted(taken) == sorted(written)


# --- partitions under column mapping, and one key per partition ---------------------------------------------------

NAMES = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4, unique_by=str.casefold)
VALUES = st.one_of(st.none(), st.text(max_size=6))


def _mapped_metadata(columns: list[str], physical: list[str], mode: str, others: int = 1) -> dict[str, object]:
    """A ``metaData`` action of a column-mapped table, as Spark and delta-rs write it (ids and physical names in each
    field's metadata), its partition columns ``columns`` among ``others`` more."""
    fields = [
        {
            "name": n,
            "type": "string",
            "nullable": True,
            "metadata": {"delta.columnMapping.id": i + 1, "delta.columnMapping.physicalName": p},
        }
        for i, (n, p) in enumerate(
            [*zip(columns, physical, strict=True), *((f"x{j}", f"col-x{j}") for j in range(others))]
        )
    ]
    return {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps({"type": "struct", "fields": fields}),
        "partitionColumns": columns,
        "configuration": {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": str(len(fields))},
    }


@given(
    NAMES,
    st.sampled_from(["name", "id", "none"]),
    st.data(),
)
def test_partition_values_are_named_by_logical_names_in_partition_column_order_whatever_the_maps_order(
    columns: list[str], mode: str, data: st.DataObject
) -> None:
    """Under column mapping ``partitionValues`` is keyed by physical names; the keys use the logical names, in
    ``partitionColumns`` order, however each action's map orders its entries (delta-rs writes a hash map's)."""
    physical = [f"col-{i}-{abs(hash(c)) % 10**6}" for i, c in enumerate(columns)]
    stored = physical if mode != "none" else columns
    commit = data.draw(st.lists(st.lists(VALUES, min_size=len(columns), max_size=len(columns)), min_size=1, max_size=5))
    actions: list[dict[str, object]] = [{"metaData": _mapped_metadata(columns, physical, mode)}]
    for values in commit:
        pairs = data.draw(st.permutations(list(zip(stored, values, strict=True))))
        for kind in ("remove", "add"):  # an UPDATE: each partition removed and added, each map in its own order
            shuffled = data.draw(st.permutations(pairs))
            actions.append({kind: {"path": "p", "dataChange": True, "partitionValues": dict(shuffled)}})
    parsed = parse_commit(1, _commit(*actions))
    assert parsed.layout == PartitionLayout(tuple(columns), tuple(stored))
    touched = touched_partitions(parsed.touched, parsed.layout)
    expected = {format_partition_key(list(zip(columns, values, strict=True))) for values in commit}
    assert touched is not None and set(touched.keys) == expected and touched.count == len(expected)


@given(NAMES, st.data())
def test_without_the_partition_columns_an_update_still_names_each_partition_once(
    columns: list[str], data: st.DataObject
) -> None:
    """No ``metaData`` to read: the names are ``partitionValues``'s in the order the commit first names them, one
    order for the whole commit, so a remove and an add of one partition are one key."""
    commit = data.draw(st.lists(st.lists(VALUES, min_size=len(columns), max_size=len(columns)), min_size=1, max_size=5))
    touched: list[tuple[tuple[str, str | None], ...]] = []
    for values in commit:
        for _ in ("remove", "add"):
            touched.append(tuple(data.draw(st.permutations(list(zip(columns, values, strict=True))))))
    found = touched_partitions(tuple(touched), None)
    order = list(dict.fromkeys(name for name, _ in touched[0]))
    expected = {format_partition_key([(c, dict(zip(columns, v, strict=True))[c]) for c in order]) for v in commit}
    assert found is not None and set(found.keys) == expected and found.count == len(expected)


def test_a_mapped_partition_column_is_found_by_its_name_whatever_its_case_and_unmapped_ones_keep_their_names() -> None:
    meta = _mapped_metadata(["Day"], ["col-d"], "name")
    meta["partitionColumns"] = ["day", "unknown"]  # Delta's names are case-insensitive; a column not in the schema
    assert PartitionLayout.of(meta) == PartitionLayout(("day", "unknown"), ("col-d", "unknown"))
    assert PartitionLayout.of({**meta, "schemaString": "not json"}).stored == ("day", "unknown")
    assert PartitionLayout.of({"partitionColumns": []}) == PartitionLayout((), ())
