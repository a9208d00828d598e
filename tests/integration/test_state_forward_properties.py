"""Property: state only moves forward, in every field, whatever the evidence's order, copies and crashes.

Every event type (snapshots, watermarks, quality and schema verdicts, tags, backfills, CDC recovery,
manifests, intervals; pushed, polled or reported by a run's completion) goes through ``IngestEvents``
on the DynamoDB adapter (in-process moto) and on the in-memory store, in any order, with copies, and
with deliveries cut short between "event recorded" and "state advanced" (redelivered later). A brute
force model, written from the documented orders (``docs/architecture.md``), sorts all the evidence
by each field's order and takes the maximum; the final state must equal it field by field, both
stores must agree exactly, and no field may step back after any delivery.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore
from lakehook.domain.coverage import Span
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.ports import AssetStore
from lakehook.ports.coverage import CoverageStore
from lakehook.usecases.coverage import RecordCoverage
from tests.fakes.memory import InMemoryAssetStore
from tests.fakes.memory_coverage import InMemoryCoverageStore
from tests.hypothesis_profiles import examples
from tests.wiring import ingest_events

BASE_MS = 1_748_772_000_000
# The recording clock ticks on even milliseconds; producer times are odd ones among them, so evidence with
# and without a time of its own interleaves, and no two events tie (no tie-break by event id is needed).
TICK = 2
MINUTE = 60_000
ASSETS = 2
KINDS = (
    "snapshot",
    "watermark",
    "passed",
    "failed",
    "approved",
    "rejected",
    "tag",
    "backfill_started",
    "backfill_completed",
    "cdc",
    "sealed",
    "interrupted",
    "interval",
)
_examples = itertools.count()


@dataclass(frozen=True)
class Spec:
    """One distinct event: its content is a function of (asset, kind, version), as for a real table."""

    asset: int
    kind: str
    version: int

    @property
    def timed(self) -> bool:
        """Odd versions of tags and manifests carry their own time; even ones are ordered by their recording."""
        return self.version % 2 == 1

    def event(self, run: int) -> AssetEvent:
        v = self.version
        body: dict[str, Any] = {"assetKey": f"paimon://lake/fwd{run}/t{self.asset}"}
        match self.kind:
            case "snapshot":
                body |= {"eventType": "SNAPSHOT_COMMITTED", "snapshotId": v, "schemaId": v // 3}
                body |= {"commitTime": BASE_MS + v * 1000, "watermark": BASE_MS + v * 500}
                if v % 3 == 0:  # a compaction: changes no data
                    body["commitKind"] = "COMPACT"
                elif v % 4 == 2:  # an overwrite that matched nothing: its log says it changed no data
                    body |= {"commitKind": "OVERWRITE", "dataChanged": False}
            case "watermark":
                body |= {"eventType": "WATERMARK_ADVANCED", "watermark": BASE_MS + v * 700}
            case "passed" | "failed":
                body |= {"eventType": f"QUALITY_CHECK_{self.kind.upper()}", "snapshotId": v}
            case "approved" | "rejected":
                body |= {"eventType": f"SCHEMA_CHANGE_{self.kind.upper()}", "schemaId": v}
            case "tag":
                body |= {"eventType": "TAG_CREATED", "tag": f"tag-{v}", "snapshotId": v}
            case "backfill_started" | "backfill_completed":
                body |= {"eventType": self.kind.upper(), "backfillId": f"bf-{v}"}
            case "cdc":
                body |= {"eventType": "CDC_LAG_RECOVERED", "watermark": BASE_MS + v * 300}
            case "sealed" | "interrupted":
                body |= {"eventType": f"MANIFEST_{self.kind.upper()}", "manifestUri": f"s3://spool/m/{v}.json"}
                body |= {"snapshotId": v}
            case "interval":
                body |= {"eventType": "INTERVAL_COVERED"}
                body |= {"interval": {"start": BASE_MS + v * MINUTE, "end": BASE_MS + (v + 1 + v % 2) * MINUTE}}
        if self.kind in ("tag", "sealed", "interrupted") and self.timed:
            body["commitTime"] = BASE_MS + 1 + v * 16
        return AssetEvent.model_validate(body)


@dataclass(frozen=True)
class Delivery:
    spec: Spec
    crash: bool  # recorded, then the process dies before advancing the state
    source: SourceType


# the latest-wins fields (a tag, the manifest, backfills) drawn three times as often: their orders are the subtle ones
LATEST_WINS = ("tag", "sealed", "interrupted", "backfill_started", "backfill_completed")
specs = st.builds(
    Spec, asset=st.integers(0, ASSETS - 1), kind=st.sampled_from(KINDS + LATEST_WINS * 2), version=st.integers(0, 3)
)
sources = st.sampled_from([SourceType.PUSH, SourceType.POLL, SourceType.RUN_COMPLETION])


@st.composite
def deliveries(draw: Any) -> list[Delivery]:
    distinct = draw(st.lists(specs, min_size=4, max_size=28, unique=True))
    copies = draw(st.lists(st.sampled_from(distinct), max_size=16))
    order = draw(st.permutations(distinct + copies))
    plan = [Delivery(spec, draw(st.integers(0, 4)) == 0, draw(sources)) for spec in order]
    # Every event cut short is delivered again (the poller re-reads it, the producer retries).
    completed = set()
    for delivery in reversed(plan):
        if not delivery.crash:
            completed.add(delivery.spec)
        elif delivery.spec not in completed:
            plan.append(Delivery(delivery.spec, False, SourceType.POLL))
            completed.add(delivery.spec)
    return plan


def deliver(
    store: AssetStore, coverage: CoverageStore, plan: list[Delivery], run: int, watch: InMemoryAssetStore | None = None
) -> list[IngestStatus | None]:
    """Each delivery's answer (None for one that crashed); with ``watch``, check no field steps back."""
    clock = itertools.count(BASE_MS + TICK, TICK)
    ingest = ingest_events(store, clock=lambda: next(clock), coverage=RecordCoverage(coverage))
    answers: list[IngestStatus | None] = []
    for delivery in plan:
        event = delivery.spec.event(run)
        if delivery.crash:
            store.record_event(event, delivery.source, next(clock))
            answers.append(None)
        else:
            before = dict(watch.states.get(event.asset_key, {})) if watch is not None else None
            answers.append(ingest.ingest(event, delivery.source).status)
            if watch is not None and before is not None:
                assert_forward(before, watch.states.get(event.asset_key, {}))
    return answers


def assert_forward(before: dict[str, Any], after: dict[str, Any]) -> None:
    """No ordered field moved back, and no set lost a member, in one delivery."""
    ordered = ("latestSnapshotOrder", "latestWatermark", "qualityPassedOrder", "qualityFailedOrder")
    ordered += ("schemaApprovedId", "schemaRejectedId", "cdcRecoveredWatermark", "manifestOrder")
    for attr in ordered:
        if attr in before:
            assert after[attr] >= before[attr], attr
    for attr in ("tags", "tagLog", "backfillsStarted", "backfillsCompleted"):
        assert set(before.get(attr, ())) <= set(after.get(attr, ())), attr


# --- the model: sort all the evidence by each field's documented order, take the maximum ----------


def changes_data(version: int) -> bool:
    """Whether snapshot ``version`` changed data: not a compaction, and not a commit whose log says it did not."""
    return version % 3 != 0 and version % 4 != 2


def first_recordings(plan: list[Delivery]) -> dict[Spec, int]:
    """When each distinct event was first recorded: one tick per delivery, crashed or not."""
    first: dict[Spec, int] = {}
    for n, delivery in enumerate(plan, start=1):
        first.setdefault(delivery.spec, BASE_MS + n * TICK)
    return first


def model(plan: list[Delivery], asset: int, run: int) -> dict[str, Any]:
    """The expected read model of one asset, field by field."""
    first = first_recordings(plan)
    mine = {d.spec for d in plan if d.spec.asset == asset}

    def versions(kind: str) -> list[int]:
        return sorted(s.version for s in mine if s.kind == kind)

    def newest(kind: str) -> int | None:
        return max(versions(kind), default=None)

    def time(spec: Spec) -> int:
        return spec.event(run).commit_time or first[spec]

    expected: dict[str, Any] = {}
    snap = newest("snapshot")
    expected["latest_snapshot_id"] = snap
    expected["latest_schema_id"] = None if snap is None else snap // 3
    expected["latest_commit_time"] = None if snap is None else BASE_MS + snap * 1000
    expected["latest_snapshot_watermark"] = None if snap is None else BASE_MS + snap * 500
    data = [v for v in versions("snapshot") if changes_data(v)]
    expected["latest_data_snapshot_id"] = max(data, default=None)  # a late data snapshot beats a compaction
    expected["latest_data_changed"] = None if snap is None else changes_data(snap)
    pushed = newest("watermark")
    expected["latest_watermark"] = None if pushed is None else BASE_MS + pushed * 700
    expected["quality_passed_snapshot_id"] = newest("passed")
    expected["quality_failed_snapshot_id"] = newest("failed")
    expected["schema_approved_id"] = newest("approved")
    expected["schema_rejected_id"] = newest("rejected")
    cdc = newest("cdc")
    expected["cdc_recovered_watermark"] = None if cdc is None else BASE_MS + cdc * 300

    tags = [s for s in mine if s.kind == "tag"]
    expected["tags"] = {f"tag-{s.version}" for s in tags}
    latest_tag = max(tags, key=time, default=None)
    expected["latest_tag"] = None if latest_tag is None else f"tag-{latest_tag.version}"
    expected["latest_tag_snapshot_id"] = None if latest_tag is None else latest_tag.version

    started = {f"bf-{v}" for v in versions("backfill_started")}
    completed = {f"bf-{v}" for v in versions("backfill_completed")}
    running = started - completed
    if running:
        expected["backfill_status"], expected["backfill_id"] = "RUNNING", ", ".join(sorted(running))
    elif completed:
        more = len(completed) - 1
        expected["backfill_status"] = "COMPLETED"
        expected["backfill_id"] = max(completed) + (f" and {more} more" if more else "")
    else:
        expected["backfill_status"], expected["backfill_id"] = "NONE", None

    manifests = [s for s in mine if s.kind in ("sealed", "interrupted")]
    # on a tie in time (one URI both sealed and interrupted, same producer time) the interruption wins
    current = max(manifests, key=lambda s: (time(s), s.kind == "interrupted"), default=None)
    expected["manifest_uri"] = None if current is None else f"s3://spool/m/{current.version}.json"
    expected["manifest_status"] = None if current is None else {"sealed": "PENDING"}.get(current.kind, "INTERRUPTED")
    expected["manifest_snapshot_id"] = None if current is None else current.version

    spans = sorted(
        (BASE_MS + s.version * MINUTE, BASE_MS + (s.version + 1 + s.version % 2) * MINUTE)
        for s in mine
        if s.kind == "interval"
    )
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    expected["coverage"] = [Span(a, b) for a, b in merged]
    return expected


def observed(store: AssetStore, coverage: CoverageStore, key: str) -> dict[str, Any] | None:
    state = store.get_state(key)
    if state is None:
        return None
    found = {name: getattr(state, name) for name in state.model_fields if name != "asset_key"}
    found["backfill_status"] = state.backfill_status.value
    found["latest_data_snapshot_id"] = None if state.latest_data is None else state.latest_data.snapshot_id
    found["coverage"] = coverage.spans(key, 0, BASE_MS + 100 * MINUTE)
    return found


@settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=deliveries())
def test_every_field_ends_at_the_maximum_of_its_order(table: Any, plan: list[Delivery]) -> None:
    run = next(_examples)  # fresh asset keys per example: the table is shared
    dynamodb, dynamodb_coverage = DynamoDBAssetStore(table), DynamoDBCoverageStore(table)
    memory, memory_coverage = InMemoryAssetStore(), InMemoryCoverageStore()

    answers = deliver(dynamodb, dynamodb_coverage, plan, run)
    assert deliver(memory, memory_coverage, plan, run, watch=memory) == answers

    # a delivery is DUPLICATE exactly when its event was recorded before (a crashed first attempt included)
    seen: set[Spec] = set()
    for delivery, answer in zip(plan, answers, strict=True):
        if answer is not None:
            assert (answer is IngestStatus.DUPLICATE) == (delivery.spec in seen)
        seen.add(delivery.spec)

    for asset in range(ASSETS):
        key = f"paimon://lake/fwd{run}/t{asset}"
        found = observed(dynamodb, dynamodb_coverage, key)
        assert found == observed(memory, memory_coverage, key)  # the two stores agree on every attribute
        if not any(d.spec.asset == asset for d in plan):
            assert found is None
            continue
        assert found is not None
        expected = model(plan, asset, run)
        assert {name: found[name] for name in expected} == expected


snapshot_plans = st.lists(
    st.builds(Spec, asset=st.just(0), kind=st.just("snapshot"), version=st.integers(0, 6)), min_size=1, max_size=8
).flatmap(lambda specs: st.permutations(specs))


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(order=snapshot_plans)
def test_the_newest_data_snapshot_holds_whatever_the_order_of_data_and_compaction_snapshots(
    table: Any, order: list[Spec]
) -> None:
    # Every third version is a compaction, and 2 and 6 say dataChanged false: a data snapshot arriving after a
    # newer one that changed no data is still the newest data change, so a member that skips those pins it.
    run = next(_examples)
    plan = [Delivery(spec, False, SourceType.PUSH) for spec in order]
    for store, coverage in (
        (DynamoDBAssetStore(table), DynamoDBCoverageStore(table)),
        (InMemoryAssetStore(), InMemoryCoverageStore()),
    ):
        deliver(store, coverage, plan, run)
        found = observed(store, coverage, f"paimon://lake/fwd{run}/t0")
        assert found is not None
        assert found["latest_data_snapshot_id"] == max(
            (s.version for s in order if changes_data(s.version)), default=None
        )
        assert found["latest_snapshot_id"] == max(s.version for s in order)
