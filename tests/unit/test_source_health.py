"""Source health from what the poller records: a wedged poller (each kind of failure), versions expired faster than
the poll period, a batch behind the table's head; and repair, after which every version that still exists flows in
order. On the in-memory stores and the fake table of test_poll (no network)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.snapshots import BackoffPolicy, PollStatus, SnapshotGap
from lakehook.domain.source_health import BlockedBy, Health, blocked_by, cannot_decide, source_health
from lakehook.ports.lakehouse import CorruptMetadataError, SourceAccessError, TableNotFoundError
from lakehook.usecases.poll import PollOutcome
from tests.unit.test_poll import KEY, ORDERS, CountingStatuses, World

PERIOD = 60_000  # the poll period of these tests

WEDGES = [
    (SourceAccessError("s3://lake/orders: metadata could not be read (AccessDenied)"), BlockedBy.CREDENTIALS),
    (SourceAccessError("property 'secret': secretsmanager:lake#key does not exist"), BlockedBy.CREDENTIALS),
    (SourceAccessError("s3://lake/orders: storage could not be reached: timed out"), BlockedBy.UNREADABLE),
    (CorruptMetadataError("v3.metadata.json is not JSON"), BlockedBy.UNREADABLE),
    (TableNotFoundError("no table ods.orders"), BlockedBy.UNREADABLE),
    (RuntimeError("the poller's own bug"), BlockedBy.POLLER_FAILING),
]


def health(world: World) -> tuple[Health, int | None, str]:
    found = source_health(world.statuses.get(KEY))
    assert found is not None
    return found.state, found.since, found.describe()


@pytest.mark.parametrize(("error", "cause"), WEDGES, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v)
def test_a_wedged_poller_blocks_its_source_within_one_poll_and_repair_lets_every_version_in(
    error: Exception, cause: BlockedBy
) -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    assert health(world)[0] is Health.HEALTHY
    table.failure = error
    wedged_at = world.now = world.now + PERIOD
    table.commit(3)  # committed while the poller cannot read the table
    (result,) = pollers([ORDERS])
    assert result.outcome is PollOutcome.FAILED
    state, since, said = health(world)
    assert (state, since) == (Health.BLOCKED, wedged_at)  # one poll period after the wedge
    assert said.startswith(f"{KEY} is BLOCKED since ") and str(error) in said
    found = source_health(world.statuses.get(KEY))
    assert found is not None and found.blocked_by is cause and not found.trusted
    world.now = world.offset(KEY).retry_at or 0  # still wedged at the retry: blocked since the first failure
    pollers([ORDERS])
    assert health(world)[:2] == (Health.BLOCKED, wedged_at)
    table.failure = None  # repaired
    world.now = world.offset(KEY).retry_at or 0
    pollers([ORDERS])
    assert health(world)[0] is Health.HEALTHY
    assert world.snapshot_events(KEY) == [1, 2, 3, 4]


def test_a_table_expiring_versions_faster_than_the_poll_period_is_a_gap_until_a_read_finds_none() -> None:
    world = World()
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    first_gap = world.now = world.now + PERIOD
    table.commit(3)  # 2, 3, 4
    table.expire_through(3)  # expired before the poll
    pollers([ORDERS])
    state, since, said = health(world)
    assert (state, since) == (Health.GAP, first_gap) and "2 version(s) after snapshot 1 expired" in said
    world.now += PERIOD
    table.commit(2)  # 5, 6
    table.expire_through(5)  # again: the gap goes on, since the first one
    pollers([ORDERS])
    assert health(world)[:2] == (Health.GAP, first_gap)
    world.now += PERIOD
    table.commit(1)  # 7, read in order: the gap is over
    pollers([ORDERS])
    assert health(world)[0] is Health.HEALTHY
    status = world.statuses.get(KEY)
    assert status is not None and status.last_gap == SnapshotGap(afterSnapshotId=4, resumedAtSnapshotId=6, missed=1)
    assert world.snapshot_events(KEY) == [1, 4, 6, 7]


def test_a_poll_stopping_short_of_the_head_is_lagging_until_it_catches_up() -> None:
    world = World(batch_limit=2)
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    table.commit(5)  # 2..6, two per poll
    behind_at = world.now = world.now + PERIOD
    pollers([ORDERS])
    state, since, said = health(world)
    assert (state, since) == (Health.LAGGING, behind_at) and "snapshot 3" in said and "snapshot 6" in said
    found = source_health(world.statuses.get(KEY))
    assert found is not None and found.trusted
    world.now += PERIOD
    pollers([ORDERS])
    assert health(world)[:2] == (Health.LAGGING, behind_at)
    world.now += PERIOD
    pollers([ORDERS])
    assert health(world)[0] is Health.HEALTHY and world.snapshot_events(KEY) == [1, 2, 3, 4, 5, 6]


def test_health_costs_no_request_on_an_unchanged_healthy_poll() -> None:
    world = World()
    statuses = world.statuses = CountingStatuses()
    world.source.table("ods.orders").commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    for _ in range(3):
        world.now += PERIOD
        pollers([ORDERS])
    assert (statuses.reads, statuses.writes) == (1, 1)


def test_a_status_written_before_health_was_recorded_reads_as_healthy_or_blocked() -> None:
    """0.1.0's poll status items carry none of the new fields: they read, and say what they can."""
    old = PollStatus.model_validate({"assetKey": KEY, "lastPolledAt": 5, "consecutiveFailures": 0})
    assert (h := source_health(old)) is not None and h.state is Health.HEALTHY
    failing = PollStatus.model_validate(
        {"assetKey": KEY, "consecutiveFailures": 2, "lastErrorKind": "TableNotFoundError", "lastError": "gone"}
        | {"lastErrorAt": 7}
    )
    found = source_health(failing)
    assert found is not None and (found.state, found.since, found.blocked_by) == (
        Health.BLOCKED,
        7,
        BlockedBy.UNREADABLE,
    )
    assert cannot_decide(found).startswith(f"cannot decide: {KEY} is BLOCKED since 1970-01-01T00:00:00.007Z because")
    again = failing.failed(100, "TableNotFoundError", "gone", BackoffPolicy())  # the run of failures goes on
    assert (h := source_health(again)) is not None and h.since == 7
    assert source_health(None) is None


@pytest.mark.parametrize(
    ("kind", "message", "cause"),
    [
        ("SourceAccessError", "iceberg catalog 'glue': AccessDeniedException", BlockedBy.CREDENTIALS),
        ("SourceAccessError", "HTTP 403", BlockedBy.CREDENTIALS),
        ("SourceAccessError", "ExpiredToken", BlockedBy.CREDENTIALS),
        ("SourceAccessError", "x.parquet could not be read: No such file", BlockedBy.UNREADABLE),
        ("CorruptMetadataError", "bad", BlockedBy.UNREADABLE),
        ("ValueError", "bad", BlockedBy.POLLER_FAILING),
        (None, None, BlockedBy.POLLER_FAILING),
    ],
)
def test_what_blocks_a_source_is_told_by_its_error(kind: str | None, message: str | None, cause: BlockedBy) -> None:
    assert blocked_by(kind, message) is cause


@dataclass(frozen=True)
class Step:
    commits: int  # committed before the poll
    expire: bool  # every version before the newest expires before the poll
    wedged: bool  # the poll fails


steps = st.lists(st.builds(Step, st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=12)


@given(steps)
def test_health_follows_the_last_poll_and_repair_brings_every_version_that_still_exists_in_order(
    run: list[Step],
) -> None:
    world = World(batch_limit=2)
    table = world.source.table("ods.orders")
    table.commit(1)
    pollers = world.pollers()
    pollers([ORDERS])
    since: dict[Health, int] = {}  # the troubles the model expects on, and since when
    for step in run:
        world.now = max(world.now + PERIOD, world.offset(KEY).retry_at or 0)
        table.commit(step.commits)
        if step.expire:
            table.expire_through(table.latest - 1)
        table.failure = RuntimeError("wedged") if step.wedged else None
        (result,) = pollers([ORDERS])
        failed = result.outcome is PollOutcome.FAILED
        on = {Health.BLOCKED: failed}
        if result.snapshot_ids or result.gap is not None:  # a read of new versions: a gap is open or over
            on[Health.GAP] = result.gap is not None
        if result.read is not None:  # a read of the table: behind its head or not
            on[Health.LAGGING] = not result.complete
        for trouble, now_on in on.items():
            if not now_on:
                since.pop(trouble, None)
            else:
                since.setdefault(trouble, world.now)
        worst = next((h for h in (Health.BLOCKED, Health.GAP, Health.LAGGING) if h in since), Health.HEALTHY)
        assert health(world)[:2] == (worst, since.get(worst))
    table.failure = None  # repair: poll until caught up
    for _ in range(20):
        world.now = max(world.now + PERIOD, world.offset(KEY).retry_at or 0)
        if pollers([ORDERS])[0].outcome is PollOutcome.UNCHANGED:
            break
    recorded = world.snapshot_events(KEY)
    assert recorded == sorted(recorded) and set(table.snapshots) <= set(recorded)
    assert health(world)[0] in (Health.HEALTHY, Health.GAP)
