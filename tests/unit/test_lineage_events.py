"""OpenLineage RunEvents become snapshot events: any dataset, any facet, any version never raises, and every
output is either a raw event ingest validates or a rejection that says why."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.limits import MAX_LONG, MAX_PAYLOAD_BYTES
from lakehook.domain.lineage import (
    LineageDataset,
    LineageMapping,
    NeedsPoll,
    RunEvent,
    Unmapped,
    asset_key_for,
    snapshot_events,
)
from lakehook.usecases.ingest import parse_event

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
    [missing] = snapshot_events(run_event([output("iceberg://glue", "db.t")]), [])
    assert isinstance(missing, Unmapped)


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
datasets = st.builds(
    output, namespaces, names, versions, extra=json_value, big=st.text(max_size=2000).map(lambda t: t * 40)
)


@settings(max_examples=300, deadline=None)
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
            assert item.asset_key.startswith("iceberg://") and 0 <= item.snapshot_id <= MAX_LONG
            continue
        assert len(json.dumps(item["payload"]).encode()) <= MAX_PAYLOAD_BYTES
        assert 0 <= item["snapshotId"] <= MAX_LONG
        try:
            parsed = parse_event(item)
        except PydanticValidationError:
            continue  # a mapped key ingest refuses (control characters): answered REJECTED with the field
        assert parsed.asset_key == item["assetKey"]
