"""Dispatch use case on fakes, with a fault injected at every step.

The invariant, counted on a simulated scheduler: every claimed key ends with exactly one run
(SUCCEEDED, with that run's id) or with a terminal reason (FAILED, not retryable, and no run),
whatever fails where: a crash after the manifest, a crash after the target accepted, a timeout
whose request arrived, a 5xx, a 429, a 4xx, a look-up that cannot be answered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.memory.rules import InMemoryStateReader
from lakehook.container import Container
from lakehook.domain.dispatch import Invocation, Outcome, RetryPolicy, RunManifest
from lakehook.domain.rules import Rule
from lakehook.domain.targets import STORED_CONTEXT, TargetConfig
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.handlers import handle_dispatch_batch, redrive_triggers
from lakehook.settings import Settings
from lakehook.usecases.dispatch import (
    FAILED_METRIC,
    RETRY_METRIC,
    SUCCESS_METRIC,
    DispatchPolicy,
    DispatchStatus,
    DispatchTrigger,
    RedriveTriggers,
)
from tests.fakes.memory_dispatch import (
    Fault,
    InMemoryManifestStore,
    InMemoryTargetClient,
    InMemoryTriggerLedger,
    SimulatedCrashError,
)
from tests.fakes.memory_rules import InMemoryRuleStore, InMemoryTriggerStore
from tests.fakes.memory_slots import InMemoryRunSlotStore
from tests.hypothesis_profiles import examples
from tests.wiring import dispatch_record, dispatch_trigger

T0 = 1_750_000_000_000
WEBHOOK = {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "lakehook/targets/dwd"}


@dataclass
class Clock:
    """Epoch ms for the dispatcher, seconds for the simulated target; sleeping advances it."""

    now: int = T0
    slept: list[float] = field(default_factory=list)

    def ms(self) -> int:
        return self.now

    def seconds(self) -> float:
        return self.now / 1000

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += int(seconds * 1000)

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


class Blind(InMemoryTargetClient):
    """Neither looks up nor deduplicates (like Lambda or EventBridge)."""

    confirmable: ClassVar[bool] = False
    deduplicates: ClassVar[bool] = False


class IdempotentOnly(InMemoryTargetClient):
    """Deduplicates on the key but cannot be asked (like a webhook)."""

    confirmable: ClassVar[bool] = False


class Asynchronous(InMemoryTargetClient):
    """Confirmable but not deduplicating, runs visible only after settling (like DolphinScheduler)."""

    deduplicates: ClassVar[bool] = False


@dataclass
class World:
    clock: Clock
    store: InMemoryTriggerStore
    ledger: InMemoryTriggerLedger
    rules: InMemoryRuleStore
    manifests: InMemoryManifestStore
    target: InMemoryTargetClient
    metrics: list[tuple[str, dict[str, str]]]
    dispatch: DispatchTrigger
    redrive: RedriveTriggers

    def claim(self, snapshot: int, rule_id: str = "dwd", replay: tuple[str, str] | None = None) -> str:
        """Claim a trigger through the resolver's own trigger store, as the resolver does."""
        pins = (PinnedInput(asset_key="paimon://lake/ods/orders", snapshot_id=snapshot),)
        key = trigger_key(rule_id, "g", pins, None, 0 if replay is None else 1)
        claim = Trigger(
            trigger_key=key,
            rule_id=rule_id,
            group_id="g",
            inputs=pins,
            created_at=self.clock.now,
            updated_at=self.clock.now,
            manifest_uri=replay[1] if replay else None,
        )
        cursor = self.store.get_cursors([(rule_id, "g")]).get((rule_id, "g"))
        base = cursor or GroupCursor.initial(rule_id, "g")
        assert self.store.claim(claim, base.after(claim, {}), cursor).outcome.value == "CLAIMED"
        return key

    def status(self, key: str) -> TriggerStatus:
        entry = self.ledger.get(key)
        assert entry is not None
        return entry.status

    def settle_all(self, passes: int = 40, step: float = 1000.0) -> None:
        """Run the compensator until nothing is open (the clock moves on between passes)."""
        for _ in range(passes):
            if not any(self.ledger.get(k).is_open() for k in self.store.triggers):  # type: ignore[union-attr]
                return
            self.clock.advance(step)
            self.redrive()

    def assert_exactly_once(self) -> None:
        """Every claim: SUCCEEDED with its one run's id, or FAILED for good with no run."""
        runs = self.target.runs
        for key in self.store.triggers:
            entry = self.ledger.get(key)
            assert entry is not None
            trigger = entry.trigger
            if trigger.status is TriggerStatus.SUCCEEDED:
                assert runs[key] == 1, f"{key}: {runs[key]} runs"
                assert trigger.target_run_id is not None
            else:
                assert trigger.status is TriggerStatus.FAILED and entry.retryable is False, entry
                assert trigger.reason
                assert runs[key] == 0, f"{key} failed but started {runs[key]} runs"


def make_world(
    target_class: type[InMemoryTargetClient] = InMemoryTargetClient,
    settle: float = 0.0,
    target: dict[str, Any] | None = None,
    manifests: InMemoryManifestStore | None = None,
    attempts: int = 3,
    total: int = 10,
) -> World:
    clock = Clock()
    store = InMemoryTriggerStore()
    ledger = InMemoryTriggerLedger(store)
    rules = InMemoryRuleStore()
    rules.put_rule(rule("dwd", target or WEBHOOK), T0)
    client = target_class(clock=clock.seconds, settle=settle)
    manifest_store = manifests or InMemoryManifestStore()
    metrics: list[tuple[str, dict[str, str]]] = []
    policy = DispatchPolicy(
        attempts=RetryPolicy(attempts, 0.5, 8.0),
        redrive=RetryPolicy(total, 30.0, 900.0),
        lease_seconds=300,
        stuck_after_seconds=600,
    )
    dispatch = dispatch_trigger(
        ledger,
        rules,
        manifest_store,
        {"webhook": client},
        policy,
        clock=clock.ms,
        sleep=clock.sleep,
        rand=lambda: 0.5,
        metrics=lambda n, d: metrics.append((n, d)),
    )
    redrive = RedriveTriggers(ledger, dispatch, clock=clock.ms)
    return World(clock, store, ledger, rules, manifest_store, client, metrics, dispatch, redrive)


def rule(rule_id: str, target: dict[str, Any]) -> Rule:
    # Read as the store reads rules back: a target that does not validate loads, and dispatch refuses it.
    return Rule.model_validate(
        {
            "ruleId": rule_id,
            "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods/orders"}]}],
            "target": target,
        },
        context=STORED_CONTEXT,
    )


@pytest.fixture
def world() -> Iterator[World]:
    yield make_world()


# --- the straight path --------------------------------------------------------------------------------


def test_a_claim_starts_one_run_and_is_marked_with_its_id(world: World) -> None:
    key = world.claim(1001)
    result = world.dispatch(key)
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == "run-1" and result.attempts == 1
    entry = world.ledger.get(key)
    assert entry is not None
    assert entry.trigger.status is TriggerStatus.SUCCEEDED and entry.trigger.target_run_id == "run-1"
    assert entry.trigger.attempts == 1 and entry.lease_owner is None
    uri = f"s3://lakehook-manifests/manifests/{key}.json"
    assert entry.trigger.manifest_uri == uri
    assert world.manifests.get(uri).trigger_key == key
    [payload] = world.target.payloads(key)
    assert payload["triggerKey"] == key and payload["manifestUri"] == uri and payload["attempt"] == 1
    assert payload["inputs"] == [{"assetKey": "paimon://lake/ods/orders", "snapshotId": 1001}]
    assert world.metrics == [(SUCCESS_METRIC, {"target_type": "webhook"})]


def test_a_redelivered_claim_does_nothing(world: World) -> None:
    key = world.claim(1001)
    world.dispatch(key)
    again = world.dispatch(key)
    assert again.status is DispatchStatus.DONE and again.run_id == "run-1"
    assert world.target.runs[key] == 1 and world.target.calls["start"] == 1


def test_unknown_keys_are_reported_not_created(world: World) -> None:
    assert world.dispatch("nope.g.0").status is DispatchStatus.NOT_FOUND


# --- faults at the target ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault", [Fault.TIMEOUT_BEFORE, Fault.TIMEOUT_AFTER, Fault.HTTP_5XX, Fault.HTTP_5XX_AFTER, Fault.HTTP_429]
)
def test_a_retryable_failure_is_confirmed_then_retried_and_starts_one_run(world: World, fault: Fault) -> None:
    key = world.claim(1001)
    world.target.faults = [fault, fault]
    result = world.dispatch(key)
    assert result.status is DispatchStatus.SUCCEEDED
    assert world.target.runs[key] == 1
    assert world.target.calls["find_run"] >= 1  # the second attempt looked first
    world.assert_exactly_once()
    assert (RETRY_METRIC, {"trigger_status": "TRIGGERING"}) in world.metrics
    if fault in (Fault.TIMEOUT_AFTER, Fault.HTTP_5XX_AFTER):
        # The first request did start the run: the look found it, nothing was sent again.
        assert result.attempts == 2 and world.target.calls["start"] == 1
    else:
        assert result.attempts == 3 and world.target.calls["start"] == 3


def test_a_429_waits_at_least_its_retry_after(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_429]
    world.dispatch(key)
    assert world.clock.slept == [1.0]  # jitter would have waited 0.25 s; Retry-After says 1 s


def test_backoff_between_attempts_is_exponential_with_jitter(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.TIMEOUT_BEFORE, Fault.TIMEOUT_BEFORE]
    world.dispatch(key)
    assert world.clock.slept == [0.25, 0.5]  # rand 0.5 of 0.5 s, then of 1 s


def test_a_4xx_fails_for_good_without_retrying(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_4XX]
    result = world.dispatch(key)
    assert result.status is DispatchStatus.FAILED and "HTTP 400" in (result.reason or "")
    entry = world.ledger.get(key)
    assert entry is not None and entry.retryable is False and entry.trigger.reason == "HTTP 400: bad request"
    assert world.target.calls["start"] == 1 and world.clock.slept == []
    assert (FAILED_METRIC, {"target_type": "webhook", "reason": "http_400"}) in world.metrics
    world.redrive()
    assert world.target.calls["start"] == 1  # terminal: the compensator leaves it alone
    world.assert_exactly_once()


def test_a_look_up_that_cannot_be_answered_never_leads_to_a_blind_resend(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.TIMEOUT_AFTER]
    world.target.find_faults = [Fault.FIND_UNAVAILABLE, Fault.FIND_UNAVAILABLE]
    result = world.dispatch(key)
    assert result.status is DispatchStatus.RETRY_LATER
    assert world.target.calls["start"] == 1  # never re-sent while the run could not be confirmed
    world.settle_all()
    assert world.target.calls["start"] == 1
    world.assert_exactly_once()


def test_retryable_failures_are_redriven_until_the_budget_then_terminal() -> None:
    world = make_world(attempts=3, total=7)
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX] * 100
    first = world.dispatch(key)
    assert first.status is DispatchStatus.RETRY_LATER and first.attempts == 3
    entry = world.ledger.get(key)
    assert entry is not None and entry.retryable and entry.next_attempt_at is not None
    assert entry.next_attempt_at > world.clock.now
    world.redrive()  # not due yet
    assert world.ledger.get(key).trigger.attempts == 3  # type: ignore[union-attr]
    world.settle_all(step=1000)
    entry = world.ledger.get(key)
    assert entry is not None and entry.status is TriggerStatus.FAILED and entry.retryable is False
    # Seven starts, then one visit that only looked (the target is confirmable) before giving up.
    assert world.target.calls["start"] == 7 and entry.trigger.attempts == 8
    assert entry.trigger.reason == "gave up after 7 attempts: HTTP 503"
    world.assert_exactly_once()


def test_a_run_started_by_the_last_allowed_attempt_is_still_found() -> None:
    world = make_world(attempts=1, total=2)
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX, Fault.HTTP_5XX_AFTER]  # the last start did start the run
    assert world.dispatch(key).status is DispatchStatus.RETRY_LATER
    world.settle_all(step=1000)
    entry = world.ledger.get(key)
    assert entry is not None and entry.status is TriggerStatus.SUCCEEDED and entry.trigger.attempts == 3
    assert world.target.calls["start"] == 2
    world.assert_exactly_once()


def test_giving_up_on_a_blind_target_says_a_request_may_have_arrived() -> None:
    world = make_world(Blind, attempts=1, total=1)
    key = world.claim(1001)
    world.target.faults = [Fault.HTTP_5XX]
    result = world.dispatch(key)
    assert result.status is DispatchStatus.FAILED
    assert result.reason == (
        "gave up after 1 attempts: HTTP 503; the last request may have reached the target, "
        "whose consumer deduplicates on the key"
    )


# --- crashes --------------------------------------------------------------------------------------------


class CrashingManifests(InMemoryManifestStore):
    """Dies right after the manifest is stored, the first ``crashes`` times."""

    def __init__(self, crashes: int = 1) -> None:
        super().__init__()
        self.crashes = crashes

    def put_if_absent(self, trigger_key: str, manifest: RunManifest) -> str:
        uri = super().put_if_absent(trigger_key, manifest)
        if self.crashes:
            self.crashes -= 1
            raise SimulatedCrashError("died after writing the manifest")
        return uri


def test_a_crash_after_the_manifest_is_finished_by_the_compensator() -> None:
    world = make_world(manifests=CrashingManifests())
    key = world.claim(1001)
    with pytest.raises(SimulatedCrashError):
        world.dispatch(key)
    assert world.status(key) is TriggerStatus.TRIGGERING and world.target.runs[key] == 0
    # The stream redelivers at once: the dead dispatcher's lease still holds, nothing happens.
    assert world.dispatch(key).status is DispatchStatus.BUSY
    world.clock.advance(299)
    assert world.redrive().results == []  # not stuck yet
    world.clock.advance(400)
    report = world.redrive()
    assert [r.status for r in report.results] == [DispatchStatus.SUCCEEDED]
    assert world.manifests.puts == 2 and len(world.manifests.objects) == 1  # the same manifest, kept
    world.assert_exactly_once()


def test_a_crash_after_the_target_accepted_is_confirmed_not_restarted(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.CRASH_AFTER_ACCEPT]
    with pytest.raises(SimulatedCrashError):
        world.dispatch(key)
    assert world.target.runs[key] == 1 and world.status(key) is TriggerStatus.TRIGGERING
    world.clock.advance(601)
    [result] = world.redrive().results
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == "run-1"
    assert world.target.calls["start"] == 1 and world.target.calls["find_run"] == 1
    assert (RETRY_METRIC, {"trigger_status": "TRIGGERING"}) in world.metrics
    world.assert_exactly_once()


def test_a_crash_after_accept_on_an_idempotent_target_is_resent_and_deduplicated() -> None:
    world = make_world(IdempotentOnly)
    key = world.claim(1001)
    world.target.faults = [Fault.CRASH_AFTER_ACCEPT]
    with pytest.raises(SimulatedCrashError):
        world.dispatch(key)
    world.clock.advance(601)
    [result] = world.redrive().results
    assert result.status is DispatchStatus.SUCCEEDED and result.run_id == "run-1"
    assert world.target.calls["start"] == 2 and world.target.runs[key] == 1  # the key made the re-send harmless
    world.assert_exactly_once()


def test_a_blind_target_gets_the_same_key_again_and_its_consumer_deduplicates() -> None:
    # Lambda and EventBridge can neither be asked nor refuse a key: after a timeout whose request arrived,
    # the event is delivered again. It carries the same triggerKey (RFC risk 7: the consumer deduplicates).
    world = make_world(Blind)
    key = world.claim(1001)
    world.target.faults = [Fault.TIMEOUT_AFTER]
    assert world.dispatch(key).status is DispatchStatus.SUCCEEDED
    deliveries = world.target.payloads(key)
    assert [p["attempt"] for p in deliveries] == [1, 2]
    assert {p["triggerKey"] for p in deliveries} == {key}


def test_an_asynchronous_target_is_not_asked_before_a_run_can_be_visible() -> None:
    # A start is a command that becomes an instance later: looking at once would miss it and start twice.
    world = make_world(Asynchronous, settle=120)
    key = world.claim(1001)
    world.target.faults = [Fault.TIMEOUT_AFTER]
    first = world.dispatch(key)
    assert first.status is DispatchStatus.RETRY_LATER and world.target.calls["find_run"] == 0
    entry = world.ledger.get(key)
    assert entry is not None and entry.next_attempt_at == T0 + 120_000
    world.clock.advance(60)
    assert world.redrive().results == []  # not due: the instance may not exist yet
    world.clock.advance(61)
    [result] = world.redrive().results
    assert result.status is DispatchStatus.SUCCEEDED and world.target.runs[key] == 1
    world.assert_exactly_once()


def test_a_crash_on_an_asynchronous_target_waits_for_the_settle_time() -> None:
    world = make_world(Asynchronous, settle=900)  # longer than the stuck timeout
    key = world.claim(1001)
    world.target.faults = [Fault.CRASH_AFTER_ACCEPT]
    with pytest.raises(SimulatedCrashError):
        world.dispatch(key)
    world.clock.advance(601)
    [waiting] = world.redrive().results
    assert waiting.status is DispatchStatus.BUSY and world.target.calls["find_run"] == 0
    world.clock.advance(300)
    [result] = world.redrive().results
    assert result.status is DispatchStatus.SUCCEEDED and world.target.runs[key] == 1
    world.assert_exactly_once()


# --- the claim, the rule, the manifest ---------------------------------------------------------------------


def test_a_claim_whose_rule_is_gone_fails_with_that_reason(world: World) -> None:
    key = world.claim(1001)
    world.rules.delete_rule("dwd")
    result = world.dispatch(key)
    assert result.status is DispatchStatus.FAILED and "no longer exists" in (result.reason or "")
    assert (FAILED_METRIC, {"target_type": "none", "reason": "rule_missing"}) in world.metrics
    world.assert_exactly_once()


def test_a_rule_with_an_invalid_target_fails_with_that_reason(world: World) -> None:
    world.rules.put_rule(rule("dwd", {"type": "webhook", "url": "ftp://x"}), T0)
    key = world.claim(1001)
    result = world.dispatch(key)
    assert result.status is DispatchStatus.FAILED and "target.url" in (result.reason or "")
    world.assert_exactly_once()


def test_a_different_manifest_under_the_key_is_never_replaced(world: World) -> None:
    key = world.claim(1001)
    uri = world.manifests.uri_for(key)
    world.manifests.objects[uri] = b'{"someone":"else"}'
    result = world.dispatch(key)
    assert (
        result.status is DispatchStatus.FAILED
        and (FAILED_METRIC, {"target_type": "webhook", "reason": "manifest_conflict"}) in world.metrics
    )
    assert world.manifests.objects[uri] == b'{"someone":"else"}' and world.target.runs[key] == 0


class FlakyManifests(InMemoryManifestStore):
    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def put_if_absent(self, trigger_key: str, manifest: RunManifest) -> str:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("S3 is slow down")
        return super().put_if_absent(trigger_key, manifest)


def test_an_unavailable_manifest_store_is_retried_before_anything_starts() -> None:
    world = make_world(manifests=FlakyManifests())
    key = world.claim(1001)
    result = world.dispatch(key)
    # The first attempt could not write the manifest, so it sent nothing; the second did both.
    assert result.status is DispatchStatus.SUCCEEDED and result.attempts == 2
    assert world.target.calls["start"] == 1 and world.clock.slept == [0.25]
    world.assert_exactly_once()


def test_a_replay_uses_the_original_manifest_and_says_so(world: World) -> None:
    original = world.claim(1001)
    world.dispatch(original)
    uri = world.manifests.uri_for(original)
    replay = world.claim(1001, replay=(original, uri))
    result = world.dispatch(replay)
    assert result.status is DispatchStatus.SUCCEEDED
    [payload] = world.target.payloads(replay)
    assert payload["replayOf"] == original and payload["manifestUri"] == uri
    assert len(world.manifests.objects) == 1  # no second manifest
    world.assert_exactly_once()


# --- concurrency ---------------------------------------------------------------------------------------


class SlowTarget(InMemoryTargetClient):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inside = threading.Event()
        self.release = threading.Event()

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        self.inside.set()
        self.release.wait(5)
        return super().start(invocation, config)


def test_two_dispatchers_on_one_key_start_one_run() -> None:
    world = make_world(SlowTarget)
    target = world.target
    assert isinstance(target, SlowTarget)
    key = world.claim(1001)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(world.dispatch(key)))
    first.start()
    assert target.inside.wait(5)
    second = world.dispatch(key)  # e.g. the redelivered stream record, while the first is still working
    target.release.set()
    first.join(5)
    assert second.status is DispatchStatus.BUSY
    assert results[0].status is DispatchStatus.SUCCEEDED and target.calls["start"] == 1
    world.assert_exactly_once()


# --- the stream record handler --------------------------------------------------------------------------------


def record(event: str, key: str, status: str | None = "TRIGGERING", sk: str = "CLAIM") -> dict[str, Any]:
    body: dict[str, Any] = {"Keys": {"PK": {"S": f"TRIGGER#{key}"}, "SK": {"S": sk}}, "SequenceNumber": "1"}
    if status is not None:
        body["NewImage"] = {
            "PK": {"S": f"TRIGGER#{key}"},
            "SK": {"S": sk},
            "itemType": {"S": "TRIGGER"},
            "status": {"S": status},
        }
    return {"eventName": event, "dynamodb": body}


def test_a_claim_insert_record_dispatches_and_a_duplicate_record_does_nothing(world: World) -> None:
    key = world.claim(1001)
    first = dispatch_record(record("INSERT", key), world.dispatch)
    keys_only = dispatch_record(record("INSERT", key, status=None), world.dispatch)
    assert first is not None and first.status is DispatchStatus.SUCCEEDED
    assert keys_only is not None and keys_only.status is DispatchStatus.DONE
    assert world.target.runs[key] == 1


@pytest.mark.parametrize(
    "raw",
    [
        record("MODIFY", "r.g.1"),
        record("REMOVE", "r.g.1"),
        record("INSERT", "r.g.1", status="SKIPPED"),
        record("INSERT", "r.g.1", sk="CURSOR#g"),
        {"eventName": "INSERT", "dynamodb": {"Keys": {"PK": {"S": "ASSET#x"}, "SK": {"S": "STATE"}}}},
    ],
)
def test_other_records_are_ignored(world: World, raw: dict[str, Any]) -> None:
    assert dispatch_record(raw, world.dispatch) is None


# --- the invariant under random faults -----------------------------------------------------------------------

FAULTS = st.sampled_from(
    [
        Fault.TIMEOUT_BEFORE,
        Fault.TIMEOUT_AFTER,
        Fault.HTTP_5XX,
        Fault.HTTP_5XX_AFTER,
        Fault.HTTP_429,
        Fault.HTTP_4XX,
        Fault.CRASH_AFTER_ACCEPT,
    ]
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(st.lists(FAULTS, max_size=6), min_size=1, max_size=4),
    find_faults=st.lists(st.just(Fault.FIND_UNAVAILABLE), max_size=3),
    asynchronous=st.booleans(),
)
def test_every_claimed_key_ends_with_one_run_or_a_terminal_reason(
    plans: list[list[Fault]], find_faults: list[Fault], asynchronous: bool
) -> None:
    world = make_world(Asynchronous if asynchronous else InMemoryTargetClient, settle=120 if asynchronous else 0)
    keys = [world.claim(1000 + i) for i in range(len(plans))]
    for key, faults in zip(keys, plans, strict=True):
        world.target.faults = list(faults)
        world.target.find_faults = list(find_faults)
        with contextlib.suppress(SimulatedCrashError):
            dispatch_record(record("INSERT", key), world.dispatch)
        world.target.faults = list(faults[len(faults) // 2 :])  # some faults recur on re-drives
    for _ in range(60):
        with contextlib.suppress(SimulatedCrashError):
            world.settle_all(passes=1, step=700)
    world.target.faults = []
    world.settle_all(passes=60, step=700)
    world.assert_exactly_once()


# --- the function handlers' wiring ----------------------------------------------------------------------------


class BrokenLedger(InMemoryTriggerLedger):
    def get(self, trigger_key: str) -> Any:
        raise ConnectionError("DynamoDB is unreachable")


def wired(world: World, ledger: InMemoryTriggerLedger | None = None) -> Container:
    return Container.of(
        Settings(),
        trigger_ledger=ledger or world.ledger,
        rule_store=world.rules,
        manifest_store=world.manifests,
        target_clients={"webhook": world.target},
        run_slot_store=InMemoryRunSlotStore(),
        state_reader=InMemoryStateReader(lambda key: None, world.store),  # no event recorded: inputs without details
    )


def test_the_stream_handler_dispatches_claims_and_skips_everything_else(world: World) -> None:
    key = world.claim(1001)
    event = {"Records": [record("MODIFY", key), record("INSERT", key), record("INSERT", key)]}
    assert handle_dispatch_batch(event, wired(world)) == {"batchItemFailures": []}
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


def test_the_stream_handler_reports_the_record_it_could_not_handle(world: World) -> None:
    key = world.claim(1001)
    failing = record("INSERT", key)
    failing["dynamodb"]["SequenceNumber"] = "42"
    answer = handle_dispatch_batch({"Records": [failing, record("INSERT", key)]}, wired(world, BrokenLedger()))
    assert answer == {"batchItemFailures": [{"itemIdentifier": "42"}]}


def test_the_compensator_handler_counts_what_it_redrove(world: World) -> None:
    key = world.claim(1001)
    world.target.faults = [Fault.CRASH_AFTER_ACCEPT]
    with pytest.raises(SimulatedCrashError):
        world.dispatch(key)
    # The wired compensator runs on the real clock: a claim from T0 (June 2025) is long stuck by now.
    assert redrive_triggers(wired(world)) == {"SUCCEEDED": 1}
    assert world.status(key) is TriggerStatus.SUCCEEDED and world.target.runs[key] == 1


def test_the_backoffs_come_from_the_settings() -> None:
    scaled = Settings(
        dispatch_retry_base_seconds=0.05,
        dispatch_retry_max_seconds=0.2,
        dispatch_redrive_base_seconds=0.5,
        dispatch_redrive_max_seconds=2.0,
    )
    policy = Container.of(scaled).dispatch_policy
    assert (policy.attempts.base_delay_seconds, policy.attempts.max_delay_seconds) == (0.05, 0.2)
    assert (policy.redrive.base_delay_seconds, policy.redrive.max_delay_seconds) == (0.5, 2.0)
    default = Container.of(Settings()).dispatch_policy
    assert (default.redrive.base_delay_seconds, default.redrive.max_delay_seconds) == (30.0, 900.0)
    with pytest.raises(ValueError, match="dispatch_redrive_base_seconds must not exceed"):
        Settings(dispatch_redrive_base_seconds=60.0, dispatch_redrive_max_seconds=10.0)
