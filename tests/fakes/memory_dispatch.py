"""In-memory fakes of the dispatcher's ports, for unit tests. Thread-safe: each holds a lock over its state.

- :class:`InMemoryTriggerLedger` works on the claims of an :class:`InMemoryTriggerStore`, under that store's
  lock and with its bookkeeping kept there, as the DynamoDB ledger works on the resolver's claim items: any
  number of ledgers over one store behave as that many dispatchers over one table.
- :class:`InMemoryManifestStore` keeps manifests as bytes with the S3 store's put-if-absent rule.
- :class:`InMemoryAliasStore` keeps aliases by name.
- :class:`InMemoryTargetClient` is a simulated scheduler that counts runs per key and can be told to
  fail in every way a real one does (timeouts before or after accepting, 5xx, 429, 4xx, a crash).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, ClassVar

from lakehook.adapters.memory.paging import page_of as _page
from lakehook.domain.aliases import Alias
from lakehook.domain.completion import CompletionRecord, RecordOutcome
from lakehook.domain.confirmation import Confirmation, ConfirmationState
from lakehook.domain.dispatch import (
    Invocation,
    ManifestConflictError,
    Outcome,
    RunManifest,
    TargetUnavailableError,
)
from lakehook.domain.errors import NotFoundError
from lakehook.domain.targets import TargetConfig
from lakehook.domain.triggers import (
    FailureKind,
    RunState,
    SlotWait,
    Trigger,
    TriggerNotRetryableError,
    TriggerStatus,
)
from lakehook.ports.aliases import AliasStore
from lakehook.ports.dispatch import Attempt, LedgerEntry, ManifestStore, TargetClient, TriggerLedger
from lakehook.ports.store import Page
from tests.fakes.memory_rules import InMemoryTriggerStore


@dataclass
class _Bookkeeping:
    retryable: bool | None = None
    next_attempt_at: int | None = None
    lease_owner: str | None = None
    lease_until: int | None = None
    last_attempt_at: int | None = None
    replay_of: str | None = None
    failure_code: str | None = None
    run_status: str | None = None
    completed_at: int | None = None
    completion: CompletionRecord | None = None
    attempts_base: int = 0
    failing_since: int | None = None
    wake: bool = False


class InMemoryTriggerLedger(TriggerLedger):
    """The ledger over an InMemoryTriggerStore's claims (the same Trigger objects the resolver claims)."""

    def __init__(self, store: InMemoryTriggerStore | None = None) -> None:
        self.store = store if store is not None else InMemoryTriggerStore()
        # The store's lock and books, not the ledger's own: the resolver claims under that lock, and a second
        # ledger over the same store (a second dispatcher) must see this one's leases.
        self._lock = self.store.lock
        self._books: dict[str, _Bookkeeping] = self.store.ledger_books

    def add(self, trigger: Trigger, replay_of: str | None = None) -> None:
        """Put a claim directly (tests that do not go through the resolver)."""
        with self._lock:
            self.store.triggers[trigger.trigger_key] = trigger
            self.store.claim_order.append(trigger.trigger_key)
            self._books[trigger.trigger_key] = _Bookkeeping(replay_of=replay_of)

    def _entry(self, trigger: Trigger) -> LedgerEntry:
        books = self._books.get(trigger.trigger_key, _Bookkeeping())
        return LedgerEntry(
            trigger,
            books.retryable,
            books.next_attempt_at,
            books.lease_owner,
            books.lease_until,
            books.last_attempt_at,
            # the claim's own replayOf, as the DynamoDB ledger reads it from the item (a replay the store put)
            books.replay_of if books.replay_of is not None else trigger.replay_of,
            books.failure_code,
            books.run_status,
            books.completed_at,
            books.attempts_base,
            books.failing_since,
        )

    def get(self, trigger_key: str) -> LedgerEntry | None:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            return None if trigger is None else self._entry(trigger)

    def begin_attempt(
        self, trigger_key: str, owner: str, now_ms: int, lease_ms: int, redrive: bool = False
    ) -> Attempt | None:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None:
                return None
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            free = books.lease_until is None or books.lease_until < now_ms or books.lease_owner == owner
            triggering = trigger.status is TriggerStatus.TRIGGERING and free
            due = (
                redrive
                and trigger.status is TriggerStatus.FAILED
                and bool(books.retryable)
                and (books.next_attempt_at or 0) <= now_ms
            )
            if not (triggering or due):
                return None
            before = self._entry(trigger)
            self.store.triggers[trigger_key] = trigger.model_copy(
                update={
                    "status": TriggerStatus.TRIGGERING,
                    "attempts": trigger.attempts + 1,
                    "updated_at": now_ms,
                    "failure": None,
                    "failing_since": None,
                    "next_attempt_at": None,
                    "slot_wait": None,
                }
            )
            self._books[trigger_key] = replace(
                books,
                lease_owner=owner,
                lease_until=now_ms + lease_ms,
                last_attempt_at=now_ms,
                retryable=None,
                next_attempt_at=None,
                wake=False,
            )
            return Attempt(trigger.attempts + 1, before, owner)

    def _held(self, trigger_key: str, owner: str) -> Trigger | None:
        trigger = self.store.triggers.get(trigger_key)
        books = self._books.get(trigger_key)
        if trigger is None or books is None or trigger.status is not TriggerStatus.TRIGGERING:
            return None
        return trigger if books.lease_owner == owner else None

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
        with self._lock:
            trigger = self._held(trigger_key, owner)
            if trigger is None:
                return False
            self.store.triggers[trigger_key] = trigger.model_copy(
                update={
                    "confirm_by": confirm_by if confirm_by is not None else trigger.confirm_by,
                    "status": TriggerStatus.SUCCEEDED,
                    "target_run_id": run_id,
                    "updated_at": now_ms,
                    "reason": None,
                    "manifest_uri": manifest_uri or trigger.manifest_uri,
                    "failure": None,
                    "failure_code": None,
                    "failing_since": None,
                    "next_attempt_at": None,
                    "run_state": run_state or trigger.run_state,
                }
            )
            books = self._books[trigger_key]
            self._books[trigger_key] = replace(
                books, lease_owner=None, lease_until=None, failure_code=None, failing_since=None
            )
            return True

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
        with self._lock:
            trigger = self._held(trigger_key, owner)
            if trigger is None:
                return False
            since = failing_since if failing_since is not None else now_ms
            nxt = next_attempt_at if retryable else None
            self.store.triggers[trigger_key] = trigger.model_copy(
                update={
                    "status": TriggerStatus.FAILED,
                    "reason": reason[:1000],
                    "updated_at": now_ms,
                    "manifest_uri": manifest_uri or trigger.manifest_uri,
                    "failure": FailureKind.RETRYABLE if retryable else FailureKind.FINAL,
                    "failure_code": code,
                    "failing_since": since,
                    "next_attempt_at": nxt,
                }
            )
            books = self._books[trigger_key]
            self._books[trigger_key] = replace(
                books,
                lease_owner=None,
                lease_until=None,
                retryable=retryable,
                next_attempt_at=nxt,
                failure_code=code,
                failing_since=since,
            )
            return True

    def retry(self, trigger_key: str, now_ms: int) -> Trigger:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None:
                raise NotFoundError(f"trigger {trigger_key!r} does not exist")
            if trigger.status is not TriggerStatus.FAILED:
                raise TriggerNotRetryableError(trigger_key, trigger.status)
            retried = trigger.model_copy(
                update={
                    "status": TriggerStatus.TRIGGERING,
                    "updated_at": now_ms,
                    "retries": trigger.retries + 1,
                    "failure": None,
                    "failing_since": None,
                    "next_attempt_at": None,
                }
            )
            self.store.triggers[trigger_key] = retried
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            self._books[trigger_key] = replace(
                books,
                attempts_base=trigger.attempts,
                retryable=None,
                next_attempt_at=None,
                failing_since=None,
                lease_owner=None,
                lease_until=None,
                wake=True,
            )
            return retried

    def woken(self) -> list[str]:
        """Keys a retry by hand (or a freed run slot) marked to wake the dispatcher and no attempt has taken yet
        (what the DynamoDB ledger's ``wake`` stream record delivers)."""
        with self._lock:
            return [k for k, b in self._books.items() if b.wake]

    def record_completion(
        self, trigger_key: str, record: CompletionRecord
    ) -> tuple[RecordOutcome, CompletionRecord | None]:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None or trigger.status is TriggerStatus.SKIPPED:
                return RecordOutcome.NO_RUN, None
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            if books.completion is not None:
                same = books.completion.digest == record.digest
                return (RecordOutcome.SAME if same else RecordOutcome.CONFLICT), books.completion
            self._books[trigger_key] = replace(
                books, run_status=record.run_status, completed_at=record.completed_at, completion=record
            )
            self.store.triggers[trigger_key] = trigger.model_copy(
                update={"run_status": record.run_status, "completed_at": record.completed_at, "outlets": record.outlets}
            )
            return RecordOutcome.RECORDED, record

    def pending(self, now_ms: int, stuck_before_ms: int, limit: int) -> list[LedgerEntry]:
        with self._lock:
            found = []
            for trigger in sorted(self.store.triggers.values(), key=lambda t: (t.created_at, t.trigger_key)):
                books = self._books.get(trigger.trigger_key, _Bookkeeping())
                leased = books.lease_until is not None and books.lease_until >= now_ms
                stuck = (
                    trigger.status is TriggerStatus.TRIGGERING
                    and trigger.updated_at < stuck_before_ms
                    and not leased
                    and trigger.slot_wait is None  # waiting for a run slot: the run-slot sweep's, not stuck
                )
                due = (
                    trigger.status is TriggerStatus.FAILED
                    and bool(books.retryable)
                    and (books.next_attempt_at or 0) <= now_ms
                )
                if stuck or due:
                    found.append(self._entry(trigger))
            return found[:limit]

    def waiting_runs(self, checked_before_ms: int, limit: int) -> list[LedgerEntry]:
        with self._lock:
            found = [
                self._entry(t)
                for t in sorted(self.store.triggers.values(), key=lambda t: (t.created_at, t.trigger_key))
                if t.status is TriggerStatus.SUCCEEDED
                and t.run_status is None
                and t.run_state is not None
                and t.run_state.waiting
                and t.run_state.checked_at < checked_before_ms
            ]
            return found[:limit]

    def record_confirmation(
        self, trigger_key: str, confirmation: Confirmation, replacing: ConfirmationState | None = None
    ) -> bool:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None or not trigger.accepts_confirmation(confirmation, replacing):
                return False
            self.store.triggers[trigger_key] = trigger.model_copy(update={"confirmation": confirmation})
            return True

    def unconfirmed(self, rule_ids: Collection[str], now_ms: int, limit: int) -> list[LedgerEntry]:
        with self._lock:
            due = [t for t in self.store.triggers.values() if t.rule_id in rule_ids and t.unconfirmed_at(now_ms)]
            due.sort(key=lambda t: (t.created_at, t.trigger_key))
            return [self._entry(t) for t in due[:limit]]

    def hold_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            leased = books.lease_until is not None and books.lease_until >= now_ms
            if trigger is None or trigger.status is not TriggerStatus.TRIGGERING or leased:
                return False
            wait = trigger.slot_wait or SlotWait(since=now_ms)
            self.store.triggers[trigger_key] = trigger.model_copy(update={"slot_wait": wait, "updated_at": now_ms})
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            self._books[trigger_key] = replace(books, wake=False)
            return True

    def wake_for_slot(self, trigger_key: str, now_ms: int) -> bool:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None or trigger.status is not TriggerStatus.TRIGGERING:
                return False
            self.store.triggers[trigger_key] = trigger.model_copy(update={"slot_wait": None, "updated_at": now_ms})
            books = self._books.setdefault(trigger_key, _Bookkeeping())
            self._books[trigger_key] = replace(books, wake=True)
            return True

    def record_run_state(self, trigger_key: str, run_state: RunState) -> bool:
        with self._lock:
            trigger = self.store.triggers.get(trigger_key)
            if trigger is None or trigger.status is not TriggerStatus.SUCCEEDED or trigger.run_status is not None:
                return False
            self.store.triggers[trigger_key] = trigger.model_copy(update={"run_state": run_state})
            return True


class InMemoryManifestStore(ManifestStore):
    """Manifests as bytes by URI; put-if-absent like the S3 store (identical is fine, different refused)."""

    def __init__(self, bucket: str = "lakehook-manifests") -> None:
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}
        self.puts = 0
        self._lock = threading.Lock()

    def uri_for(self, trigger_key: str) -> str:
        return f"s3://{self.bucket}/manifests/{trigger_key}.json"

    def put_if_absent(self, trigger_key: str, manifest: RunManifest) -> str:
        uri = self.uri_for(trigger_key)
        document = manifest.document()
        with self._lock:
            self.puts += 1
            stored = self.objects.setdefault(uri, document)
        if stored != document:
            raise ManifestConflictError(f"a different manifest is stored for trigger {trigger_key!r}")
        return uri

    def get(self, uri: str) -> RunManifest:
        with self._lock:
            stored = self.objects.get(uri)
        if stored is None:
            raise NotFoundError(f"no manifest at {uri}")
        return RunManifest.from_document(stored)


class InMemoryAliasStore(AliasStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.aliases: dict[str, Alias] = {}

    def put_alias(self, alias: Alias) -> bool:
        with self._lock:
            old = self.aliases.get(alias.name)
            if old is not None:
                alias = alias.model_copy(update={"created_at": old.created_at})
            self.aliases[alias.name] = alias
            return old is None

    def get_alias(self, name: str) -> Alias | None:
        with self._lock:
            return self.aliases.get(name)

    def list_aliases(self, limit: int, next_token: str | None = None) -> Page[Alias]:
        with self._lock:
            ordered = [self.aliases[k] for k in sorted(self.aliases)]
        return _page(ordered, limit, next_token, "aliases")


class SimulatedCrashError(BaseException):
    """The dispatcher's process died here (fault injection; a BaseException, so nothing catches it)."""


class Fault(StrEnum):
    """How the simulated target misbehaves on one start request."""

    TIMEOUT_BEFORE = "TIMEOUT_BEFORE"  # the request never arrived (connect timeout)
    TIMEOUT_AFTER = "TIMEOUT_AFTER"  # the run started, the answer was lost (read timeout)
    HTTP_5XX = "HTTP_5XX"  # the server failed before acting
    HTTP_5XX_AFTER = "HTTP_5XX_AFTER"  # the server started the run, then answered 500
    HTTP_429 = "HTTP_429"  # throttled, nothing started
    HTTP_4XX = "HTTP_4XX"  # refused for good
    CRASH_AFTER_ACCEPT = "CRASH_AFTER_ACCEPT"  # the run started, then the dispatcher died
    HTTP_409 = "HTTP_409"  # the key had arrived before (an answer lost on the way): 409 with that run
    FIND_UNAVAILABLE = "FIND_UNAVAILABLE"  # (for find_run) the target could not be asked


@dataclass
class _Run:
    run_id: str
    trigger_key: str
    visible_at: float
    payload: dict[str, Any] = field(default_factory=dict)


class InMemoryTargetClient(TargetClient):
    """A simulated scheduler. ``runs`` counts every run it started per key: exactly-once means 1 each.

    Subclass to change the capabilities (``confirmable``, ``deduplicates``); ``settle`` makes a started
    run visible to ``find_run`` only that many seconds later on ``clock`` (an asynchronous scheduler).
    """

    type_name: ClassVar[str] = "memory"
    confirmable: ClassVar[bool] = True
    deduplicates: ClassVar[bool] = True

    def __init__(self, clock: Callable[[], float] | None = None, settle: float = 0.0) -> None:
        self._clock = clock or (lambda: 0.0)
        self._settle = settle
        self._lock = threading.Lock()
        self._runs: list[_Run] = []
        self.faults: list[Fault] = []
        self.find_faults: list[Fault] = []
        self.calls: Counter[str] = Counter()

    @property
    def runs(self) -> Counter[str]:
        """Runs started per trigger key."""
        with self._lock:
            return Counter(r.trigger_key for r in self._runs)

    def payloads(self, trigger_key: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r.payload for r in self._runs if r.trigger_key == trigger_key]

    def settle_seconds(self, config: TargetConfig) -> float:
        return self._settle

    def _existing(self, trigger_key: str) -> _Run | None:
        return next((r for r in self._runs if r.trigger_key == trigger_key), None)

    def _create(self, invocation: Invocation) -> _Run:
        run = _Run(
            f"run-{len(self._runs) + 1}", invocation.trigger_key, self._clock() + self._settle, invocation.payload()
        )
        self._runs.append(run)
        return run

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        with self._lock:
            self.calls["start"] += 1
            fault = self.faults.pop(0) if self.faults else None
            if fault is Fault.TIMEOUT_BEFORE:
                return Outcome.retryable("connect timeout", "timeout")
            if fault is Fault.HTTP_5XX:
                return Outcome.retryable("HTTP 503", "http_503", ambiguous=True)
            if fault is Fault.HTTP_429:
                return Outcome.retryable("HTTP 429", "throttled", retry_after_seconds=1.0)
            if fault is Fault.HTTP_4XX:
                return Outcome.fatal("HTTP 400: bad request", "http_400")
            existing = self._existing(invocation.trigger_key) if self.deduplicates else None
            run = existing or self._create(invocation)
            if fault is Fault.TIMEOUT_AFTER:
                return Outcome.retryable("read timeout", "timeout", ambiguous=True)
            if fault is Fault.HTTP_5XX_AFTER:
                return Outcome.retryable("HTTP 500", "http_500", ambiguous=True)
            if fault is Fault.CRASH_AFTER_ACCEPT:
                raise SimulatedCrashError(f"crashed after {run.run_id} started")
            if fault is Fault.HTTP_409:
                return Outcome.already_started(run.run_id)
            return Outcome.already_started(run.run_id) if existing else Outcome.started(run.run_id)

    def find_run(self, trigger_key: str, config: TargetConfig, not_before_ms: int) -> str | None:
        with self._lock:
            self.calls["find_run"] += 1
            if self.find_faults and self.find_faults.pop(0) is Fault.FIND_UNAVAILABLE:
                raise TargetUnavailableError("target unavailable")
            if not self.confirmable:
                return None
            run = self._existing(trigger_key)
            return run.run_id if run is not None and run.visible_at <= self._clock() else None
