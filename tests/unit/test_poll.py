"""PollAsset, PollAssets and Compensate on the in-memory stores and a fake SnapshotSource (no network)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.events import AssetEvent, EventType, IngestStatus, SourceType
from lakehook.domain.snapshots import (
    OFFSET_KEY,
    POLLER_NAMESPACE,
    BackoffPolicy,
    PollOffset,
    PollStatus,
    SnapshotCursor,
    SnapshotGap,
    SnapshotInfo,
    TagInfo,
    mark_schema_changes,
)
from lakehook.domain.state_changes import Advance
from lakehook.local.runtime import compensation_grace
from lakehook.observability import MetricName as EventMetric
from lakehook.ports import Recording
from lakehook.ports.lakehouse import SnapshotBatch, SnapshotSource, SourceAccessError, TableNotFoundError
from lakehook.settings import Settings
from lakehook.usecases.poll import (
    Compensate,
    CompensateAsset,
    MetricName,
    PollAsset,
    PollAssets,
    PollOutcome,
)
from tests.fakes.memory import InMemoryAssetStore, InMemoryPollStatusStore, InMemoryWatermarkStore
from tests.wiring import ingest_events


class FakeTable:
    """A table with consecutive snapshot ids (as Paimon numbers them), expiry and tags."""

    def __init__(self) -> None:
        self.snapshots: dict[int, SnapshotInfo] = {}
        self.latest = 0
        self.tags: dict[str, int] = {}
        self.failure: Exception | None = None

    def commit(self, count: int = 1, schema: int = 0) -> list[int]:
        ids = []
        for _ in range(count):
            self.latest += 1
            self.snapshots[self.latest] = SnapshotInfo(
                snapshotId=self.latest,
                parentSnapshotId=self.latest - 1 or None,
                commitTime=1_000 + self.latest,
                schemaId=schema,
                commitKind="APPEND",
            )
            ids.append(self.latest)
        return ids

    def expire_through(self, snapshot_id: int) -> None:
        for sid in range(1, snapshot_id + 1):
            self.snapshots.pop(sid, None)


class FakeSnapshotSource(SnapshotSource):
    """Tables by ``source.table``; counts reads; can hold every reader at a barrier to force a race."""

    def __init__(self) -> None:
        self.tables: dict[str, FakeTable] = {}
        self.pointer_reads = 0
        self.batch_reads = 0
        self.barrier: threading.Barrier | None = None

    def table(self, name: str) -> FakeTable:
        return self.tables.setdefault(name, FakeTable())

    def pointer(self, source: Any) -> str:
        self.pointer_reads += 1
        table = self.tables.get(source.table)
        if table is None:
            raise TableNotFoundError(f"no table {source.table}")
        if table.failure is not None:
            raise table.failure
        return f"{table.latest}/{len(table.tags)}"

    def snapshots_since(
        self,
        source: Any,
        cursor: SnapshotCursor | None,
        pointer: str,
        *,
        limit: int,
        known_tags: frozenset[str] = frozenset(),
    ) -> SnapshotBatch:
        self.batch_reads += 1
        if self.barrier is not None:
            self.barrier.wait(timeout=5)
        table = self.tables[source.table]
        retained = sorted(table.snapshots)
        gap = None
        if cursor is None:
            new = retained[-limit:]
        else:
            after = [sid for sid in retained if sid > cursor.snapshot_id]
            if after and after[0] != cursor.snapshot_id + 1:
                gap = SnapshotGap(
                    afterSnapshotId=cursor.snapshot_id,
                    resumedAtSnapshotId=after[0],
                    missed=after[0] - cursor.snapshot_id - 1,
                )
            new = after[:limit]
        remaining = [sid for sid in retained if sid > (new[-1] if new else table.latest)]
        previous = cursor.schema_id if cursor else None
        tags = [TagInfo(name=n, snapshotId=s) for n, s in sorted(table.tags.items())]
        return SnapshotBatch(
            pointer=pointer,
            snapshots=mark_schema_changes([table.snapshots[s] for s in new], previous),
            tags=[t for t in tags if t.name not in known_tags],
            tag_names=frozenset(table.tags),
            latest_snapshot_id=table.latest or None,
            gap=gap,
            complete=not remaining,
        )


class RecordingMetrics:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def add_metric(self, name: str, unit: str, value: float) -> None:
        self.values[name] = self.values.get(name, 0) + value


class CrashingAssetStore(InMemoryAssetStore):
    """The real in-memory store, but the process 'dies' when the k-th new event is being recorded."""

    def __init__(self, crash_at: int) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.recorded = 0

    def record_event(
        self, event: AssetEvent, source: SourceType, received_at: int, producer_id: str | None = None
    ) -> Recording:
        if self.recorded + 1 == self.crash_at:
            raise RuntimeError("poller killed")
        self.recorded += 1
        return super().record_event(event, source, received_at, producer_id)

    def record_and_advance(
        self,
        event: AssetEvent,
        source: SourceType,
        received_at: int,
        producer_id: str | None = None,
        *,
        change: Advance,
    ) -> Recording | None:
        """Dies as ``record_event`` does (the record and the advance at once are both or neither)."""
        if self.recorded + 1 == self.crash_at:
            raise RuntimeError("poller killed")
        recording = super().record_and_advance(event, source, received_at, producer_id, change=change)
        self.recorded += recording is not None  # None: record_event comes next, and counts it
        return recording


def asset(name: str = "ods.orders") -> AssetRegistration:
    return AssetRegistration.model_validate(
        {
            "assetKey": f"paimon://lake/{name.replace('.', '/')}",
            "format": "paimon",
            "source": {"catalog": "lake", "properties": {"warehouse": "/tmp/wh"}, "table": name},
        }
    )


class World:
    """The poller's collaborators, all in memory."""

    def __init__(self, store: InMemoryAssetStore | None = None, **poll_options: Any) -> None:
        self.source = FakeSnapshotSource()
        self.store = store or InMemoryAssetStore()
        self.watermarks = InMemoryWatermarkStore()
        self.statuses = InMemoryPollStatusStore()
        self.now = 1_000_000
        self.metrics = RecordingMetrics()
        self.poll_options = poll_options

    def sources(self, fmt: AssetFormat) -> SnapshotSource:
        return self.source

    def poller(self, store: InMemoryAssetStore | None = None) -> PollAsset:
        return PollAsset(
            self.sources,
            self.watermarks,
            ingest_events(store or self.store),
            clock=lambda: self.now,
            **self.poll_options,
        )

    def pollers(self, **options: Any) -> PollAssets:
        return PollAssets(self.poller(), self.statuses, clock=lambda: self.now, metrics=self.metrics, **options)

    def offset(self, key: str) -> PollOffset:
        record = self.watermarks.get(POLLER_NAMESPACE, key, OFFSET_KEY)
        return PollOffset.from_value(record.value if record else None)

    def snapshot_events(self, key: str) -> list[int]:
        events = [
            r.event
            for r in self.store.events.values()
            if r.event.asset_key == key and r.event.event_type is EventType.SNAPSHOT_COMMITTED
        ]
        return sorted(e.snapshot_id for e in events if e.snapshot_id is not None)


ORDERS = asset()
KEY = ORDERS.asset_key


def test_an_unchanged_table_costs_one_pointer_read_and_nothing_else() -> None:
    world = World()
    world.source.table("ods.orders").commit(3)
    poll = world.poller()
    assert poll(ORDERS).outcome is PollOutcome.ADVANCED
    reads = world.source.batch_reads
    result = poll(ORDERS)
    assert result.outcome is PollOutcome.UNCHANGED and result.results == ()
    assert world.source.batch_reads == reads  # no snapshot read when the pointer did not move


def test_first_poll_takes_the_newest_snapshot_then_every_new_one_in_commit_order() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(5)
    poll = world.poller()
    first = poll(ORDERS)
    assert first.snapshot_ids == (5,)  # history before registration is not replayed
    table.commit(3)
    second = poll(ORDERS)
    assert second.snapshot_ids == (6, 7, 8)
    assert [r.status for r in second.results] == [IngestStatus.ACCEPTED] * 3
    state = world.store.get_state(KEY)
    assert state is not None and state.latest_snapshot_id == 8
    offset = world.offset(KEY)
    assert offset.cursor is not None and offset.cursor.snapshot_id == 8 and offset.pointer == "8/0"


def test_a_table_first_polled_while_empty_gets_all_its_first_snapshots() -> None:
    world = World()
    table = world.source.table("ods.orders")
    poll = world.poller()
    assert poll(ORDERS).results == ()
    table.commit(3)
    assert poll(ORDERS).snapshot_ids == (1, 2, 3)


def test_a_push_and_a_poll_of_the_same_snapshot_are_one_event() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    poll = world.poller()
    poll(ORDERS)
    (sid,) = table.commit(1)
    pushed = ingest_events(world.store).ingest(
        AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=KEY, snapshotId=sid), SourceType.PUSH
    )
    polled = poll(ORDERS)
    assert pushed.status is IngestStatus.ACCEPTED
    assert [r.status for r in polled.results] == [IngestStatus.DUPLICATE]
    assert polled.results[0].event_id == pushed.event_id
    assert world.snapshot_events(KEY) == [1, 2]


def test_a_lost_push_is_recovered_by_the_next_poll() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    poll = world.poller()
    poll(ORDERS)
    table.commit(2)  # both pushes were lost on the way
    assert poll(ORDERS).accepted == 2
    state = world.store.get_state(KEY)
    assert state is not None and state.latest_snapshot_id == 3


def test_a_bounded_batch_continues_on_the_next_poll_even_if_the_pointer_did_not_move() -> None:
    world = World(batch_limit=3)
    table = world.source.table("ods.orders")
    table.commit(1)
    poll = world.poller()
    poll(ORDERS)
    table.commit(7)
    first = poll(ORDERS)
    assert first.snapshot_ids == (2, 3, 4) and not first.complete
    assert world.offset(KEY).pointer is None
    assert poll(ORDERS).snapshot_ids == (5, 6, 7)
    last = poll(ORDERS)
    assert last.snapshot_ids == (8,) and last.complete
    assert poll(ORDERS).outcome is PollOutcome.UNCHANGED
    assert world.snapshot_events(KEY) == list(range(1, 9))


@pytest.mark.parametrize("crash_at", [1, 3, 5])
def test_a_poller_killed_mid_batch_resumes_without_a_gap(crash_at: int) -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    world.poller()(ORDERS)
    before = world.offset(KEY)
    table.commit(5)  # snapshots 2..6
    crashing = CrashingAssetStore(crash_at)
    crashing.events, crashing.states = world.store.events, world.store.states  # the same data, a dying process
    with pytest.raises(RuntimeError, match="poller killed"):
        world.poller(crashing)(ORDERS)
    assert world.offset(KEY) == before  # the offset never moves before the events are durable
    resumed = world.poller()(ORDERS)
    assert resumed.snapshot_ids == (2, 3, 4, 5, 6)
    statuses = [r.status for r in resumed.results]
    assert statuses == [IngestStatus.DUPLICATE] * (crash_at - 1) + [IngestStatus.ACCEPTED] * (6 - crash_at)
    assert world.snapshot_events(KEY) == [1, 2, 3, 4, 5, 6]
    state = world.store.get_state(KEY)
    assert state is not None and state.latest_snapshot_id == 6


def test_two_pollers_racing_on_one_table_produce_each_event_once() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    world.poller()(ORDERS)
    table.commit(20)
    world.source.barrier = threading.Barrier(2)  # both read the same offset before either ingests
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(world.poller()(ORDERS))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(r.outcome for r in results) == [PollOutcome.ADVANCED, PollOutcome.RACED]
    # Each of the 20 new snapshots is recorded by exactly one poller and refused as a duplicate by the other.
    # The winner of an older snapshot may find the state already advanced by the other poller's newer one:
    # that recording answers STALE (recorded, state unchanged), as any late older event does.
    recorded = Counter(r.status for result in results for r in result.results)
    assert recorded[IngestStatus.ACCEPTED] + recorded[IngestStatus.STALE] == 20
    assert recorded[IngestStatus.DUPLICATE] == 20 and recorded[IngestStatus.ACCEPTED] >= 1
    assert world.snapshot_events(KEY) == list(range(1, 22))  # recorded once each
    state = world.store.get_state(KEY)
    assert state is not None and state.latest_snapshot_id == 21
    offset = world.offset(KEY)
    assert offset.cursor is not None and offset.cursor.snapshot_id == 21


def test_an_expired_offset_resumes_at_the_oldest_retained_snapshot_and_records_the_gap() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    table.commit(5)  # 2..6
    table.expire_through(4)  # 2, 3, 4 expire before anyone polled them
    (result,) = pollers([ORDERS])
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (5, 6)
    assert result.gap == SnapshotGap(afterSnapshotId=1, resumedAtSnapshotId=5, missed=3)
    status = world.statuses.get(KEY)
    assert status is not None and status.last_gap == result.gap
    assert world.metrics.values[MetricName.POLL_SNAPSHOT_GAP] == 3
    state = world.store.get_state(KEY)
    assert state is not None and state.latest_snapshot_id == 6


def test_snapshots_with_keys_that_cannot_be_recorded_are_recorded_reported_and_polling_goes_on() -> None:
    from lakehook.domain.partitions import TouchedPartitions, format_partition_key

    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    long_key = format_partition_key([("region", "r" * 600)])
    for sid in table.commit(3):  # 2 and 4 each touch one key too long to record, besides dt=2026-12-01
        keys = ["dt=2026-12-01"] + ([f"{long_key}{sid}"] if sid % 2 == 0 else [])
        table.snapshots[sid] = table.snapshots[sid].model_copy(update={"partitions": TouchedPartitions.of(keys)})
    (result,) = pollers([ORDERS])
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (2, 3, 4)
    assert [u.snapshot_id for u in result.unrecorded] == [2, 4]
    assert world.metrics.values[MetricName.POLL_PARTITION_KEYS_UNRECORDED] == 2
    status = world.statuses.get(KEY)
    assert status is not None and status.last_unrecorded_partitions is not None
    assert (
        status.last_unrecorded_partitions.snapshot_id == 4 and status.last_unrecorded_partitions.found_at == world.now
    )
    (warning,) = status.warnings
    assert (
        warning.startswith("snapshot 4: 1 partition key not recorded")
        and "(and 1 earlier snapshot of this poll)" in warning
    )
    assert "(608 characters)" in warning
    recorded = {e.snapshot_id: e for r in world.store.events.values() if (e := r.event).snapshot_id is not None}
    assert recorded[2].partitions is not None and recorded[2].partitions.keys == ("dt=2026-12-01",)
    assert recorded[2].partitions.unrecorded == 1 and recorded[3].partitions is not None
    assert recorded[3].partitions.unrecorded == 0

    table.commit(1)  # 5: nothing wrong; the newest snapshot with unrecorded keys stays named
    pollers([ORDERS])
    status = world.statuses.get(KEY)
    assert status is not None and status.warnings == () and status.last_snapshot_id == 5
    assert status.last_unrecorded_partitions is not None and status.last_unrecorded_partitions.snapshot_id == 4
    assert PollStatus.model_validate_json(status.model_dump_json(by_alias=True)) == status


def test_a_broken_table_backs_off_and_never_blocks_the_others() -> None:
    world = World()
    healthy, broken, missing = asset("ods.orders"), asset("ods.payments"), asset("ods.gone")
    world.source.table("ods.orders").commit(2)
    world.source.table("ods.payments").failure = SourceAccessError("catalog down")
    pollers = world.pollers(backoff=BackoffPolicy(base_ms=30_000, max_ms=600_000))
    results = {r.asset_key: r for r in pollers([broken, healthy, missing])}
    assert results[healthy.asset_key].outcome is PollOutcome.ADVANCED
    assert results[broken.asset_key].outcome is PollOutcome.FAILED
    assert results[broken.asset_key].error_kind == "SourceAccessError"
    assert results[missing.asset_key].error_kind == "TableNotFoundError"
    status = world.statuses.get(broken.asset_key)
    assert status is not None
    assert (status.consecutive_failures, status.next_attempt_at, status.last_error) == (
        1,
        world.now + 30_000,
        "catalog down",
    )
    assert world.metrics.values[MetricName.POLL_FAILED] == 2

    world.now += 10_000  # inside the window: the broken table is not touched
    reads = world.source.pointer_reads
    results = {r.asset_key: r for r in pollers([broken, healthy])}
    assert results[broken.asset_key].outcome is PollOutcome.BACKING_OFF
    assert world.source.pointer_reads == reads + 1  # only the healthy one

    world.now += 20_000  # the window passed: tried again, failed again, waits twice as long
    pollers([broken])
    status = world.statuses.get(broken.asset_key)
    assert status is not None and status.consecutive_failures == 2
    assert status.next_attempt_at == world.now + 60_000

    world.source.table("ods.payments").failure = None
    world.source.table("ods.payments").commit(1)
    world.now += 60_000
    (result,) = pollers([broken])
    assert result.outcome is PollOutcome.ADVANCED
    status = world.statuses.get(broken.asset_key)
    assert status is not None and status.consecutive_failures == 0 and status.next_attempt_at is None


class CountingStatuses(InMemoryPollStatusStore):
    """The in-memory poll status store, counting its reads and writes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = self.writes = 0

    def get(self, asset_key: str) -> PollStatus | None:
        self.reads += 1
        return super().get(asset_key)

    def put(self, status: PollStatus) -> None:
        self.writes += 1
        super().put(status)


def test_the_poll_status_is_read_and_written_only_when_it_changes() -> None:
    world = World()
    statuses = world.statuses = CountingStatuses()
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])  # new snapshots: the status records them
    assert (statuses.reads, statuses.writes) == (1, 1)
    for _ in range(3):  # unchanged and healthy: the status is neither read nor written
        world.now += 60_000
        assert [r.outcome for r in pollers([ORDERS])] == [PollOutcome.UNCHANGED]
    assert (statuses.reads, statuses.writes) == (1, 1)
    table.failure = SourceAccessError("catalog down")
    world.now += 60_000
    pollers([ORDERS])  # a failure: read (for the count so far) and written, and the offset holds the table back
    assert (statuses.reads, statuses.writes) == (2, 2)
    assert world.offset(KEY).retry_at == world.now + BackoffPolicy().delay_ms(1)
    table.failure = None
    world.now = world.offset(KEY).retry_at or 0
    (result,) = pollers([ORDERS])  # the recovery, though nothing new: written once, then quiet again
    assert result.outcome is PollOutcome.UNCHANGED and result.recovered
    assert (statuses.reads, statuses.writes) == (3, 3) and world.offset(KEY).retry_at is None
    world.now += 60_000
    pollers([ORDERS])
    assert (statuses.reads, statuses.writes) == (3, 3)


def test_an_unexpected_error_and_an_asset_without_source_are_isolated_too() -> None:
    world = World()
    world.source.table("ods.orders").commit(1)
    world.source.table("ods.crashy").failure = RuntimeError("bug in a driver")
    push_only = AssetRegistration.model_validate({"assetKey": "paimon://lake/ods/push_only", "format": "paimon"})
    results = world.pollers(max_workers=3)([asset("ods.crashy"), push_only, ORDERS])
    assert [r.outcome for r in results] == [PollOutcome.FAILED, PollOutcome.FAILED, PollOutcome.ADVANCED]
    assert [r.error_kind for r in results[:2]] == ["RuntimeError", "ValidationError"]


def test_new_tags_become_tag_created_once() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(2)
    poll = world.poller()
    poll(ORDERS)
    table.tags["2025-06-01"] = 2
    result = poll(ORDERS)
    assert [(r.status, r.event_id) for r in result.results] == [
        (IngestStatus.ACCEPTED, AssetEvent(eventType=EventType.TAG_CREATED, assetKey=KEY, tag="2025-06-01").event_id)
    ]
    table.commit(1)
    assert [r.status for r in poll(ORDERS).results] == [IngestStatus.ACCEPTED]  # the snapshot only
    state = world.store.get_state(KEY)
    assert state is not None and state.tags == {"2025-06-01"} and state.latest_tag_snapshot_id == 2


def test_schema_change_is_flagged_on_the_event() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1, schema=0)
    poll = world.poller()
    poll(ORDERS)
    table.commit(1, schema=0)
    table.commit(1, schema=1)
    poll(ORDERS)
    flags = {r.event.snapshot_id: r.event.schema_changed for r in world.store.events.values()}
    assert flags[2] is False and flags[3] is True


def test_compensation_backfills_what_the_state_missed_and_counts_it() -> None:
    world = World()
    table = world.source.table("ods.orders")
    other = asset("ods.payments")
    world.source.table("ods.payments").commit(1)
    table.commit(1)
    ingest = ingest_events(world.store)
    ingest.ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=KEY, snapshotId=1), SourceType.PUSH)
    table.commit(3)  # 2..4: pushes lost and the poller was down
    table.tags["eod"] = 4
    world.source.table("ods.broken").failure = SourceAccessError("denied")
    compensate = Compensate(CompensateAsset(world.sources, world.store, ingest), metrics=world.metrics)
    report = compensate([ORDERS, asset("ods.broken"), other])
    by_key = {r.asset_key: r for r in report.results}
    assert by_key[KEY].missed_events == 4  # three snapshots and a tag
    assert (by_key[KEY].state_snapshot_id, by_key[KEY].latest_snapshot_id) == (1, 4)
    assert by_key[other.asset_key].missed_events == 1  # no state at all: the newest snapshot
    assert not by_key[asset("ods.broken").asset_key].scanned
    assert (report.scan_total, report.missed_events) == (2, 5)
    assert world.metrics.values == {
        MetricName.COMPENSATION_SCAN: 2,
        MetricName.COMPENSATION_MISSED: 5,
        # the events it ingested, counted where they came in (as a push's are at the push)
        EventMetric.EVENT_RECEIVED: 5,
        EventMetric.STATE_UPDATED: 5,
    }
    assert world.snapshot_events(KEY) == [1, 2, 3, 4]
    sources = {r.source for r in world.store.events.values() if r.event.asset_key == KEY}
    assert sources == {SourceType.PUSH, SourceType.COMPENSATION}

    again = compensate([ORDERS])
    assert again.missed_events == 0 and again.scan_total == 1


def test_a_fill_counts_the_events_it_ingested_as_a_scan_does() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(3)
    ingest = ingest_events(world.store)
    ingest.ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=KEY, snapshotId=3), SourceType.PUSH)
    compensate = Compensate(CompensateAsset(world.sources, world.store, ingest), metrics=world.metrics)
    result = compensate.fill(ORDERS, {"snapshotId": 1, "order": 1})  # the gap after 1: 2, and 3 recorded before
    assert [r.status for r in result.results] == [IngestStatus.STALE, IngestStatus.DUPLICATE]
    assert world.metrics.values == {
        EventMetric.EVENT_RECEIVED: 2,
        EventMetric.EVENT_STALE: 1,
        EventMetric.EVENT_DEDUPLICATED: 1,
    }


# --- what compensation labels: only what push and poll both missed ----------------------------------------

POLL_MS = 60_000  # the template's poll schedule: every minute


def commit_at(table: FakeTable, ms: int) -> int:
    """One snapshot committed at ``ms`` (epoch milliseconds)."""
    (sid,) = table.commit(1)
    table.snapshots[sid] = table.snapshots[sid].model_copy(update={"commit_time": ms})
    return sid


def compensator(world: World, grace_ms: int = POLL_MS) -> Compensate:
    one = CompensateAsset(
        world.sources, world.store, ingest_events(world.store), grace_ms=grace_ms, clock=lambda: world.now
    )
    return Compensate(one)


def sources_of(world: World, key: str = KEY) -> dict[int, SourceType]:
    return {
        r.event.snapshot_id: r.source
        for r in world.store.events.values()
        if r.event.asset_key == key and r.event.event_type is EventType.SNAPSHOT_COMMITTED and r.event.snapshot_id
    }


def push(world: World, snapshot_id: int) -> None:
    event = AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=KEY, snapshotId=snapshot_id)
    ingest_events(world.store).ingest(event, SourceType.PUSH)


def test_compensation_leaves_a_snapshot_younger_than_its_grace_to_the_poll_and_the_push() -> None:
    world = World()
    table, poll, compensate = world.source.table("ods.orders"), world.poller(), compensator(world)
    commit_at(table, world.now)
    poll(ORDERS)  # the poller's first turn: snapshot 1
    polled, pushed = commit_at(table, world.now), commit_at(table, world.now)
    assert compensate([ORDERS]).missed_events == 0  # the compensation schedule ticked first: not a miss
    assert set(sources_of(world)) == {1}
    push(world, pushed)
    world.now += POLL_MS
    poll(ORDERS)
    assert compensate([ORDERS]).missed_events == 0
    assert sources_of(world) == {1: SourceType.POLL, polled: SourceType.POLL, pushed: SourceType.PUSH}


def test_a_snapshot_only_compensation_finds_is_labelled_compensation_once_the_poll_had_its_turn() -> None:
    world = World()
    table, compensate = world.source.table("ods.orders"), compensator(world)
    push(world, commit_at(table, world.now))
    lost = commit_at(table, world.now)  # its push was lost and the poller is down
    tagged = commit_at(table, world.now + 1)
    table.tags["eod"] = tagged
    world.now += POLL_MS - 1
    assert compensate([ORDERS]).missed_events == 0  # the poll could still have had its turn
    world.now += 1
    report = compensate([ORDERS])
    assert report.missed_events == 1  # snapshot 2; snapshot 3 and the tag on it are 1 ms younger
    world.now += 1
    assert compensate([ORDERS]).missed_events == 2  # snapshot 3 and its tag
    assert sources_of(world) == {1: SourceType.PUSH, lost: SourceType.COMPENSATION, tagged: SourceType.COMPENSATION}


@given(
    minutes=st.lists(
        st.lists(
            st.tuples(st.integers(0, POLL_MS - 1), st.sampled_from(["commit", "commit and push", "compensate"])),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_on_a_healthy_stack_no_snapshot_is_ever_labelled_compensation(minutes: list[list[tuple[int, str]]]) -> None:
    """The poll ticks every minute; commits, pushes and compensation ticks fall anywhere in between: every
    snapshot is recorded by its push or its poll, and compensation never counts a miss."""
    world = World()
    start, table, poll, compensate = world.now, world.source.table("ods.orders"), world.poller(), compensator(world)
    commit_at(table, world.now)
    poll(ORDERS)
    missed = 0
    for minute, happenings in enumerate(minutes):
        for offset, what in sorted(happenings):
            world.now = start + minute * POLL_MS + offset
            if what == "compensate":
                missed += compensate([ORDERS]).missed_events
                continue
            sid = commit_at(table, world.now)
            if what == "commit and push":
                push(world, sid)
        world.now = start + (minute + 1) * POLL_MS
        poll(ORDERS)
    assert missed == 0
    assert set(sources_of(world).values()) <= {SourceType.POLL, SourceType.PUSH}
    assert sorted(sources_of(world)) == list(range(1, table.latest + 1))


def test_the_local_stack_scales_the_compensation_grace_with_its_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--poll-every`` fires compensation as often as the poll: its grace follows the poll's rate, not the
    deployed default (five turns of a one-minute poll)."""
    assert Settings().compensation_grace_seconds == 5 * POLL_MS / 1000
    assert compensation_grace(None) == {}
    for name, value in compensation_grace(1.0).items():
        monkeypatch.setenv(name, value)
    assert Settings().compensation_grace_seconds == 30.0
