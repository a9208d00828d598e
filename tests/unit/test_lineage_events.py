"""OpenLineage RunEvents become snapshot events: any dataset, any facet, any version never raises, and every
output is either a raw event ingest validates or a rejection that says why."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

import lakehook.domain.lineage as lineage
from lakehook.domain.limits import MAX_DATASET_FACETS, MAX_LONG, MAX_PAYLOAD_BYTES, MAX_SYMLINKS
from lakehook.domain.lineage import (
    MAX_OUTPUTS,
    LineageDataset,
    LineageMapping,
    NeedsPoll,
    RunEvent,
    Unmapped,
    asset_key_for,
    snapshot_events,
)
from lakehook.usecases.ingest import parse_event
from tests.hypothesis_profiles import examples

GLUE = LineageMapping.model_validate(
    {"namespace": "arn:aws:glue:us-east-1:123456789012", "namePrefix": "table/", "assetKeyPrefix": "iceberg://glue/"}
)


def run_event(outputs: list[dict[str, Any]], event_type: str = "COMPLETE") -> RunEvent:
    return RunEvent.model_validate(
        {
            "eventType": event_type,
            "eventTime": "2026-12-01T10:00:00.123Z",
            "run": {"runId": "0193a7c4-0000-7000-8000-000000000001"},
            "job": {"namespace": "spark", "name": "etl.orders"},
            "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark",
            "outputs": outputs,
        }
    )


def output(namespace: str, name: str, version: Any = None, **facets: Any) -> dict[str, Any]:
    if version is not None:
        facets["version"] = {"datasetVersion": version}
    return {"namespace": namespace, "name": name, "facets": facets}


def test_a_glue_table_reported_by_spark_maps_through_the_producers_mapping_and_is_polled() -> None:
    event = run_event([output("arn:aws:glue:us-east-1:123456789012", "table/dw_db/orders", "4242")])
    [found] = snapshot_events(event, [GLUE])
    # An Iceberg snapshot id says nothing of where the snapshot sits (its sequence number does): a poll records it.
    assert found == NeedsPoll(
        dataset="arn:aws:glue:us-east-1:123456789012/table/dw_db/orders",
        asset_key="iceberg://glue/dw_db/orders",
        snapshot_id=4242,
    )


def test_a_delta_table_written_by_spark_becomes_an_event_with_its_facets() -> None:
    delta = LineageMapping.model_validate(
        {"namespace": "s3://lake-bucket", "namePrefix": "delta/", "assetKeyPrefix": "delta://lake/"}
    )
    stats = {"_producer": "p", "_schemaURL": "s", "rowCount": 3}
    event = run_event([output("s3://lake-bucket", "delta/dim_db/dim_calendar", "12", stats=stats)])
    [raw] = snapshot_events(event, [delta])
    assert isinstance(raw, dict)
    parsed = parse_event(raw)
    assert (parsed.asset_key, parsed.snapshot_id) == ("delta://lake/dim_db/dim_calendar", 12)
    assert parsed.commit_time == int(datetime(2026, 12, 1, 10, 0, 0, 123000, tzinfo=UTC).timestamp() * 1000)
    lineage = raw["payload"]["openlineage"]
    assert lineage["runId"] == "0193a7c4-0000-7000-8000-000000000001"
    assert lineage["job"] == "spark/etl.orders"
    assert lineage["facets"] == {"stats": stats}


def test_a_namespace_that_is_a_table_format_and_catalog_maps_without_configuration() -> None:
    event = run_event([output("paimon://lake", "ods_db.orders", 7), output("s3://bucket", "wh/orders", 7)])
    mapped, unmapped = snapshot_events(event, [])
    assert isinstance(mapped, dict) and mapped["assetKey"] == "paimon://lake/ods_db/orders"
    assert isinstance(unmapped, Unmapped) and "no lineageDatasets mapping covers" in unmapped.reason


def test_the_first_matching_mapping_wins_and_a_name_outside_every_prefix_is_unmapped() -> None:
    narrow = LineageMapping.model_validate(
        {"namespace": GLUE.namespace, "namePrefix": "table/raw_db/", "assetKeyPrefix": "paimon://lake/raw_db/"}
    )
    dataset = LineageDataset(namespace=GLUE.namespace, name="table/raw_db/clicks")
    assert asset_key_for(dataset, [narrow, GLUE]) == "paimon://lake/raw_db/clicks"
    assert asset_key_for(dataset, [GLUE, narrow]) == "iceberg://glue/raw_db/clicks"
    assert asset_key_for(LineageDataset(namespace=GLUE.namespace, name="view/x"), [GLUE]) is None


def test_only_a_complete_run_announces_a_commit() -> None:
    outputs = [output("iceberg://glue", "db.t", 1)]
    for event_type in ("START", "RUNNING", "FAIL", "ABORT", "OTHER"):
        assert snapshot_events(run_event(outputs, event_type), []) == []


def test_a_dataset_event_or_job_event_is_read_but_announces_nothing() -> None:
    dataset_event = RunEvent.model_validate(
        {"eventTime": "2026-12-01T10:00:00Z", "producer": "p", "dataset": {"namespace": "iceberg://g", "name": "d.t"}}
    )
    assert snapshot_events(dataset_event, []) == []
    with pytest.raises(PydanticValidationError, match="names its 'run' and its 'job'"):
        RunEvent.model_validate({"eventType": "COMPLETE", "eventTime": "2026-12-01T10:00:00Z", "producer": "p"})


def test_a_version_that_is_not_a_snapshot_id_is_a_rejection_naming_the_facet() -> None:
    for version in ("v3", "-1", "1.5", str(MAX_LONG + 1), "", "٣", True):
        [result] = snapshot_events(run_event([output("iceberg://glue", "db.t", version)]), [])
        assert isinstance(result, Unmapped), version
        assert "'version' facet" in result.reason


def test_an_output_without_a_version_asks_for_a_poll_of_its_table() -> None:
    for facets in ({}, {"version": {}}, {"version": {"datasetVersion": None}}):
        for namespace, key in (("iceberg://glue", "iceberg://glue/db/t"), ("paimon://lake", "paimon://lake/db/t")):
            event = run_event([{"namespace": namespace, "name": "db.t", "facets": facets}])
            [found] = snapshot_events(event, [])
            assert found == NeedsPoll(dataset=f"{namespace}/db.t", asset_key=key, snapshot_id=None), facets
            assert "reports no version" in found.why()


def test_a_facet_too_large_for_the_payload_is_named_not_kept() -> None:
    big = {"_producer": "p", "_schemaURL": "s", "blob": "x" * MAX_PAYLOAD_BYTES}
    small = {"_producer": "p", "_schemaURL": "s", "rowCount": 3}
    [raw] = snapshot_events(run_event([output("paimon://lake", "db.t", 1, schema=big, stats=small)]), [])
    assert isinstance(raw, dict)
    assert raw["payload"]["openlineage"]["facets"] == {"stats": small}
    assert raw["payload"]["openlineage"]["facetsOmitted"] == ["schema"]
    parse_event(raw)


def test_mappings_are_validated_when_the_producer_is_written() -> None:
    for bad in (
        {"namespace": "", "assetKeyPrefix": "iceberg://glue/"},
        {"namespace": "n", "assetKeyPrefix": "no-scheme"},
        {"namespace": "n", "assetKeyPrefix": "iceberg://has space/"},
        {"namespace": "n", "assetKeyPrefix": "iceberg://glue/", "unknown": 1},
    ):
        with pytest.raises(PydanticValidationError):
            LineageMapping.model_validate(bad)


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=40,
)
versions = st.one_of(
    st.none(),
    st.integers(min_value=-5, max_value=2**70).map(str),
    st.integers(min_value=0, max_value=MAX_LONG),
    st.text(max_size=25),
    json_value,
)
names = st.text(min_size=1, max_size=80) | st.lists(
    st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True), min_size=1, max_size=4
).map(".".join)
namespaces = st.sampled_from(
    ["iceberg://glue", "paimon://lake", "delta://lake/", "hudi://x", "s3://bucket", GLUE.namespace, "file"]
) | st.text(min_size=1, max_size=40)
identifiers = st.lists(st.fixed_dictionaries({"namespace": namespaces, "name": names}) | json_value, max_size=20)
symlinks = json_value | st.fixed_dictionaries({"identifiers": identifiers})
datasets = st.builds(
    output,
    namespaces,
    names,
    versions,
    extra=json_value,
    big=st.text(max_size=2000).map(lambda t: t * 40),
    symlinks=symlinks,
)


@settings(max_examples=examples(300), deadline=None)
@given(outputs=st.lists(datasets, max_size=5), event_type=st.sampled_from(["COMPLETE", "START", "FAIL", "OTHER"]))
def test_any_run_event_gives_one_answer_per_output_each_an_event_ingest_reads_or_a_reason(
    outputs: list[dict[str, Any]], event_type: str
) -> None:
    try:
        event = run_event(outputs, event_type)
    except PydanticValidationError:
        return  # a dataset the model refuses (too long a name): the route answers 400 naming it
    found = snapshot_events(event, [GLUE])
    assert len(found) == (len(outputs) if event_type == "COMPLETE" else 0)
    for item in found:
        if isinstance(item, Unmapped):
            assert item.reason
            continue
        if isinstance(item, NeedsPoll):
            if item.snapshot_id is None:  # no version reported: the poll finds out what was committed
                continue
            assert item.asset_key.startswith("iceberg://") and 0 <= item.snapshot_id <= MAX_LONG
            continue
        assert len(json.dumps(item["payload"]).encode()) <= MAX_PAYLOAD_BYTES
        assert 0 <= item["snapshotId"] <= MAX_LONG
        try:
            parsed = parse_event(item)
        except PydanticValidationError:
            continue  # a mapped key ingest refuses (control characters): answered REJECTED with the field
        assert parsed.asset_key == item["assetKey"]


# --- OpenLineage's own Spark integration events (tests/data/openlineage/README.md) ---------------------

OPENLINEAGE_EVENTS = Path(__file__).parents[1] / "data" / "openlineage"


def spark_event(file: str) -> RunEvent:
    """One of the Spark integration's expected events, with the envelope fields its matcher leaves out."""
    expected = json.loads((OPENLINEAGE_EVENTS / file).read_text())
    job = {"name": "spark_job", **expected["job"]}
    return RunEvent.model_validate(
        {
            **expected,
            "job": job,
            "eventTime": "2026-12-01T10:00:00Z",
            "run": {"runId": "0193a7c4-0000-7000-8000-000000000002"},
            "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.40.0/integration/spark",
        }
    )


def mapping(namespace: str, prefix: str, name_prefix: str = "") -> LineageMapping:
    return LineageMapping.model_validate({"namespace": namespace, "namePrefix": name_prefix, "assetKeyPrefix": prefix})


def test_spark_delta_output_maps_by_its_symlink_and_records_its_version() -> None:
    event = spark_event("pysparkWriteDeltaTableVersionEnd.json")
    assert snapshot_events(event, [])[0] == Unmapped(
        dataset="file//tmp/delta/versioned_table",
        reason="no lineageDatasets mapping covers dataset 'file//tmp/delta/versioned_table' nor its symlinks "
        "'file:/tmp/delta/default.versioned_table'",
    )
    [raw] = snapshot_events(event, [mapping("file:/tmp/delta", "delta://local/")])
    assert isinstance(raw, dict)
    parsed = parse_event(raw)
    assert (parsed.asset_key, parsed.snapshot_id) == ("delta://local/default/versioned_table", 2)
    assert raw["payload"]["openlineage"]["facets"]["storage"] == {"storageLayer": "delta", "fileFormat": "parquet"}


def test_spark_iceberg_output_without_a_version_value_maps_by_its_symlink_and_asks_for_a_poll() -> None:
    event = spark_event("pysparkWriteIcebergTableVersionEnd.json")
    [found] = snapshot_events(event, [mapping("file:/tmp/iceberg", "iceberg://local/")])
    assert found == NeedsPoll(
        dataset="file//tmp/iceberg/default/table", asset_key="iceberg://local/default/table", snapshot_id=None
    )


def test_spark_hive_table_maps_by_its_metastore_symlink() -> None:
    event = spark_event("pysparkSymlinksComplete.json")
    [found] = snapshot_events(event, [mapping("hive://metastore", "hudi://warehouse/")])
    assert found == NeedsPoll(dataset="file//tmp/warehouse/test", asset_key="hudi://warehouse/default/test")


def test_a_symlink_without_a_namespace_is_not_a_name_and_the_datasets_own_name_still_maps() -> None:
    event = spark_event("hiveCreateDataSourceAsSelectCommandCompleteEvent.json")
    [output_dataset] = event.outputs
    assert output_dataset.names() == [("file", "/tmp/hive-metastore/hive3.db/table2")]
    [unmapped] = snapshot_events(event, [])
    assert isinstance(unmapped, Unmapped) and "nor its symlinks" not in unmapped.reason
    by_location = mapping("file", "paimon://lake/", name_prefix="/tmp/hive-metastore/")
    [found] = snapshot_events(event, [by_location])
    assert isinstance(found, NeedsPoll) and found.asset_key == "paimon://lake/hive3/db/table2"


def glue_output(version: str | None = "4242") -> dict[str, Any]:
    """What EmrIntegrationTest (lines 236-242) and IcebergHandlerTest (lines 381-385) assert Spark reports
    for a Glue table: its S3 location as the dataset, the Glue name only as a symlink."""
    facets: dict[str, Any] = {
        "symlinks": {
            "identifiers": [
                {"namespace": "arn:aws:glue:us-east-1:123456789012", "name": "table/dw_db/orders", "type": "TABLE"}
            ]
        }
    }
    if version is not None:
        facets["version"] = {"datasetVersion": version}
    return {"namespace": "s3://lake-bucket", "name": "warehouse/dw_db.db/orders", "facets": facets}


def test_a_glue_table_reported_as_its_s3_location_maps_by_its_glue_symlink() -> None:
    [found] = snapshot_events(run_event([glue_output()]), [GLUE])
    assert found == NeedsPoll(
        dataset="s3://lake-bucket/warehouse/dw_db.db/orders", asset_key="iceberg://glue/dw_db/orders", snapshot_id=4242
    )
    # The dataset's own name is tried first: a mapping of the location wins over the symlink's.
    by_location = mapping("s3://lake-bucket", "delta://lake/", name_prefix="warehouse/")
    assert asset_key_for(LineageDataset.model_validate(glue_output()), [GLUE, by_location]) == (
        "delta://lake/dw_db/db/orders"
    )


def test_symlinks_are_tried_by_every_mapping_before_the_default() -> None:
    dataset = LineageDataset.model_validate(
        {
            "namespace": "iceberg://glue",
            "name": "dw_db.orders",
            "facets": {"symlinks": {"identifiers": [{"namespace": "hive://m", "name": "dw.orders", "type": "TABLE"}]}},
        }
    )
    assert asset_key_for(dataset, []) == "iceberg://glue/dw_db/orders"
    assert asset_key_for(dataset, [mapping("hive://m", "paimon://lake/")]) == "paimon://lake/dw/orders"


# --- bounded work ------------------------------------------------------------------------------------------


def facets(count: int) -> dict[str, Any]:
    return {f"f{i:05d}": {"_producer": "p", "_schemaURL": "s", "n": i} for i in range(count)}


def test_more_facets_or_symlinks_than_the_limits_is_refused_naming_the_limit() -> None:
    LineageDataset.model_validate({"namespace": "n", "name": "d", "facets": facets(MAX_DATASET_FACETS)})
    with pytest.raises(PydanticValidationError, match="MAX_DATASET_FACETS"):
        LineageDataset.model_validate({"namespace": "n", "name": "d", "facets": facets(MAX_DATASET_FACETS + 1)})
    with pytest.raises(PydanticValidationError, match="MAX_DATASET_FACETS"):
        LineageDataset.model_validate(
            {"namespace": "n", "name": "d", "facets": facets(MAX_DATASET_FACETS), "outputFacets": facets(1)}
        )
    links = [{"namespace": "hive://m", "name": f"db.t{i}", "type": "TABLE"} for i in range(MAX_SYMLINKS + 1)]
    LineageDataset.model_validate({"namespace": "n", "name": "d", "facets": {"symlinks": {"identifiers": links[1:]}}})
    with pytest.raises(PydanticValidationError, match="MAX_SYMLINKS"):
        LineageDataset.model_validate({"namespace": "n", "name": "d", "facets": {"symlinks": {"identifiers": links}}})
    with pytest.raises(PydanticValidationError, match="over 1024 characters"):
        LineageDataset.model_validate(
            {
                "namespace": "n",
                "name": "d",
                "facets": {"symlinks": {"identifiers": [{"namespace": "n", "name": "x" * 1025}]}},
            }
        )


def test_a_request_of_the_most_outputs_and_facets_is_serialized_in_work_linear_in_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each facet is serialized a bounded number of times, not once per facet kept before it (the old
    payload builder re-serialized the kept facets for each new one: 30,000 facets took 27 s)."""
    serialized = [0]
    real = lineage._compact

    def counted(value: Any) -> str:
        text = real(value)
        serialized[0] += len(text)
        return text

    monkeypatch.setattr(lineage, "_compact", counted)
    outputs = [
        {
            "namespace": "paimon://lake",
            "name": f"db.t{i}",
            "facets": {**facets(MAX_DATASET_FACETS - 1), "version": {"datasetVersion": "1"}},
        }
        for i in range(MAX_OUTPUTS)
    ]
    body = json.dumps({"outputs": outputs})
    found = snapshot_events(run_event(outputs), [])
    assert len(found) == MAX_OUTPUTS and all(isinstance(item, dict) for item in found)
    assert serialized[0] <= 2 * len(body)


# --- partitions: the OpenLineage subset facet -------------------------------------------------------------


def subset_facet(*dimensions: dict[str, Any]) -> dict[str, Any]:
    """The output facet as the OpenLineage client builds and serializes it (BaseSubsetDatasetFacet.json)."""
    from openlineage.client.generated.base_subset_dataset import (
        OutputSubsetOutputDatasetFacet,
        Partition,
        PartitionSubsetCondition,
    )
    from openlineage.client.serde import Serde

    condition = PartitionSubsetCondition(partitions=[Partition(dimensions=d) for d in dimensions])
    facet = OutputSubsetOutputDatasetFacet(outputCondition=condition)
    return dict(Serde.to_dict(facet))


PAIMON = LineageMapping.model_validate(
    {"namespace": "s3://lake-bucket", "namePrefix": "paimon/", "assetKeyPrefix": "paimon://lake/"}
)


def with_subset(facet: dict[str, Any]) -> RunEvent:
    dataset = output("s3://lake-bucket", "paimon/ods/orders", "7")
    dataset["outputFacets"] = {"subset": facet}
    return run_event([dataset])


def test_an_output_naming_its_partitions_in_the_subset_facet_records_them() -> None:
    facet = subset_facet({"dt": "2026-12-01", "region": "eu"}, {"dt": "2026-12-01", "region": "us/west"})
    [raw] = snapshot_events(with_subset(facet), [PAIMON])
    assert isinstance(raw, dict)
    parsed = parse_event(raw)
    assert parsed.partitions is not None
    assert parsed.partitions.keys == ("dt=2026-12-01/region=eu", "dt=2026-12-01/region=us%2Fwest")


@settings(max_examples=examples(50))
@given(st.lists(st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), min_size=1, max_size=3)))
def test_any_partition_subset_is_recorded_or_rejected_by_name_never_an_error(dims: list[dict[str, str]]) -> None:
    [found] = snapshot_events(with_subset(subset_facet(*dims)), [PAIMON])
    if isinstance(found, Unmapped):
        assert "outputFacets.subset" in found.reason
        return
    assert isinstance(found, dict)
    parsed = parse_event(found)
    assert parsed.partitions is not None and parsed.partitions.count == len({tuple(d.items()) for d in dims})


def test_a_malformed_subset_is_a_rejection_naming_the_facet() -> None:
    bad = {"outputCondition": {"type": "partition", "partitions": [{"dimensions": {"dt": {"nested": 1}}}]}}
    [found] = snapshot_events(with_subset(bad), [PAIMON])
    assert isinstance(found, Unmapped) and "outputFacets.subset" in found.reason
    location = {"outputCondition": {"type": "location", "locations": ["s3://lake-bucket/x"]}}
    [raw] = snapshot_events(with_subset(location), [PAIMON])
    assert isinstance(raw, dict) and "partitions" not in raw  # a location names no partition


def test_a_subset_naming_more_partitions_than_one_event_holds_is_a_rejection_as_a_push_is() -> None:
    """Issue 33: more than 1000 kept the first, silently. Now REJECTED naming the facet, as a push naming them is."""
    from lakehook.domain.limits import MAX_TOUCHED_PARTITIONS

    wide = {
        "outputCondition": {
            "type": "partition",
            "partitions": [{"dimensions": {"id": f"{i:05d}"}} for i in range(MAX_TOUCHED_PARTITIONS + 1)],
        }
    }
    [found] = snapshot_events(with_subset(wide), [PAIMON])
    assert isinstance(found, Unmapped) and "outputFacets.subset" in found.reason and "1001 partitions" in found.reason
    wide["outputCondition"]["partitions"] = wide["outputCondition"]["partitions"][:MAX_TOUCHED_PARTITIONS]
    [raw] = snapshot_events(with_subset(wide), [PAIMON])
    assert isinstance(raw, dict) and parse_event(raw).partitions is not None
