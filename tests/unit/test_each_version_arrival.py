"""EACH_VERSION decides a late version by what had RUN when it arrived, not by when the resolver reads its record.

Issue 33: snapshots 3, 2, 1 pushed in one request to an EACH_VERSION rule were answered 3 ACCEPTED and 2, 1 "it runs
in order", yet the resolver, handed 3's stream records before 2's and 1's, ran 3 and then recorded 2 and 1 SKIPPED.
A version that arrives before a newer one ran runs, in order, exactly once; one that arrives after a newer one ran
is skipped; and the push's answer says which, in the words the skip and explain use. The system is the real ingest
(with its late-snapshot notice) and resolver use cases on the in-memory fakes of their ports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lakehook.domain.events import IngestStatus
from lakehook.domain.run_windows import RunWindow
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.ports.rules import ClaimResult, Deferral, StateChange
from lakehook.usecases.rule_writes import DeleteRule
from tests.fakes.memory_rules import InMemoryTriggerStore
from tests.hypothesis_profiles import examples
from tests.unit.test_each_version import STALE, explain
from tests.unit.test_resolve_usecase import START, World, rule

A = "paimon://lake/ods/a"
H = "hudi://lake/ods/h"  # instant times: no lineage, a later commit always follows
IN_ORDER = f"{STALE}; it runs in order for rule each"


def each(asset: str = A, triggers: InMemoryTriggerStore | None = None) -> World:
    return World(rule("each", {"assetKey": asset}, mode="EACH_VERSION"), triggers=triggers)


def deliver_records(world: World, asset: str, count: int | None = None) -> list[StateChange]:
    """Resolve the first ``count`` pending stream records of ``asset`` (all of them: None), as one batch, and let
    the target run what was claimed; the batch, for a redelivery."""
    pending = world.stream.get(asset, [])
    batch = pending[: len(pending) if count is None else count]
    world.stream[asset] = pending[len(batch) :]
    world.dispatch(world.resolve(batch))
    return batch


def test_one_request_3_2_1_split_across_stream_batches_runs_1_2_3_and_every_answer_says_so() -> None:
    world = each()
    world.snap(A, 3, 2, 1)  # one request: 3 moves the state, 2 and 1 are older
    assert [(a.status, a.reason) for a in world.answers] == [
        (IngestStatus.ACCEPTED, None),
        (IngestStatus.STALE, IN_ORDER),
        (IngestStatus.STALE, IN_ORDER),
    ]
    stored = world.rules.get_rule("each")
    assert stored is not None
    verdict = world.resolve.evaluate(stored.rule, claim=False).verdicts[("each", "g")]  # explain, before any record
    assert verdict.ready and [p.snapshot_id for p in verdict.pins] == [1]  # what the resolver claims first
    deliver_records(world, A, 2)  # 3's event and state records come first, alone
    deliver_records(world, A)  # then 2's and 1's
    assert world.claimed() == [[1], [2], [3]]
    assert world.skipped() == {}
    assert explain(world)["groups"][0]["skipped"] == []


def test_a_version_pushed_before_the_newer_ones_record_was_resolved_runs_first() -> None:
    """Two pushes: 3, then 2 before 3's stream record was handled (a table without lineage, after a first run)."""
    world = each(H)
    world.snap(H, 1)
    deliver_records(world, H)
    world.snap(H, 3)
    world.snap(H, 2)
    assert world.answers[-1].reason == IN_ORDER
    deliver_records(world, H, 2)  # 3's records
    assert world.claimed() == [[1], [2], [3]]  # 2 was known when 3 would have run: it runs first
    deliver_records(world, H)  # 2's own record, late: nothing more
    assert world.claimed() == [[1], [2], [3]] and world.skipped() == {}


def test_a_version_pushed_after_a_newer_one_ran_is_skipped_in_the_words_of_its_answer() -> None:
    """3 ran; 2 arrives, and 4 runs before 2's stream record is handled: 2 is skipped, and the skip says what the
    answer said (it arrived after 3), not what the cursor holds when the record is read."""
    world = each(H)
    world.snap(H, 3)
    deliver_records(world, H)
    world.snap(H, 2)
    said = "version 2 arrived after 3 and will not run for rule each"
    assert world.answers[-1].status is IngestStatus.STALE and world.answers[-1].reason == f"{STALE}; {said}"
    late = world.stream.pop(H)
    world.snap(H, 4)
    deliver_records(world, H)
    world.resolve(late)
    world.resolve(late)  # redelivered
    assert world.claimed() == [[3], [4]]
    assert world.skipped() == {2: said}
    assert [(s["snapshotId"], s["reason"]) for s in explain(world)["groups"][0]["skipped"]] == [(2, said)]


def test_a_version_accepted_before_a_newer_one_ran_runs_first_though_its_record_comes_after_the_run() -> None:
    """A table without lineage: 1, 2, 4 accepted and 3 pushed late; the resolver has handled only 1's event record
    when 1's run succeeds and wakes the group. 2's records are still to come: the group waits for them (the state's
    4 and the late 3 say nothing of 2) instead of stepping to 3 or 4, and runs 2, 3, 4 in order once they come."""
    world = each(H)
    world.snap(H, 1, 2, 4, 3)
    assert world.answers[-1].reason == IN_ORDER
    deliver_records(world, H, 1)  # 1's event record alone; the target runs 1, whose success wakes the group
    assert world.claimed() == [[1]]
    deliver_records(world, H)
    assert world.claimed() == [[1], [2], [3], [4]] and world.skipped() == {}


def test_a_version_whose_records_never_come_is_stepped_over_once_the_state_settled() -> None:
    """The same wait ends: with 2's records lost, the group goes on once the state has been unchanged for the
    settle time (the recheck the wait left)."""
    world = each(H)
    world.snap(H, 1, 2, 3)
    deliver_records(world, H, 1)
    world.stream[H] = []  # 2's and 3's records were lost
    assert world.claimed() == [[1]]
    world.sweep(16 * 60_000)
    assert world.claimed() == [[1], [3]]


class LateDuringClaim(InMemoryTriggerStore):
    """Runs ``during`` once, between the resolver's reads and its first claim: a push racing the claim."""

    def __init__(self) -> None:
        super().__init__()
        self.during: list[Callable[[], None]] = []

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        while self.during:
            self.during.pop(0)()
        return super().claim(trigger, cursor, expected)


def test_a_version_pushed_while_the_resolver_claims_a_newer_one_is_answered_as_it_then_happens() -> None:
    store = LateDuringClaim()
    world = each(H, triggers=store)
    world.snap(H, 1)
    deliver_records(world, H)
    world.snap(H, 3)
    store.during.append(lambda: world.snap(H, 2))  # 2 arrives after the resolver read the log, before it claims 3
    deliver_records(world, H, 2)  # the claim of 3 fails: the group is gathered again, with the same batch
    assert world.answers[-1].status is IngestStatus.STALE and world.answers[-1].reason == IN_ORDER
    assert world.claimed() == [[1], [2], [3]]
    deliver_records(world, H)  # 2's own record
    assert world.claimed() == [[1], [2], [3]] and world.skipped() == {}


def test_a_first_version_whose_claim_met_a_late_one_still_runs_first() -> None:
    """1 and 3 pushed; the resolver, handed 1's records, is about to claim 1 (the group's first trigger) when 2
    arrives: the claim fails, the group is gathered again with the same batch, and 1, 2, 3 run in order."""
    store = LateDuringClaim()
    world = each(H, triggers=store)
    world.snap(H, 1, 3)
    store.during.append(lambda: world.snap(H, 2))
    deliver_records(world, H, 2)
    assert world.answers[-1].reason == IN_ORDER
    deliver_records(world, H)
    assert world.claimed() == [[1], [2], [3]] and world.skipped() == {}


# --- the property ----------------------------------------------------------------------------------------------


@dataclass
class Oracle:
    """What must happen to each version, decided when its first push is answered: it runs (nothing newer had run
    then), or it arrived after ``late[v]`` ran and is skipped."""

    late: dict[int, int] = field(default_factory=dict)
    first: dict[int, tuple[IngestStatus, str | None]] = field(default_factory=dict)


Step = tuple[str, tuple[int, ...]]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple)),
        st.tuples(
            st.just("push during the next claim"), st.lists(st.integers(1, 6), min_size=1, max_size=2).map(tuple)
        ),
        st.tuples(st.just("deliver"), st.tuples(st.integers(1, 4))),
        st.tuples(st.just("redeliver"), st.just(())),
        st.tuples(st.just("run"), st.just(())),
    ),
    min_size=1,
    max_size=24,
)


ISSUE_33: list[Step] = [("push", (3, 2, 1)), ("deliver", (2,))]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(asset=st.sampled_from([A, H]), plan=steps, tail=st.permutations(list(range(1, 7))))
@example(asset=A, plan=ISSUE_33, tail=[1, 2, 3, 4, 5, 6])
@example(asset=H, plan=[("push", (1, 2, 4, 3)), ("deliver", (1,)), ("run", ())], tail=[1, 2, 3, 4, 5, 6])
@example(asset=H, plan=[("push", (1,)), ("deliver", (2,)), *ISSUE_33], tail=[6, 5, 4, 3, 2, 1])
@example(
    asset=H,
    plan=[("push", (1,)), ("deliver", (2,)), ("push", (3,)), ("push during the next claim", (2,))],
    tail=[1, 2, 3, 4, 5, 6],
)
def test_each_version_runs_once_in_order_unless_it_arrived_after_a_newer_one_ran(
    asset: str, plan: list[Step], tail: list[int]
) -> None:
    """Versions pushed in any order, in requests of any size, some while the resolver is between its reads and a
    claim, their stream records cut into batches anywhere and redelivered, the target finishing runs at any point:
    each version runs exactly once, in order, unless a newer one had run (been claimed) when it arrived; then it is
    skipped. Its first push's answer says which, in the words the skip and explain use."""
    store = LateDuringClaim()
    world = each(asset, triggers=store)
    oracle = Oracle()
    last: list[StateChange] = []

    def push(versions: tuple[int, ...] | list[int]) -> None:
        for sid in versions:
            ran = {p[0] for p in world.claimed()}
            before = len(world.answers)
            world.snap(asset, sid)
            if sid in oracle.first:
                continue
            answer = world.answers[before]
            oracle.first[sid] = (answer.status, answer.reason)
            newer = [v for v in ran if v is not None and v > sid]
            if newer and sid not in ran:
                oracle.late[sid] = max(newer)

    def run_once() -> None:
        woken = []
        for t in list(world.triggers.triggers.values()):
            if t.status is TriggerStatus.TRIGGERING:
                world.triggers.triggers[t.trigger_key] = t.model_copy(update={"status": TriggerStatus.SUCCEEDED})
                woken.append(Deferral(t.rule_id, t.group_id, 0))
        if woken:
            world.resolve(deferred=woken)

    for kind, args in plan:
        if kind == "push":
            push(args)
        elif kind == "push during the next claim":
            store.during.append(lambda versions=args: push(versions))
        elif kind == "deliver":
            pending = world.stream.get(asset, [])
            last = pending[: args[0]]
            world.stream[asset] = pending[len(last) :]
            world.resolve(last)
        elif kind == "redeliver":
            world.resolve(last)
        else:
            run_once()
    store.during.clear()
    push(tail)  # every version arrives at last
    world.deliver(asset)
    world.now = START + 16 * 60_000  # gaps that never filled have settled; claims refused by a late push, redone
    world.dispatch(world.resolve(deferred=world.sweeper()))

    claimed = [p[0] for p in world.claimed()]
    skipped = world.skipped()
    assert len(claimed) == len(set(claimed)), "a version ran twice"
    assert claimed == sorted(claimed), "versions ran out of order"
    assert set(claimed) == set(range(1, 7)) - set(oracle.late), "a version that arrived in time did not run"
    for sid, after in oracle.late.items():
        said = f"version {sid} arrived after {after} and will not run for rule each"
        assert skipped.get(sid) == said, f"version {sid} arrived after {after} ran"
        assert oracle.first[sid] == (IngestStatus.STALE, f"{STALE}; {said}")
    assert set(skipped) == set(oracle.late)
    for sid, (status, reason) in oracle.first.items():
        if sid not in oracle.late:
            assert status is IngestStatus.ACCEPTED or (status, reason) == (IngestStatus.STALE, IN_ORDER), sid
    listed = {s["snapshotId"]: s["reason"] for s in explain(world)["groups"][0]["skipped"]}
    assert listed == skipped


B = "paimon://lake/ods/b"
HOLDS = ("a member missing", "a quiet period", "a run window")


def _held_world(hold: str) -> World:
    members = [{"assetKey": A}] + ([{"assetKey": B}] if hold == "a member missing" else [])
    policy = {"quietPeriodSeconds": 600} if hold == "a quiet period" else {}
    held = rule("each", *members, mode="EACH_VERSION", **policy)
    if hold == "a run window":  # 2025-06-15 15:06 UTC: the window opens at 01:00 the next day
        group = held.groups[0].model_copy(update={"run_window": RunWindow(start="01:00", end="05:00")})
        held = held.model_copy(update={"groups": [group]})
    return World(held)


def _release(world: World, hold: str) -> None:
    if hold == "a member missing":
        world.snap(B, 10)
        world.deliver(B)
    else:
        world.sweep(10 * 3_600_000)  # past the quiet period, and to the window's opening


@settings(max_examples=examples(60), deadline=None)
@given(hold=st.sampled_from(HOLDS), cuts=st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_versions_that_arrive_before_the_first_run_all_run_in_order_whatever_held_it(
    hold: str, cuts: list[int]
) -> None:
    """Before this, an EACH_VERSION group that never ran and could not run when its versions arrived (a member
    missing, a quiet period, a run window) ran only the newest once it could: the others were never run nor skipped
    (the first trigger took the oldest version only of the batch that woke it). The batches' oldest snapshots are
    noted on the group's cursor now, and the first run starts there."""
    world = _held_world(hold)
    sid = 0
    for count in cuts:  # the versions arrive over several batches while the group is held
        world.snap(A, *range(sid + 1, sid + count + 1))
        sid += count
        world.deliver(A)
        assert world.claimed() == []
    _release(world, hold)
    expected = [[v, 10] if hold == "a member missing" else [v] for v in range(1, sid + 1)]
    assert world.claimed() == expected
    assert world.skipped() == {}


def test_a_rule_created_again_under_a_deleted_ones_id_starts_from_what_arrives_then() -> None:
    """A group that never ran keeps no notes past its rule's deletion (found in review: the re-created rule ran the
    versions the deleted one had seen arrive, weeks before it existed)."""
    each = rule("each", {"assetKey": A}, {"assetKey": B}, mode="EACH_VERSION")
    world = World(each)
    world.snap(A, 1, 2, 3)  # B has no version: the group cannot run; 1 is noted on its cursor
    world.deliver(A)
    assert world.triggers.cursors[("each", "g")].first_seen_of(A) == 1
    DeleteRule(world.rules, world.triggers).delete("each")
    world.now += 20 * 86_400_000
    world.snap(A, 4, 5, 6)
    world.snap(B, 10)
    world.deliver()
    world.rules.put_rule(each, world.now)  # created again (LATEST): the versions there now
    world.dispatch(world.resolve.evaluate(each))
    assert world.claimed() == [[6, 10]]


def test_a_late_snapshot_of_one_member_sets_no_floor_for_another() -> None:
    """Orders are an asset's own: a late Paimon id noted on the cursor does not read a Hudi member's log from that
    id (found in review: the group then ran Hudi versions logged before the rule existed)."""
    cursor = GroupCursor.initial("each", "g").arrived_late(2, A)
    assert (cursor.floor_of(A), cursor.floor_of(H)) == (1, None)
    legacy = GroupCursor.initial("each", "g").arrived_late(2)  # noted by 0.1.0, without its asset
    assert (legacy.floor_of(A), legacy.floor_of(H)) == (1, 1)
