"""The fake and the DynamoDB adapters of the trigger store and ledger, driven by the same generated operations:
every answer of one must be the other's (the strongest form of their contract). A sequence that tells them apart
is a bug in one of them; the adapter's behaviour is the truth unless it contradicts the port's docstrings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lakehook.domain.completion import CompletionRecord
from lakehook.domain.errors import LakehookError
from lakehook.domain.triggers import GroupCursor, RunState, Trigger, TriggerStatus
from tests.contracts.builders import T0, cursor_after, initial, request, rule, trigger
from tests.contracts.conftest import Backend
from tests.fakes.memory_rules import InMemoryTriggerStore
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

RULES = ("dwd", "dws")
SNAPSHOTS = (1, 2, 3)
OWNERS = ("d1", "d1", "d1", "d2")  # mostly one dispatcher, so its attempts get marked; now and then a second
REQUEST_KEYS = ("key-1", "key-2")
STATUSES = (None, TriggerStatus.TRIGGERING, TriggerStatus.SUCCEEDED, TriggerStatus.FAILED, TriggerStatus.SKIPPED)
RUN_STATES = (None, "queued", "running", "success")


def claim_of(rule_id: str, snapshot: int, skipped: bool, seq: int, at: int) -> Trigger:
    status = TriggerStatus.SKIPPED if skipped else TriggerStatus.TRIGGERING
    return trigger(snapshot, rule_id=rule_id, at=at, status=status, sequence=seq)


def replay_of(rule_id: str, snapshot: int, at: int) -> Trigger:
    return trigger(snapshot, rule_id=rule_id, at=at, replay_of=f"{rule_id}.g.original")


@dataclass
class World:
    """What one operation is applied to: a backend, and the clock the sequence has reached."""

    backend: Backend
    now: int
    key: str = ""  # the claim a keyed operation names (picked among the claims made, the same on both)


Op = tuple[str, Callable[[World], Any], int | None]  # a description, the call, the pick of the claim it names


def answer_of(call: Callable[[World], Any], world: World) -> Any:
    """The call's answer, or the domain error it raised (by kind and what it says the state is)."""
    try:
        return call(world)
    except LakehookError as exc:
        return (type(exc).__name__, getattr(exc, "status", None))


def claim_op(rule_id: str, snapshot: int, skipped: bool, read: str) -> Op:
    def call(w: World) -> Any:
        stored = w.backend.triggers.get_cursors([(rule_id, "g")]).get((rule_id, "g"))
        # a resolver that read the cursor as it is, or before anything was claimed, or one claim behind
        expected: GroupCursor | None = {"current": stored, "none": None}.get(read, stored)
        if read == "behind" and stored is not None:
            expected = stored.model_copy(update={"seq": stored.seq - 1})
        made = claim_of(rule_id, snapshot, skipped, (expected.seq if expected else 0) + 1, w.now)
        w.key = made.trigger_key  # the next operation on a claim mostly takes this one
        return w.backend.triggers.claim(made, cursor_after(expected or initial(rule_id), made), expected)

    return (
        f"claim {rule_id}/{snapshot} skipped={skipped} read={read}",
        call,
        None,
    )


def replay_op(rule_id: str, snapshot: int, once: str | None) -> Op:
    def call(w: World) -> Any:
        made = replay_of(rule_id, snapshot, w.now)
        w.key = made.trigger_key
        if once is None:
            return w.backend.triggers.put_replay(made)
        return w.backend.triggers.put_replay_once(made, request(once, made.trigger_key, at=w.now))

    return (f"replay {rule_id}/{snapshot} once={once}", call, None)


def keyed(name: str, make: Callable[[str], Callable[[World], Any]]) -> st.SearchStrategy[Op]:
    """An operation on one claim: which one is picked when it runs, among the claims made by then (or none)."""
    return st.integers(0, 20).map(lambda pick: (name, lambda w: make(w.key)(w), pick))


def picked(backend: Backend, pick: int, last: str) -> str:
    """The claim a pick names: mostly the one the operation before named or made (so a claim gets leased, then
    marked, then retried), else one of the fake's claims so far, or a key never claimed."""
    store = backend.triggers
    assert isinstance(store, InMemoryTriggerStore)
    made = sorted(store.triggers)
    if pick < 12 and last in made:
        return last
    return [*made, "dwd.g.absent"][pick % (len(made) + 1)]


def begin(owner: str, lease: int, redrive: bool) -> Callable[[str], Callable[[World], Any]]:
    return lambda k: lambda w: w.backend.ledger.begin_attempt(k, owner, w.now, lease, redrive)


def succeed(owner: str, run_state: str | None, uri: bool) -> Callable[[str], Callable[[World], Any]]:
    def make(k: str) -> Callable[[World], Any]:
        def call(w: World) -> Any:
            state = None if run_state is None else RunState(state=run_state, checked_at=w.now)
            return w.backend.ledger.mark_succeeded(k, owner, f"run-{k}", "s3://m/x.json" if uri else None, w.now, state)

        return call

    return make


def fail(
    owner: str, retryable: bool, next_in: int | None, since: int | None
) -> Callable[[str], Callable[[World], Any]]:
    def make(k: str) -> Callable[[World], Any]:
        def call(w: World) -> Any:
            nxt = None if next_in is None else w.now + next_in
            began = None if since is None else w.now - since
            return w.backend.ledger.mark_failed(k, owner, "HTTP 503", "http_503", retryable, None, w.now, nxt, began)

        return call

    return make


def attempt(owner: str, redrive: bool, outcome: str) -> Callable[[str], Callable[[World], Any]]:
    """A dispatcher's whole attempt: take the claim, then mark it as the target answered (if it was taken)."""

    def make(k: str) -> Callable[[World], Any]:
        def call(w: World) -> Any:
            taken = w.backend.ledger.begin_attempt(k, owner, w.now, 10_000, redrive)
            if taken is None:
                return None
            if outcome == "started":
                return taken, w.backend.ledger.mark_succeeded(k, owner, f"run-{k}", None, w.now + 1)
            retryable = outcome == "retryable"
            next_at = w.now + 100 if retryable else None
            return taken, w.backend.ledger.mark_failed(k, owner, outcome, outcome, retryable, None, w.now + 1, next_at)

        return call

    return make


def complete(status: str, digest: str) -> Callable[[str], Callable[[World], Any]]:
    outlets = ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/dwd/x", "snapshotId": 7},)
    return lambda k: lambda w: w.backend.ledger.record_completion(k, CompletionRecord(status, outlets, w.now, digest))


def run_state(state: str) -> Callable[[str], Callable[[World], Any]]:
    return lambda k: lambda w: w.backend.ledger.record_run_state(k, RunState(state=state, checked_at=w.now))


def listing(rule_id: str, status: TriggerStatus | None, limit: int) -> Op:
    def call(w: World) -> Any:
        pages: list[list[Trigger]] = []
        token: str | None = None
        for _ in range(20):
            page = w.backend.triggers.list_for_rule(rule_id, status, limit, token)
            assert len(page.items) <= limit
            pages.append(page.items)
            token = page.next_token
            if token is None:
                break
        return [t for items in pages for t in items]  # the pages may end differently: what they add up to

    return (f"list {rule_id} {status} limit={limit}", call, None)


def pending(stuck_ago: int, limit: int) -> Op:
    def call(w: World) -> Any:
        found = w.backend.ledger.pending(w.now, w.now - stuck_ago, limit)
        every = w.backend.ledger.pending(w.now, w.now - stuck_ago, 100)
        assert len(found) == min(limit, len(every)) and {e.trigger_key for e in found} <= {
            e.trigger_key for e in every
        }  # which ones: where it can tell
        return every

    return (f"pending stuck_ago={stuck_ago} limit={limit}", call, None)


def waiting(checked_ago: int) -> Op:
    return (f"waiting {checked_ago}", lambda w: w.backend.ledger.waiting_runs(w.now - checked_ago, 100), None)


def tick(ms: int) -> Op:
    def call(w: World) -> None:
        w.now += ms

    return (f"tick {ms}", call, None)


MAKING: st.SearchStrategy[Op] = st.one_of(
    st.builds(
        claim_op,
        st.sampled_from(RULES),
        st.sampled_from(SNAPSHOTS),
        st.sampled_from([False, False, False, True]),  # a skipped claim (a backfill's versions) now and then
        st.sampled_from(["current", "none", "behind"]),
    ),
    st.builds(replay_op, st.sampled_from(RULES), st.sampled_from(SNAPSHOTS), st.sampled_from([None, *REQUEST_KEYS])),
)
DISPATCHING: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.sampled_from(OWNERS), st.sampled_from([100, 10_000]), st.booleans()).flatmap(
        lambda a: keyed(f"begin {a}", begin(*a))
    ),
    st.tuples(st.sampled_from(OWNERS), st.sampled_from(RUN_STATES), st.booleans()).flatmap(
        lambda a: keyed(f"succeed {a}", succeed(*a))
    ),
    st.tuples(
        st.sampled_from(OWNERS), st.booleans(), st.sampled_from([None, 0, 500]), st.sampled_from([None, 50])
    ).flatmap(lambda a: keyed(f"fail {a}", fail(*a))),
    keyed("retry", lambda k: lambda w: w.backend.ledger.retry(k, w.now)),
    st.tuples(st.sampled_from(OWNERS), st.booleans(), st.sampled_from(["started", "retryable", "final"])).flatmap(
        lambda a: keyed(f"attempt {a}", attempt(*a))
    ),
)
ASKING: st.SearchStrategy[Op] = st.one_of(
    st.sampled_from(REQUEST_KEYS).map(
        lambda r: (f"request {r}", lambda w: w.backend.triggers.get_request(r, w.now), None)
    ),
    st.tuples(st.sampled_from(["SUCCEEDED", "FAILED"]), st.sampled_from(["a" * 64, "b" * 64])).flatmap(
        lambda a: keyed(f"complete {a}", complete(*a))
    ),
    st.sampled_from(RUN_STATES[1:]).flatmap(lambda s: keyed(f"run state {s}", run_state(s))),
    st.builds(listing, st.sampled_from(RULES), st.sampled_from(STATUSES), st.sampled_from([1, 2, 50])),
    st.builds(pending, st.sampled_from([0, 200, 5000]), st.sampled_from([1, 3, 100])),
    st.builds(waiting, st.sampled_from([0, 100])),
    st.sampled_from([1, 60, 150, 1000]).map(tick),
)
# weighted towards dispatching, so that claims get to be leased, marked, failed and retried
OPS = st.one_of(MAKING, DISPATCHING, DISPATCHING, ASKING)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=12, max_size=30))
def test_the_fake_answers_every_operation_as_dynamodb_does(
    both: Callable[[], tuple[Backend, Backend]], ops: list[Op]
) -> None:
    fake, adapter = both()
    worlds = [World(fake, T0), World(adapter, T0)]
    for w in worlds:
        for rule_id in RULES:
            w.backend.rules.put_rule(rule(rule_id), T0)
    for n, (what, call, pick) in enumerate(ops):
        if pick is not None:
            key = picked(fake, pick, worlds[1].key)
            for w in worlds:
                w.key = key
            what = f"{what} {worlds[0].key}"
        said, truth = (answer_of(call, w) for w in worlds)
        assert said == truth, f"step {n} ({what}): the fake answered {said!r}, DynamoDB {truth!r}"
        if pick is not None:
            key = worlds[0].key
            assert fake.ledger.get(key) == adapter.ledger.get(key), f"step {n} ({what}): claim {key} differs"
    store = fake.triggers
    assert isinstance(store, InMemoryTriggerStore)
    for key in sorted(store.triggers):
        entry = adapter.ledger.get(key)
        assert fake.ledger.get(key) == entry, f"claim {key} differs at the end"
        assert entry is not None
        event(f"a claim ends {entry.status}" + (" and reported" if entry.run_status else ""))
        assert fake.triggers.get(key) == adapter.triggers.get(key)
    refs = [(r, "g") for r in RULES]
    assert fake.triggers.get_cursors(refs) == adapter.triggers.get_cursors(refs)
