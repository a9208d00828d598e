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


STACK_ACCOUNT = "123456789012"  # FakeLambdaContext's function ARN, and the sample event's account
OTHER_ACCOUNT = "210987654321"


def producer(
    container: Container,
    producer_id: str,
    sources: list[str],
    prefixes: list[str] | None = None,
    accounts: list[str] | None = None,
) -> None:
    spec: dict[str, Any] = {"assetKeyPrefixes": prefixes or ["paimon://lake/ods_db/"], "eventSources": sources}
    if accounts is not None:
        spec["busAccounts"] = accounts
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


# --- the producer is bound to the account EventBridge says put the event -----------------------------


def from_account(account: str | None, source: str = "com.example.glue-etl") -> dict[str, Any]:
    event = with_detail(SAMPLE["detail"], source)
    if account is None:
        del event["account"]
    else:
        event["account"] = account
    return event


class ForeignContext(FakeLambdaContext):
    invoked_function_arn = f"arn:aws:lambda:us-east-1:{OTHER_ACCOUNT}:function:lakehook-test"


def test_a_producers_source_put_from_another_account_is_rejected_counted_and_never_ingested(
    container: Container, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl"])  # no busAccounts: the stack's own account
    handler = load_handler("bus_ingest")
    for event in (from_account(OTHER_ACCOUNT), from_account(None), from_account("")):
        answer = handler(event, FakeLambdaContext())
        assert "busAccounts" in answer["rejected"] and answer["producer"] == "glue-etl", answer
    assert container.asset_store.get_state(ORDERS) is None and container.asset_store.list_events(ORDERS, 10).items == []
    rejected = [r for r in caplog.records if r.getMessage() == "bus event rejected"]
    assert [getattr(r, "account", None) for r in rejected] == [OTHER_ACCOUNT, None, ""]
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [m.get("lakehouse_bus_event_foreign_account_total") for m in emitted] == [[1.0]] * 3
    # the stack's own account is taken
    assert [r["status"] for r in handler(from_account(STACK_ACCOUNT), FakeLambdaContext())["results"]] == ["ACCEPTED"]


def test_bus_accounts_name_the_accounts_a_producer_takes_bus_events_from(container: Container) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl"], accounts=[OTHER_ACCOUNT])
    handler = load_handler("bus_ingest")
    own = handler(from_account(STACK_ACCOUNT), FakeLambdaContext())  # listed accounts only, not the stack's
    assert "put from account(s) 210987654321" in own["rejected"], own
    assert container.asset_store.get_state(ORDERS) is None
    taken = handler(from_account(OTHER_ACCOUNT), FakeLambdaContext())
    assert [r["status"] for r in taken["results"]] == ["ACCEPTED"] and taken["account"] == OTHER_ACCOUNT
    assert container.producer_registry.get_producer("glue-etl").bus_accounts == [OTHER_ACCOUNT]  # type: ignore[union-attr]


def test_without_bus_accounts_the_stack_account_is_that_of_the_function(container: Container) -> None:
    producer(container, "glue-etl", ["com.example.glue-etl"])
    handler = load_handler("bus_ingest")
    answer = handler(from_account(STACK_ACCOUNT), ForeignContext())  # the stack runs in the other account
    assert "put from account(s) 210987654321" in answer["rejected"], answer
    assert [r["status"] for r in handler(from_account(OTHER_ACCOUNT), ForeignContext())["results"]] == ["ACCEPTED"]


@pytest.mark.parametrize("accounts", [["12345678901"], ["12345678901a"], ["123456789012", "123456789012"], [""]])
def test_a_bus_account_that_is_no_account_id_is_refused_when_written(accounts: list[str]) -> None:
    with pytest.raises(PydanticValidationError, match=r"busAccounts|12-digit"):
        ProducerSpec.model_validate({"assetKeyPrefixes": ["paimon://lake/"], "busAccounts": accounts})


# --- Glue Data Quality results (aws.glue-dataquality, from the default bus) -----------------------------------------

GLUE_DQ = json.loads((ROOT / "events" / "bus_ingest" / "glue_data_quality.json").read_text())
GLUE_ORDERS = "iceberg://glue/dw_db/orders"


def test_a_glue_data_quality_result_is_a_verdict_pinned_to_the_snapshot_its_evaluation_read(
    container: Container, caplog: pytest.LogCaptureFixture
) -> None:
    from lakehook.domain.assets import AssetRegistration
    from lakehook.domain.events import SourceType
    from lakehook.domain.glue_quality import EvaluationTimes
    from lakehook.domain.time import instant_from_json
    from tests.fakes.memory_quality import InMemoryEvaluationTimes

    start = instant_from_json("2026-12-07T08:00:00Z")
    source = {"catalog": "glue", "properties": {"type": "glue"}, "table": "dw_db.orders"}
    registration = {"assetKey": GLUE_ORDERS, "format": "iceberg", "source": source}
    container.register_asset(AssetRegistration.model_validate(registration))
    commits = [(7001, 1, start - 60_000), (7002, 2, start + 20 * 60_000)]  # the second after the evaluation
    container.ingest.ingest_raw(
        [
            {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": GLUE_ORDERS,
                "snapshotId": i,
                "sequenceNumber": s,
                "commitTime": t,
            }
            for i, s, t in commits
        ],
        SourceType.POLL,
    )
    handler = load_handler("bus_ingest")
    # on moto, GetDataQualityResult answers nothing: the start is unknown, the verdict not pinned, and it says so
    unread = handler(GLUE_DQ, FakeLambdaContext())
    assert [v["status"] for v in unread["verdicts"]] == ["NOT_PINNED"], unread
    assert any(r.getMessage() == "quality verdict not recorded" for r in caplog.records)
    container.overrides["evaluation_times"] = InMemoryEvaluationTimes(
        {"dqresult-12334567890": EvaluationTimes(start, start + 10 * 60_000)}
    )
    container.built.clear()
    answer = handler(GLUE_DQ, FakeLambdaContext())
    assert [(v["status"], v.get("snapshotId")) for v in answer["verdicts"]] == [("RECORDED", 7001)], answer
    [verdict] = [
        e.event
        for e in container.asset_store.list_events(GLUE_ORDERS, 10).items
        if e.event.snapshot_id == 7001 and e.event.event_type.value == "QUALITY_CHECK_FAILED"
    ]
    assert verdict.payload and verdict.payload["glueDataQuality"]["rulesFailed"] == 3
