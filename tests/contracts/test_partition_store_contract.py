"""The PartitionStore contract (ports.partitions), on the fake and on DynamoDB: a partition fact only advances
(an older or equal one is refused, and every field of the kept one reads back), facts are read by key in batches;
pending partitions are per group, listed newest key first up to a limit, counted, and cleared only while they hold
the mark they were read with; the pieces of a commit known in part make it whole once they cover every key."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord
from tests.contracts.conftest import Backend
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

ORDERS, PAYMENTS = "paimon://lake/ods/orders", "paimon://lake/ods/payments"
MAPPING = "dt=dt"


def fact(
    order: int,
    partition: str = "dt=2026-01-01",
    asset: str = ORDERS,
    schema_id: int | None = None,
    commit_time: int | None = None,
) -> PartitionFact:
    return PartitionFact(asset, MAPPING, partition, order * 10, order, schema_id, commit_time)


def test_a_fact_only_advances(backend: Backend) -> None:
    store = backend.partitions
    first = fact(5, schema_id=1, commit_time=1_000)

    assert store.advance([first], 10) == [first]
    assert store.advance([fact(5), fact(4)], 20) == []  # as new, and older: both refused
    newer = fact(6)  # no schema id or commit time: the kept fact has none either
    assert store.advance([newer, fact(9, "dt=2026-01-02")], 30) == [newer, fact(9, "dt=2026-01-02")]
    assert store.facts([first.key]) == {first.key: newer}


def test_facts_are_read_by_key_and_missing_ones_left_out(backend: Backend) -> None:
    store = backend.partitions
    kept = [fact(i, f"dt=2026-01-{i:02d}", asset) for i in range(1, 30) for asset in (ORDERS, PAYMENTS)]
    store.advance(kept, 10)
    absent: FactKey = (ORDERS, MAPPING, "dt=2027-01-01")
    other_mapping: FactKey = (ORDERS, "dt=day", "dt=2026-01-01")

    wanted = [f.key for f in kept] + [absent, other_mapping]
    assert store.facts(wanted) == {f.key: f for f in kept}  # more than one batch of 25 keys
    assert store.facts([]) == {}


facts = st.builds(
    fact,
    order=st.integers(0, 2**40),
    partition=st.sampled_from(["dt=1", "dt=2"]),
    asset=st.sampled_from([ORDERS, PAYMENTS]),
    schema_id=st.none() | st.integers(0, 5),
    commit_time=st.none() | st.integers(0, 2**45),
)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=st.lists(st.lists(facts, max_size=4), min_size=1, max_size=4))
def test_the_kept_fact_is_the_first_offered_of_the_highest_order(
    fresh_backend: Callable[[], Backend], batches: list[list[PartitionFact]]
) -> None:
    backend = fresh_backend()
    offered = [f for batch in batches for f in batch]
    kept: dict[FactKey, PartitionFact] = {}
    for batch in batches:
        moved = backend.partitions.advance(batch, 10)
        expected = []
        for f in batch:
            if f.newer_than(kept.get(f.key)):
                kept[f.key] = f
                expected.append(f)
        assert moved == expected

    assert backend.partitions.facts({f.key for f in offered}) == kept


def test_pending_partitions_are_per_group_newest_first_up_to_a_limit(backend: Backend) -> None:
    store = backend.partitions
    store.mark_pending("dwd", "g", ["dt=2026-01-02", "dt=2026-01-01", "dt=2026-01-03"], 10)
    store.mark_pending("dwd", "g2", ["dt=2026-01-09"], 10)  # a group whose id starts with the other's
    store.mark_pending("dws", "g", ["dt=2026-01-08"], 10)

    assert list(store.pending("dwd", "g", 2)) == ["dt=2026-01-03", "dt=2026-01-02"]
    assert list(store.pending("dwd", "g", 10)) == ["dt=2026-01-03", "dt=2026-01-02", "dt=2026-01-01"]
    assert store.count_pending("dwd", "g") == 3
    assert store.count_pending("dwd", "g2") == 1
    assert store.count_pending("dwd", "absent") == 0
    assert store.pending("dwd", "absent", 5) == {}


def test_a_pending_partition_is_cleared_only_under_the_mark_it_was_read_with(backend: Backend) -> None:
    store = backend.partitions
    store.mark_pending("dwd", "g", ["dt=1", "dt=2"], 10)
    read = store.pending("dwd", "g", 10)
    store.mark_pending("dwd", "g", ["dt=2"], 20)  # a racing resolver found dt=2 touched again
    again = store.pending("dwd", "g", 10)

    assert again["dt=1"] == read["dt=1"] and again["dt=2"] != read["dt=2"]
    store.clear_pending("dwd", "g", read)
    assert store.pending("dwd", "g", 10) == {"dt=2": again["dt=2"]}
    store.clear_pending("dwd", "g", {"dt=absent": "x", "dt=2": again["dt=2"]})
    assert store.count_pending("dwd", "g") == 0
    store.mark_pending("dwd", "g", [], 30)
    assert store.pending("dwd", "g", 10) == {}


def test_marking_a_partition_twice_at_once_gives_new_marks(backend: Backend) -> None:
    store = backend.partitions
    store.mark_pending("dwd", "g", ["dt=1"], 10)
    first = store.pending("dwd", "g", 1)["dt=1"]
    store.mark_pending("dwd", "g", ["dt=1"], 10)  # the same millisecond
    assert store.pending("dwd", "g", 1)["dt=1"] != first


def test_pending_partitions_say_since_when_lowest_keys_first(backend: Backend) -> None:
    store = backend.partitions
    store.mark_pending("dwd", "g", ["dt=2026-01-02", "dt=2026-01-01", "dt=2026-01-03"], 10)
    store.mark_pending("dwd", "g2", ["dt=2026-01-00"], 5)  # another group, its id starting with this one's

    assert store.pending_since("dwd", "g") == {"dt=2026-01-01": 10, "dt=2026-01-02": 10, "dt=2026-01-03": 10}
    assert list(store.pending_since("dwd", "g")) == ["dt=2026-01-01", "dt=2026-01-02", "dt=2026-01-03"]
    store.mark_pending("dwd", "g", ["dt=2026-01-01"], 20)  # found pending again: since then
    cleared = store.pending("dwd", "g", 10)
    store.clear_pending("dwd", "g", {"dt=2026-01-03": cleared["dt=2026-01-03"]})
    assert store.pending_since("dwd", "g") == {"dt=2026-01-01": 20, "dt=2026-01-02": 10}
    assert store.pending_since("dwd", "absent") == {}


def test_versions_are_kept_each_once_and_read_after_an_order_oldest_first(backend: Backend) -> None:
    store = backend.partitions
    day, other = "dt=2026-01-01", "dt=2026-01-01#x"  # a key holding '#' reaches into no other key's versions
    store.record_versions([fact(3, day, schema_id=2, commit_time=5_000), fact(1, day), fact(2, other)], 10)
    store.record_versions([fact(1, day), fact(7, day, PAYMENTS)], 20)  # one kept already: written again as it was
    key = (ORDERS, MAPPING, day)
    assert store.versions_after(key, -1, 10) == [fact(1, day), fact(3, day, schema_id=2, commit_time=5_000)]
    assert store.versions_after(key, 1, 10) == [fact(3, day, schema_id=2, commit_time=5_000)]
    assert store.versions_after(key, -1, 1) == [fact(1, day)]
    assert store.versions_after(key, 3, 10) == []
    assert store.versions_after((ORDERS, MAPPING, other), -1, 10) == [fact(2, other)]
    assert store.versions_after((ORDERS, "dt=day", day), -1, 10) == []
    assert store.facts([key]) == {}  # versions are no facts
    asked = {(key, 1), (key, 2), (key, 3), ((ORDERS, MAPPING, other), 2), ((PAYMENTS, MAPPING, day), 1)}
    assert store.stored_versions(asked) == {(key, 1), (key, 3), ((ORDERS, MAPPING, other), 2)}
    assert store.stored_versions([]) == set()


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(orders=st.lists(st.integers(0, 2**40), max_size=30), after=st.integers(-1, 2**40), limit=st.integers(1, 40))
def test_versions_after_reads_the_lowest_orders_above(
    fresh_backend: Callable[[], Backend], orders: list[int], after: int, limit: int
) -> None:
    store = fresh_backend().partitions
    store.record_versions([fact(o) for o in orders], 10)
    expected = [fact(o) for o in sorted(set(orders)) if o > after][:limit]
    assert store.versions_after((ORDERS, MAPPING, "dt=2026-01-01"), after, limit) == expected


def test_commits_are_logged_once_each_keeping_when_first_logged_and_read_after_an_order(backend: Backend) -> None:
    store = backend.partitions
    one, two, five = (SnapshotRecord(snapshotId=100 + o, order=o, parentSnapshotId=99 + o) for o in (1, 2, 5))
    store.log_commits({ORDERS: [two, one], PAYMENTS: [five]}, 10)
    store.log_commits({ORDERS: [two, five]}, 20)  # two logged before keeps its time; five is new for orders
    assert store.commits_after(ORDERS, 0, 10) == [
        LoggedSnapshot(one, 10),
        LoggedSnapshot(two, 10),
        LoggedSnapshot(five, 20),
    ]
    assert store.commits_after(ORDERS, 1, 1) == [LoggedSnapshot(two, 10)]
    assert store.commits_after(ORDERS, 5, 10) == []
    assert store.commits_after(PAYMENTS, -1, 10) == [LoggedSnapshot(five, 10)]
    assert store.versions_after((ORDERS, MAPPING, "dt=2026-01-01"), -1, 10) == []  # commits are no versions


def test_a_commit_logged_in_part_is_kept_until_logged_whole_and_never_goes_back(backend: Backend) -> None:
    """A commit known only in part is logged as such (``partial``: a partition whose next version it is tells a gap
    before it, and one past it waits at it); logged in part again it keeps its first time; logged whole it is replaced
    (from then); logged in part after that, it stays whole. One call logs both kinds."""
    store = backend.partitions
    two, three, four = (SnapshotRecord(snapshotId=100 + o, order=o, parentSnapshotId=99 + o) for o in (2, 3, 4))
    store.log_commits({}, 10, {ORDERS: [two, three]})
    store.log_commits({ORDERS: [four]}, 20, {ORDERS: [two]})  # two in part again: its first time is kept
    assert store.commits_after(ORDERS, 0, 10) == [
        LoggedSnapshot(two, 10, partial=True),
        LoggedSnapshot(three, 10, partial=True),
        LoggedSnapshot(four, 20),
    ]
    store.log_commits({ORDERS: [two]}, 30, {ORDERS: [four]})  # two whole now; four stays whole
    store.log_commits({}, 40, {ORDERS: [two]})  # a late piece of two: it stays whole
    assert store.commits_after(ORDERS, 0, 10) == [
        LoggedSnapshot(two, 30),
        LoggedSnapshot(three, 10, partial=True),
        LoggedSnapshot(four, 20),
    ]


def test_a_commit_is_whole_once_its_noted_pieces_cover_every_key_however_they_overlap(backend: Backend) -> None:
    """Pieces of a commit known in part: (start, size) runs of its keys, the commit's count when a piece knows it. A
    piece noted again changes nothing; overlapping pieces (a batch cut elsewhere when redelivered) count once each
    key; the commit is whole, and named by the call that made it so, once the union covers every key."""
    from lakehook.domain.commit_pieces import CommitPiece, KnownPieces

    store = backend.partitions
    two = SnapshotRecord(snapshotId=102, order=2, parentSnapshotId=101)
    three = SnapshotRecord(snapshotId=103, order=3, parentSnapshotId=102)

    assert store.commit_pieces([(ORDERS, 2)]) == {}
    assert store.note_pieces([CommitPiece(ORDERS, two, 0, 3, 10)], 10) == {}
    assert store.note_pieces([CommitPiece(ORDERS, two, 0, 3, 10), CommitPiece(ORDERS, two, 2, 4, None)], 20) == {}
    assert store.note_pieces([CommitPiece(PAYMENTS, three, 5, 5)], 20) == {}  # its count is not known yet
    assert store.commit_pieces([(ORDERS, 2), (PAYMENTS, 3), (ORDERS, 9)]) == {
        (ORDERS, 2): KnownPieces(frozenset({(0, 3), (2, 4)}), 10),
        (PAYMENTS, 3): KnownPieces(frozenset({(5, 5)}), None),
    }
    assert store.note_pieces([CommitPiece(ORDERS, two, 7, 3, 10), CommitPiece(PAYMENTS, three, 0, 5, 10)], 30) == {
        (PAYMENTS, 3): three  # 0-4 and 5-9: whole; orders 2 still misses key 6
    }
    assert store.note_pieces([CommitPiece(ORDERS, two, 5, 2, None)], 40) == {(ORDERS, 2): two}
    assert store.commit_pieces([(ORDERS, 2)])[(ORDERS, 2)].whole
    assert store.commits_after(ORDERS, 0, 10) == []  # noting pieces logs nothing: the resolver logs a whole commit


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    total=st.integers(1, 30),
    spans=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 10)), max_size=8),
    data=st.data(),
)
def test_noted_pieces_make_a_commit_whole_exactly_when_their_union_covers_its_keys(
    fresh_backend: Callable[[], Backend], total: int, spans: list[tuple[int, int]], data: st.DataObject
) -> None:
    from lakehook.domain.commit_pieces import CommitPiece

    store = fresh_backend().partitions
    record = SnapshotRecord(snapshotId=7, order=7)
    covered: set[int] = set()
    counted = False
    for start, size in spans:
        knows = data.draw(st.booleans(), label="knows the count")
        made = store.note_pieces([CommitPiece(ORDERS, record, start, size, total if knows else None)], 10)
        covered |= set(range(start, start + size))
        counted = counted or knows
        assert made == ({(ORDERS, 7): record} if counted and set(range(total)) <= covered else {}), (start, size)
