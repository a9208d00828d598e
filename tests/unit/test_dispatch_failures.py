"""A failure is visible and recoverable, never a silent loss (issue 11), on the in-memory fakes.

Every claimed trigger writes its run manifest before anything else; a FAILED trigger says whether it
retries by itself (RETRYABLE, with ``nextAttemptAt``) or needs someone (FINAL); a retry by hand
re-dispatches it under the same key, and the target's idempotency still holds.
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import TargetConfig
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import FailureKind, RunState, TriggerNotRetryableError, TriggerStatus
from lakehook.usecases.dispatch import DispatchStatus, RetryTrigger
from tests.fakes.memory_dispatch import Fault, InMemoryTargetClient, SimulatedCrashError
from tests.hypothesis_profiles import examples
from tests.unit.test_dispatch_usecase import T0, WEBHOOK, World, make_world, record, rule
from tests.wiring import dispatch_record


@pytest.fixture
def world() -> World:
    return make_world()


def retry_record(key: str) -> dict[str, Any]:
    """The MODIFY stream record a retry by hand writes (the DynamoDB ledger sets ``wake``)."""
    raw = record("MODIFY", key)
    raw["dynamodb"]["NewImage"]["wake"] = {"S": "RETRY"}
    return raw


def retry(world: World, key: str) -> None:
    """Retry by hand, then deliver the wake-up record the dispatcher's stream would."""
    RetryTrigger(world.ledger, clock=world.clock.ms)(key)
    assert world.ledger.woken() == [key]
    result = dispatch_record(retry_record(key), world.dispatch)
    assert result is not None


def manifest_of(world: World, key: str) -> Any:
    return world.manifests.get(world.manifests.uri_for(key))


# --- the manifest first --------------------------------------------------------------------------------


@pytest.mark.parametrize("cause", ["invalid_target", "rule_missing", "http_400"])
def test_a_trigger_that_fails_for_good_still_has_its_manifest(world: World, cause: str) -> None:
    if cause == "invalid_target":
        world.rules.put_rule(rule("dwd", {"type": "webhook", "url": "ftp://x"}), T0)
    key = world.claim(1001)
    if cause == "rule_missing":
        world.rules.delete_rule("dwd")
    if cause == "http_400":
        world.target.faults = [Fault.HTTP_4XX]
    result = world.dispatch(key)
    assert result.status is DispatchStatus.FAILED
    trigger = world.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.FINAL and trigger.failure_code == cause
    assert trigger.manifest_uri == world.manifests.uri_for(key)
    assert manifest_of(world, key).inputs[0].snapshot_id == 1001
    assert world.target.runs[key] == 0


def test_the_manifest_is_written_before_the_target_is_called(world: World) -> None:
    seen: list[bool] = []

    class Watching(InMemoryTargetClient):
        def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
            seen.append(world.manifests.uri_for(invocation.trigger_key) in world.manifests.objects)
            return super().start(invocation, config)

    world.dispatch._targets = {"webhook": Watching()}  # type: ignore[attr-defined]
    assert world.dispatch(world.claim(1001)).status is DispatchStatus.SUCCEEDED
    assert seen == [True]


# --- RETRYABLE or FINAL, visibly -------------------------------------------------------------------------


def test_a_5xx_leaves_the_trigger_retryable_with_its_next_attempt(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 3
    assert world.dispatch(key).status is DispatchStatus.RETRY_LATER
    shown = TriggerAnswer.from_domain(world.ledger.store.triggers[key]).dump()
    entry = world.ledger.get(key)
    assert entry is not None and entry.next_attempt_at is not None and entry.next_attempt_at > world.clock.now
    assert shown["status"] == "FAILED" and shown["failure"] == "RETRYABLE" and shown["failureCode"] == "http_503"
    assert shown["nextAttemptAt"] == ms_to_iso(entry.next_attempt_at) and shown["attempts"] == 3
    assert shown["reason"] == "HTTP 503" and shown["failingSince"] is not None


def test_exhausted_retries_end_final_with_no_next_attempt() -> None:
    world = make_world(attempts=2, total=4)
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 100
    world.dispatch(key)
    world.settle_all()
    shown = TriggerAnswer.from_domain(world.ledger.store.triggers[key]).dump()
    assert shown["failure"] == "FINAL" and shown["nextAttemptAt"] is None
    assert shown["reason"] == "gave up after 4 attempts: HTTP 503"


def test_a_success_clears_the_failure(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 3
    world.dispatch(key)
    world.settle_all()
    shown = TriggerAnswer.from_domain(world.ledger.store.triggers[key]).dump()
    assert shown["status"] == "SUCCEEDED" and shown["failure"] is None and shown["nextAttemptAt"] is None
    assert shown["failureCode"] is None and shown["failingSince"] is None


# --- retry by hand -------------------------------------------------------------------------------------


def test_retry_after_the_cause_is_fixed_starts_exactly_one_run_under_the_same_key(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_4XX]
    world.dispatch(key)
    world.settle_all()
    assert world.ledger.store.triggers[key].failure is FailureKind.FINAL  # nothing happens by itself
    assert world.target.calls["start"] == 1
    retry(world, key)  # the receiver is fixed (no more faults)
    trigger = world.ledger.store.triggers[key]
    assert trigger.status is TriggerStatus.SUCCEEDED and trigger.retries == 1 and trigger.failure is None
    assert world.target.runs == {key: 1}
    [payload] = world.target.payloads(key)
    assert payload["triggerKey"] == key and payload["attempt"] == 2  # attempt numbers keep counting
    assert world.target.calls["find_run"] == 1  # it looked before it sent
    assert world.ledger.woken() == []
    world.assert_exactly_once()


def test_retry_finds_a_run_an_earlier_attempt_started_instead_of_starting_another() -> None:
    world = make_world(attempts=1, total=1)
    key = world.claim(1001)
    world.target.faults = [Fault.TIMEOUT_AFTER]
    world.target.find_faults = [Fault.FIND_UNAVAILABLE]
    world.dispatch(key)
    world.settle_all()
    assert world.ledger.store.triggers[key].failure is FailureKind.FINAL
    assert world.target.runs[key] == 1  # the timed-out request did start it
    retry(world, key)
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1
    assert world.target.calls["start"] == 1


def test_retry_starts_the_attempt_budget_again() -> None:
    world = make_world(attempts=2, total=3)
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 100
    world.dispatch(key)
    world.settle_all()
    before = world.ledger.store.triggers[key]
    assert before.failure is FailureKind.FINAL and before.reason == "gave up after 3 attempts: HTTP 503"
    retry(world, key)  # still failing: a fresh budget, so RETRYABLE again, not FINAL at once
    after = world.ledger.store.triggers[key]
    assert after.failure is FailureKind.RETRYABLE and after.next_attempt_at is not None
    assert after.attempts == before.attempts + 2
    world.settle_all()
    assert world.ledger.store.triggers[key].reason == "gave up after 3 attempts: HTTP 503"
    world.target.faults = []
    retry(world, key)
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1
    assert world.ledger.store.triggers[key].retries == 2


def test_a_retryable_trigger_can_be_retried_now(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 3
    world.dispatch(key)
    assert world.ledger.store.triggers[key].failure is FailureKind.RETRYABLE
    retry(world, key)  # no waiting for nextAttemptAt
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


def test_retry_refuses_what_is_not_failed_and_unknown_keys(world: World) -> None:
    retrying = RetryTrigger(world.ledger, clock=world.clock.ms)
    with pytest.raises(NotFoundError):
        retrying("nope.g.0")
    key = world.claim(1001)
    with pytest.raises(TriggerNotRetryableError, match="TRIGGERING"):
        retrying(key)
    world.dispatch(key)
    with pytest.raises(TriggerNotRetryableError, match="SUCCEEDED"):
        retrying(key)
    assert world.target.runs[key] == 1 and world.ledger.woken() == []


def test_a_lost_wake_up_is_recovered_by_the_compensator(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_4XX]
    world.dispatch(key)
    RetryTrigger(world.ledger, clock=world.clock.ms)(key)  # the stream record never arrives
    world.clock.advance(601)
    [result] = world.redrive().results
    assert result.status is DispatchStatus.SUCCEEDED and world.target.runs[key] == 1


# --- a retry window (e.g. Airflow's 404 for a DAG being deployed) ----------------------------------------------


class DeployingTarget(InMemoryTargetClient):
    """Answers "not found" (retryable for 600 s) until ``deployed``."""

    confirmable: ClassVar[bool] = True
    deployed = False

    def retry_window_seconds(self, failure_code: str | None, config: TargetConfig) -> float | None:
        return 600 if failure_code == "dag_not_found" else None

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        if not self.deployed:
            self.calls["start"] += 1
            return Outcome.retryable("HTTP 404: Dag not found", "dag_not_found", retry_window_seconds=600)
        return super().start(invocation, config)


def test_an_answer_with_a_retry_window_is_retryable_until_the_window_ends_then_final() -> None:
    world = make_world(DeployingTarget, total=50)
    key = world.claim(1001)
    assert world.dispatch(key).status is DispatchStatus.RETRY_LATER
    assert world.target.calls["start"] == 1  # no tight loop: re-drives retry it
    trigger = world.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.RETRYABLE and trigger.failing_since == T0
    assert trigger.next_attempt_at is not None and trigger.next_attempt_at <= T0 + 600_000
    world.settle_all(passes=200, step=10)
    trigger = world.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.FINAL and trigger.failure_code == "dag_not_found"
    assert trigger.reason == "HTTP 404: Dag not found (still so 600 s after it was first seen)"
    assert trigger.updated_at - T0 < 610_000  # the verdict came when the window ended
    # Deployed at last: a retry by hand starts a new window and the run.
    target = world.target
    assert isinstance(target, DeployingTarget)
    target.deployed = True
    retry(world, key)
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


def test_a_target_deployed_within_the_window_gets_its_run() -> None:
    world = make_world(DeployingTarget, total=50)
    key = world.claim(1001)
    world.dispatch(key)
    world.clock.advance(200)
    target = world.target
    assert isinstance(target, DeployingTarget)
    target.deployed = True
    world.settle_all(passes=100, step=10)
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


def test_a_retry_window_is_not_cut_short_by_the_attempt_budget() -> None:
    # The window is the bound the user configured (dagNotFoundRetrySeconds): re-drives keep coming until it
    # ends, however many that takes, and the verdict then is the window's, not "gave up after n attempts".
    world = make_world(DeployingTarget, total=2)
    key = world.claim(1001)
    world.dispatch(key)
    world.settle_all(passes=200, step=10)
    trigger = world.ledger.store.triggers[key]
    assert trigger.failure is FailureKind.FINAL
    assert trigger.reason == "HTTP 404: Dag not found (still so 600 s after it was first seen)", trigger.reason
    assert trigger.updated_at - T0 >= 600_000
    assert world.target.calls["start"] > 2 * 2  # more than the budget (twice it, for a confirmable target)


def test_a_target_deployed_late_in_its_window_gets_its_run_whatever_the_budget() -> None:
    world = make_world(DeployingTarget, total=2)
    key = world.claim(1001)
    world.dispatch(key)
    world.settle_all(passes=50, step=10)  # 500 s of re-drives: past the attempt budget
    target = world.target
    assert isinstance(target, DeployingTarget)
    target.deployed = True
    world.settle_all(passes=20, step=10)
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


# --- what the target said about the run ----------------------------------------------------------------------


class PausedTarget(InMemoryTargetClient):
    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        outcome = super().start(invocation, config)
        state = RunState(state="queued", detail="the DAG is paused", checked_at=T0)
        return Outcome(outcome.kind, run_id=outcome.run_id, run_state=state)


def test_the_run_state_the_target_reports_is_kept_on_the_trigger() -> None:
    world = make_world(PausedTarget)
    key = world.claim(1001)
    assert world.dispatch(key).status is DispatchStatus.SUCCEEDED
    shown = TriggerAnswer.from_domain(world.ledger.store.triggers[key]).dump()
    assert shown["runState"] == {"state": "queued", "detail": "the DAG is paused", "checkedAt": ms_to_iso(T0)}


# --- the property -------------------------------------------------------------------------------------------

ANSWERS = st.sampled_from(
    [
        None,  # 2xx
        Fault.HTTP_4XX,
        Fault.HTTP_5XX,
        Fault.HTTP_5XX_AFTER,
        Fault.TIMEOUT_BEFORE,
        Fault.TIMEOUT_AFTER,
        Fault.HTTP_409,
        Fault.HTTP_429,
        Fault.CRASH_AFTER_ACCEPT,
    ]
)


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(st.lists(ANSWERS, max_size=8), min_size=1, max_size=4),
    total=st.integers(min_value=1, max_value=4),
    broken_rule=st.booleans(),
)
def test_every_claim_has_its_manifest_and_ends_with_one_run_or_a_visible_failure_that_retry_completes(
    plans: list[list[Fault | None]], total: int, broken_rule: bool
) -> None:
    world = make_world(attempts=2, total=total)
    if broken_rule:  # the rule's target is unusable until someone fixes it
        world.rules.put_rule(rule("dwd", {"type": "webhook", "url": "ftp://x"}), T0)
    keys = [world.claim(2000 + i) for i in range(len(plans))]
    for key, answers in zip(keys, plans, strict=True):
        world.target.faults = answers_until_ok(answers)
        with contextlib.suppress(SimulatedCrashError):
            dispatch_record(record("INSERT", key), world.dispatch)
        for _ in range(30):
            with contextlib.suppress(SimulatedCrashError):
                world.settle_all(passes=1, step=700)
    world.target.faults = []
    world.settle_all(passes=60, step=700)

    runs = world.target.runs
    for key in keys:
        assert world.manifests.uri_for(key) in world.manifests.objects, f"{key} has no manifest"
        trigger = world.ledger.store.triggers[key]
        if trigger.status is TriggerStatus.SUCCEEDED:
            assert runs[key] == 1 and trigger.failure is None
        else:
            assert trigger.status is TriggerStatus.FAILED and trigger.failure is FailureKind.FINAL, trigger
            assert trigger.reason and trigger.failure_code and trigger.manifest_uri
            assert runs[key] == 0  # the target is confirmable: a run an attempt started would have been found

    # The cause is fixed (a healthy target, a valid rule): retry every FAILED one.
    world.rules.put_rule(rule("dwd", WEBHOOK), T0)
    for key in keys:
        if world.status(key) is TriggerStatus.FAILED:
            retry(world, key)
    for key in keys:
        assert world.status(key) is TriggerStatus.SUCCEEDED, world.ledger.get(key)
        assert world.target.runs[key] == 1


def answers_until_ok(answers: list[Fault | None]) -> list[Fault]:
    """The scripted answers up to the first 2xx (the fake answers 2xx once its script runs out)."""
    out: list[Fault] = []
    for answer in answers:
        if answer is None:
            break
        out.append(answer)
    return out
