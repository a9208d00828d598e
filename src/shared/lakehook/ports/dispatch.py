"""Ports of the dispatcher: target plug-ins, the run-manifest store, and the trigger ledger.

The ledger works on the very claim items the resolver's ``TriggerStore`` creates: it moves a
claim from ``TRIGGERING`` to ``SUCCEEDED`` (with the target's run id) or ``FAILED`` (with a reason),
counts attempts, and holds a short lease so two dispatchers (a redelivered stream record and the
compensator, say) never work on one trigger at the same time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass
from typing import ClassVar

from lakehook.domain.completion import CompletionRecord, RecordOutcome
from lakehook.domain.confirmation import Confirmation, ConfirmationState
from lakehook.domain.dispatch import DEFAULT_PAYLOAD_LIMIT, Invocation, Outcome, RunManifest
from lakehook.domain.run_slots import RunSlots, SlotScope
from lakehook.domain.targets import TargetConfig
from lakehook.domain.triggers import FailureKind, RunState, Trigger, TriggerStatus


class TargetClient(ABC):
    """Starts a downstream run on one kind of target, through that target's own idempotency primitive.

    Capabilities tell the dispatcher how far a retry is safe:

    - ``confirmable``: :meth:`find_run` can see a run started for a trigger key, so a retry is
      preceded by a look and never starts a second run;
    - ``deduplicates``: the target itself refuses a second run for the same key (an execution
      name, a run id, an idempotency key), so even a blind re-send cannot start two;
    - ``settle_seconds``: how long after an accepted start :meth:`find_run` may still not see the run
      (a scheduler that turns the request into a run asynchronously); no retry happens sooner.

    A target that is neither (Lambda, EventBridge) delivers at least once; its consumers deduplicate
    on ``triggerKey`` (see those plug-ins' docstrings).
    """

    type_name: ClassVar[str]
    confirmable: ClassVar[bool] = False
    deduplicates: ClassVar[bool] = False

    payload_limit: ClassVar[int] = DEFAULT_PAYLOAD_LIMIT
    """The largest invocation payload (bytes) this target takes: a larger one goes without the inputs' details,
    which stay in the run manifest (``detailsIn: "manifest"``, docs/targets.md)."""

    payload_quoted: ClassVar[bool] = False
    """Whether the target's limit counts the payload as a string inside its own JSON request (an environment
    variable's value: ECS's overrides, Batch's SubmitJob), so its quotes and backslashes are escaped once more."""

    def fit(self, invocation: Invocation) -> Invocation:
        """The invocation as this target takes it: without the inputs' details when they would not fit."""
        return invocation.fitted(self.payload_limit, self.payload_quoted)

    def settle_seconds(self, config: TargetConfig) -> float:
        """Seconds after an accepted start before :meth:`find_run` is sure to see the run."""
        return 0.0

    def run_state(self, run_id: str, config: TargetConfig) -> RunState | None:
        """What the target says now about a run it started (e.g. still queued behind a paused DAG), for targets
        that can be asked; None otherwise. Raises TargetUnavailableError when the target cannot answer."""
        return None

    def retry_window_seconds(self, failure_code: str | None, config: TargetConfig) -> float | None:
        """For a failure this client answers with a retry window (``Outcome.retry_window_seconds``), that window,
        so re-drives keep starting within it whatever the attempt budget; None for every other failure."""
        return None

    @abstractmethod
    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        """Start the run for ``invocation.trigger_key``. Never raises for a target's answer or a network
        failure: those are outcomes (RETRYABLE with ``ambiguous`` when the request may have arrived)."""

    @abstractmethod
    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        """The id of the run the target has for this key, or None if it has none. ``not_before_ms``
        bounds the search: no run for the key can predate the claim. Raises TargetUnavailableError when
        the target cannot be asked; a target that cannot look answers None (see ``confirmable``)."""


class ManifestStore(ABC):
    """Run manifests, one per trigger key, written once."""

    @abstractmethod
    def uri_for(self, trigger_key: str) -> str:
        """Where the manifest of this key lives (known before it is written)."""

    @abstractmethod
    def put_if_absent(self, trigger_key: str, manifest: RunManifest) -> str:
        """Store the manifest unless one is there; answer its URI. An identical stored manifest is fine
        (a retry); a different one raises ManifestConflictError and is never replaced."""

    @abstractmethod
    def get(self, uri: str) -> RunManifest:
        """The manifest at ``uri``. Raises NotFoundError, or ManifestIntegrityError if it was altered."""


@dataclass(frozen=True)
class LedgerEntry:
    """A claim as the dispatcher sees it: the trigger plus its dispatch bookkeeping."""

    trigger: Trigger
    retryable: bool | None = None
    next_attempt_at: int | None = None
    lease_owner: str | None = None
    lease_until: int | None = None
    last_attempt_at: int | None = None
    replay_of: str | None = None
    failure_code: str | None = None
    run_status: str | None = None
    completed_at: int | None = None
    attempts_base: int = 0
    failing_since: int | None = None

    @property
    def trigger_key(self) -> str:
        return self.trigger.trigger_key

    @property
    def status(self) -> TriggerStatus:
        return self.trigger.status

    @property
    def failure(self) -> FailureKind | None:
        """RETRYABLE or FINAL for a FAILED claim, else None."""
        if self.status is not TriggerStatus.FAILED:
            return None
        return FailureKind.RETRYABLE if self.retryable else FailureKind.FINAL

    def is_open(self) -> bool:
        """Still owed a run or a terminal reason: TRIGGERING, or FAILED and retryable."""
        return self.status is TriggerStatus.TRIGGERING or self.failure is FailureKind.RETRYABLE


@dataclass(frozen=True)
class Attempt:
    """One attempt taken: its number (1-based, counted across invocations) and the claim before it."""

    number: int
    before: LedgerEntry
    owner: str

    @property
    def previous_attempt_at(self) -> int | None:
        return self.before.last_attempt_at

    @property
    def counted(self) -> int:
        """Its number within the attempt budget: a retry by hand starts the budget again (``attemptsBase``),
        while ``number`` keeps counting, so the first attempt after it still looks before it sends."""
        return max(self.number - self.before.attempts_base, 1)


class TriggerLedger(ABC):
    """Dispatch state on the resolver's claim items. Every change is one conditional write."""

    @abstractmethod
    def get(self, trigger_key: str) -> LedgerEntry | None:
        """The claim (strongly consistent), or None."""

    @abstractmethod
    def begin_attempt(
        self, trigger_key: str, owner: str, now_ms: int, lease_ms: int, redrive: bool = False
    ) -> Attempt | None:
        """Record one attempt and lease the claim to ``owner`` until ``now_ms + lease_ms``.

        Taken when the claim is TRIGGERING and not leased by someone else (no lease, an expired one,
        or ``owner``'s own), or, with ``redrive``, FAILED, retryable and due (``nextAttemptAt <= now``),
        which moves it back to TRIGGERING. Answers None when not taken (terminal, leased, not due)."""

    @abstractmethod
    def mark_succeeded(
        self,
        trigger_key: str,
        owner: str,
        run_id: str,
        manifest_uri: str | None,
        now_ms: int,
        run_state: RunState | None = None,
        confirm_by: int | None = None,
        releases_next: bool = True,
    ) -> bool:
        """TRIGGERING -> SUCCEEDED with the target's run id (and what the target said about the run);
        only by the lease holder. False if not held. ``confirm_by``: a rule with ``confirm``, by when an outlet
        commit must confirm the run (kept on the claim for :meth:`unconfirmed`). ``releases_next``: its success
        releases its group's (or partition's) next version (EACH_VERSION, head of line): only then is it noted on the
        claim (``releasesNext``), whose SUCCEEDED record alone wakes the resolver (``RESOLVER_FILTER_PATTERNS``)."""

    @abstractmethod
    def mark_failed(
        self,
        trigger_key: str,
        owner: str,
        reason: str,
        code: str,
        retryable: bool,
        manifest_uri: str | None,
        now_ms: int,
        next_attempt_at: int | None = None,
        failing_since: int | None = None,
    ) -> bool:
        """TRIGGERING -> FAILED with a reason; ``retryable`` ones are re-driven from ``next_attempt_at``.
        ``failing_since``: when failures with this ``code`` began (default ``now_ms``).
        Only by the lease holder; releases the lease. False if not held."""

    @abstractmethod
    def retry(self, trigger_key: str, now_ms: int) -> Trigger:
        """FAILED (RETRYABLE or FINAL) -> TRIGGERING under the same key, by hand: the attempt budget starts
        again (``attemptsBase`` = ``attempts``), the failure and its window are cleared, ``retries`` counts
        one more, and the claim is marked to wake the dispatcher. Answers the claim as it is now.
        Raises NotFoundError (no claim) or TriggerNotRetryableError (it is not FAILED)."""

    @abstractmethod
    def record_completion(
        self, trigger_key: str, record: CompletionRecord
    ) -> tuple[RecordOutcome, CompletionRecord | None]:
        """Record what the run reported (status, outlets, when) on the claim, once: the first terminal status
        wins. One conditional write, no read before it. Answers RECORDED with ``record``; SAME or CONFLICT with
        the record stored first (SAME when its digest is ``record``'s); NO_RUN (and None) when there is no claim
        or it is SKIPPED. A completion may arrive before the dispatcher marked the claim."""

    @abstractmethod
    def pending(self, now_ms: int, stuck_before_ms: int, limit: int) -> list[LedgerEntry]:
        """Claims to re-drive: TRIGGERING, last changed before ``stuck_before_ms`` and not leased, and
        FAILED retryable ones that are due. At most ``limit``, oldest first where the store can tell."""

    @abstractmethod
    def waiting_runs(self, checked_before_ms: int, limit: int) -> list[LedgerEntry]:
        """SUCCEEDED claims whose run has not reported its end and whose ``runState`` says it waits (queued,
        running), last checked before ``checked_before_ms``: the ones worth asking the target again."""

    @abstractmethod
    def record_confirmation(
        self, trigger_key: str, confirmation: Confirmation, replacing: ConfirmationState | None = None
    ) -> bool:
        """Keep what is known of the run's output on the claim, with one conditional write: only while the claim's
        confirmation is ``replacing`` (None: it has none yet), never on a SKIPPED claim, and NOT_ADVANCED only on a
        SUCCEEDED claim whose run did not report FAILED. False when the condition does not hold."""

    @abstractmethod
    def unconfirmed(self, rule_ids: Collection[str], now_ms: int, limit: int) -> list[LedgerEntry]:
        """SUCCEEDED claims of these rules whose ``confirmBy`` has passed with no confirmation and whose run did not
        report FAILED: the ones to mark NOT_ADVANCED. At most ``limit``, oldest first."""

    @abstractmethod
    def record_run_state(self, trigger_key: str, run_state: RunState) -> bool:
        """Keep what the target says now about a SUCCEEDED claim's run; False once the run reported its end."""

    @abstractmethod
    def hold_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        """Mark a TRIGGERING claim as waiting for a run slot (``maxInFlight``): since ``now_ms`` unless it already
        waits; it stays TRIGGERING and unleased. False when it is not TRIGGERING any more."""

    @abstractmethod
    def wake_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        """A waiting claim took a slot: clear its wait and mark it to wake the dispatcher (its stream record, as a
        retry by hand does). False when it is not TRIGGERING any more."""


class RunSlotStore(ABC):
    """The run slots of each scope (``maxInFlight``), one stored state per scope, changed by compare-and-set."""

    @abstractmethod
    def read(self, scope: SlotScope) -> tuple[RunSlots, int]:
        """The scope's slots (strongly consistent) and the version read (0: nothing stored)."""

    @abstractmethod
    def write(self, scope: SlotScope, slots: RunSlots, version: int) -> bool:
        """Store ``slots`` as ``version + 1`` if the stored version is still ``version`` (an empty state removes the
        item). False when another writer came first: read again and redo the change."""

    @abstractmethod
    def scopes(self, limit: int) -> list[SlotScope]:
        """Scopes with runs in flight or triggers waiting: the compensator's work."""

    @abstractmethod
    def of_rule(self, rule_id: str) -> list[tuple[SlotScope, RunSlots]]:
        """The rule's scopes with anything in flight or waiting, and their slots (explain)."""
