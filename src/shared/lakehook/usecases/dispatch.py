"""Dispatch: start each claimed trigger's downstream run exactly once, and say why when it cannot.

Claim -> manifest -> start -> confirm (DESIGN principle 4; RFC 3.7, 3.10, risks 2 and 7):

1. **Lease and count.** One conditional write takes the claim for one attempt (``TriggerLedger.
   begin_attempt``): TRIGGERING and not leased by anyone else. Two dispatchers never work on one key
   at once; the attempt number is durable, so a crashed attempt is known to the next one.
2. **Manifest, first.** The run manifest is a pure function of the claim, written with a conditional put
   before anything else happens to the claim, even when its rule or target turns out to be unusable: a
   retry finds its own identical manifest, never replaces a different one, and a FAILED trigger can be
   retried or replayed on exactly its pinned inputs.
3. **Confirm before re-sending.** Any attempt after the first (in this invocation or after a crash)
   first asks the target whether the run exists (``find_run``). A target that turns requests into runs
   asynchronously (DolphinScheduler) is not asked before its settle time has passed since the previous
   attempt: an ambiguous answer leaves the claim FAILED and retryable until then, and a re-drive that
   comes too early does nothing (BUSY).
4. **Start** through the target's own idempotency primitive; **mark** SUCCEEDED with the run id, or
   FAILED with the reason and attempt count: fatal answers at once, retryable ones after the
   configured attempts (exponential backoff with full jitter in between), re-driven by
   :class:`RedriveTriggers` until the total attempt budget is spent. A confirmable target then gets
   visits that only look (never start), so a run the last allowed attempt started is still found;
   only when the target says there is none does the claim become terminal. A FAILED claim says which:
   ``failure`` RETRYABLE (with ``nextAttemptAt``: the compensator tries again by itself) or FINAL (nothing
   happens until someone fixes the cause and calls ``POST /triggers/{key}/retry``, :class:`RetryTrigger`,
   which re-dispatches it under the same key with a fresh attempt budget). An answer worth retrying only
   for a while (Airflow's 404 for a DAG being deployed) is RETRYABLE until its window ends, then FINAL.

Whatever fails where (a crash after the manifest, after the target accepted, a timeout whose request
arrived, a 5xx, a 429), every claimed key ends SUCCEEDED with one run or FAILED with a reason, and a
target that is confirmable or deduplicates never sees two runs for a key. Targets that are neither
(Lambda, EventBridge) deliver at least once: their consumers deduplicate on ``triggerKey`` (RFC risk 7:
exactly-once ends where the target's own guarantees end), and a claim given up after an ambiguous
answer says that a request may have arrived.

Deployment constraint: the lease (``DispatchPolicy.lease_seconds``) must outlast the dispatcher's
function timeout, so a lease only expires once its holder is surely dead.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lakehook.domain.dispatch import (
    Invocation,
    ManifestConflictError,
    ManifestIntegrityError,
    Outcome,
    OutcomeKind,
    RetryPolicy,
    RunManifest,
    TargetUnavailableError,
)
from lakehook.domain.errors import NotFoundError
from lakehook.domain.input_details import InputDetails, details_of, event_ref
from lakehook.domain.log_context import trigger_log_context
from lakehook.domain.rules import Mode
from lakehook.domain.run_slots import SlotLimit
from lakehook.domain.targets import TargetConfig, UnusableTarget
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import FailureKind, RunState, Trigger, TriggerStatus
from lakehook.observability import logger, trace_id
from lakehook.ports.dispatch import Attempt, LedgerEntry, ManifestStore, TargetClient, TriggerLedger
from lakehook.ports.rules import RuleStore, StateReader, StoredRule
from lakehook.usecases.run_slots import RunSlotGate, SweepReport

SUCCESS_METRIC = "lakehouse_asset_trigger_success_total"
FAILED_METRIC = "lakehouse_asset_trigger_failed_total"
RETRY_METRIC = "lakehouse_asset_trigger_history_retry_total"

MetricSink = Callable[[str, dict[str, str]], None]
"""Count one occurrence of a metric with its dimensions."""


def emit_metric(name: str, dimensions: dict[str, str]) -> None:
    """Powertools EMF, one metric per line so each keeps its own dimensions."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from lakehook.observability import NAMESPACE

    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
        for key, value in dimensions.items():
            metric.add_dimension(name=key, value=value)


@dataclass(frozen=True)
class DispatchPolicy:
    """Retries within one invocation, the total attempt budget with the wait between re-drives, the
    lease, and when a TRIGGERING claim counts as stuck."""

    attempts: RetryPolicy = field(default_factory=lambda: RetryPolicy(3, 0.5, 8.0))
    redrive: RetryPolicy = field(default_factory=lambda: RetryPolicy(10, 30.0, 900.0))
    lease_seconds: float = 300.0
    stuck_after_seconds: float = 600.0

    def __post_init__(self) -> None:
        # A stuck claim is re-driven only once its lease has surely expired.
        if self.stuck_after_seconds < self.lease_seconds:
            raise ValueError("stuck_after_seconds must be at least lease_seconds")

    @property
    def lease_ms(self) -> int:
        return int(self.lease_seconds * 1000)

    @property
    def stuck_after_ms(self) -> int:
        return int(self.stuck_after_seconds * 1000)


class DispatchStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"  # the run exists (started now, or found)
    FAILED = "FAILED"  # terminal: refused, or the attempt budget is spent
    RETRY_LATER = "RETRY_LATER"  # FAILED and retryable: the compensator re-drives it when due
    BUSY = "BUSY"  # another dispatcher holds the lease, or a re-drive is not due yet
    DONE = "DONE"  # already terminal (or SKIPPED) before this call: nothing to do
    NOT_FOUND = "NOT_FOUND"  # no such claim
    WAITING_FOR_SLOT = "WAITING_FOR_SLOT"  # the rule's maxInFlight runs are in flight: it starts when one ends


@dataclass(frozen=True)
class DispatchResult:
    trigger_key: str
    status: DispatchStatus
    run_id: str | None = None
    reason: str | None = None
    attempts: int = 0


@dataclass(frozen=True)
class _Target:
    """The rule's target and the plug-in that starts runs on it."""

    config: TargetConfig
    client: TargetClient
    confirm_within_ms: int | None = None  # the rule's confirm.withinSeconds: a started run's confirmation window
    each_version: bool = False  # the rule runs EACH_VERSION: a run started releases its group's next version

    def releases_next(self, trigger: Trigger) -> bool:
        """Whether the trigger's success releases a next version (head of line): its group's, or its partition's
        when it runs in order (``in_order``); a partition's other runs and every other mode's release nothing."""
        return self.each_version and (trigger.partition is None or trigger.in_order)


def _target_type(target: _Target | Outcome) -> str:
    """The failed trigger's target type (a metric dimension); ``none`` when its target could not be resolved
    (the rule deleted, an invalid or unavailable target)."""
    return target.config.type if isinstance(target, _Target) else "none"


@dataclass(frozen=True)
class _Written:
    """The trigger's run manifest, stored (or a replay's, found), and where it is."""

    manifest: RunManifest
    uri: str


@dataclass(frozen=True)
class _Plan:
    """What one start needs: the target, its client, the manifest and where it is."""

    config: TargetConfig
    client: TargetClient
    manifest: RunManifest
    manifest_uri: str


@dataclass(frozen=True)
class _Streak:
    """The failures in a row with one code, and since when (a bounded retry window counts from it)."""

    code: str | None
    since_ms: int | None

    @property
    def since(self) -> int:
        return self.since_ms or 0

    def after(self, code: str | None, now_ms: int) -> _Streak:
        if code is not None and code == self.code and self.since_ms is not None:
            return self
        return _Streak(code, now_ms)


class DispatchTrigger:
    """Start the run of one claimed trigger, exactly once (see the module docstring)."""

    def __init__(
        self,
        ledger: TriggerLedger,
        rules: RuleStore,
        manifests: ManifestStore,
        targets: Mapping[str, TargetClient],
        policy: DispatchPolicy | None = None,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], None] | None = None,
        rand: Callable[[], float] = random.random,
        owner: Callable[[], str] = lambda: uuid.uuid4().hex,
        metrics: MetricSink | None = emit_metric,
        completion_token: Callable[[str], str | None] | None = None,
        slots: RunSlotGate | None = None,
        events: StateReader | None = None,
    ) -> None:
        """``completion_token`` makes a trigger's completion token (``CompletionTokens.issue``); without it the
        invocation carries none and only management credentials can complete the run. ``slots`` holds a claim back
        while its rule's ``maxInFlight`` runs are in flight (without it the limit is not applied). ``events`` reads
        the pinned versions' events, whose details (commit facts, the producer's payload) the manifest and the
        payload carry (without it they carry none)."""
        self._ledger = ledger
        self._events = events
        self._slots = slots
        self._rules = rules
        self._completion_token = completion_token
        self._manifests = manifests
        self._targets = targets
        self.policy = policy or DispatchPolicy()
        self._clock = clock
        self._sleep = sleep if sleep is not None else _real_sleep
        self._rand = rand
        self._owner = owner
        self._metrics = metrics

    def __call__(
        self,
        trigger_key: str,
        redrive: bool = False,
        max_attempts: int | None = None,
        known: LedgerEntry | None = None,
    ) -> DispatchResult:
        """Dispatch the claim. ``redrive`` (the compensator) may also take FAILED retryable claims that are
        due; ``max_attempts`` caps the attempts of this call (default: the policy's). ``known``: the claim as
        the stream record that woke us carries it (not read again; the lease's conditional write guards)."""
        entry = known if known is not None and known.trigger_key == trigger_key else self._ledger.get(trigger_key)
        if entry is None:
            return DispatchResult(trigger_key, DispatchStatus.NOT_FOUND, reason="no such trigger")
        closed = self._not_open(entry, redrive)
        if closed is not None:
            return closed
        stored = self._rules.get_rule(entry.trigger.rule_id)
        target = self._target(entry, stored)
        settling = self._settling(entry, target)
        if settling is not None:
            return settling
        limit = stored.rule.policy.slot_limit if stored is not None and self._slots is not None else None
        if limit is None:
            return self._attempts(entry, target, redrive, max_attempts or self.policy.attempts.max_attempts)
        return self._within_slots(entry, target, limit, redrive, max_attempts)

    def _within_slots(
        self, entry: LedgerEntry, target: _Target | Outcome, limit: SlotLimit, redrive: bool, max_attempts: int | None
    ) -> DispatchResult:
        """Dispatch once the claim holds one of its rule's run slots; else it waits, in claim order. A dispatch that
        ends FAILED frees its slot (a retryable one asks for one again when re-driven)."""
        assert self._slots is not None
        admission = self._slots.admit(entry.trigger, limit)
        if not admission.granted:
            reason = (
                f"waiting for a run slot: {admission.in_flight} of maxInFlight {limit.max_in_flight} in flight, "
                f"position {admission.position} in the queue"
            )
            logger.info("trigger waits for a run slot", extra={"trigger_key": entry.trigger_key, "reason": reason})
            return DispatchResult(entry.trigger_key, DispatchStatus.WAITING_FOR_SLOT, reason=reason)
        result = self._attempts(entry, target, redrive, max_attempts or self.policy.attempts.max_attempts)
        if result.status in (DispatchStatus.FAILED, DispatchStatus.RETRY_LATER):
            self._slots.release(entry.trigger, limit)
        return result

    def _not_open(self, entry: LedgerEntry, redrive: bool) -> DispatchResult | None:
        """A claim already terminal (DONE), or FAILED and left to the compensator (BUSY)."""
        if not entry.is_open():
            return _done(entry)
        if entry.status is TriggerStatus.FAILED and not redrive:
            return DispatchResult(
                entry.trigger_key,
                DispatchStatus.BUSY,
                reason="waiting to be re-driven",
                attempts=entry.trigger.attempts,
            )
        return None

    def _settling(self, entry: LedgerEntry, target: _Target | Outcome) -> DispatchResult | None:
        """BUSY while a run the previous attempt started may not be visible yet: looking now could miss it."""
        if not isinstance(target, _Target) or entry.last_attempt_at is None:
            return None
        settle_ms = int(target.client.settle_seconds(target.config) * 1000)
        if self._clock() - entry.last_attempt_at >= settle_ms:
            return None
        return DispatchResult(
            entry.trigger_key,
            DispatchStatus.BUSY,
            reason="waiting for the previous attempt to become visible",
            attempts=entry.trigger.attempts,
        )

    def _attempts(self, entry: LedgerEntry, target: _Target | Outcome, redrive: bool, budget: int) -> DispatchResult:
        """Lease the claim, write the manifest, start the run and judge the answer; after a backoff again, while
        this call's ``budget`` of attempts lasts."""
        trigger_key = entry.trigger_key
        owner = self._owner()
        written: _Written | None = None
        streak = _Streak(entry.failure_code, entry.failing_since)
        tried = 0
        while True:
            tried += 1
            taken = self._ledger.begin_attempt(trigger_key, owner, self._clock(), self.policy.lease_ms, redrive=redrive)
            if taken is None:
                return self._not_taken(trigger_key)
            attempt, redrive = taken, False  # from here on the claim is TRIGGERING and leased to us
            if attempt.number > 1 and self._metrics is not None:
                self._metrics(RETRY_METRIC, {"trigger_status": attempt.before.status.value})
            outcome, written = self._once(attempt, target, written)
            uri = written.uri if written is not None else None
            if outcome.succeeded:
                assert isinstance(target, _Target) and uri is not None
                return self._succeeded(attempt, uri, target, outcome)
            streak = streak.after(outcome.code, self._clock())
            settled = self._after_failure(attempt, uri, target, outcome, streak, tried >= budget)
            if settled is not None:
                return settled
            wait = self.policy.attempts.delay(tried, self._rand, outcome.retry_after_seconds)
            logger.info(
                "dispatch attempt failed; retrying",
                extra={
                    "trigger_key": trigger_key,
                    "attempt": attempt.number,
                    "reason": outcome.reason,
                    "status": outcome.kind.value,
                    "wait_seconds": round(wait, 3),
                },
            )
            self._sleep(wait)

    def _once(
        self, attempt: Attempt, target: _Target | Outcome, written: _Written | None
    ) -> tuple[Outcome, _Written | None]:
        """One attempt's answer, and the manifest as written."""
        # The manifest comes first, whatever happens next: a trigger its target refuses still pins its
        # inputs, so a retry by hand or a replay reads exactly the versions it was claimed for.
        written_or_failed = written or self._manifest(attempt.before)
        if isinstance(written_or_failed, Outcome):
            return written_or_failed, written
        if isinstance(target, Outcome):
            return target, written_or_failed
        plan = _Plan(target.config, target.client, written_or_failed.manifest, written_or_failed.uri)
        return self._attempt(plan, attempt), written_or_failed

    def _after_failure(
        self,
        attempt: Attempt,
        uri: str | None,
        target: _Target | Outcome,
        outcome: Outcome,
        streak: _Streak,
        spent: bool,
    ) -> DispatchResult | None:
        """What a failed attempt leaves the claim as (FAILED final or retryable), or None: try again now.
        ``spent``: this call's attempts are used up."""
        client = target.client if isinstance(target, _Target) else None
        kind = _target_type(target)
        if outcome.kind is OutcomeKind.FATAL:
            return self._failed(attempt, uri, outcome, kind, retryable=False, failing_since=streak.since)
        if outcome.retry_window_seconds is not None:
            # Worth retrying only for a while (a DAG being deployed): by re-drives, never in a tight loop.
            return self._within_window(attempt, uri, client, outcome, streak, kind)
        settle_ms = int(target.client.settle_seconds(target.config) * 1000) if isinstance(target, _Target) else 0
        if (outcome.ambiguous and settle_ms) or spent or self.policy.redrive.exhausted(attempt.counted):
            # An ambiguous answer from a target whose runs appear late is confirmed after the settle
            # time, never at once; otherwise this call's attempts are spent.
            wait_ms = settle_ms if outcome.ambiguous else 0
            return self._later_or_never(attempt, uri, client, outcome, wait_ms, streak.since, kind)
        return None

    def _within_window(
        self,
        attempt: Attempt,
        uri: str | None,
        client: TargetClient | None,
        outcome: Outcome,
        streak: _Streak,
        target_type: str,
    ) -> DispatchResult:
        """RETRYABLE until ``retry_window_seconds`` after the answer was first seen, then FINAL; the last
        re-drive is due no later than the window's end, so the verdict comes when promised."""
        window = outcome.retry_window_seconds or 0.0
        deadline = streak.since + int(window * 1000)
        if self._clock() >= deadline:
            reason = f"{outcome.reason} (still so {window:g} s after it was first seen)"
            final = Outcome.fatal(reason, outcome.code or "retry_window")
            return self._failed(attempt, uri, final, target_type, retryable=False, failing_since=streak.since)
        return self._later_or_never(attempt, uri, client, outcome, 0, streak.since, target_type, deadline=deadline)

    def _later_or_never(
        self,
        attempt: Attempt,
        uri: str | None,
        client: TargetClient | None,
        outcome: Outcome,
        wait_ms: int,
        failing_since: int,
        target_type: str,
        deadline: int | None = None,
    ) -> DispatchResult:
        """FAILED and retryable (re-driven after backoff, at least ``wait_ms``, at most until ``deadline``), or
        terminal once the budget is spent. A confirmable target gets visits past the budget that only look
        (never start), so a run the last attempt may have started is found rather than left behind a FAILED
        claim. The budget counts from the last retry by hand (:attr:`Attempt.counted`); within a retry window
        (``deadline``) the window is the bound instead: re-drives come until it ends, however many."""
        total = self.policy.redrive.max_attempts
        counted = attempt.counted
        backoff = int(self.policy.redrive.delay(counted, self._rand) * 1000)
        confirmable = client is not None and client.confirmable
        if deadline is not None or counted < total or (confirmable and counted < 2 * total):
            next_at = self._clock() + max(backoff, wait_ms)
            if deadline is not None:
                next_at = min(next_at, deadline)
            return self._failed(
                attempt, uri, outcome, target_type, retryable=True, next_attempt_at=next_at, failing_since=failing_since
            )
        reason = f"gave up after {counted} attempts: {outcome.reason}"
        if outcome.ambiguous and not confirmable:
            reason += "; the last request may have reached the target, whose consumer deduplicates on the key"
        final = Outcome.fatal(reason, outcome.code or "exhausted")
        return self._failed(attempt, uri, final, target_type, retryable=False, failing_since=failing_since)

    # --- one attempt ---------------------------------------------------------------------------------

    def _target(self, entry: LedgerEntry, stored: StoredRule | None) -> _Target | Outcome:
        """The rule's target and its plug-in; a fatal Outcome when there is none."""
        trigger = entry.trigger
        if stored is None:
            return Outcome.fatal(f"rule {trigger.rule_id!r} no longer exists", "rule_missing")
        config = stored.rule.target
        if isinstance(config, UnusableTarget):
            return Outcome.fatal(f"the rule's target is invalid: {config.problem}", "invalid_target")
        client = self._targets.get(config.type)
        if client is None:
            return Outcome.fatal(f"target type {config.type!r} is not available here", "unsupported_target")
        confirm = stored.rule.confirm
        each_version = stored.rule.policy.mode is Mode.EACH_VERSION
        return _Target(config, client, confirm.within_ms if confirm is not None else None, each_version)

    def _manifest(self, entry: LedgerEntry) -> _Written | Outcome:
        """Write the manifest (or find a replay's); an Outcome when that fails."""
        trigger = entry.trigger
        try:
            if trigger.manifest_uri:  # a replay shares the manifest of the trigger it replays
                uri = trigger.manifest_uri
                manifest = self._manifests.get(uri)
            else:
                manifest = RunManifest.for_trigger(trigger, entry.replay_of, self._details(trigger))
                uri, manifest = self._put_manifest(trigger.trigger_key, manifest)
        except ManifestConflictError as exc:
            return Outcome.fatal(str(exc), "manifest_conflict")
        except (NotFoundError, ManifestIntegrityError) as exc:
            return Outcome.fatal(f"the manifest to replay is unusable: {exc}", "manifest_unusable")
        except Exception as exc:  # the store is down or throttled: nothing was started, so try again
            logger.warning(
                "manifest store unavailable", extra={"trigger_key": trigger.trigger_key, "reason": repr(exc)}
            )
            return Outcome.retryable(f"manifest store unavailable: {exc}", "manifest_store")
        return _Written(manifest, uri)

    def _details(self, trigger: Trigger) -> list[InputDetails | None]:
        """The details of the pinned versions' events (one BatchGetItem), in the inputs' order."""
        if self._events is None:
            return []
        refs = [ref for pin in trigger.inputs if (ref := event_ref(pin)) is not None]
        return details_of(trigger.inputs, self._events.recorded_events(refs) if refs else {})

    def _put_manifest(self, trigger_key: str, manifest: RunManifest) -> tuple[str, RunManifest]:
        """Store the manifest; where one of the same pins is stored with other details (written before an upgrade,
        or before a pinned event expired), that one is the manifest: every attempt sends the same inputs."""
        try:
            return self._manifests.put_if_absent(trigger_key, manifest), manifest
        except ManifestConflictError:
            uri = self._manifests.uri_for(trigger_key)
            try:
                stored = self._manifests.get(uri)
            except (NotFoundError, ManifestIntegrityError):
                stored = None  # not a manifest of ours at all: the conflict stands
            if stored is None or stored.bare() != manifest.bare():
                raise
            return uri, stored

    def refresh_run_state(self, entry: LedgerEntry) -> RunState | None:
        """Ask the target again about a started run that was still waiting (queued behind a paused DAG, or
        running) and keep its answer on the trigger; None when the target cannot be asked or has no answer."""
        target = self._target(entry, self._rules.get_rule(entry.trigger.rule_id))
        run_id = entry.trigger.target_run_id
        if isinstance(target, Outcome) or run_id is None:
            return None
        try:
            state = target.client.run_state(run_id, target.config)
        except TargetUnavailableError as exc:
            logger.info("run state not refreshed", extra={"trigger_key": entry.trigger_key, "reason": str(exc)})
            return None
        if state is None or not self._ledger.record_run_state(entry.trigger_key, state):
            return None
        return state

    @staticmethod
    def _windowed(plan: _Plan, attempt: Attempt) -> bool:
        """Whether the last failure is one worth retrying for a while (its window, not the attempt budget, bounds
        the re-drives: the start's answer then says whether the window has ended)."""
        return plan.client.retry_window_seconds(attempt.before.failure_code, plan.config) is not None

    def _attempt(self, plan: _Plan, attempt: Attempt) -> Outcome:
        """Confirm (after a first attempt), then start."""
        trigger = attempt.before.trigger
        if attempt.number > 1 and plan.client.confirmable:
            try:
                found = plan.client.find_run(trigger.trigger_key, plan.config, trigger.created_at)
            except TargetUnavailableError as exc:
                return Outcome.retryable(f"could not confirm with the target: {exc}", "confirm_unavailable")
            if found is not None:
                logger.info(
                    "run found before retrying",
                    extra={"trigger_key": trigger.trigger_key, "run_id": found, "attempt": attempt.number},
                )
                return Outcome.already_started(found)
        if self.policy.redrive.exhausted(attempt.counted - 1) and not self._windowed(plan, attempt):
            # The start budget is spent: this visit only looked, and the target has no run for the key.
            previous = attempt.before.trigger.reason or "no answer"
            spent = attempt.counted - 1
            return Outcome.fatal(
                f"gave up after {spent} attempts: {previous}", attempt.before.failure_code or "exhausted"
            )
        try:
            token = self._completion_token(trigger.trigger_key) if self._completion_token else None
        except Exception as exc:  # the completion key cannot be read now: nothing was sent, so try again
            logger.warning(
                "completion key unavailable", extra={"trigger_key": trigger.trigger_key, "reason": repr(exc)}
            )
            return Outcome.retryable(f"completion key unavailable: {exc}", "completion_key")
        invocation = plan.client.fit(
            Invocation.of(trigger, plan.manifest, plan.manifest_uri, attempt.number, attempt.before.replay_of, token)
        )
        try:
            return plan.client.start(invocation, plan.config)
        except Exception as exc:  # a plug-in bug must not leave the claim leased; the budget bounds retries
            logger.exception("target client raised", extra={"trigger_key": trigger.trigger_key})
            return Outcome.retryable(f"target client error: {exc!r}", "client_error", ambiguous=True)

    # --- endings -------------------------------------------------------------------------------------

    def _succeeded(self, attempt: Attempt, uri: str, target: _Target, outcome: Outcome) -> DispatchResult:
        key = attempt.before.trigger_key
        target_type = target.config.type
        assert outcome.run_id is not None
        now = self._clock()
        window = target.confirm_within_ms
        marked = self._ledger.mark_succeeded(
            key,
            attempt.owner,
            outcome.run_id,
            uri,
            now,
            run_state=outcome.run_state,
            confirm_by=now + window if window is not None else None,
            releases_next=target.releases_next(attempt.before.trigger),
        )
        if not marked:
            return self._lost_lease(key, attempt)
        if self._metrics is not None:
            self._metrics(SUCCESS_METRIC, {"target_type": target_type})
        logger.info(
            "trigger dispatched",
            extra={
                "trigger_key": key,
                "rule_id": attempt.before.trigger.rule_id,
                "status": TriggerStatus.SUCCEEDED.value,
                "run_id": outcome.run_id,
                "attempt": attempt.number,
                "outcome": outcome.kind.value,
                "run_state": outcome.run_state.state if outcome.run_state is not None else None,
                **trigger_log_context(attempt.before.trigger, trace_id()),
            },
        )
        return DispatchResult(key, DispatchStatus.SUCCEEDED, run_id=outcome.run_id, attempts=attempt.number)

    def _failed(
        self,
        attempt: Attempt,
        uri: str | None,
        outcome: Outcome,
        target_type: str,
        retryable: bool,
        next_attempt_at: int | None = None,
        failing_since: int | None = None,
    ) -> DispatchResult:
        key = attempt.before.trigger_key
        now = self._clock()
        code = outcome.code or "unknown"
        reason = outcome.reason or code
        if retryable and next_attempt_at is None:
            next_attempt_at = now + int(self.policy.redrive.delay(attempt.counted, self._rand) * 1000)
        marked = self._ledger.mark_failed(
            key, attempt.owner, reason, code, retryable, uri, now, next_attempt_at, failing_since
        )
        if not marked:
            return self._lost_lease(key, attempt)
        if self._metrics is not None:
            self._metrics(FAILED_METRIC, {"target_type": target_type, "reason": code})
        status = DispatchStatus.RETRY_LATER if retryable else DispatchStatus.FAILED
        log = logger.warning if retryable else logger.error
        log(
            "trigger dispatch failed",
            extra={
                "trigger_key": key,
                "rule_id": attempt.before.trigger.rule_id,
                "status": status.value,
                "failure": (FailureKind.RETRYABLE if retryable else FailureKind.FINAL).value,
                "reason": reason,
                "code": code,
                "attempt": attempt.number,
                "next_attempt_at": next_attempt_at,
                **trigger_log_context(attempt.before.trigger, trace_id()),
            },
        )
        return DispatchResult(key, status, reason=reason, attempts=attempt.number)

    def _not_taken(self, trigger_key: str) -> DispatchResult:
        entry = self._ledger.get(trigger_key)
        if entry is None:
            return DispatchResult(trigger_key, DispatchStatus.NOT_FOUND, reason="no such trigger")
        if not entry.is_open():
            return _done(entry)
        return DispatchResult(
            trigger_key,
            DispatchStatus.BUSY,
            reason="leased by another dispatcher or not due",
            attempts=entry.trigger.attempts,
        )

    def _lost_lease(self, trigger_key: str, attempt: Attempt) -> DispatchResult:
        # Our lease ran out and another dispatcher took over; it confirms with the target before acting.
        logger.warning("lease lost before marking", extra={"trigger_key": trigger_key, "attempt": attempt.number})
        return self._not_taken(trigger_key)


def _done(entry: LedgerEntry) -> DispatchResult:
    trigger = entry.trigger
    return DispatchResult(
        trigger.trigger_key,
        DispatchStatus.DONE,
        run_id=trigger.target_run_id,
        reason=trigger.reason,
        attempts=trigger.attempts,
    )


def _real_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


@dataclass
class RedriveReport:
    """What one compensator pass did, per status."""

    results: list[DispatchResult] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)  # triggers whose waiting run the target was asked about
    slots: SweepReport = field(default_factory=SweepReport)  # run slots freed (runs ended or past time) and handed on

    def count(self, status: DispatchStatus) -> int:
        return sum(1 for r in self.results if r.status is status)


class RedriveTriggers:
    """The compensator's part of dispatch: re-drive TRIGGERING claims stuck past the timeout and FAILED
    retryable ones that are due. Every re-drive asks the target first whether the run already exists
    (it is never a first attempt), and makes one attempt: the backoff between re-drives is the claim's
    ``nextAttemptAt``."""

    def __init__(
        self,
        ledger: TriggerLedger,
        dispatch: DispatchTrigger,
        clock: Callable[[], int] = now_ms,
        limit: int = 100,
        budget_ms: int = 120_000,  # then stop starting re-drives: the function times out at 240 s (template.yaml)
        recheck_ms: int = 300_000,
        slots: tuple[RunSlotGate, RuleStore] | None = None,
    ) -> None:
        """``slots``: the run-slot gate and the rules, to free slots whose runs ended unseen (``maxInFlight``)."""
        self._slots = slots
        self._ledger = ledger
        self._dispatch = dispatch
        self._clock = clock
        self._limit = limit
        self._budget_ms = budget_ms
        self._recheck_ms = recheck_ms

    def __call__(self) -> RedriveReport:
        start = self._clock()
        report = RedriveReport()
        stuck_before = start - self._dispatch.policy.stuck_after_ms
        for entry in self._ledger.pending(start, stuck_before, self._limit):
            if self._clock() - start > self._budget_ms:
                break  # the next pass continues; nothing is lost, the claims stay pending
            report.results.append(self._dispatch(entry.trigger_key, redrive=True, max_attempts=1))
        # Runs the target left waiting (a paused DAG) are asked about again, so runState never goes stale.
        for entry in self._ledger.waiting_runs(start - self._recheck_ms, self._limit):
            if self._clock() - start > self._budget_ms:
                break
            if self._dispatch.refresh_run_state(entry) is not None:
                report.refreshed.append(entry.trigger_key)
        if self._slots is not None:  # then whom a freed slot lets through starts from its stream record
            gate, rules = self._slots
            report.slots = gate.sweep(rules, self._dispatch.refresh_run_state, self._limit)
        if report.results:
            logger.info(
                "triggers re-driven",
                extra={"count": len(report.results), "status": {s.value: report.count(s) for s in DispatchStatus}},
            )
        return report


def handle_dispatch_record(
    record: Any,
    dispatch: DispatchTrigger,
    key_of: Callable[[Any], str | None],
    entry_of: Callable[[Any], LedgerEntry | None] | None = None,
) -> DispatchResult | None:
    """Dispatch the trigger a DynamoDB stream record claims (a Powertools ``record_handler``).

    Idempotent: a redelivered record, or a second INSERT record for the same claim, finds the claim
    leased or already terminal and does nothing. Raises (so the batch retries the record) only when
    the ledger itself fails. ``key_of`` reads the record's claim key and ``entry_of`` the claim from its
    image (the container wires the DynamoDB ledger's readers: ``Container.dispatch_record``); without
    ``entry_of`` the claim is read from the ledger.
    """
    trigger_key = key_of(record)
    if trigger_key is None:
        return None
    return dispatch(trigger_key, known=entry_of(record) if entry_of is not None else None)


class RetryTrigger:
    """Retry a FAILED trigger by hand (``POST /triggers/{triggerKey}/retry``), once its cause is fixed.

    The claim goes back to TRIGGERING under the SAME key, so the target's idempotency still holds (the same
    ``Idempotency-Key``, ``dag_run_id``, execution name): a run an earlier attempt did start is found, never
    started twice. The attempt budget starts again; attempt numbers keep counting, so the first attempt
    after a retry still asks a confirmable target before it sends. The ledger's write wakes the dispatcher
    (its stream record); if that is lost, the compensator re-drives the claim once it counts as stuck.
    A TRIGGERING or SUCCEEDED trigger is refused (TriggerNotRetryableError, a 409); replay re-runs those.
    """

    def __init__(self, ledger: TriggerLedger, clock: Callable[[], int] = now_ms) -> None:
        self._ledger = ledger
        self._clock = clock

    def __call__(self, trigger_key: str) -> Trigger:
        """Raises NotFoundError or TriggerNotRetryableError."""
        trigger = self._ledger.retry(trigger_key, self._clock())
        logger.info(
            "trigger retry requested",
            extra={
                "trigger_key": trigger_key,
                "rule_id": trigger.rule_id,
                "status": trigger.status.value,
                "attempts": trigger.attempts,
                "retries": trigger.retries,
            },
        )
        return trigger
