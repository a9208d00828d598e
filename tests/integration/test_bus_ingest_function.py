"""The bus ingest handler with its sample event, on in-process moto: a producer's EventBridge source makes
the event its push; anything else is rejected with the reason and records nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from lakehook.container import Container
from lakehook.domain.errors import ConflictError
from lakehook.domain.producers import ProducerSpec
from tests.support import ROOT, FakeLambdaContext, load_handler

SAMPLE = json.loads((ROOT / "events" / "bus_ingest" / "asset_events.json").read_text())
ORDERS = "paimon://lake/ods_db/ods_order_latest"


def producer(container: Container, producer_id: str, sources: list[str], prefixes: list[str] | None = None) -> None:
    spec = {"assetKeyPrefixes": prefixes or ["paimon://lake/ods_db/"], "eventSources": sources}
    container.register_producer(producer_id, ProducerSpec.model_validate(spec))


def with_detail(detail: Any, source: str = "com.example.glue-etl") -> dict[str, Any]:
    event = copy.deepcopy(SAMPLE)
    event["detail"], event["source"] = detail, source
    return event


def test_a_producers_source_makes_the_bus_event_its_push(container: Container) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl"])
    handler = load_handler("bus_ingest")

    first = handler(SAMPLE, FakeLambdaContext())
    assert first["producer"] == "glue-etl" and [r["status"] for r in first["results"]] == ["ACCEPTED"]
    again = handler(SAMPLE, FakeLambdaContext())  # EventBridge delivers at least once
    assert [r["status"] for r in again["results"]] == ["DUPLICATE"]
    state = container.asset_store.get_state(ORDERS)
    assert state is not None and state.latest_snapshot_id == 42
    [event] = container.asset_store.list_events(ORDERS, 10).items
    assert (event.source.value, event.producer_id) == ("EVENTBRIDGE", "glue-etl")


def test_what_cannot_be_taken_is_rejected_with_the_reason_and_records_nothing(container: Container) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl"])
    handler = load_handler("bus_ingest")
    outside = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/dw_db/t", "snapshotId": 1}
    for event, reason in [
        (with_detail(SAMPLE["detail"], source="com.example.unknown"), "no producer claims EventBridge source"),
        (with_detail(outside), "may not write paimon://lake/dw_db/t"),
        (with_detail("not an object"), "body must be one event object"),
        (with_detail({"events": []}), "events"),
        ({**SAMPLE, "detail-type": "Something Else"}, "is not 'Lakehook Asset Events'"),
        ({"detail": {}}, "has no source"),
    ]:
        answer = handler(event, FakeLambdaContext())
        assert reason in answer["rejected"], answer
    assert container.asset_store.get_state(ORDERS) is None
    # One invalid event among valid ones is rejected alone, as in a signed push.
    answer = handler(
        with_detail({"events": [{"eventType": "SNAPSHOT_COMMITTED"}, SAMPLE["detail"]["events"][0]]}),
        FakeLambdaContext(),
    )
    assert [r["status"] for r in answer["results"]] == ["REJECTED", "ACCEPTED"]


def test_a_source_belongs_to_one_producer_and_is_released_when_no_longer_named(container: Container) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl", "com.example.shared"])
    with pytest.raises(ConflictError, match="belongs to producer 'glue-etl'"):
        producer(container, "emr-steps", ["com.example.shared"])
    assert container.producer_registry.get_producer("emr-steps") is None  # nothing written, no secret made
    producer(container, "glue-etl", ["com.example.glue-etl"])  # gives com.example.shared up
    producer(container, "emr-steps", ["com.example.shared"])
    assert container.producer_registry.event_source_owner("com.example.shared") == "emr-steps"
    handler = load_handler("bus_ingest")
    shared = with_detail(SAMPLE["detail"], source="com.example.shared")
    assert handler(shared, FakeLambdaContext())["producer"] == "emr-steps"


@pytest.mark.parametrize("source", ["aws.glue", "", "has space", "x" * 257, "-leading"])
def test_a_source_eventbridge_would_not_take_from_a_writer_is_refused_when_written(source: str) -> None:
    with pytest.raises(PydanticValidationError, match="event source"):
        ProducerSpec.model_validate({"assetKeyPrefixes": ["paimon://lake/"], "eventSources": [source]})
