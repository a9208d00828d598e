"""The TriggerStore contract (ports.rules), on the fake and on DynamoDB: each trigger key is claimed once, the group
cursor is a compare-and-set, replays and request keys are once-only, listings are newest first and page."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.requests import REQUEST_RETENTION_SECONDS
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.ports.rules import MAX_CLAIMS_PER_TRANSACTION, Claim, ClaimOutcome, ClaimResult, RequestClaim
from tests.contracts.builders import T0, cursor_after, initial, request, trigger
from tests.contracts.conftest import Backend
from tests.hypothesis_profiles import examples
from tests.replay_choices import NAMES, SCALARS

pytestmark = pytest.mark.integration


def claim_next(backend: Backend, snapshot: int, expected: GroupCursor | None) -> tuple[Trigger, ClaimResult]:
    """Claim ``snapshot`` as a resolver that read the group's cursor as ``expected`` does."""
    claimed = trigger(snapshot, sequence=(expected.seq if expected else 0) + 1)
    base = expected or initial(claimed.rule_id, claimed.group_id)
    return claimed, backend.triggers.claim(claimed, cursor_after(base, claimed), expected)


def test_a_claim_stores_the_trigger_and_moves_the_cursor(backend: Backend) -> None:
    claimed, result = claim_next(backend, 1, None)

    assert result.outcome is ClaimOutcome.CLAIMED
    assert backend.triggers.get(claimed.trigger_key) == claimed
    cursors = backend.triggers.get_cursors([("dwd", "g"), ("dwd", "other")])
    assert list(cursors) == [("dwd", "g")]
    assert cursors["dwd", "g"] == result.cursor
    assert cursors["dwd", "g"].seq == 1 and cursors["dwd", "g"].trigger_key == claimed.trigger_key


def test_a_partitions_run_in_order_reads_back_as_it_was_claimed(backend: Backend) -> None:
    """An EACH_VERSION partition's run keeps its partition and ``inOrder`` (its SUCCEEDED wakes the resolver)."""
    claimed = trigger(1).model_copy(update={"partition": "dt=2026-01-01", "in_order": True})
    cursor = GroupCursor.initial("dwd", "g", "dt=2026-01-01")
    assert backend.triggers.claim(claimed, cursor.after(claimed, {}), None).outcome is ClaimOutcome.CLAIMED
    assert backend.triggers.get(claimed.trigger_key) == claimed
    other, _ = claim_next(backend, 2, None)
    wanted = [claimed.trigger_key, other.trigger_key, "dwd.g.absent", claimed.trigger_key]
    assert backend.triggers.get_many(wanted) == {claimed.trigger_key: claimed, other.trigger_key: other}
    assert backend.triggers.get_many([]) == {}


def test_a_trigger_key_is_claimed_once(backend: Backend) -> None:
    claimed, first = claim_next(backend, 1, None)
    assert first.cursor is not None

    # the same versions again, even with the cursor as it now is: the key is taken
    again = backend.triggers.claim(claimed, cursor_after(first.cursor, claimed), first.cursor)
    # and with the cursor as it was before the first claim: the key is still the reason, the cursor told
    stale = backend.triggers.claim(claimed, cursor_after(initial(), claimed), None)

    assert again.outcome is ClaimOutcome.DUPLICATE
    assert stale == ClaimResult(ClaimOutcome.DUPLICATE, first.cursor)
    assert backend.triggers.get_cursors([("dwd", "g")])["dwd", "g"] == first.cursor


def test_a_claim_on_a_moved_cursor_writes_nothing_and_answers_the_cursor(backend: Backend) -> None:
    _, first = claim_next(backend, 1, None)
    second, moved = claim_next(backend, 2, None)  # a resolver that read the group before the first claim
    seq0 = claim_next(backend, 3, GroupCursor.initial("dwd", "g"))[1]  # seq 0 means "must not exist" too

    assert moved == ClaimResult(ClaimOutcome.CURSOR_MOVED, first.cursor)
    assert seq0 == ClaimResult(ClaimOutcome.CURSOR_MOVED, first.cursor)
    assert backend.triggers.get(second.trigger_key) is None
    assert backend.triggers.get_cursors([("dwd", "g")])["dwd", "g"] == first.cursor


def test_a_claim_on_an_older_cursor_writes_nothing_and_answers_the_cursor(backend: Backend) -> None:
    """A resolver that read the cursor one claim ago (seq 1 when it is at 2) is refused: the cursor condition is
    equality, not "at least" (a stale cursor accepted would claim a second run over versions already claimed)."""
    _, first = claim_next(backend, 1, None)
    _, second = claim_next(backend, 2, first.cursor)
    assert second.outcome is ClaimOutcome.CLAIMED and second.cursor is not None and second.cursor.seq == 2

    stale, refused = claim_next(backend, 3, first.cursor)

    assert refused == ClaimResult(ClaimOutcome.CURSOR_MOVED, second.cursor)
    assert backend.triggers.get(stale.trigger_key) is None
    assert backend.triggers.get_cursors([("dwd", "g")])["dwd", "g"] == second.cursor


def test_claims_chain_on_the_cursor_they_read(backend: Backend) -> None:
    expected: GroupCursor | None = None
    for snapshot in range(1, 5):
        _, result = claim_next(backend, snapshot, expected)
        assert result.outcome is ClaimOutcome.CLAIMED
        expected = result.cursor
    assert expected is not None and expected.seq == 4
    assert backend.triggers.get_cursors([("dwd", "g")]) == {("dwd", "g"): expected}


def test_a_late_snapshot_noted_on_a_cursor_refuses_the_claims_read_before_it(backend: Backend) -> None:
    """admit_late: one atomic note per group, answering the cursor it left (created for a group that never
    triggered); a claim over the cursor as read before the note fails, one over the noted cursor succeeds, keeps the
    count and drops the orders noted (its plan read the log from them)."""
    ref = ("dwd", "g")
    noted = backend.triggers.admit_late([ref], 2)[ref]
    assert (noted.seq, noted.late_seq, noted.late_orders, noted.trigger_key) == (0, 1, (2,), None)
    assert backend.triggers.admit_late([ref, ("dwd", "h")], 1) == {
        ref: noted.model_copy(update={"late_seq": 2, "late_orders": (1, 2)}),
        ("dwd", "h"): GroupCursor.initial("dwd", "h").arrived_late(1),
    }
    read = backend.triggers.get_cursors([ref])[ref]
    assert (read.seq, read.late_seq, read.late_orders) == (0, 2, (1, 2))

    _, before = claim_next(backend, 3, None)  # a resolver that read the group before any note
    _, once = claim_next(backend, 3, noted)  # one that read it after the first note only
    assert before == ClaimResult(ClaimOutcome.CURSOR_MOVED, read)
    assert once == ClaimResult(ClaimOutcome.CURSOR_MOVED, read)

    claimed, won = claim_next(backend, 1, read)
    assert won.outcome is ClaimOutcome.CLAIMED
    stored = backend.triggers.get_cursors([ref])[ref]
    assert stored == won.cursor and (stored.seq, stored.late_seq, stored.late_orders) == (1, 2, ())
    assert stored.trigger_key == claimed.trigger_key

    again = backend.triggers.admit_late([ref], 0)[ref]  # a late one below the cursor: noted, the run kept
    assert (again.seq, again.late_seq, again.trigger_key) == (1, 3, claimed.trigger_key)
    assert claim_next(backend, 2, stored)[1] == ClaimResult(ClaimOutcome.CURSOR_MOVED, again)
    assert claim_next(backend, 2, again)[1].outcome is ClaimOutcome.CLAIMED


def test_snapshots_seen_before_the_first_trigger_are_noted_per_asset_and_refuse_claims_read_before(
    backend: Backend,
) -> None:
    """note_first_seen: one atomic note per group, per asset its oldest order seen (the cursor created for a group
    that never triggered); the note counts as a late one does (a claim read before it fails); a claim clears them."""
    ref = ("dwd", "g")
    a, b = "paimon://lake/ods/a", "hudi://lake/ods/b"
    noted = backend.triggers.note_first_seen(ref, {a: 5, b: 20261207101500000})
    assert (noted.seq, noted.late_seq, noted.trigger_key) == (0, 1, None)
    assert (noted.first_seen_of(a), noted.first_seen_of(b), noted.floor_of(a), noted.floor_of(b)) == (
        5,
        20261207101500000,
        4,
        20261207101499999,
    )
    again = backend.triggers.note_first_seen(ref, {a: 3})
    assert (again.late_seq, again.first_seen_of(a), again.first_seen_of(b)) == (2, 3, 20261207101500000)
    read = backend.triggers.get_cursors([ref])[ref]
    assert read == again

    assert claim_next(backend, 3, noted)[1] == ClaimResult(ClaimOutcome.CURSOR_MOVED, read)  # read before the note
    _, won = claim_next(backend, 3, read)
    assert won.outcome is ClaimOutcome.CLAIMED
    stored = backend.triggers.get_cursors([ref])[ref]
    assert stored == won.cursor and stored.first_seen == () and stored.floor_of(a) is None


def test_notes_are_kept_per_asset_and_a_deleted_rules_unstarted_cursors_are_forgotten(backend: Backend) -> None:
    """admit_late with its asset notes the order under that asset too (a floor for that member only);
    forget_unstarted drops a cursor only notes made, and keeps one a claim moved."""
    noted, run = ("dwd", "g"), ("dwd", "h")
    a = "paimon://lake/ods/a"
    late = backend.triggers.admit_late([noted], 7, a)[noted]
    assert (late.late_orders, late.first_seen_of(a), late.floor_of(a), late.floor_of("hudi://lake/ods/h")) == (
        (7,),
        7,
        6,
        None,
    )
    assert backend.triggers.get_cursors([noted])[noted] == late
    claimed = trigger(5, group_id="h")
    [made] = backend.triggers.claim_many([Claim(claimed, cursor_after(initial(*run), claimed), None)])
    assert made.outcome is ClaimOutcome.CLAIMED
    backend.triggers.forget_unstarted([noted, run, ("dwd", "never")])
    assert backend.triggers.get_cursors([noted, run]) == {run: made.cursor}


def test_a_replay_is_put_once_and_moves_no_cursor(backend: Backend) -> None:
    replay = trigger(7, replay_of="dwd.g.original")

    assert backend.triggers.put_replay(replay) is True
    assert backend.triggers.put_replay(replay) is False
    assert backend.triggers.get(replay.trigger_key) == replay
    assert backend.triggers.get_cursors([("dwd", "g")]) == {}


@settings(
    max_examples=examples(10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.one_of(st.none(), st.text(min_size=1, max_size=20)), st.one_of(st.none(), st.dictionaries(NAMES, SCALARS)))
def test_a_replays_choices_read_back_exactly_as_claimed(
    backend: Backend, start_from: str | None, variables: dict[str, Any] | None
) -> None:
    """Floats, nulls and text alike: what the dispatcher reads (and sends on every attempt) is what was chosen."""
    replay = trigger(7, replay_of="dwd.g.original").model_copy(
        update={"start_from": start_from, "variables": variables, "trigger_key": f"dwd.g.{uuid.uuid4().hex[:24]}"}
    )
    assert backend.triggers.put_replay(replay) is True
    assert backend.triggers.get(replay.trigger_key) == replay


def test_a_request_key_claims_one_run_and_keeps_its_first_answer(backend: Backend) -> None:
    first, other = trigger(1, replay_of="x"), trigger(2, replay_of="x")
    answer = request("key-1", first.trigger_key)

    assert backend.triggers.put_replay_once(first, answer) == RequestClaim(True)
    # the same key again (another request racing, or a retry): nothing written, the first answer back
    repeat = backend.triggers.put_replay_once(other, request("key-1", other.trigger_key, at=T0 + 5))

    assert repeat == RequestClaim(False, answer)
    assert backend.triggers.get(other.trigger_key) is None
    assert backend.triggers.get_request("key-1", T0 + 10) == answer
    assert backend.triggers.get_request("key-2", T0 + 10) is None


def test_a_request_key_on_a_taken_trigger_key_writes_neither(backend: Backend) -> None:
    taken = trigger(1, replay_of="x")
    assert backend.triggers.put_replay(taken)

    assert backend.triggers.put_replay_once(taken, request("key-1", taken.trigger_key)) == RequestClaim(False)
    assert backend.triggers.get_request("key-1", T0) is None


def test_a_request_key_expires_and_may_be_used_afresh(backend: Backend) -> None:
    first, later = trigger(1, replay_of="x"), trigger(2, replay_of="x")
    assert backend.triggers.put_replay_once(first, request("key-1", first.trigger_key)).claimed
    expiry_ms = (T0 // 1000 + REQUEST_RETENTION_SECONDS) * 1000

    assert backend.triggers.get_request("key-1", expiry_ms - 1000) is not None
    assert backend.triggers.get_request("key-1", expiry_ms) is None
    fresh = request("key-1", later.trigger_key, at=expiry_ms)
    assert backend.triggers.put_replay_once(later, fresh) == RequestClaim(True)
    assert backend.triggers.get_request("key-1", expiry_ms) == fresh


def test_a_rules_triggers_are_listed_newest_first_whatever_order_they_were_written_in(backend: Backend) -> None:
    # a replay written now may be dated before a claim written earlier (and the listing orders by date)
    written = [trigger(n, at=T0 + at, replay_of="x") for n, at in ((1, 300), (2, 100), (3, 500), (4, 200))]
    for t in written:
        assert backend.triggers.put_replay(t)
    assert backend.triggers.put_replay(trigger(9, rule_id="dws", at=T0 + 400, replay_of="x"))

    listed = backend.triggers.list_for_rule("dwd").items

    assert [t.created_at - T0 for t in listed] == [500, 300, 200, 100]


@pytest.mark.parametrize("limit", [1, 2, 3, 7])
def test_pages_of_a_listing_add_up_to_the_listing(backend: Backend, limit: int) -> None:
    for n in range(1, 8):
        written = TriggerStatus.SKIPPED if n % 3 == 0 else TriggerStatus.TRIGGERING
        assert backend.triggers.put_replay(trigger(n, at=T0 + n, status=written, replay_of="x"))

    for status in (None, TriggerStatus.TRIGGERING, TriggerStatus.SKIPPED):
        whole = backend.triggers.list_for_rule("dwd", status, limit=100).items
        paged: list[Trigger] = []
        token: str | None = None
        for _ in range(20):
            page = backend.triggers.list_for_rule("dwd", status, limit=limit, next_token=token)
            assert len(page.items) <= limit
            paged.extend(page.items)
            token = page.next_token
            if token is None:
                break
        assert paged == whole
        assert [t.created_at for t in whole] == sorted((t.created_at for t in whole), reverse=True)
        assert all(status is None or t.status is status for t in whole)
    assert len(backend.triggers.list_for_rule("dwd", limit=100).items) == 7


def test_a_token_from_another_listing_is_a_validation_error(backend: Backend) -> None:
    for n in range(1, 4):
        assert backend.triggers.put_replay(trigger(n, at=T0 + n, replay_of="x"))
        assert backend.triggers.put_replay(trigger(n, rule_id="dws", at=T0 + n, replay_of="x"))
    token = backend.triggers.list_for_rule("dwd", limit=1).next_token
    assert token is not None

    for foreign in ("not a token", "eyJhIjoiYiJ9", token + "x"):
        with pytest.raises(ValidationError):
            backend.triggers.list_for_rule("dwd", next_token=foreign)
    with pytest.raises(ValidationError):
        backend.triggers.list_for_rule("dws", next_token=token)


# --- several claims at once (claim_many) ------------------------------------------------------------------------


def planned(snapshot: int, expected: GroupCursor | None, group_id: str = "g") -> Claim:
    """The claim of ``snapshot`` a resolver that read the group's cursor as ``expected`` makes."""
    made = trigger(snapshot, group_id=group_id, sequence=(expected.seq if expected else 0) + 1)
    base = expected or initial(made.rule_id, group_id)
    return Claim(made, cursor_after(base, made), expected)


def test_claims_made_together_answer_each_as_alone_and_the_failed_ones_write_nothing(backend: Backend) -> None:
    """A batch in which one claim's key is taken and another's cursor moved: those two are answered as
    :meth:`claim` answers them and write nothing, and every other claim of the batch is made."""
    taken, taken_result = claim_next(backend, 1, None)  # group g: the key of snapshot 1 is claimed
    assert taken_result.cursor is not None
    moved = backend.triggers.claim_many([planned(5, None, "h")])[0].cursor  # group h: moved once already
    batch = [
        planned(2, None, "a"),
        Claim(taken, cursor_after(taken_result.cursor, taken), taken_result.cursor),  # the same key again
        planned(2, None, "b"),
        planned(6, None, "h"),  # read h before its claim
        planned(2, None, "c"),
    ]

    answers = backend.triggers.claim_many(batch)

    assert [a.outcome for a in answers] == [
        ClaimOutcome.CLAIMED,
        ClaimOutcome.DUPLICATE,
        ClaimOutcome.CLAIMED,
        ClaimOutcome.CURSOR_MOVED,
        ClaimOutcome.CLAIMED,
    ]
    assert answers[3] == ClaimResult(ClaimOutcome.CURSOR_MOVED, moved)
    assert [a.cursor for a in answers[::2]] == [c.cursor for c in batch[::2]]
    assert backend.triggers.get(batch[3].trigger.trigger_key) is None
    cursors = backend.triggers.get_cursors([("dwd", g) for g in "abcgh"])
    assert cursors == {
        ("dwd", "a"): batch[0].cursor,
        ("dwd", "b"): batch[2].cursor,
        ("dwd", "c"): batch[4].cursor,
        ("dwd", "g"): taken_result.cursor,
        ("dwd", "h"): moved,
    }
    assert all(backend.triggers.get(c.trigger.trigger_key) == c.trigger for c in batch[::2])


def test_claims_on_one_cursor_in_one_batch_chain_in_order(backend: Backend) -> None:
    """A claim that requires the cursor an earlier claim of the batch leaves is made after it (never in one
    transaction with it); the same key twice is claimed once."""
    first = planned(1, None)
    second = planned(2, first.cursor)
    again = planned(1, None, "other")
    twice = Claim(again.trigger, again.cursor, again.expected)

    answers = backend.triggers.claim_many([first, second, again, twice])

    assert [a.outcome for a in answers[:3]] == [ClaimOutcome.CLAIMED] * 3
    assert answers[3].outcome is ClaimOutcome.DUPLICATE
    assert backend.triggers.get_cursors([("dwd", "g")])["dwd", "g"] == second.cursor


def test_more_claims_than_one_transaction_takes_are_all_made(backend: Backend) -> None:
    batch = [planned(1, None, f"day-{n:03d}") for n in range(2 * MAX_CLAIMS_PER_TRANSACTION + 7)]
    batch[60] = planned(1, GroupCursor.initial("dwd", "day-060").model_copy(update={"seq": 4}), "day-060")

    answers = backend.triggers.claim_many(batch)

    assert [n for n, a in enumerate(answers) if a.outcome is not ClaimOutcome.CLAIMED] == [60]
    assert answers[60] == ClaimResult(ClaimOutcome.CURSOR_MOVED, None)  # the cursor does not exist
    stored = backend.triggers.get_cursors([c.ref for c in batch])
    assert stored == {c.ref: c.cursor for n, c in enumerate(batch) if n != 60}


GROUPS = ("a", "b", "c")


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(st.tuples(st.sampled_from(GROUPS), st.integers(1, 3)), max_size=4),
    batch=st.lists(
        st.tuples(st.sampled_from(GROUPS), st.integers(1, 3), st.sampled_from(["current", "none", "chained"])),
        max_size=8,
    ),
)
def test_claims_made_together_answer_as_the_same_claims_made_one_by_one(
    fresh_backend: Callable[[], Backend],
    before: list[tuple[str, int]],
    batch: list[tuple[str, int, str]],
) -> None:
    """Whatever the claims (on one cursor or several, a key taken before or twice in the batch, a cursor read as
    it is, before any claim, or as an earlier claim of the batch leaves it), claim_many answers and stores what
    the same claims made one after the other with claim do."""
    together, alone = fresh_backend(), fresh_backend()
    for store in (together, alone):
        for group, snapshot in before:
            store.triggers.claim_many(
                [planned(snapshot, store.triggers.get_cursors([("dwd", group)]).get(("dwd", group)), group)]
            )
    read = together.triggers.get_cursors([("dwd", g) for g in GROUPS])
    claims: list[Claim] = []
    leaves: dict[str, GroupCursor] = {}
    for group, snapshot, how in batch:
        expected = {"current": read.get(("dwd", group)), "none": None}.get(
            how, leaves.get(group, read.get(("dwd", group)))
        )
        claim = planned(snapshot, expected, group)
        leaves[group] = claim.cursor
        claims.append(claim)

    answers = together.triggers.claim_many(claims)

    assert answers == [alone.triggers.claim(c.trigger, c.cursor, c.expected) for c in claims]
    refs = [("dwd", g) for g in GROUPS]
    assert together.triggers.get_cursors(refs) == alone.triggers.get_cursors(refs)
    keys = {c.trigger.trigger_key for c in claims}
    assert {k: together.triggers.get(k) for k in keys} == {k: alone.triggers.get(k) for k in keys}
