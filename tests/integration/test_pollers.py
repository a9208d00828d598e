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
