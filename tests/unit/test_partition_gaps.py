"""EACH_VERSION per partition at a gap of its table's commits (docs/partitions.md, "A gap before a partition's next
version"): a partition's versions are the commits known to touch it, so while a commit of the table between its
last run and its next version is not known with its partitions (its record not delivered yet, or its event came
without them) the partition waits, visibly (WAITING_FOR_VERSION naming the gap), and goes on when the commit comes
(it runs first if it touched the partition) or once the gap settled (``history_settle_ms``: then a commit that comes
later is recorded SKIPPED there). On the in-memory stores, the clock moved by the test."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lakehook.adapters.memory.partitions import InMemoryPartitionStore
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.state import snapshot_record
from lakehook.domain.status import Status
from lakehook.ports.rules import StateChange
from lakehook.usecases.resolve_report import ResolverLimits
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_each_version import InOrder, P, Q, each, orders_of
from tests.unit.test_partition_resolve import ORDERS, PAYMENTS

SETTLE = ResolverLimits().history_settle_ms


def _held(lake: InOrder, asset: str) -> list[StateChange]:
    """The stream records of ``asset`` not delivered yet, taken out of the stream (delivered later, by hand)."""
    return lake.stream.pop(asset, [])


def _unknown(lake: InOrder, asset: str, sid: int) -> None:
    """A commit pushed without its partitions: its event's stream record, and the state's."""
    event = AssetEvent(eventType="SNAPSHOT_COMMITTED", assetKey=asset, snapshotId=sid)
    lake.ingest.ingest(event, SourceType.PUSH)
    lake.stream.setdefault(asset, []).append(StateChange(asset, snapshot=snapshot_record(event)))
    state = lake.store.get_state(asset)
    assert state is not None and (state.latest_partitions is None or state.latest_partitions.order != sid)
    lake.stream[asset].append(StateChange(asset, state))


def test_a_partition_waits_at_a_commit_not_known_yet_and_runs_in_order_once_it_comes() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    lake.commit(ORDERS, 2, P)
    two = _held(lake, ORDERS)  # its stream records are late
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert orders_of(lake) == [1]  # 3 does not run before 2, which the table's log says exists
    line = lake.line(P)
    assert line["status"] == Status.WAITING_FOR_VERSION.value
    assert "after 1" in line["reason"] and "next known is 3" in line["reason"] and f"dt={P}" in line["reason"]
    lake.dispatch(lake.resolve(two))
    assert orders_of(lake) == [1, 2, 3] and lake.skips() == {}


def test_a_commit_of_other_partitions_fills_the_gap_and_the_partition_goes_on_at_once() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P, Q)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    lake.commit(ORDERS, 2, Q)
    two = _held(lake, ORDERS)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert orders_of(lake) == [1] and lake.line(P)["status"] == Status.WAITING_FOR_VERSION.value
    lake.dispatch(lake.resolve(two))  # 2 touched Q only: P's next version is 3, now known to follow
    assert orders_of(lake) == [1, 3] and orders_of(lake, Q) == [2]


def test_a_gap_that_never_fills_settles_and_a_commit_that_comes_later_is_recorded_skipped() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    lake.commit(ORDERS, 2, P)
    two = _held(lake, ORDERS)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    lake.sweep(SETTLE - 1)
    assert orders_of(lake) == [1]
    lake.sweep(1)  # the deferral at the end of the settle time
    assert orders_of(lake) == [1, 3]
    lake.dispatch(lake.resolve(two))
    assert orders_of(lake) == [1, 3]
    reason = lake.skips()[(f"dt={P}", 2)]
    assert reason is not None and "after 3 ran" in reason


def test_a_commit_pushed_without_its_partitions_is_a_gap_until_they_come() -> None:
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    _unknown(lake, ORDERS, 2)  # its event names no partition: which it touched is not known
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert orders_of(lake) == [1] and lake.line(P)["status"] == Status.WAITING_FOR_VERSION.value
    lake.sweep(SETTLE)
    assert orders_of(lake) == [1, 3]


def _runs_of(lake: InOrder, day: str) -> list[tuple[int, int]]:
    """The runs of ``day`` in claim order: the orders commit each pinned, and when it was claimed."""
    runs = []
    for key in lake.triggers.claim_order:
        trigger = lake.triggers.triggers[key]
        if trigger.partition == f"dt={day}" and not is_late_skip(trigger):
            sid = {p.asset_key: p.snapshot_id for p in trigger.inputs}[ORDERS]
            assert sid is not None
            runs.append((sid, trigger.created_at))
    return runs


@settings(max_examples=examples(60), deadline=None)
@given(
    touched=st.lists(st.sets(st.sampled_from([P, Q]), min_size=1), min_size=1, max_size=6),
    data=st.data(),
)
def test_no_version_runs_past_a_commit_of_its_table_still_to_come_unless_that_gap_settled(
    touched: list[set[str]], data: st.DataObject
) -> None:
    """Commits 2, 3, … of orders (each touching P, Q or both) are made in order, and their stream records delivered
    in any order, the clock moving by less or more than the settle time between deliveries (every run succeeding at
    once). Whenever a day runs a version, every commit of the table between its previous run and that version was
    delivered, or the gap it left had settled (the settle time had passed since the commit after it was delivered);
    at the end every commit touching a day ran there, in order, or is recorded SKIPPED because it came after a newer
    one ran; and no day is left waiting."""
    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P, Q)
    lake.commit(ORDERS, 1, P, Q)
    lake.deliver()
    held: dict[int, list[StateChange]] = {}
    sids = list(range(2, len(touched) + 2))
    for sid, days in zip(sids, touched, strict=True):
        lake.commit(ORDERS, sid, *sorted(days))
        held[sid] = _held(lake, ORDERS)
    delivered: dict[int, int] = {1: lake.now}
    for sid in data.draw(st.permutations(sids), label="delivery order"):
        wait = data.draw(st.sampled_from([0, SETTLE // 3, SETTLE + 1]), label="wait")
        lake.sweep(wait)
        lake.now += 1  # after what the sweep ran
        delivered[sid] = lake.now
        lake.dispatch(lake.resolve(held[sid]))
    lake.sweep(SETTLE + 1)
    skipped = lake.skips()
    for day in (P, Q):
        runs = _runs_of(lake, day)
        orders = [sid for sid, _ in runs]
        assert orders == sorted(set(orders))
        for (last, _), (version, at) in pairwise(runs):
            between = range(last + 1, version)
            for hole in (c for c in between if delivered[c] > at and (c - 1 == last or delivered[c - 1] <= at)):
                after = next(c for c in range(hole + 1, version + 1) if delivered[c] <= at)
                assert at >= delivered[after] + SETTLE, (day, last, version, hole)
        wanted = {1} | {sid for sid, days in zip(sids, touched, strict=True) if day in days}
        late = {sid for (part, sid) in skipped if part == f"dt={day}"}
        assert set(orders) | late == wanted and not set(orders) & late
        assert all(any(v > sid and at <= delivered[sid] for v, at in runs) for sid in late)  # a newer one ran first
        assert lake.line(day)["status"] == Status.WAITING_FOR_UPDATE.value


def logged(store: InMemoryPartitionStore) -> dict[int, str]:
    """The commits of orders logged after 1: known whole, or only in part."""
    return {e.record.order: "in part" if e.partial else "whole" for e in store.commits_after(ORDERS, 1, 10)}


def test_a_commit_the_bound_cut_is_not_known_before_its_carried_slice_came_and_no_version_of_it_is_skipped() -> None:
    """A commit whose keys the invocation's bound cut (one kept, the other carried to the queue as a slice) is not
    logged as known with its partitions while its slice is on the queue: a newer commit touching the carried partition
    waits at it, and runs after it (found in review: it ran first, and the carried version was recorded SKIPPED); the
    settle time passing after that changes nothing."""
    from tests.unit.test_partition_each_version import InOrderBounded, _finish

    bounded = InOrderBounded.of(each(), max_facts=1)
    lake = bounded.lake

    def settle_runs() -> None:
        for _ in range(4):
            woken = _finish(lake)
            if woken:
                bounded._counted(lambda w=woken: lake.resolve(deferred=w))
            bounded.drain()

    lake.commit(PAYMENTS, 7, P, Q)
    bounded.deliver()
    bounded.drain()
    lake.commit(ORDERS, 1, P, Q)
    bounded.deliver()
    settle_runs()
    lake.commit(ORDERS, 2, P, Q)  # two keys, one fact an invocation: one kept, the other carried as a slice
    bounded.deliver()
    assert bounded.queue.messages  # the carried key, not resolved yet
    assert logged(lake.partitions) == {2: "in part"}  # 2 is not known whole: its carried key could be any day
    lake.commit(ORDERS, 3, Q)  # the next stream batch, before the slice
    bounded.deliver()
    settle_runs()
    lake.now += SETTLE
    bounded._counted(lambda: lake.resolve(deferred=lake.sweeper()))  # the deferral at the end of the settle time
    settle_runs()
    ran = [
        (t.partition, {p.asset_key: p.snapshot_id for p in t.inputs}[ORDERS])
        for k in lake.triggers.claim_order
        if not is_late_skip(t := lake.triggers.triggers[k])
    ]
    assert [sid for part, sid in ran if part == f"dt={Q}"] == [1, 2, 3]
    assert [sid for part, sid in ran if part == f"dt={P}"] == [1, 2]
    assert not [k for k in lake.triggers.claim_order if is_late_skip(lake.triggers.triggers[k])]


# --- a commit that comes in pieces is known once every piece came (no false gap), not before -----------------------


def test_a_commit_whose_part_items_all_came_is_known_and_the_partition_past_it_runs_at_once() -> None:
    """Commit 2 of orders touches 1,001 days, not P: its event holds the first 1000 keys, a part item the last. While
    the part's stream record is still to come, P's next version (3) waits at 2 (the part could have touched P); once it
    came, 2 is known whole and P runs 3 at once, without the settle time (until 2026-12-07 it waited 15 minutes)."""
    from tests.unit.test_partition_evaluation_bounds import days, polled

    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    polled(lake, ORDERS, 2, days(1001))
    held = [c for c in lake.stream[ORDERS] if c.partitions_only]
    lake.stream[ORDERS] = [c for c in lake.stream[ORDERS] if not c.partitions_only]
    assert len(held) == 1 and held[0].offset == 1000 and held[0].total == 1001
    store = lake.partitions
    lake.deliver()
    # what it costs: per commit an invocation holds in part, its pieces kept before read (batched) and its own noted
    assert (store.piece_reads, store.piece_writes) == (1, 1)
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    assert orders_of(lake) == [1] and lake.line(P)["status"] == Status.WAITING_FOR_VERSION.value
    assert logged(store) == {2: "in part", 3: "whole"}  # 2: not whole yet
    reads = store.piece_reads
    lake.dispatch(lake.resolve(held))
    assert (store.piece_reads - reads, store.piece_writes) == (1, 1)  # the last piece: read, and logged, not noted
    assert logged(store) == {2: "whole", 3: "whole"}
    assert orders_of(lake) == [1, 3] and lake.skips() == {}


def test_the_last_pieces_of_a_commit_brought_at_once_log_it_and_wake_the_group_now() -> None:
    """Two invocations bring a commit's last pieces at once, each reading what was kept of its pieces before the other
    noted its own: neither reads it whole. The one whose note completes it logs it and defers the group to now, so
    the partition waiting at it runs at the next sweep, not at the end of the settle time. (Here the part's reads are
    made before the event's piece was noted, as a racing invocation's are.)"""
    from tests.unit.test_partition_evaluation_bounds import days, polled

    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    lake.commit(ORDERS, 3, P)  # pushed before commit 2 is polled: P's next version waits at 2
    lake.deliver()
    polled(lake, ORDERS, 2, days(1001))
    part = [c for c in lake.stream[ORDERS] if c.partitions_only]
    lake.stream[ORDERS] = [c for c in lake.stream[ORDERS] if not c.partitions_only]
    store = lake.partitions
    kept = store.commit_pieces
    store.commit_pieces = lambda commits: {}  # type: ignore[method-assign]
    lake.dispatch(lake.resolve(part))  # the part's invocation reads nothing kept yet, and notes its piece
    lake.deliver()  # the event's invocation too: its note completes the commit
    store.commit_pieces = kept  # type: ignore[method-assign]
    assert logged(store) == {2: "whole", 3: "whole"}
    assert orders_of(lake) == [1]
    assert lake.deferrals.pending[("daily", "g")].due_at == lake.now
    lake.sweep(0)
    assert orders_of(lake) == [1, 3] and lake.skips() == {}


def test_a_commit_whose_part_never_comes_still_waits_until_it_settles() -> None:
    """The same commit, its part item's record lost: P's next version waits at 2 until the gap settled."""
    from tests.unit.test_partition_evaluation_bounds import days, polled

    lake = InOrder(each())
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    lake.deliver()
    polled(lake, ORDERS, 2, days(1001))
    lake.stream[ORDERS] = [c for c in lake.stream[ORDERS] if not c.partitions_only]
    lake.commit(ORDERS, 3, P)
    lake.deliver()
    lake.sweep(SETTLE - 1)
    assert orders_of(lake) == [1] and lake.line(P)["status"] == Status.WAITING_FOR_VERSION.value
    lake.sweep(1)
    assert orders_of(lake) == [1, 3]


def test_a_commit_the_bound_cut_is_known_once_its_carried_slice_came_and_the_partition_past_it_runs_at_once() -> None:
    """Commit 2 touches Q and R, one fact an invocation: R is carried to the queue as a slice. P (not touched by 2)
    waits at 2 while the slice is on the queue, and runs 3 as soon as the slice was resolved: 2 is known whole then,
    with no settle time (until 2026-12-07 it waited for it)."""
    from tests.unit.test_partition_each_version import InOrderBounded, _finish, _late

    r = "2026-12-03"
    bounded = InOrderBounded.of(each(), max_facts=1)
    lake = bounded.lake

    def runs_end() -> None:
        while woken := _finish(lake):
            bounded._counted(lambda w=woken: lake.resolve(deferred=w))

    lake.commit(PAYMENTS, 7, P, Q, r)
    bounded.deliver()
    bounded.drain()
    lake.commit(ORDERS, 1, P)
    bounded.deliver()
    runs_end()
    lake.commit(ORDERS, 2, Q, r)
    bounded.deliver()
    [carried] = bounded.queue.messages
    assert (carried["partitions"], carried["offset"], carried["total"]) == ([f"dt={r}"], 1, 2)
    lake.commit(ORDERS, 3, P)
    bounded.deliver()
    runs_end()
    assert orders_of(lake) == [1]  # 2 is not known whole: its carried key could be P's
    bounded.drain()
    runs_end()
    bounded.drain()
    assert orders_of(lake) == [1, 3] and orders_of(lake, Q) == [2] and orders_of(lake, r) == [2]
    assert _late(lake) == []


class _NeverNow:
    """A ``data`` that draws False (and 0, the first queued message) every time: slices not resolved at once, runs not
    ended at once, the queue taken in order."""

    def draw(self, strategy: object, label: str | None = None) -> bool:
        return False


def test_a_newer_commits_piece_that_came_first_waits_at_an_older_commit_whose_piece_is_on_the_queue() -> None:
    """Found by the property below (on a fresh seed, after the pieces work was merged, which main's revert kept too):
    commit 2 touches P and Q, commit 3 touches Q and R, one fact an invocation, so Q of 2 and R of 3 are carried to the
    queue. Q's version 3 was kept first, with 3 not known whole: it was not logged, so Q's next version (3) had nothing
    to tell a gap by, ran before Q's version of 2 came, and 2 was recorded SKIPPED there. Now a commit known in part is
    logged as such: Q's next version (3) waits at 2, known only in part, and every version runs in order."""
    _every_cut_commit_runs_in_order([{P, Q}, {Q, "2026-12-03"}], 1, _NeverNow())


@settings(max_examples=examples(40), deadline=None)
@given(
    touched=st.lists(st.sets(st.sampled_from([P, Q, "2026-12-03"]), min_size=1), min_size=1, max_size=6),
    max_facts=st.integers(1, 2),
    data=st.data(),
)
def test_every_version_of_a_commit_cut_by_the_bound_runs_in_order_without_the_settle_time(
    touched: list[set[str]], max_facts: int, data: st.DataObject
) -> None:
    """Every day ran once; then commits of orders each touching some of three days, each delivered as one stream batch
    whose bound (one or two facts an invocation) cuts it, its carried slices resolved at once or later, in any order and
    some twice, runs ending at any time, the clock never moving. At the end every commit ran for every day it touched,
    in order, none skipped, and nothing waits for a settle time: a commit is known once all its pieces came."""
    _every_cut_commit_runs_in_order(touched, max_facts, data)


def _every_cut_commit_runs_in_order(touched: list[set[str]], max_facts: int, data: Any) -> None:
    from tests.unit.test_partition_each_version import InOrderBounded, _finish, _late

    days = [P, Q, "2026-12-03"]
    bounded = InOrderBounded.of(each(), max_facts=max_facts, max_partition_claims=3)
    lake = bounded.lake

    def runs_end() -> None:
        while woken := _finish(lake):
            bounded._counted(lambda w=woken: lake.resolve(deferred=w))
            bounded.drain(data)

    lake.commit(PAYMENTS, 7, *days)
    bounded.deliver()
    bounded.drain()
    lake.commit(ORDERS, 1, *days)
    bounded.deliver()
    bounded.drain()
    runs_end()
    for sid, touching in enumerate(touched, start=2):
        lake.commit(ORDERS, sid, *sorted(touching))
        bounded.deliver()
        if data.draw(st.booleans(), label="slices now"):
            bounded.drain(data)
        if data.draw(st.booleans(), label="runs end"):
            runs_end()
    bounded.drain(data)
    runs_end()
    bounded.bounded()
    assert _late(lake) == []
    for day in days:
        wanted = [1] + [sid for sid, touching in enumerate(touched, start=2) if day in touching]
        assert orders_of(lake, day) == wanted, day


# --- a partition far behind: the table's commits are read on, a page a query, bounded per invocation ----------------


@settings(max_examples=examples(40), deadline=None)
@given(
    behind=st.integers(1, 12),
    page=st.integers(1, 4),
    max_reads=st.integers(2, 8),
    missing=st.one_of(st.none(), st.integers(0, 11)),
)
def test_a_partition_many_commits_behind_reads_its_tables_commits_on_and_runs_at_once(
    behind: int, page: int, max_reads: int, missing: int | None
) -> None:
    """P ran with orders 1; then ``behind`` commits of orders touch another day only (payments never touched it), and
    then one touches P. With the table's commits read ``page`` a query (the stack reads 1000) and at most ``max_reads``
    version queries an invocation, P reads on past the first page and runs its next version at once, the clock never
    moving (until 2026-12-07 a partition more than one page of commits behind waited at the end of what was read until
    the settle time); when one of those commits has not come (``missing``), P waits at it, and runs once it came. Every
    invocation stays within its reads."""
    from tests.unit.test_partition_each_version import InOrderBounded, _finish

    assume(-(-behind // page) + 1 <= max_reads)  # the pages up to P's next version fit in one invocation's reads
    other = "2026-12-09"
    bounded = InOrderBounded.of(each(), commit_log_page=page, max_version_reads=max_reads)
    lake = bounded.lake
    lake.commit(PAYMENTS, 7, P)
    lake.commit(ORDERS, 1, P)
    bounded.deliver()
    while woken := _finish(lake):
        bounded._counted(lambda w=woken: lake.resolve(deferred=w))
    held: list[StateChange] = []
    for sid in range(2, behind + 2):
        lake.commit(ORDERS, sid, other)
        if missing is not None and sid == 2 + missing % behind:
            held = lake.stream.pop(ORDERS)
        bounded.deliver()
    lake.commit(ORDERS, behind + 2, P)
    bounded.deliver()
    bounded.drain()
    if held:
        assert orders_of(lake) == [1]  # a commit of the table between is still to come: P waits at it
        bounded.deliver(held)
        bounded.drain()
    assert orders_of(lake) == [1, behind + 2]
    bounded.bounded()
