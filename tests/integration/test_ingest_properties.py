"""Property: duplicated, reordered, crash-interrupted evidence ends in the state of the newest versions.

Snapshot, watermark and quality events for several assets go through ``IngestEvents`` with
``DynamoDBAssetStore`` on in-process moto, in any order, with copies, and with some deliveries
cut short between "event recorded" and "state advanced" (a crash; the event is delivered again
later, as a poller's next pass or a producer's retry would). An independent model of the RFC's
rules predicts every answer and the final state (a quality verdict on an older snapshot than the
newest verdict touches the state: one more version; a copy of an event delivered to the end changes
nothing); the in-memory store, fed the same deliveries, must agree with DynamoDB on every answer
and on the whole state item.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.ports import AssetStore
from tests.fakes.memory import InMemoryAssetStore
from tests.hypothesis_profiles import examples
from tests.wiring import ingest_events

BASE_MS = 1_748_772_000_000
KINDS = ("snapshot", "watermark", "passed", "failed")
# Which state attribute each kind moves: the model's notion of "newer".
ATTRIBUTE = {
    "snapshot": "latestSnapshotId",
    "watermark": "latestWatermark",
    "passed": "qualityPassedSnapshotId",
    "failed": "qualityFailedSnapshotId",
}
_examples = itertools.count()


@dataclass(frozen=True)
class Spec:
    """One distinct event: its content is a function of (asset, kind, version), as for a real table."""

    asset: int
    kind: str
    version: int

    def event(self, run: int) -> AssetEvent:
        key = f"paimon://lake/run{run}/t{self.asset}"
        v = self.version
        if self.kind == "snapshot":
            return AssetEvent(
                event_type=EventType.SNAPSHOT_COMMITTED,
                asset_key=key,
                snapshot_id=v,
                schema_id=v // 5,
                commit_time=BASE_MS + v * 1000,
                watermark=BASE_MS + v * 500,
            )
        if self.kind == "watermark":
            return AssetEvent(event_type=EventType.WATERMARK_ADVANCED, asset_key=key, watermark=BASE_MS + v * 700)
        event_type = EventType.QUALITY_CHECK_PASSED if self.kind == "passed" else EventType.QUALITY_CHECK_FAILED
        return AssetEvent(event_type=event_type, asset_key=key, snapshot_id=v)


@dataclass(frozen=True)
class Delivery:
    spec: Spec
    crash: bool  # recorded, then the process dies before advancing the state
    source: SourceType


specs = st.builds(Spec, asset=st.integers(0, 2), kind=st.sampled_from(KINDS), version=st.integers(0, 12))


@st.composite
def deliveries(draw: Any) -> list[Delivery]:
    distinct = draw(st.lists(specs, min_size=1, max_size=18, unique=True))
    copies = draw(st.lists(st.sampled_from(distinct), max_size=12))
    order = draw(st.permutations(distinct + copies))
    plan = [
        Delivery(
            spec,
            draw(st.booleans().map(lambda b: b and draw(st.integers(0, 4)) == 0)),
            draw(st.sampled_from([SourceType.PUSH, SourceType.POLL])),
        )
        for spec in order
    ]
    # Every event cut short is delivered again (the poller re-reads it, the producer retries).
    completed = set()
    for delivery in reversed(plan):
        if not delivery.crash:
            completed.add(delivery.spec)
        elif delivery.spec not in completed:
            plan.append(Delivery(delivery.spec, False, SourceType.POLL))
            completed.add(delivery.spec)
    return plan


class Ticks:
    def __init__(self) -> None:
        self.now = BASE_MS

    def __call__(self) -> int:
        self.now += 1
        return self.now


def deliver(store: AssetStore, plan: list[Delivery], run: int) -> list[IngestStatus | None]:
    """Each delivery's answer; None for a delivery that crashed before answering."""
    ingest = ingest_events(store, clock=Ticks())
    answers: list[IngestStatus | None] = []
    for delivery in plan:
        event = delivery.spec.event(run)
        if delivery.crash:
            store.record_event(event, delivery.source, BASE_MS)
            answers.append(None)
        else:
            answers.append(ingest.ingest(event, delivery.source).status)
    return answers


def model(plan: list[Delivery]) -> tuple[list[IngestStatus | None], dict[tuple[int, str], int], dict[int, int]]:
    """The RFC's rules, written independently: answers, final maxima per (asset, attribute), versions."""
    recorded: set[Spec] = set()
    applied: dict[tuple[int, str], int] = {}
    versions: dict[int, int] = {}
    settled: set[Spec] = set()  # delivered to the end once: a copy stops at its record and changes nothing
    answers: list[IngestStatus | None] = []
    for delivery in plan:
        spec = delivery.spec
        novel = spec not in recorded
        recorded.add(spec)
        if delivery.crash:
            answers.append(None)
            continue
        if spec in settled:
            answers.append(IngestStatus.DUPLICATE)
            continue
        settled.add(spec)
        slot = (spec.asset, ATTRIBUTE[spec.kind])
        newer = slot not in applied or spec.version > applied[slot]
        if newer:
            applied[slot] = spec.version
            versions[spec.asset] = versions.get(spec.asset, 0) + 1
        elif spec.kind in ("passed", "failed") and spec.version < applied[slot]:
            # a verdict on an older snapshot keeps the newest verdicts but touches the state (it wakes the
            # resolver: EACH_VERSION judges each snapshot by its own checks), once: a copy of a settled
            # event stops at its record, and an earlier delivery that crashed had not touched it yet
            versions[spec.asset] = versions.get(spec.asset, 0) + 1
        if not novel:
            answers.append(IngestStatus.DUPLICATE)
        else:
            answers.append(IngestStatus.ACCEPTED if newer else IngestStatus.STALE)
    return answers, applied, versions


@settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=deliveries())
def test_any_order_of_duplicated_evidence_ends_in_the_newest_state(table: Any, plan: list[Delivery]) -> None:
    run = next(_examples)  # fresh asset keys per example: the table is shared
    dynamodb = DynamoDBAssetStore(table)
    memory = InMemoryAssetStore()

    answers = deliver(dynamodb, plan, run)
    expected_answers, maxima, versions = model(plan)
    assert answers == expected_answers
    assert deliver(memory, plan, run) == answers

    # each distinct event: one answer that is not DUPLICATE (unless its first delivery crashed), and it comes first
    for spec in {d.spec for d in plan}:
        mine = [(d, a) for d, a in zip(plan, answers, strict=True) if d.spec == spec]
        not_duplicate = [a for _, a in mine if a not in (IngestStatus.DUPLICATE, None)]
        first_crashed = mine[0][0].crash
        assert len(not_duplicate) == (0 if first_crashed else 1)
        assert all(a in (IngestStatus.DUPLICATE, None) for _, a in mine[1:])

    for asset in range(3):
        key = f"paimon://lake/run{run}/t{asset}"
        state = dynamodb.get_state(key)
        assert state == memory.get_state(key)  # the DynamoDB expressions and the reference agree exactly
        if asset not in versions:
            assert state is None
            continue
        assert state is not None and state.version == versions[asset]
        snapshot = maxima.get((asset, "latestSnapshotId"))
        assert state.latest_snapshot_id == snapshot
        if snapshot is not None:  # everything the snapshot carried comes from the newest one
            assert state.latest_schema_id == snapshot // 5
            assert state.latest_commit_time == BASE_MS + snapshot * 1000
            assert state.latest_snapshot_watermark == BASE_MS + snapshot * 500
        pushed = maxima.get((asset, "latestWatermark"))
        assert state.latest_watermark == (None if pushed is None else BASE_MS + pushed * 700)
        candidates = [w for w in (state.latest_watermark, state.latest_snapshot_watermark) if w is not None]
        assert state.watermark == (max(candidates) if candidates else None)
        passed = maxima.get((asset, "qualityPassedSnapshotId"))
        failed = maxima.get((asset, "qualityFailedSnapshotId"))
        assert (state.quality_passed_snapshot_id, state.quality_failed_snapshot_id) == (passed, failed)
        expected_quality = (
            "FAILED"
            if snapshot is not None and failed == snapshot
            else "PASSED"
            if snapshot is not None and passed == snapshot
            else "UNKNOWN"
        )
        assert state.quality_status == expected_quality
        # every distinct event is kept as evidence exactly once, stale ones included
        listed = dynamodb.list_events(key, limit=500).items
        ids = [r.event.event_id for r in listed]
        assert sorted(ids) == sorted({d.spec.event(run).event_id for d in plan if d.spec.asset == asset})
