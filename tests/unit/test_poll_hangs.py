"""A poller that hangs without raising (lakehook.usecases.poll_hangs): the table's source is BLOCKED (POLLER_FAILING)
while its poll has run past the hang bound, and the next poll of the table to finish clears it, whether the hung one
returns at last or its process was killed. On the in-memory fakes of our own ports and a fake snapshot source whose
read blocks until released; each wait is on an event the code under test sets, never a fixed sleep."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from lakehook.answers.assets import PollStatusAnswer
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.source_health import BlockedBy, Health, source_health
from lakehook.usecases.poll import PollOutcome, PollResult
from lakehook.usecases.poll_hangs import HangWatch
from tests.fakes.memory import InMemoryPollStatusStore
from tests.unit.test_poll import KEY, ORDERS, FakeSnapshotSource, World

WAIT = 10  # seconds: how long a test waits for what the code under test signals before it fails


class HangingSource(FakeSnapshotSource):
    """The fake source, whose pointer read blocks (a catalog that accepts the connection and never answers) while
    ``hang`` is set, until ``release`` is."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def pointer(self, source: Any) -> str:
        if self.hang:
            self.entered.set()
            assert self.release.wait(WAIT), "the test never released the hung read"
        return super().pointer(source)


class SignallingStatuses(InMemoryPollStatusStore):
    """The in-memory poll status store; ``marked`` is set when a status saying the poll hangs is written."""

    def __init__(self) -> None:
        super().__init__()
        self.marked = threading.Event()

    def put(self, status: PollStatus) -> None:
        super().put(status)
        if status.hung_since is not None:
            self.marked.set()


def hanging_world() -> tuple[World, HangingSource, SignallingStatuses]:
    world = World()
    source = world.source = HangingSource()
    statuses = world.statuses = SignallingStatuses()
    source.table("ods.orders").commit(2)
    return world, source, statuses


def health(statuses: InMemoryPollStatusStore) -> Any:
    found = source_health(statuses.get(KEY))
    assert found is not None
    return found


def test_a_poll_that_hangs_blocks_its_source_until_it_finishes() -> None:
    world, source, statuses = hanging_world()
    pollers = world.pollers(hang_after_ms=50)
    assert [r.outcome for r in pollers([ORDERS])] == [PollOutcome.ADVANCED]
    assert health(statuses).state is Health.HEALTHY

    source.hang = True
    with ThreadPoolExecutor(1) as pool:
        hung: Future[list[PollResult]] = pool.submit(pollers, [ORDERS])
        assert statuses.marked.wait(WAIT), "the hung poll was never marked"
        blocked = health(statuses)
        assert (blocked.state, blocked.blocked_by) == (Health.BLOCKED, BlockedBy.POLLER_FAILING)
        assert blocked.since == world.now and "did not finish within the poller's hang bound" in (blocked.reason or "")
        assert not hung.done()  # still hanging: nothing was raised, and the source says so already

        source.hang = False
        source.release.set()
        assert [r.outcome for r in hung.result(WAIT)] == [PollOutcome.UNCHANGED]
    assert health(statuses).state is Health.HEALTHY  # the hung poll finished at last: the mark is cleared


def test_the_next_poll_to_finish_clears_the_mark_of_a_poll_whose_process_was_killed() -> None:
    world, source, statuses = hanging_world()
    world.pollers()([ORDERS])
    killed = World()  # the killed process: its own PollAssets, on the same stores; it never returns in this test
    killed.source, killed.statuses, killed.watermarks, killed.store = source, statuses, world.watermarks, world.store
    source.hang = True
    with ThreadPoolExecutor(1) as pool:
        pool.submit(killed.pollers(hang_after_ms=50), [ORDERS])
        assert statuses.marked.wait(WAIT)
        assert health(statuses).state is Health.BLOCKED
        source.hang = False
        world.now += 60_000
        # the next poll, in another process, finds the table unchanged: the mark's hold makes it write the recovery
        (result,) = world.pollers()([ORDERS])
        assert (result.outcome, result.recovered) == (PollOutcome.UNCHANGED, True)
        assert health(statuses).state is Health.HEALTHY
        source.release.set()  # lets the "killed" thread end with the test


def test_a_poll_that_finishes_within_the_bound_writes_nothing_more() -> None:
    world, _, statuses = hanging_world()
    pollers = world.pollers(hang_after_ms=60_000)
    pollers([ORDERS])
    before = statuses.get(KEY)
    world.now += 60_000
    assert [r.outcome for r in pollers([ORDERS])] == [PollOutcome.UNCHANGED]
    assert statuses.get(KEY) == before and not statuses.marked.is_set()


def test_a_watch_never_marks_after_its_block_ended() -> None:
    marks: list[int] = []
    with HangWatch(None, lambda: marks.append(1)) as off:
        pass
    with HangWatch(5_000, lambda: marks.append(2)) as quick:
        pass
    assert (marks, off.fired, quick.fired) == ([], False, False)
    done = threading.Event()
    with HangWatch(1, lambda: (marks.append(3), done.set())) as slow:
        assert done.wait(WAIT)
    assert (marks, slow.fired) == ([3], True)


def test_a_hung_status_reads_as_blocked_before_any_other_state() -> None:
    status = PollStatus(asset_key=KEY, consecutive_failures=2, last_error="x", last_error_kind="SourceAccessError")
    hung = status.hanging(5).hanging(9)
    assert hung.hung_since == 5  # the first start of a run of hangs is kept
    found = source_health(hung)
    assert found is not None and (found.state, found.blocked_by, found.since) == (
        Health.BLOCKED,
        BlockedBy.POLLER_FAILING,
        5,
    )
    assert hung.succeeded(10, None, None).hung_since is None
    assert "hungSince" in PollStatusAnswer.from_domain(hung).dump()
