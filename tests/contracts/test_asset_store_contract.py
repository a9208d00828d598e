"""The AssetStore contract (ports.store), on the fake and on DynamoDB: an event identity is recorded once (a
redelivery learns when it was first recorded and whether it settled), state only moves forward and never twice,
events are listed newest first in pages; and both driven by the same generated deliveries answer alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.state import advance_for
from lakehook.ports import AdvanceOutcome, Recording
from lakehook.usecases.ingest_state import advance_state
from tests.contracts.conftest import Backend
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

ORDERS = "paimon://lake/ods_db/orders"
PAYMENTS = "paimon://lake/ods_db/payments"


def snap(sid: int, asset: str = ORDERS, **extra: Any) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset, "snapshotId": sid, **extra})


def at_once(
    backend: Backend, event: AssetEvent, source: SourceType, at: int, producer_id: str | None = None
) -> Recording | None:
    """``record_and_advance`` with the change the use case decides for the event (``advance_for``)."""
    change = advance_for(event, at)
    assert change is not None
    return backend.assets.record_and_advance(event, source, at, producer_id, change=change)


def test_an_event_identity_is_recorded_once(backend: Backend) -> None:
    first = backend.assets.record_event(snap(7), SourceType.PUSH, 1000, "writer")
    # the poller finds the same snapshot later: one identity, the first recording's time
    again = backend.assets.record_event(snap(7, commitKind="APPEND"), SourceType.POLL, 2000)

    assert first == Recording(True, 1000)
    assert again == Recording(False, 1000, settled=False)
    listed = backend.assets.list_events(ORDERS, 10).items
    assert [(e.event.snapshot_id, e.source, e.received_at, e.producer_id) for e in listed] == [
        (7, SourceType.PUSH, 1000, "writer")
    ]


def test_a_refused_record_names_the_partition_keys_of_the_first_recording(backend: Backend) -> None:
    """A poll of a snapshot a push recorded first learns, from the refused put, the keys the push named (None: it
    named none), so it records the keys the push left out (docs/partitions.md#limits)."""
    backend.assets.record_event(snap(9, partitions=["dt=2026-12-02", "dt=2026-12-01"]), SourceType.PUSH, 1000)
    polled = snap(9, partitions=["dt=2026-12-01", "dt=2026-12-03"])
    assert backend.assets.record_event(polled, SourceType.POLL, 2000) == Recording(
        False, 1000, partitions=("dt=2026-12-01", "dt=2026-12-02")
    )
    backend.assets.record_event(snap(10), SourceType.PUSH, 1000)
    assert backend.assets.record_event(polled.model_copy(update={"snapshot_id": 10}), SourceType.POLL, 2000) == (
        Recording(False, 1000, partitions=None)
    )


def test_a_settled_event_tells_its_redelivery_so(backend: Backend) -> None:
    backend.assets.mark_settled(snap(8))  # never recorded (or expired): nothing to note, nothing created
    assert backend.assets.record_event(snap(8), SourceType.PUSH, 1000) == Recording(True, 1000)
    backend.assets.mark_settled(snap(8))

    assert backend.assets.record_event(snap(8), SourceType.PUSH, 3000) == Recording(False, 1000, settled=True)


def test_record_and_advance_writes_both_settled_or_neither(backend: Backend) -> None:
    assert at_once(backend, snap(5, schemaId=1), SourceType.PUSH, 1000, "writer") == Recording(True, 1000, settled=True)
    state = backend.assets.get_state(ORDERS)
    assert state is not None and (state.latest_snapshot_id, state.version) == (5, 1)
    # a copy: the refused record's answer, settled, and nothing written
    assert at_once(backend, snap(5, schemaId=1), SourceType.POLL, 2000) == Recording(False, 1000, settled=True)
    assert backend.assets.record_event(snap(5), SourceType.POLL, 3000) == Recording(False, 1000, settled=True)
    # an older snapshot the state refuses: neither written, the caller goes step by step
    assert at_once(backend, snap(4), SourceType.PUSH, 4000) is None
    assert [e.event.snapshot_id for e in backend.assets.list_events(ORDERS, 10).items] == [5]
    assert backend.assets.get_state(ORDERS) == state


def test_state_moves_forward_only_and_never_twice(backend: Backend) -> None:
    assert backend.assets.get_state(ORDERS) is None
    assert advance_state(backend.assets, snap(5, schemaId=1), 10) is AdvanceOutcome.ADVANCED
    assert advance_state(backend.assets, snap(5, schemaId=1), 20) is AdvanceOutcome.ALREADY
    assert advance_state(backend.assets, snap(4), 30) is AdvanceOutcome.STALE
    state = backend.assets.get_state(ORDERS)

    assert state is not None and (state.latest_snapshot_id, state.latest_schema_id, state.version) == (5, 1, 1)
    assert advance_state(backend.assets, snap(6), 40) is AdvanceOutcome.ADVANCED
    moved = backend.assets.get_state(ORDERS)
    assert moved is not None and (moved.latest_snapshot_id, moved.version) == (6, 2)
    assert backend.assets.get_state(PAYMENTS) is None


def test_an_event_that_keeps_no_state_answers_so(backend: Backend) -> None:
    cdc = AssetEvent.model_validate({"eventType": "CDC_LAG_RECOVERED", "assetKey": ORDERS, "watermark": 5})
    outcome = advance_state(backend.assets, cdc, 10)
    assert outcome in (AdvanceOutcome.NO_STATE, AdvanceOutcome.ADVANCED)
    assert (backend.assets.get_state(ORDERS) is None) is (outcome is AdvanceOutcome.NO_STATE)


def test_events_are_listed_newest_first_in_pages_of_their_asset(backend: Backend) -> None:
    for sid in (3, 1, 4, 0, 2):
        backend.assets.record_event(snap(sid), SourceType.PUSH, 1000 + sid)
        backend.assets.record_event(snap(sid, PAYMENTS), SourceType.PUSH, 1000 + sid)

    whole = [e.event.snapshot_id for e in backend.assets.list_events(ORDERS, 100).items]
    paged: list[int | None] = []
    token: str | None = None
    for _ in range(10):
        page = backend.assets.list_events(ORDERS, 2, token)
        assert len(page.items) <= 2
        paged += [e.event.snapshot_id for e in page.items]
        token = page.next_token
        if token is None:
            break

    assert whole == paged == [4, 3, 2, 1, 0]
    first = backend.assets.list_events(ORDERS, 2).next_token
    assert first is not None
    with pytest.raises(ValidationError):
        backend.assets.list_events(PAYMENTS, 2, first)
    with pytest.raises(ValidationError):
        backend.assets.list_events(ORDERS, 2, "not a token")


def test_the_parts_of_a_snapshots_partitions_are_recorded_once_beside_its_event(backend: Backend) -> None:
    """A commit's keys past its event's bound: each part recorded as written, in order; the same parts again (a
    redelivery, a poll after a push) leave them as they were; another snapshot's and another asset's apart."""
    from lakehook.domain.snapshots import PartitionPart, partition_parts
    from lakehook.domain.state import snapshot_record

    wide = snap(12, commitTime=1_700_000_000_000)
    chunks = (tuple(f"dt={d:05d}" for d in range(1000, 2000)), ("dt=02000", "dt=02001"))
    parts = partition_parts(wide, chunks)
    assert [(p.part, len(p.keys)) for p in parts] == [(1, 1000), (2, 2)]
    backend.assets.record_partition_parts(parts, 1_750_000_000_000)
    backend.assets.record_partition_parts(parts, 1_750_000_000_000)
    other = PartitionPart.of(PAYMENTS, snapshot_record(snap(12, PAYMENTS)), 1, ["dt=9"])
    backend.assets.record_partition_parts([other, *partition_parts(snap(13), (("dt=7",),))], 1_750_000_000_000)
    backend.assets.record_partition_parts([], 1_750_000_000_000)  # nothing to write: no request

    assert backend.assets.partition_parts(ORDERS, 12) == parts
    assert backend.assets.partition_parts(PAYMENTS, 12) == [other]
    assert [p.keys for p in backend.assets.partition_parts(ORDERS, 13)] == [("dt=7",)]
    assert backend.assets.partition_parts(ORDERS, 14) == []


# --- both driven by the same deliveries -----------------------------------------------------------------------

SNAPSHOTS = st.integers(1, 6)


def event_of(kind: str, asset: str, n: int, m: int) -> AssetEvent:
    """One event of each kind that keeps state, with small values so that they collide and go stale."""
    by_kind: dict[str, dict[str, Any]] = {
        "SNAPSHOT_COMMITTED": {"snapshotId": n, "schemaId": m % 3, "commitTime": 1_700_000_000_000 + n},
        "WATERMARK_ADVANCED": {"watermark": 1_700_000_000_000 + n * 60_000},
        "QUALITY_CHECK_PASSED": {"snapshotId": n},
        "QUALITY_CHECK_FAILED": {"snapshotId": n},
        "TAG_CREATED": {"tag": f"t{m % 2}", "snapshotId": n},
        "SCHEMA_CHANGE_APPROVED": {"schemaId": m % 3},
        "SCHEMA_CHANGE_REJECTED": {"schemaId": m % 3},
        "BACKFILL_STARTED": {"backfillId": f"b{m % 2}"},
        "BACKFILL_COMPLETED": {"backfillId": f"b{m % 2}"},
        "INTERVAL_COVERED": {"interval": {"start": n * 60_000, "end": (n + 1 + m % 3) * 60_000}},
    }
    return AssetEvent.model_validate({"eventType": kind, "assetKey": asset, **by_kind[kind]})


KINDS = st.sampled_from(
    [t.value for t in EventType if t.value not in ("MANIFEST_SEALED", "MANIFEST_INTERRUPTED", "CDC_LAG_RECOVERED")]
)
EVENTS = st.builds(event_of, KINDS, st.sampled_from([ORDERS, PAYMENTS]), SNAPSHOTS, st.integers(0, 5))


Step = tuple[str, Callable[[Backend, int], Any]]


def deliver(event: AssetEvent, source: SourceType, crash_after: int) -> Step:
    """A delivery as the ingest makes it (record, advance, settle), cut short after ``crash_after`` steps."""

    def call(backend: Backend, now: int) -> Any:
        answers: list[Any] = [backend.assets.record_event(event, source, now)]
        recording = answers[0]
        if crash_after > 1 and not recording.settled:
            answers.append(advance_state(backend.assets, event, now, recording.received_at))
            if crash_after > 2:
                backend.assets.mark_settled(event)
        return answers

    return (f"deliver {event.event_type.value} {event.asset_key} {event.event_id} crash_after={crash_after}", call)


def deliver_at_once(event: AssetEvent, source: SourceType) -> Step:
    """A delivery as the ingest makes it when nothing comes between record and advance: both at once, and step by
    step when the store declines (the state refused the advance, the event keeps no state)."""

    def call(backend: Backend, now: int) -> Any:
        change = advance_for(event, now)  # as the use case decides it
        answers: list[Any] = [
            None if change is None else backend.assets.record_and_advance(event, source, now, change=change)
        ]
        if answers[0] is None:
            recording = backend.assets.record_event(event, source, now)
            answers += [recording, advance_state(backend.assets, event, now, recording.received_at)]
            backend.assets.mark_settled(event)
        return answers

    return (f"deliver at once {event.event_type.value} {event.asset_key} {event.event_id}", call)


def list_all(asset: str, limit: int) -> Step:
    def call(backend: Backend, now: int) -> Any:
        found: list[tuple[str, int]] = []
        token: str | None = None
        for _ in range(40):
            page = backend.assets.list_events(asset, limit, token)
            found += [(e.event.event_id, e.received_at) for e in page.items]
            token = page.next_token
            if token is None:
                return found
        raise AssertionError("the listing never ended")

    return (f"list {asset} limit={limit}", call)


STEPS: st.SearchStrategy[Step] = st.one_of(
    st.builds(deliver, EVENTS, st.sampled_from(list(SourceType)), st.sampled_from([3, 3, 3, 2, 1])),
    st.builds(deliver_at_once, EVENTS, st.sampled_from(list(SourceType))),
    st.builds(list_all, st.sampled_from([ORDERS, PAYMENTS]), st.sampled_from([1, 3, 100])),
)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=30), ticks=st.lists(st.sampled_from([0, 1, 1000]), min_size=30))
def test_the_fake_answers_every_delivery_as_dynamodb_does(
    both: Callable[[], tuple[Backend, Backend]], steps: list[Step], ticks: list[int]
) -> None:
    fake, adapter = both()
    now = 1_750_000_000_000
    for n, ((what, call), tick) in enumerate(zip(steps, ticks, strict=False)):
        now += tick
        said, truth = call(fake, now), call(adapter, now)
        assert said == truth, f"step {n} ({what}): the fake answered {said!r}, DynamoDB {truth!r}"
        for asset in (ORDERS, PAYMENTS):
            assert fake.assets.get_state(asset) == adapter.assets.get_state(asset), f"step {n} ({what}): {asset}"
