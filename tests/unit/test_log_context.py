"""The RFC's log context (seed 000, section 6) on the resolver's ``trigger claimed`` and the dispatcher's
``trigger dispatched`` / ``trigger dispatch failed`` lines: ``traceId``, ``partitionKey``, ``schemaId`` and
``watermark``, read back from the log records the handlers' logger wrote."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.log_context import root_trace_id, trigger_log_context
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, trigger_key
from lakehook.usecases.dispatch import DispatchStatus
from tests.unit.test_dispatch_usecase import T0, make_world
from tests.unit.test_resolve_usecase import A, B, World, rule

TRACE = "Root=1-5e66d96f-7491f09c79d18acf3d050a1b;Parent=53995c3f42cd8ad8;Sampled=1"
ROOT_ID = "1-5e66d96f-7491f09c79d18acf3d050a1b"
KEYS = st.sampled_from(["paimon://lake/ods/a", "paimon://lake/ods/b", "iceberg://glue/db/c"])
PINS = st.lists(
    st.builds(
        PinnedInput,
        asset_key=KEYS,
        snapshot_id=st.integers(1, 10**6),
        schema_id=st.none() | st.integers(0, 100),
        watermark=st.none() | st.integers(0, 2**41),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda p: p.asset_key,
)


def claimed(pins: list[PinnedInput], partition: str | None) -> Trigger:
    key = trigger_key("r", "g", tuple(pins), None, 0)
    return Trigger(
        triggerKey=key, ruleId="r", groupId="g", inputs=tuple(pins), partition=partition, createdAt=T0, updatedAt=T0
    )


@given(pins=PINS, partition=st.none() | st.text(min_size=1, max_size=40), trace=st.none() | st.text(max_size=40))
def test_the_context_names_the_partition_and_each_pinned_assets_schema_and_watermark(
    pins: list[PinnedInput], partition: str | None, trace: str | None
) -> None:
    context = trigger_log_context(claimed(pins, partition), trace)
    assert context["traceId"] == trace and context["partitionKey"] == partition
    schemas = {p.asset_key: p.schema_id for p in pins if p.schema_id is not None}
    watermarks = {p.asset_key: p.watermark for p in pins if p.watermark is not None}
    assert context["schemaId"] == (schemas or None) and context["watermark"] == (watermarks or None)


@pytest.mark.parametrize(
    ("header", "expected"),
    [(TRACE, ROOT_ID), (f"Parent=1;{TRACE.split(';')[0]}", ROOT_ID), ("bare-id", "bare-id"), ("", None), (None, None)],
)
def test_the_trace_id_is_the_root_of_lambdas_trace_header(header: str | None, expected: str | None) -> None:
    assert root_trace_id(header) == expected


def context_of(caplog: pytest.LogCaptureFixture, message: str) -> dict[str, object]:
    """The RFC's keys on the one line logged with ``message`` (absent: None, as Powertools leaves it out)."""
    (line,) = [r for r in caplog.records if r.getMessage() == message]
    return {k: line.__dict__.get(k) for k in ("traceId", "partitionKey", "schemaId", "watermark")}


def test_the_resolvers_claim_line_carries_the_trace_schema_and_watermark(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE)
    world = World(rule("r", {"assetKey": A}, {"assetKey": B}))
    world.snap(A, 1, schemaId=3, watermark=1_750_000_000_000)
    world.snap(B, 7)  # no schema id, no watermark: left out
    caplog.set_level(logging.INFO)
    world.deliver()
    assert context_of(caplog, "trigger claimed") == {
        "traceId": ROOT_ID,
        "partitionKey": None,  # a whole-table run
        "schemaId": {A: 3},
        "watermark": {A: 1_750_000_000_000},
    }


def test_the_dispatchers_lines_carry_the_context_of_the_claim_outside_lambda_too(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    world = make_world()
    pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=5, schema_id=2, watermark=99),)
    trigger = claimed(list(pins), "dt=2026-12-07").model_copy(update={"rule_id": "dwd"})
    trigger = trigger.model_copy(update={"trigger_key": trigger_key("dwd", "g", pins, None, 0)})
    base = GroupCursor.initial("dwd", "g")
    assert world.store.claim(trigger, base.after(trigger, {}), None).outcome.value == "CLAIMED"
    caplog.set_level(logging.INFO)
    assert world.dispatch(trigger.trigger_key).status is DispatchStatus.SUCCEEDED
    assert context_of(caplog, "trigger dispatched") == {
        "traceId": None,  # no trace outside Lambda
        "partitionKey": "dt=2026-12-07",
        "schemaId": {"paimon://lake/ods/orders": 2},
        "watermark": {"paimon://lake/ods/orders": 99},
    }


def test_a_partitioned_groups_claim_line_names_its_partition(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_partition_resolve import ORDERS, PAYMENTS, Lake, daily

    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE)
    lake = Lake(daily())
    lake.commit(ORDERS, 1, "2026-12-02", schemaId=4)
    lake.commit(PAYMENTS, 7, "2026-12-02")
    caplog.set_level(logging.INFO)
    lake.deliver(dispatch=False)
    assert context_of(caplog, "trigger claimed") == {
        "traceId": ROOT_ID,
        "partitionKey": "dt=2026-12-02",
        "schemaId": {ORDERS: 4},
        "watermark": None,  # neither pinned version has one
    }
