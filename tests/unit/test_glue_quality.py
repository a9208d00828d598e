"""Glue Data Quality's "Data Quality Evaluation Results Available" events through the bus ingest: the table found
as a Glue commit notice finds it, the verdict pinned to the snapshot the evaluation read (the newest committed at
or before its start), or answered UNMATCHED / NOT_PINNED / rejected with the reason; any event shape, however
malformed, is answered, never raised."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.glue_quality import (
    EvaluationTimes,
    GlueQualityError,
    NotPinned,
    Pinned,
    pin_evaluation,
    read_glue_quality,
)
from lakehook.domain.time import instant_from_json
from lakehook.usecases.bus_ingest import IngestBusEvents
from lakehook.usecases.glue_quality import IngestGlueQuality
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore, InMemoryProducerRegistry
from tests.fakes.memory_dispatch import InMemoryAliasStore
from tests.fakes.memory_quality import InMemoryEvaluationTimes
from tests.hypothesis_profiles import examples
from tests.wiring import ingest_events

ACCOUNT = "123456789012"
ORDERS = "iceberg://glue/dw_db/orders"
T0 = instant_from_json("2026-12-07T08:00:00Z")
MINUTE = 60_000

# The documented sample (Glue developer guide, "Setting up alerts, deployments, and scheduling"), its table ours.
SAMPLE: dict[str, Any] = {
    "version": "0",
    "id": "abcdef00-1234-5678-9abc-def012345678",
    "detail-type": "Data Quality Evaluation Results Available",
    "source": "aws.glue-dataquality",
    "account": ACCOUNT,
    "time": "2026-12-07T08:10:00Z",
    "region": "us-west-2",
    "resources": [],
    "detail": {
        "context": {
            "contextType": "GLUE_DATA_CATALOG",
            "runId": "dqrun-12334567890",
            "databaseName": "dw_db",
            "tableName": "orders",
            "catalogId": ACCOUNT,
        },
        "resultID": "dqresult-12334567890",
        "rulesetNames": ["orders_ruleset"],
        "state": "SUCCEEDED",
        "score": 1.00,
        "rulesSucceeded": 100,
        "rulesFailed": 0,
        "rulesSkipped": 0,
    },
}


def snapshot(snapshot_id: int, sequence: int, committed: int | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": ORDERS,
        "snapshotId": snapshot_id,
        "sequenceNumber": sequence,
    }
    if committed is not None:
        event["commitTime"] = committed
    return event


EVALUATED = EvaluationTimes(T0, T0 + 10 * MINUTE)  # the sample's evaluation: 08:00 to 08:10


class World:
    def __init__(self, times: EvaluationTimes | None = EVALUATED, **bounds: int) -> None:
        self.store = InMemoryAssetStore()
        self.registry = InMemoryAssetRegistry()
        self.ingest = ingest_events(self.store, clock=lambda: T0 + 20 * MINUTE)
        aliases = InMemoryAliasStore()
        glue = IngestGlueQuality(
            self.registry,
            self.store,
            self.ingest,
            aliases,
            InMemoryEvaluationTimes({"dqresult-12334567890": times} if times else {}),
            **bounds,
        )
        self.bus = IngestBusEvents(InMemoryProducerRegistry(), self.ingest, aliases, 100, glue)

    def register(self, key: str = ORDERS, **props: str) -> None:
        database, table = key.split("/")[-2:]
        self.registry.put_asset(
            AssetRegistration.model_validate(
                {
                    "assetKey": key,
                    "format": "iceberg",
                    "source": {
                        "catalog": "glue",
                        "properties": {"type": "glue", **props},
                        "table": f"{database}.{table}",
                    },
                }
            ),
            T0,
        )

    def commit(self, *events: dict[str, Any]) -> None:
        self.ingest.ingest_raw(list(events), SourceType.POLL)

    def verdicts(self, key: str = ORDERS) -> list[AssetEvent]:
        kinds = (EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED)
        return [r.event for r in self.store.list_events(key, 100).items if r.event.event_type in kinds]


def test_the_documented_event_reads_as_a_passed_verdict_on_its_catalog_table() -> None:
    result = read_glue_quality(SAMPLE)
    assert (result.database, result.table, result.catalog_id, result.region) == (
        "dw_db",
        "orders",
        ACCOUNT,
        "us-west-2",
    )
    assert result.passed and result.event_type is EventType.QUALITY_CHECK_PASSED
    assert result.notice().watch_key == "TABLE#dw_db.orders"
    failed = copy.deepcopy(SAMPLE)
    failed["detail"].update(state="FAILED", rulesFailed=3, score=0.97)
    assert read_glue_quality(failed).event_type is EventType.QUALITY_CHECK_FAILED
    # a rule that failed fails the verdict whatever the state says
    failed["detail"]["state"] = "SUCCEEDED"
    assert not read_glue_quality(failed).passed


def test_a_verdict_is_pinned_to_the_newest_snapshot_committed_at_or_before_the_evaluations_start() -> None:
    world = World()
    world.register(**{"glue.id": ACCOUNT})
    world.commit(snapshot(71, 1, T0 - 5 * MINUTE), snapshot(72, 2, T0 - MINUTE), snapshot(73, 3, T0 + 15 * MINUTE))
    report = world.bus(SAMPLE, ACCOUNT)
    assert report.rejected is None and [r.status.value for r in report.results] == ["ACCEPTED"]
    [verdict] = report.verdicts
    assert verdict["status"] == "RECORDED" and verdict["snapshotId"] == 72
    assert "newest committed at or before the evaluation's start 2026-12-07T08:00:00" in verdict["reason"]
    [event] = world.verdicts()
    assert event.event_type is EventType.QUALITY_CHECK_PASSED and event.snapshot_id == 72
    assert event.payload is not None
    glue = event.payload["glueDataQuality"]
    assert glue["resultId"] == "dqresult-12334567890" and glue["rulesetNames"] == ["orders_ruleset"]
    assert glue["score"] == 1.0 and "pinned to snapshot 72" in glue["pinned"]
    # EventBridge delivers at least once: the redelivery is the same verdict
    assert [r.status.value for r in world.bus(SAMPLE, ACCOUNT).results] == ["DUPLICATE"]


def test_a_failed_evaluation_records_a_failed_check_with_its_ruleset_and_score() -> None:
    world = World()
    world.register()
    world.commit(snapshot(72, 2, T0 - MINUTE))
    failed = copy.deepcopy(SAMPLE)
    failed["detail"].update(state="FAILED", rulesSucceeded=97, rulesFailed=3, score=0.97)
    world.bus(failed, ACCOUNT)
    [event] = world.verdicts()
    assert event.event_type is EventType.QUALITY_CHECK_FAILED and event.snapshot_id == 72
    assert event.payload is not None
    assert event.payload["glueDataQuality"]["rulesFailed"] == 3 and event.payload["glueDataQuality"]["score"] == 0.97


def test_a_commit_during_the_evaluation_leaves_the_verdict_not_pinned_with_the_reason() -> None:
    world = World()
    world.register()
    world.commit(snapshot(72, 2, T0 - MINUTE), snapshot(73, 3, T0 + 5 * MINUTE))
    [verdict] = world.bus(SAMPLE, ACCOUNT).verdicts
    assert verdict["status"] == "NOT_PINNED" and "ambiguous: snapshot 73" in verdict["reason"]
    assert world.verdicts() == []


def test_unknown_start_or_no_snapshot_before_it_leaves_the_verdict_not_pinned() -> None:
    world = World(times=None)
    world.register()
    world.commit(snapshot(72, 2, T0 - MINUTE))
    [verdict] = world.bus(SAMPLE, ACCOUNT).verdicts
    assert verdict["status"] == "NOT_PINNED" and "start time could not be read" in verdict["reason"]
    world = World()
    world.register()
    world.commit(snapshot(73, 3, T0 + 15 * MINUTE))
    [verdict] = world.bus(SAMPLE, ACCOUNT).verdicts
    assert verdict["status"] == "NOT_PINNED" and "no recorded snapshot was committed at or before" in verdict["reason"]
    assert world.verdicts() == []


def test_a_table_no_registration_names_is_answered_unmatched_not_dropped() -> None:
    world = World()
    world.register(**{"glue.id": "999999999999"})  # the same name in another account's catalog
    report = world.bus(SAMPLE, ACCOUNT)
    assert report.rejected is None and report.unrecorded_verdicts
    [verdict] = report.verdicts
    assert verdict["status"] == "UNMATCHED" and verdict["table"] == "dw_db.orders"
    assert "no registered table is glue table dw_db.orders" in verdict["reason"]
    assert report.to_log()["verdicts"] == report.verdicts


def test_another_accounts_result_or_a_glue_job_context_is_rejected_with_the_reason() -> None:
    world = World()
    world.register()
    world.commit(snapshot(72, 2, T0 - MINUTE))
    foreign = {**SAMPLE, "account": "210987654321"}
    assert "from the stack's account 123456789012 only" in str(world.bus(foreign, ACCOUNT).rejected)
    job = copy.deepcopy(SAMPLE)
    job["detail"]["context"] = {"contextType": "GLUE_JOB", "jobId": "jr-1", "jobName": "dq-eval-job"}
    assert "names no catalog table" in str(world.bus(job, ACCOUNT).rejected)
    assert world.verdicts() == []


# --- properties ------------------------------------------------------------------------------------------------

json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
contexts = st.fixed_dictionaries(
    {},
    optional={
        "contextType": st.sampled_from(["GLUE_DATA_CATALOG", "GLUE_JOB"]) | json_leaf,
        "databaseName": st.sampled_from(["dw_db", ""]) | json_leaf,
        "tableName": st.sampled_from(["orders", "x" * 300]) | json_leaf,
        "catalogId": st.sampled_from([ACCOUNT, "999999999999"]) | json_leaf,
    },
)
details = st.fixed_dictionaries(
    {},
    optional={
        "context": contexts | json_value,
        "resultID": st.sampled_from(["dqresult-12334567890", "dqresult-other"]) | json_leaf,
        "rulesetNames": st.lists(st.text(max_size=8) | json_leaf, max_size=3) | json_leaf,
        "state": st.sampled_from(["SUCCEEDED", "PASSED", "FAILED", "RUNNING"]) | json_leaf,
        "score": st.floats(min_value=-1, max_value=2) | json_leaf,
        "rulesSucceeded": st.integers(-1, 10) | json_leaf,
        "rulesFailed": st.integers(-1, 10) | json_leaf,
        "rulesSkipped": st.integers(-1, 10) | json_leaf,
    },
)
random_events = st.fixed_dictionaries(
    {"source": st.just("aws.glue-dataquality"), "detail-type": st.just("Data Quality Evaluation Results Available")},
    optional={
        "account": st.sampled_from([ACCOUNT, "210987654321"]) | json_leaf,
        "region": st.just("us-west-2") | json_leaf,
        "time": st.sampled_from(["2026-12-07T08:10:00Z", "yesterday", 1_765_000_000_000]) | json_leaf,
        "id": json_leaf,
        "detail": details | json_value,
    },
)


@st.composite
def documented_events(draw: st.DrawFn) -> dict[str, Any]:
    """The documented shape with its values varied: the table ours or not, any verdict, any counts."""
    event = copy.deepcopy(SAMPLE)
    event["detail"].update(
        state=draw(st.sampled_from(["SUCCEEDED", "PASSED", "FAILED"])),
        score=draw(st.floats(0, 1)),
        rulesSucceeded=draw(st.integers(0, 100)),
        rulesFailed=draw(st.integers(0, 5)),
        rulesSkipped=draw(st.integers(0, 5)),
        rulesetNames=draw(st.lists(st.sampled_from(["a", "orders_ruleset", "b-2"]), max_size=3)),
        resultID=draw(st.sampled_from(["dqresult-12334567890", "dqresult-unknown-times"])),
    )
    event["detail"]["context"]["tableName"] = draw(st.sampled_from(["orders", "Orders", "customers"]))
    event["detail"]["context"]["catalogId"] = draw(st.sampled_from([ACCOUNT, "999999999999"]))
    return event


@st.composite
def one_field_broken(draw: st.DrawFn) -> dict[str, Any]:
    """A documented event with one field missing or replaced by any JSON value."""
    event = draw(documented_events())
    where = draw(st.sampled_from(["event", "detail", "context"]))
    holder = {"event": event, "detail": event["detail"], "context": event["detail"]["context"]}[where]
    name = draw(st.sampled_from(sorted(holder)))
    if draw(st.booleans()):
        del holder[name]
    else:
        holder[name] = draw(json_value)
    return event


glue_events = documented_events() | one_field_broken() | random_events


@settings(max_examples=examples(500), deadline=None)
@given(event=glue_events)
def test_any_glue_quality_event_shape_is_read_or_refused_naming_the_field(event: dict[str, Any]) -> None:
    try:
        result = read_glue_quality(event)
    except GlueQualityError as exc:
        assert str(exc)
    else:
        assert result.database and result.table and result.result_id
        assert result.passed == (result.state != "FAILED" and result.rules_failed == 0)


@settings(max_examples=examples(300), deadline=None)
@given(event=glue_events)
def test_any_glue_quality_event_is_answered_by_the_bus_ingest_never_raised(event: dict[str, Any]) -> None:
    world = World()
    world.register()
    world.commit(snapshot(72, 2, T0 - MINUTE))
    report = world.bus(event, ACCOUNT)
    assert (report.rejected is not None) != bool(report.verdicts)
    for verdict in report.verdicts:
        assert verdict["status"] in ("RECORDED", "UNMATCHED", "NOT_PINNED") and verdict["reason"]
    recorded = [v for v in report.verdicts if v["status"] == "RECORDED"]
    assert [e.snapshot_id for e in world.verdicts()] == [v["snapshotId"] for v in recorded]
    if recorded:  # the verdict is the event's: FAILED when its state says so or any rule failed
        detail = event["detail"]
        passed = detail["state"] != "FAILED" and detail.get("rulesFailed", 0) == 0
        assert [e.event_type.value for e in world.verdicts()] == [
            "QUALITY_CHECK_PASSED" if passed else "QUALITY_CHECK_FAILED"
        ]


commits = st.lists(
    st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(0, 40))),
    min_size=0,
    max_size=8,
    unique_by=lambda c: c[0],
)


@settings(max_examples=examples(500), deadline=None)
@given(history=commits, start=st.integers(0, 40), length=st.integers(0, 10))
def test_a_pin_is_the_snapshot_read_at_the_start_and_no_commit_falls_inside_the_evaluation(
    history: list[tuple[int, int | None]], start: int, length: int
) -> None:
    """Reference: order the snapshots by sequence; the one read is the newest committed at or before the start; the
    verdict pins it iff every newer one was committed (with a known time) after the end."""
    snapshots = [
        AssetEvent.model_validate(snapshot(1000 + seq, seq + 1, None if at is None else T0 + at * MINUTE))
        for seq, at in history
    ]
    times = EvaluationTimes(T0 + start * MINUTE, T0 + (start + length) * MINUTE)
    found = pin_evaluation(snapshots, times)
    timed = [s for s in snapshots if s.commit_time is not None and s.commit_time <= times.started_at]
    if not timed:
        assert isinstance(found, NotPinned)
        return
    read = max(timed, key=lambda s: s.sequence_number or 0)
    newer = [s for s in snapshots if (s.sequence_number or 0) > (read.sequence_number or 0)]
    clean = all(s.commit_time is not None and s.commit_time > times.completed_at for s in newer)
    assert isinstance(found, Pinned) == clean
    if isinstance(found, Pinned):
        assert found.snapshot == read


def test_a_snapshot_past_the_bound_of_the_reads_is_not_pinned_and_the_reason_names_the_bound() -> None:
    """The snapshot read is older than the newest ``history_pages * page_size`` events: NOT_PINNED, and the reason
    says only those were read (not that no snapshot was ever committed before the start)."""
    world = World(history_pages=1, page_size=2)
    world.register()
    world.commit(snapshot(70, 1, T0 - 5 * MINUTE))
    world.commit(*({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": T0 + i} for i in (1, 2)))
    [verdict] = world.bus(SAMPLE, ACCOUNT).verdicts
    assert verdict["status"] == "NOT_PINNED"
    assert "only the newest 2 events recorded for it were read" in verdict["reason"], verdict["reason"]
    wide = World(history_pages=2, page_size=2)  # the same history within the bound: pinned
    wide.register()
    wide.commit(snapshot(70, 1, T0 - 5 * MINUTE))
    wide.commit(*({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": T0 + i} for i in (1, 2)))
    [verdict] = wide.bus(SAMPLE, ACCOUNT).verdicts
    assert verdict["status"] == "RECORDED" and verdict["snapshotId"] == 70
