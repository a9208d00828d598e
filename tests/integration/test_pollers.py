"""What every format's poller promises, once for all four (tests/pollers.py: real Iceberg, Paimon, Delta and Hudi
tables, the poller through the container on DynamoDB on moto): commits become events in commit order and the
state follows; a poll that finds nothing new is UNCHANGED; a poller killed part way resumes without a gap; two
pollers racing record each snapshot once; a push and a poll of one snapshot are one event."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from lakehook.domain.assets import AssetFormat
from lakehook.domain.events import IngestStatus, SourceType
from lakehook.domain.snapshots import SnapshotGap
from lakehook.domain.source_health import Health
from lakehook.usecases.poll import PollOutcome, PollResult
from tests import racing
from tests.pollers import FORMATS, Lake, LakeTable, make_table

pytestmark = pytest.mark.integration


@pytest.fixture(params=FORMATS, ids=[f.value for f in FORMATS])
def fmt(request: pytest.FixtureRequest) -> AssetFormat:
    return AssetFormat(request.param)


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def test_commits_become_events_in_commit_order_and_the_state_follows(
    fmt: AssetFormat, tmp_path: Path, lake: Lake
) -> None:
    orders = make_table(fmt, tmp_path)
    first = orders.commit(1, 2)
    assert lake.poll(orders.asset).snapshot_ids == (first,)
    later = [orders.commit(3), orders.commit(4, 5)]

    result = lake.poll(orders.asset)
    assert list(result.snapshot_ids) == later == orders.committed()[1:]
    assert [r.status for r in result.results] == [IngestStatus.ACCEPTED] * 2
    assert lake.snapshot_ids(orders.key) == set(orders.committed())
    assert lake.state(orders.key).latest_snapshot_id == later[-1]
    assert lake.poll(orders.asset).outcome is PollOutcome.UNCHANGED


@pytest.mark.parametrize("crash_at", [1, 2, 3, 4])
def test_a_killed_poller_resumes_without_a_gap(fmt: AssetFormat, tmp_path: Path, table: Any, crash_at: int) -> None:
    """Moved here from each format's suite (each crashed at some of these points)."""
    orders = make_table(fmt, tmp_path)
    lake = Lake(table)
    orders.commit(1)
    lake.poll(orders.asset)
    after = [orders.commit(10 + i) for i in range(4)]

    with pytest.raises(RuntimeError):
        lake.crashing_after(crash_at - 1)(orders.asset)
    assert len(lake.snapshot_ids(orders.key)) == crash_at  # the first poll's, and those recorded before the kill
    resumed = lake.poll(orders.asset)
    assert list(resumed.snapshot_ids) == after
    assert [r.status for r in resumed.results] == (
        [IngestStatus.DUPLICATE] * (crash_at - 1) + [IngestStatus.ACCEPTED] * (len(after) - crash_at + 1)
    )
    assert [e.snapshot_id for e in lake.events(orders.key)] == sorted(orders.committed())
    assert lake.state(orders.key).latest_snapshot_id == after[-1]


RACE_TABLE = "lakehook-pollers-race"


def race(lakes: tuple[Lake, Lake], table: LakeTable) -> list[PollResult]:
    barrier = threading.Barrier(len(lakes))
    outcomes: list[PollResult] = []

    def run(lake: Lake) -> None:
        barrier.wait()
        outcomes.append(lake.poll(table.asset))

    threads = [threading.Thread(target=run, args=(lake,)) for lake in lakes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_two_pollers_racing_record_each_snapshot_once(fmt: AssetFormat, tmp_path: Path) -> None:
    """Moved here from the Delta and Hudi suites; Iceberg and Paimon promise it too. The two pollers race against a
    moto server, each with a session of its own, as two poll workers would (in-process moto is not thread-safe: two
    threads in it once failed with moto's own RuntimeError, not a verdict on the pollers)."""
    orders = make_table(fmt, tmp_path)
    with racing.atomic_dynamodb_server(RACE_TABLE) as url:
        _race_pollers(orders, Lake(racing.table_at(url, RACE_TABLE)), Lake(racing.table_at(url, RACE_TABLE)))


def _race_pollers(orders: LakeTable, first: Lake, second: Lake) -> None:
    orders.commit(1)
    first.poll(orders.asset)
    for i in range(5):
        orders.commit(i)

    outcomes = race((first, second), orders)
    assert len(outcomes) == 2
    assert sum(r.accepted for r in outcomes) == 5  # each new snapshot accepted by exactly one of the two
    assert [e.snapshot_id for e in first.events(orders.key)] == sorted(orders.committed())
    assert {r.outcome for r in outcomes} <= {PollOutcome.ADVANCED, PollOutcome.RACED}


def test_a_push_and_a_poll_of_one_snapshot_are_one_event(fmt: AssetFormat, tmp_path: Path, lake: Lake) -> None:
    orders = make_table(fmt, tmp_path)
    orders.commit(1)
    lake.poll(orders.asset)
    snapshot = orders.commit(2)
    pushed = lake.ingest.ingest(orders.push_event(), SourceType.PUSH)

    polled = lake.poll(orders.asset)
    assert pushed.status is IngestStatus.ACCEPTED
    assert [(r.event_id, r.status) for r in polled.results] == [(pushed.event_id, IngestStatus.DUPLICATE)]
    assert lake.snapshot_ids(orders.key) == set(orders.committed())
    assert lake.state(orders.key).latest_snapshot_id == snapshot


def test_a_lost_push_is_recovered_by_the_next_poll_and_by_compensation(
    fmt: AssetFormat, tmp_path: Path, lake: Lake
) -> None:
    """Moved here from each format's suite. The same table is registered twice: ``polled`` as a poller covers it,
    ``compensated`` under a key no poller covers, which only compensation (the hourly scan) brings up to date."""
    orders = make_table(fmt, tmp_path)
    polled, compensated = orders.asset, orders.registration("mirror")
    orders.commit(1)
    for asset in (polled, compensated):
        lake.ingest.ingest(orders.push_event(asset.asset_key), SourceType.PUSH)
    lake.poll(polled)
    lost = {orders.commit(2), orders.commit(3), orders.commit(4)}  # the writer's pushes of these never arrive

    result = lake.poll(polled)
    assert set(result.snapshot_ids) == lost and result.accepted == len(lost)
    report = lake.compensate([compensated])
    assert (report.scan_total, report.missed_events) == (1, len(lost))
    for asset in (polled, compensated):
        assert lake.snapshot_ids(asset.asset_key) == set(orders.committed())
        assert lake.state(asset.asset_key).latest_snapshot_id == orders.committed()[-1]
    assert lake.compensate([compensated]).missed_events == 0


def test_a_broken_table_does_not_block_a_healthy_one(fmt: AssetFormat, tmp_path: Path, lake: Lake) -> None:
    """Moved here from each format's suite: a table that does not exist and one whose newest metadata is unreadable
    fail their own polls (with a backoff), and the healthy table beside them advances. What breaks only one format
    (an unreachable Iceberg catalog, a Delta table's unreadable checkpoint hint) stays in that format's suite."""
    healthy = make_table(fmt, tmp_path / "healthy")
    healthy.commit(1)
    corrupt = make_table(fmt, tmp_path / "corrupt", "ods.corrupt")
    corrupt.commit(1)
    corrupt.corrupt()
    assets = [healthy.missing(), corrupt.asset, healthy.asset]

    results = [(r.outcome, r.error_kind) for r in lake.poll_all(assets)]
    assert results == [
        (PollOutcome.FAILED, "TableNotFoundError"),
        (PollOutcome.FAILED, "CorruptMetadataError"),
        (PollOutcome.ADVANCED, None),
    ]
    for asset in assets[:2]:
        status = lake.statuses.get(asset.asset_key)
        assert status is not None and status.consecutive_failures == 1 and status.next_attempt_at is not None
    missing = lake.statuses.get(assets[0].asset_key)
    assert missing is not None and healthy.missing_named in (missing.last_error or "")
    assert lake.snapshot_ids(healthy.key) == set(healthy.committed())
    assert lake.state(healthy.key).latest_snapshot_id == healthy.committed()[-1]


def test_a_schema_change_is_detected_and_waits_for_approval(fmt: AssetFormat, tmp_path: Path, lake: Lake) -> None:
    """Moved here from the Iceberg, Paimon and Delta suites: the commit that evolved the schema is marked
    ``schemaChanged`` with the new schema id, the next one is not, and the state waits for approval."""
    orders = make_table(fmt, tmp_path)
    before = orders.commit(1)
    lake.poll(orders.asset)
    old_schema = orders.schema_id()
    evolved = orders.commit_wider(2, "x")
    after = orders.commit_wider(3, "y")
    new_schema = orders.schema_id()
    assert new_schema != old_schema

    lake.poll(orders.asset)
    seen = {e.snapshot_id: (e.schema_id, e.schema_changed) for e in lake.events(orders.key)}
    assert seen == {before: (old_schema, False), evolved: (new_schema, True), after: (new_schema, False)}
    state = lake.state(orders.key)
    assert state.latest_schema_id == new_schema and state.schema_status.value == "PENDING_APPROVAL"


def test_a_compaction_is_recorded_as_such_and_changes_neither_data_nor_schema(
    fmt: AssetFormat, tmp_path: Path, lake: Lake
) -> None:
    """Moved here from the Delta suite (OPTIMIZE) and the Hudi one (a MOR table's compaction and clustering); Iceberg
    (a rewrite, ``replace``) and Paimon (a COMPACT snapshot) promise it too."""
    orders = make_table(fmt, tmp_path)
    orders.commit(1)
    orders.commit(2)
    lake.poll(orders.asset)
    schema = orders.schema_id() if fmt is not AssetFormat.HUDI else None
    compacted = orders.compact()

    assert lake.poll(orders.asset).snapshot_ids[-1] == compacted
    compaction = {e.snapshot_id: e for e in lake.events(orders.key)}[compacted]
    assert compaction.commit_kind in orders.compaction_kinds
    assert (compaction.delta_record_count, compaction.schema_changed) == (orders.compaction_delta, False)
    if schema is not None:
        assert compaction.schema_id == schema
    state = lake.state(orders.key)
    assert (state.latest_snapshot_id, state.latest_commit_kind) == (compacted, compaction.commit_kind)


def test_a_table_with_no_commit_has_an_empty_pointer_and_no_events(
    fmt: AssetFormat, tmp_path: Path, lake: Lake
) -> None:
    """Moved here from the Paimon and Hudi suites (and the Iceberg one's first look): an empty first look is a
    pointer of its own, and every commit after it is new."""
    if fmt is AssetFormat.DELTA:
        pytest.skip("delta: a Delta table exists from its first commit (version 0); there is no table without one")
    orders = make_table(fmt, tmp_path)
    result = lake.poll(orders.asset)
    assert (result.outcome, result.pointer, result.results) == (PollOutcome.ADVANCED, orders.empty_pointer(), ())
    assert lake.poll(orders.asset).outcome is PollOutcome.UNCHANGED
    orders.commit(1)
    orders.commit(2)
    assert list(lake.poll(orders.asset).snapshot_ids) == orders.committed()


def test_expired_history_resumes_at_the_oldest_retained_commit_and_records_the_gap(
    fmt: AssetFormat, tmp_path: Path, lake: Lake
) -> None:
    """Moved here from each format's suite: the cursor's commit and those after it expired (Iceberg's
    expire_snapshots, Paimon's expiration, Delta's log cleanup, Hudi's archiver); the poll resumes at the oldest
    retained commit, records the gap (how many it skipped, where the format can tell) and health says GAP until
    reading goes on."""
    orders = make_table(fmt, tmp_path)
    first = orders.commit(1)
    lake.poll_all([orders.asset])
    for i in range(4):
        orders.commit(10 + i)
    gone = orders.expire(keep=2)
    retained = orders.committed()
    assert first in gone and not set(gone) & set(retained)

    (result,) = lake.poll_all([orders.asset])
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == tuple(retained)
    missed = len(gone) - 1 if orders.counts_missed else None  # every expired commit after the cursor's
    assert result.gap == SnapshotGap(afterSnapshotId=first, resumedAtSnapshotId=retained[0], missed=missed)
    status = lake.statuses.get(orders.key)
    assert status is not None and status.last_gap == result.gap and status.consecutive_failures == 0
    assert lake.health(orders.key) is Health.GAP
    assert lake.snapshot_ids(orders.key) == {first, *retained}
    assert lake.state(orders.key).latest_snapshot_id == retained[-1]
    if orders.expiry_kind is not None:
        assert {e.snapshot_id: e for e in lake.events(orders.key)}[retained[-1]].commit_kind == orders.expiry_kind
    later = orders.commit(99)
    assert lake.poll_all([orders.asset])[0].snapshot_ids == (later,)  # and it carries on from there
    assert lake.health(orders.key) is Health.HEALTHY


def test_an_unpartitioned_table_records_no_partitions(fmt: AssetFormat, tmp_path: Path, lake: Lake) -> None:
    """Moved here from the Iceberg, Paimon and Delta partition suites; Hudi's unpartitioned sample too."""
    orders = make_table(fmt, tmp_path, unpartitioned=True)
    orders.commit(1)
    lake.poll(orders.asset)
    orders.commit(2)
    lake.poll(orders.asset)
    assert [e.partitions for e in lake.events(orders.key)] == [None, None]
    state = lake.state(orders.key)
    assert state.latest_partitions is None and state.latest_snapshot_id == orders.committed()[-1]
