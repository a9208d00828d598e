"""The TriggerLedger contract (ports.dispatch), on the fake and on DynamoDB, over the claims the resolver's trigger
store makes: leases, marks only by the lease holder, re-drives only when due, a retry by hand, the first completion
wins, and the claims the compensator and the run-state check are given."""

from __future__ import annotations

import pytest

from lakehook.domain.completion import CompletionRecord, RecordOutcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.triggers import FailureKind, RunState, Trigger, TriggerNotRetryableError, TriggerStatus
from tests.contracts.builders import T0, cursor_after, initial, rule, trigger
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

LEASE = 300_000
URI = "s3://lakehook-manifests/manifests/k.json"


def claimed(backend: Backend, snapshot: int = 1, at: int = T0, rule_id: str = "dwd") -> Trigger:
    """A claim as the resolver makes it (its rule stored, as the compensator finds rules by the rule index)."""
    if backend.rules.get_rule(rule_id) is None:
        backend.rules.put_rule(rule(rule_id), T0)
    made = trigger(snapshot, rule_id=rule_id, at=at, sequence=snapshot)
    before = backend.triggers.get_cursors([(rule_id, "g")]).get((rule_id, "g"))
    result = backend.triggers.claim(made, cursor_after(before or initial(rule_id), made), before)
    assert result.cursor is not None and result.cursor.trigger_key == made.trigger_key
    return made


def failed(backend: Backend, key: str, retryable: bool, at: int = T0, next_at: int | None = None) -> None:
    assert backend.ledger.begin_attempt(key, "d1", at, LEASE) is not None
    assert backend.ledger.mark_failed(key, "d1", "HTTP 503", "http_503", retryable, URI, at + 1, next_at)


def record(status: str = "SUCCEEDED", at: int = T0 + 50, digest: str = "a" * 64) -> CompletionRecord:
    outlets = ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/dwd/x", "snapshotId": 7},)
    return CompletionRecord(run_status=status, outlets=outlets, completed_at=at, digest=digest)


def test_the_ledger_reads_the_resolvers_claim(backend: Backend) -> None:
    made = claimed(backend)

    entry = backend.ledger.get(made.trigger_key)

    assert entry is not None and entry.trigger == made
    assert (entry.status, entry.failure, entry.lease_owner, entry.attempts_base) == (
        TriggerStatus.TRIGGERING,
        None,
        None,
        0,
    )
    assert entry.is_open()
    assert backend.ledger.get("dwd.g.absent") is None


def test_an_attempt_is_counted_and_leased_to_one_dispatcher(backend: Backend) -> None:
    key = claimed(backend).trigger_key

    first = backend.ledger.begin_attempt(key, "d1", T0 + 10, LEASE)
    other = backend.ledger.begin_attempt(key, "d2", T0 + 20, LEASE)
    own = backend.ledger.begin_attempt(key, "d1", T0 + 30, LEASE)  # the holder's redelivered record
    expired = backend.ledger.begin_attempt(key, "d2", T0 + 30 + LEASE + 1, LEASE)

    assert first is not None and (first.number, first.counted, first.previous_attempt_at) == (1, 1, None)
    assert first.before.trigger.attempts == 0
    assert other is None
    assert own is not None and (own.number, own.previous_attempt_at) == (2, T0 + 10)
    assert expired is not None and expired.number == 3 and expired.before.lease_owner == "d1"
    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.trigger.attempts, entry.lease_owner, entry.lease_until) == (3, "d2", T0 + 30 + 2 * LEASE + 1)
    assert (entry.last_attempt_at, entry.trigger.updated_at) == (T0 + 30 + LEASE + 1,) * 2
    assert backend.ledger.begin_attempt("dwd.g.absent", "d1", T0, LEASE) is None


def test_only_the_lease_holder_marks_and_a_mark_is_final(backend: Backend) -> None:
    key = claimed(backend).trigger_key
    assert not backend.ledger.mark_succeeded(key, "d1", "run-1", URI, T0)  # no attempt taken yet
    assert backend.ledger.begin_attempt(key, "d1", T0 + 10, LEASE) is not None

    assert not backend.ledger.mark_succeeded(key, "d2", "run-2", URI, T0 + 20)
    assert not backend.ledger.mark_failed(key, "d2", "no", "http_400", False, URI, T0 + 20)
    waiting = RunState(state="queued", detail="the DAG is paused", checked_at=T0 + 30)
    assert backend.ledger.mark_succeeded(key, "d1", "run-1", URI, T0 + 30, waiting)
    assert not backend.ledger.mark_succeeded(key, "d1", "run-3", URI, T0 + 40)
    assert not backend.ledger.mark_failed(key, "d1", "late", "timeout", True, URI, T0 + 40)

    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.status, entry.trigger.target_run_id, entry.trigger.manifest_uri) == (
        TriggerStatus.SUCCEEDED,
        "run-1",
        URI,
    )
    assert (entry.lease_owner, entry.lease_until, entry.trigger.run_state, entry.trigger.updated_at) == (
        None,
        None,
        waiting,
        T0 + 30,
    )
    assert not entry.is_open()
    assert backend.ledger.begin_attempt(key, "d1", T0 + 50, LEASE, redrive=True) is None


def test_a_retryable_failure_is_taken_again_only_by_a_redrive_when_due(backend: Backend) -> None:
    key = claimed(backend).trigger_key
    failed(backend, key, retryable=True, at=T0, next_at=T0 + 1000)

    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.status, entry.failure, entry.next_attempt_at, entry.failure_code) == (
        TriggerStatus.FAILED,
        FailureKind.RETRYABLE,
        T0 + 1000,
        "http_503",
    )
    assert (entry.trigger.reason, entry.trigger.failing_since, entry.trigger.next_attempt_at) == (
        "HTTP 503",
        T0 + 1,
        T0 + 1000,
    )
    assert entry.lease_owner is None and entry.is_open()

    assert backend.ledger.begin_attempt(key, "d1", T0 + 2000, LEASE) is None  # a stream redelivery: not FAILED
    assert backend.ledger.begin_attempt(key, "c", T0 + 999, LEASE, redrive=True) is None  # not due yet
    again = backend.ledger.begin_attempt(key, "c", T0 + 1000, LEASE, redrive=True)

    assert again is not None and again.number == 2 and again.before.failure is FailureKind.RETRYABLE
    now = backend.ledger.get(key)
    assert now is not None
    assert (now.status, now.failure, now.retryable, now.next_attempt_at, now.lease_owner) == (
        TriggerStatus.TRIGGERING,
        None,
        None,
        None,
        "c",
    )
    assert (now.trigger.failure, now.trigger.next_attempt_at, now.trigger.failing_since) == (None, None, None)


def test_failing_since_is_kept_across_failures_of_one_code(backend: Backend) -> None:
    key = claimed(backend).trigger_key
    failed(backend, key, retryable=True, at=T0)
    assert backend.ledger.begin_attempt(key, "c", T0 + 10, LEASE, redrive=True) is not None
    assert backend.ledger.mark_failed(key, "c", "HTTP 503", "http_503", True, None, T0 + 20, T0 + 30, T0 + 1)

    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.failing_since, entry.trigger.failing_since, entry.trigger.manifest_uri) == (T0 + 1, T0 + 1, URI)


def test_a_final_failure_is_never_taken_again_by_itself(backend: Backend) -> None:
    key = claimed(backend).trigger_key
    failed(backend, key, retryable=False, at=T0, next_at=T0 + 5)  # a final failure has no next attempt

    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.failure, entry.next_attempt_at, entry.trigger.next_attempt_at) == (FailureKind.FINAL, None, None)
    assert not entry.is_open()
    assert backend.ledger.begin_attempt(key, "c", T0 + 10**9, LEASE, redrive=True) is None
    assert backend.ledger.pending(T0 + 10**6, T0 + 10**6, 10) == []


def test_a_retry_by_hand_puts_a_failed_claim_back_and_restarts_its_budget(backend: Backend) -> None:
    key = claimed(backend).trigger_key
    failed(backend, key, retryable=False, at=T0)

    retried = backend.ledger.retry(key, T0 + 100)

    assert (retried.status, retried.retries, retried.attempts, retried.updated_at) == (
        TriggerStatus.TRIGGERING,
        1,
        1,
        T0 + 100,
    )
    assert (retried.failure, retried.failing_since, retried.next_attempt_at) == (None, None, None)
    entry = backend.ledger.get(key)
    assert entry is not None and entry.trigger == retried
    assert (entry.attempts_base, entry.lease_owner, entry.retryable) == (1, None, None)
    attempt = backend.ledger.begin_attempt(key, "d1", T0 + 200, LEASE)
    assert attempt is not None and (attempt.number, attempt.counted) == (2, 1)
    with pytest.raises(TriggerNotRetryableError) as refused:
        backend.ledger.retry(key, T0 + 300)
    assert refused.value.status is TriggerStatus.TRIGGERING
    with pytest.raises(NotFoundError):
        backend.ledger.retry("dwd.g.absent", T0)


def test_the_first_completion_wins(backend: Backend) -> None:
    key = claimed(backend).trigger_key  # a run may report before the dispatcher marked the claim
    first = record()

    assert backend.ledger.record_completion(key, first) == (RecordOutcome.RECORDED, first)
    assert backend.ledger.record_completion(key, record(at=T0 + 99)) == (RecordOutcome.SAME, first)
    other = record("FAILED", digest="b" * 64)
    assert backend.ledger.record_completion(key, other) == (RecordOutcome.CONFLICT, first)
    assert backend.ledger.record_completion("dwd.g.absent", first) == (RecordOutcome.NO_RUN, None)

    entry = backend.ledger.get(key)
    assert entry is not None
    assert (entry.run_status, entry.completed_at, entry.trigger.run_status, entry.trigger.outlets) == (
        "SUCCEEDED",
        T0 + 50,
        "SUCCEEDED",
        first.outlets,
    )
    assert entry.trigger.status is TriggerStatus.TRIGGERING  # the report does not mark the claim


def test_a_skipped_claim_has_no_run_to_complete(backend: Backend) -> None:
    backend.rules.put_rule(rule("dwd"), T0)
    skipped = trigger(1, status=TriggerStatus.SKIPPED)
    assert backend.triggers.claim(skipped, cursor_after(initial(), skipped), None).cursor is not None

    assert backend.ledger.record_completion(skipped.trigger_key, record()) == (RecordOutcome.NO_RUN, None)
    assert backend.ledger.begin_attempt(skipped.trigger_key, "d1", T0, LEASE, redrive=True) is None
    with pytest.raises(TriggerNotRetryableError):
        backend.ledger.retry(skipped.trigger_key, T0)


def test_pending_is_stuck_unleased_claims_and_due_retryable_failures_oldest_first(backend: Backend) -> None:
    stuck = claimed(backend, 1, at=T0 + 300).trigger_key
    leased = claimed(backend, 2, at=T0 + 100).trigger_key
    fresh = claimed(backend, 3, at=T0 + 9000).trigger_key  # changed after the stuck bound
    due = claimed(backend, 1, at=T0 + 200, rule_id="dws").trigger_key
    later = claimed(backend, 2, at=T0 + 50, rule_id="dws").trigger_key
    final = claimed(backend, 3, at=T0 + 60, rule_id="dws").trigger_key
    assert backend.ledger.begin_attempt(leased, "d1", T0 + 400, 10_000) is not None
    failed(backend, due, retryable=True, at=T0 + 500, next_at=T0 + 5000)
    failed(backend, later, retryable=True, at=T0 + 500, next_at=T0 + 6001)
    failed(backend, final, retryable=False, at=T0 + 500)

    found = backend.ledger.pending(T0 + 6000, T0 + 1000, 10)

    assert [e.trigger_key for e in found] == [due, stuck]  # by their claims' dates
    assert [e.trigger_key for e in backend.ledger.pending(T0 + 6000, T0 + 1000, 1)] in ([due], [stuck])
    assert {e.trigger_key for e in backend.ledger.pending(T0 + 20_000, T0 + 10_000, 10)} == {
        stuck,
        leased,
        fresh,
        due,
        later,
    }


def test_waiting_runs_are_started_claims_the_target_last_saw_waiting(backend: Backend) -> None:
    keys = [claimed(backend, n, at=T0 + n).trigger_key for n in range(1, 6)]
    states = [
        RunState(state="queued", checked_at=T0 + 100),
        RunState(state="running", checked_at=T0 + 100),
        RunState(state="success", checked_at=T0 + 100),
        RunState(state="queued", checked_at=T0 + 900),  # asked lately
        None,
    ]
    for key, state in zip(keys, states, strict=True):
        assert backend.ledger.begin_attempt(key, "d1", T0 + 10, LEASE) is not None
        assert backend.ledger.mark_succeeded(key, "d1", f"run-{key}", URI, T0 + 20, state)
    assert backend.ledger.record_completion(keys[1], record())[0] is RecordOutcome.RECORDED  # reported its end

    assert [e.trigger_key for e in backend.ledger.waiting_runs(T0 + 500, 10)] == [keys[0]]
    assert backend.ledger.record_run_state(keys[0], RunState(state="running", checked_at=T0 + 600))
    assert backend.ledger.waiting_runs(T0 + 500, 10) == []
    assert [e.trigger_key for e in backend.ledger.waiting_runs(T0 + 1000, 10)] == [keys[0], keys[3]]
    entry = backend.ledger.get(keys[0])
    assert entry is not None and entry.trigger.run_state == RunState(state="running", checked_at=T0 + 600)

    assert not backend.ledger.record_run_state(keys[1], RunState(state="running", checked_at=T0 + 700))  # ended
    assert not backend.ledger.record_run_state("dwd.g.absent", RunState(state="running", checked_at=T0))
    triggering = claimed(backend, 9, at=T0 + 9).trigger_key
    assert not backend.ledger.record_run_state(triggering, RunState(state="running", checked_at=T0))


def test_the_ledger_reads_which_trigger_a_replay_replays(backend: Backend) -> None:
    backend.rules.put_rule(rule("dwd"), T0)
    replay = trigger(5, replay_of="dwd.g.original")
    assert backend.triggers.put_replay(replay)

    entry = backend.ledger.get(replay.trigger_key)
    attempt = backend.ledger.begin_attempt(replay.trigger_key, "d1", T0, LEASE)

    # the dispatcher writes it into the run manifest and the invocation's ``replayOf``
    assert entry is not None and entry.replay_of == "dwd.g.original"
    assert attempt is not None and attempt.before.replay_of == "dwd.g.original"


def test_a_claim_waiting_for_a_run_slot_is_not_pending_until_it_is_woken(backend: Backend) -> None:
    """A claim held back by its rule's maxInFlight is not stuck: the re-drive's page leaves it out (the run-slot sweep
    wakes it), and once woken and left unstarted it is stuck again like any claim."""
    waiting = claimed(backend, 1, at=T0 + 100).trigger_key
    stuck = claimed(backend, 2, at=T0 + 200).trigger_key
    assert backend.ledger.hold_for_slot(waiting, T0 + 300)
    assert [e.trigger_key for e in backend.ledger.pending(T0 + 20_000, T0 + 10_000, 10)] == [stuck]
    assert backend.ledger.wake_for_slot(waiting, T0 + 400)
    assert {e.trigger_key for e in backend.ledger.pending(T0 + 20_000, T0 + 10_000, 10)} == {waiting, stuck}
