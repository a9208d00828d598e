"""EACH_VERSION with a rollup member (issue 33; a 400 until 2026-12-07): a day's versions are the commits touching any
of the units it rolls up (its hours, or those of its range), in commit order; its first run is the commit that
completed the rollup (every unit, or n of them for ``atLeast``, has a commit at or before it: the table as of an older
one does not hold the day whole), pinning it; then each later commit touching a unit runs once, in order, each after
the previous run SUCCEEDED. A commit arriving while the rollup is incomplete waits with it. On the in-memory stores,
through the resolver; explain says what it does (docs/partitions.md, "EACH_VERSION with a rollup member")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.rules import Rule
from lakehook.domain.status import Status
from tests.hypothesis_profiles import examples
from tests.unit.test_partition_each_version import InOrder, InOrderBounded, _finish, push_in_any_order
from tests.unit.test_partition_fanout import commit
from tests.unit.test_partition_multifield import rule_of
from tests.unit.test_partition_resolve import CLICKS, ORDERS, Lake

DAY, NEXT = "2026-12-01", "2026-12-02"
RANGE = {"from": 6, "to": 9}  # hours 06, 07 and 08 of each day
HOURS = (6, 7, 8, 23)  # 23 is no unit of the range


def rolled(complete: Any = RANGE) -> Rule:
    """Orders by day beside clicks rolling a day's hours up, EACH_VERSION."""
    clicks = {"fields": {"dt": {"field": "hour", "grain": "day", "complete": complete}}}
    members = ({"assetKey": ORDERS, "partition": {}}, {"assetKey": CLICKS, "partition": clicks})
    return rule_of(*members, mode="EACH_VERSION", rule_id="daily")


def clicks_ran(lake: Lake, day: str = DAY) -> list[int | None]:
    return [dict(pins)[CLICKS] for part, pins in lake.runs() if part == f"dt={day}"]


def hour(day: str, h: int) -> str:
    return f"hour={day}-{h:02d}"


def test_a_day_runs_from_the_commit_that_completed_its_range_then_each_commit_touching_one_in_order() -> None:
    lake = InOrder(rolled())
    lake.commit(ORDERS, 1, DAY)
    commit(lake, CLICKS, 1, hour(DAY, 6))
    commit(lake, CLICKS, 2, hour(DAY, 7))
    commit(lake, CLICKS, 3, hour(DAY, 23))  # no unit of the range: no version of the day
    lake.deliver()
    assert lake.runs() == []
    line = lake.line(DAY)
    assert line["status"] == Status.WAITING_FOR_PARTITION.value
    assert f"2 of the 3 units of dt={DAY} (hours 06 to 08) have a data commit; missing dt={DAY}-08" in line["reason"]
    for sid, h in ((6, 7), (5, 6), (4, 8)):  # one request, newest first: 4 completes the day
        commit(lake, CLICKS, sid, hour(DAY, h))
    lake.deliver()
    assert clicks_ran(lake) == [4, 5, 6]  # 1 and 2 are in the first run's data: no version of their own
    assert all(dict(pins)[ORDERS] == 1 for _, pins in lake.runs())
    assert lake.line(DAY)["status"] == Status.WAITING_FOR_UPDATE.value and lake.skips() == {}
    assert lake.partitions.count_pending("daily", "g") == 0


def test_with_at_least_n_units_the_first_run_is_the_commit_bringing_the_nth() -> None:
    lake = InOrder(rolled({"atLeast": 2}))
    lake.commit(ORDERS, 1, DAY)
    commit(lake, CLICKS, 1, hour(DAY, 0))
    commit(lake, CLICKS, 2, hour(DAY, 0))  # the same hour again: still one unit
    lake.deliver()
    assert lake.runs() == []
    commit(lake, CLICKS, 3, hour(DAY, 5))
    commit(lake, CLICKS, 4, hour(DAY, 0))
    lake.deliver()
    assert clicks_ran(lake) == [3, 4]


def test_a_commit_of_the_rollup_arriving_after_a_newer_one_ran_is_recorded_skipped() -> None:
    lake = InOrder(rolled())
    lake.commit(ORDERS, 1, DAY)
    for sid, h in ((1, 6), (2, 7), (3, 8)):
        commit(lake, CLICKS, sid, hour(DAY, h))
    lake.deliver()
    assert clicks_ran(lake) == [3]
    commit(lake, CLICKS, 5, hour(DAY, 6))
    lake.deliver()
    line = lake.line(DAY)
    assert line["status"] == Status.WAITING_FOR_VERSION.value and "the commit of the table after 3" in line["reason"]
    lake.sweep(15 * 60_000)  # 4 never came: the gap settled
    assert clicks_ran(lake) == [3, 5]
    commit(lake, CLICKS, 4, hour(DAY, 7))
    lake.deliver()
    assert clicks_ran(lake) == [3, 5]
    reason = lake.skips()[(f"dt={DAY}", 4)]
    assert reason is not None and "after 5 ran" in reason


# --- on generated commits, push orders and redelivered batches: explain is what the resolver does --------------


@settings(max_examples=examples(40), deadline=None)
@given(
    data=st.data(),
    touched=st.lists(
        st.sets(st.tuples(st.sampled_from([DAY, NEXT]), st.sampled_from(HOURS)), min_size=1, max_size=3),
        min_size=1,
        max_size=7,
    ),
    at_least=st.none() | st.integers(1, 3),
)
def test_each_commit_touching_a_unit_runs_once_in_order_from_the_completion_or_is_recorded_skipped(
    data: st.DataObject, touched: list[set[tuple[str, int]]], at_least: int | None
) -> None:
    """Clicks' commits touching hours of two days (three in the range, one not) pushed in any order, delivered in any
    batches (some again), runs ending between: explain's READY days are what the next wake claims; in the end a day
    ran iff its rollup was complete, never before the commit that completed it, in order, each commit once, and each
    commit after its first run touching a unit ran or is recorded SKIPPED there."""
    rule = rolled(RANGE if at_least is None else {**RANGE, "atLeast": at_least})
    lake = InOrder(rule)
    lake.commit(ORDERS, 1, DAY, NEXT)
    lake.deliver()
    sids = list(range(1, len(touched) + 1))
    push_in_any_order(
        lake, data, sids, lambda sid: commit(lake, CLICKS, sid, *sorted(hour(d, h) for d, h in touched[sid - 1]))
    )
    needed = at_least or 3
    for day in (DAY, NEXT):
        units = {sid: {h for d, h in touched[sid - 1] if d == day and h != 23} for sid in sids}
        first: dict[int, int] = {}  # each unit's first commit
        for sid in sids:
            for h in units[sid]:
                first.setdefault(h, sid)
        completed = sorted(first.values())[needed - 1] if len(first) >= needed else None
        ran = [s for s in clicks_ran(lake, day) if s is not None]
        late = {sid for (part, sid) in lake.skips() if part == f"dt={day}" and sid is not None}
        assert ran == sorted(set(ran)), (day, ran)
        assert bool(ran) == (completed is not None), (day, ran, completed)
        if completed is None:
            continue
        assert ran[0] >= completed and all(units[s] for s in ran), (day, ran, completed)
        after = {sid for sid in sids if units[sid] and sid > ran[0]}
        assert after <= set(ran) | late and not set(ran) & late, (day, ran, late, after)


def test_the_version_reads_of_rolled_up_days_are_bounded_and_every_day_still_runs_in_order() -> None:
    """Eight days whose three range hours one commit completed, then two commits touching an hour of each: once the
    first runs succeeded, each day's next version is one query per hour with a newer commit (and one of the table's
    commits). At ``max_version_reads`` 5 an invocation takes the days whose queries fit (one day's at least), carries
    the others to the resolver queue, and draining it runs every day 1, 2, 3, in order, none twice."""
    days = [f"2026-12-{d:02d}" for d in range(1, 9)]
    bounded = InOrderBounded.of(rolled(), max_version_reads=5, max_claims_per_group=100, max_partition_claims=100)
    lake = bounded.lake
    lake.commit(ORDERS, 1, *days)
    commit(lake, CLICKS, 1, *(hour(d, h) for d in days for h in (6, 7, 8)))
    commit(lake, CLICKS, 2, *(hour(d, 6) for d in days))
    commit(lake, CLICKS, 3, *(hour(d, 8) for d in days))
    bounded.deliver()
    while woken := _finish(lake):
        bounded._counted(lambda w=woken: lake.resolve(deferred=w))
        bounded.drain()
    bounded.bounded(members=3)  # one day's queries: its hours with a newer commit and its table's commits
    assert max(call.version_reads for call in bounded.invocations) <= 5
    for day in days:
        assert clicks_ran(lake, day) == [1, 2, 3]
    assert not any(p.ready for p in lake.explain().partitions)
