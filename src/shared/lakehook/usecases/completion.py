"""Run completion: a downstream run reports how it ended and, on success, the assets it changed.

``POST /runs/{triggerKey}/complete`` with ``{"status": "SUCCEEDED" | "FAILED", "outlets": [event, ...]}``.
Outlets are ordinary asset events (or events through an alias) and enter the normal ingest path with
``SourceType.RUN_COMPLETION``: recorded once, state advanced, rules woken, so an ODS -> DWD -> DWS -> ADS
chain advances with no cron (seed 002).

Who may complete (checked by the route from headers alone, before the body is read): management
credentials, or the trigger's own completion token (:class:`CompletionTokens`), which its invocation
carried. A token caller's outlets must lie within the rule's declared ``outlets``; management credentials
are not confined. A producer's push signature is not enough: producers push events, runs complete.

Order, so that nothing half-happens:
1. the body is validated whole (status, every outlet event, aliases resolved): a 400 names the field;
2. the outlets are checked against the caller's scope: a 403 names the refused outlets, nothing is written;
3. the completion is recorded on the claim with one conditional write; the first terminal status wins:
   the same completion again (same status, same outlets) is idempotent, a different one is a 409;
4. the outlets are ingested (idempotent by event identity). A retry of a completion whose outlets were not
   all ingested (a crash between 3 and 4) ingests them then, so the answer 200 always means "all in".

A completion may arrive before the dispatcher has marked the claim SUCCEEDED (a fast run). A SKIPPED claim
had no run and refuses one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.completion import CompletionRecord, RecordOutcome, completion_token, outside_outlets, token_matches
from lakehook.domain.errors import AuthorizationError, ConflictError, NotFoundError, ValidationError
from lakehook.domain.events import AssetEvent, EventResult, SourceType
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import Trigger
from lakehook.event_metrics import count_results
from lakehook.observability import logger
from lakehook.ports import SecretStore
from lakehook.ports.aliases import AliasStore
from lakehook.ports.dispatch import TriggerLedger
from lakehook.ports.rules import RuleStore
from lakehook.usecases.aliases import expand_aliases
from lakehook.usecases.ingest import IngestEvents, describe_validation_error, parse_event
from lakehook.usecases.run_slots import RunSlotGate

MAX_OUTLETS = 100


class CompletionTokens:
    """Issues and checks per-trigger completion tokens under the stack's completion key.

    The key is a secret in the secret store (on AWS a Secrets Manager secret the template generates; on the
    local stack one the runtime creates). A process reads it once and keeps it for ``refresh_ms`` (5 minutes);
    a token that matches neither the kept key nor the key before the last rotation (AWSPREVIOUS) makes the
    process read both again, at most once per ``recheck_ms`` (30 s), so a rotation needs no restart: tokens
    issued under the former key keep verifying until the next rotation (runs in flight finish), and a
    process that still issues under the former key does so for at most ``refresh_ms``.
    """

    def __init__(
        self,
        secrets: SecretStore,
        secret_ref: str | None,
        *,
        clock: Callable[[], int] = now_ms,
        refresh_ms: int = 300_000,
        recheck_ms: int = 30_000,
    ) -> None:
        self._secrets = secrets
        self._ref = secret_ref
        self._clock = clock
        self._refresh_ms = refresh_ms
        self._recheck_ms = recheck_ms
        self._keys: tuple[str, ...] = ()
        self._read_at: int | None = None
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return bool(self._ref)

    def _load(self, *, stale_after_ms: int | None = None) -> tuple[str, ...]:
        """The current key, then the previous one if any; read again when older than ``stale_after_ms``."""
        if not self._ref:
            return ()
        with self._lock:
            now = self._clock()
            age = None if self._read_at is None else now - self._read_at
            limit = self._refresh_ms if stale_after_ms is None else stale_after_ms
            if age is None or age >= limit:
                current = self._secrets.get_secret(self._ref)
                previous = self._secrets.get_previous_secret(self._ref)
                self._keys = (current,) if previous is None or previous == current else (current, previous)
                self._read_at = now
            return self._keys

    def issue(self, trigger_key: str) -> str | None:
        """The token of one trigger, or None when the stack has no completion key. Raises NotFoundError (or the
        store's error) when the key cannot be read: the caller treats that as retryable."""
        keys = self._load()
        return completion_token(keys[0], trigger_key) if keys else None

    def verify(self, trigger_key: str, token: str | None) -> bool:
        """Whether ``token`` is this trigger's token under the current or the previous key (constant-time).
        False without a completion key."""
        if not token:
            return False
        if any(token_matches(key, trigger_key, token) for key in self._load()):
            return True
        # Perhaps the key was rotated since this process read it: read again, at most every recheck_ms.
        return any(token_matches(k, trigger_key, token) for k in self._load(stale_after_ms=self._recheck_ms))


class Caller(StrEnum):
    """Who reports a completion (established by the route from headers, before the body is read)."""

    MANAGEMENT = "MANAGEMENT"  # management credentials: any outlet
    RUN = "RUN"  # the trigger's completion token: outlets within the rule's declared outlets


class RunCompletion(BaseModel):
    """The body of ``POST /runs/{triggerKey}/complete``."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["SUCCEEDED", "FAILED"]
    outlets: list[Any] = Field(default_factory=list, max_length=MAX_OUTLETS)


@dataclass(frozen=True)
class CompletionResult:
    trigger_key: str
    status: str
    results: list[EventResult]
    completed_at: int
    first: bool


class CompleteRun:
    """Record a run's end on its claim (first terminal status wins) and ingest its outlets."""

    def __init__(
        self,
        ledger: TriggerLedger,
        ingest: IngestEvents,
        aliases: AliasStore,
        rules: RuleStore | None = None,
        clock: Callable[[], int] = now_ms,
        slots: RunSlotGate | None = None,
    ) -> None:
        """``slots``: the run ended, so its slot (its rule's ``maxInFlight``) goes to the next trigger waiting."""
        self._slots = slots
        self._ledger = ledger
        self._ingest = ingest
        self._aliases = aliases
        self._rules = rules
        self._clock = clock

    def __call__(self, trigger_key: str, body: Any, caller: Caller) -> CompletionResult:
        """Raises ValidationError (bad body or outlet: 400), NotFoundError (no such trigger), AuthorizationError
        (a token caller's outlet outside the rule's outlets; nothing is written), ConflictError (SKIPPED, or a
        different completion was recorded first)."""
        completion = _parse(body)
        outlets = self._outlet_events(completion)
        entry = self._ledger.get(trigger_key)
        if entry is None:
            raise NotFoundError(f"trigger {trigger_key!r} does not exist")
        if caller is Caller.RUN:
            self._authorize(entry.trigger.rule_id, outlets)
        canonical = [o.model_dump(by_alias=True, mode="json", exclude_none=True) for o in outlets]
        record = CompletionRecord.of(completion.status, canonical, self._clock())
        outcome, stored = self._ledger.record_completion(trigger_key, record)
        if outcome is RecordOutcome.NO_RUN or stored is None:
            if self._ledger.get(trigger_key) is None:
                raise NotFoundError(f"trigger {trigger_key!r} does not exist")
            raise ConflictError(f"trigger {trigger_key!r} was skipped; it has no run to complete")
        if outcome is RecordOutcome.CONFLICT:
            raise ConflictError(
                f"trigger {trigger_key!r} already completed with status {stored.run_status} and "
                f"{len(stored.outlets)} outlet(s); the first reported end stands"
            )
        self._free_slot(entry.trigger)  # a repeat frees it again (nothing to do then): a crash before it is mended
        results = [self._ingest.ingest(o, SourceType.RUN_COMPLETION, index=i) for i, o in enumerate(outlets)]
        count_results(results)  # a repeated completion's outlets count as duplicates
        logger.info(
            "run completed",
            extra={
                "trigger_key": trigger_key,
                "rule_id": entry.trigger.rule_id,
                "status": completion.status,
                "outlets": len(results),
                "caller": caller.value,
                "repeated": outcome is RecordOutcome.SAME,
            },
        )
        return CompletionResult(
            trigger_key, stored.run_status, results, stored.completed_at, outcome is RecordOutcome.RECORDED
        )

    def _outlet_events(self, completion: RunCompletion) -> list[AssetEvent]:
        """Every outlet as a valid event, aliases expanded; the first bad one is a 400 naming it."""
        events: list[AssetEvent] = []
        for index, raw in enumerate(completion.outlets):
            for item in expand_aliases([raw], self._aliases):
                if isinstance(item, EventResult):  # an alias that does not resolve, or alias and assetKey both
                    raise ValidationError(f"outlets[{index}].{item.reason}", field=f"outlets[{index}]")
                try:
                    event = parse_event(item)
                except PydanticValidationError as exc:
                    raise ValidationError(
                        f"outlets[{index}]: {describe_validation_error(exc)}", field=f"outlets[{index}]"
                    ) from exc
                refusal = self._ingest.manifest_refusal(event)
                if refusal is not None:
                    where = f"outlets[{index}].manifestUri"
                    raise ValidationError(f"{where}: {refusal}", field=where)
                events.append(event)
        return events

    def _free_slot(self, trigger: Trigger) -> None:
        if self._slots is None or self._rules is None:
            return
        stored = self._rules.get_rule(trigger.rule_id)
        limit = stored.rule.policy.slot_limit if stored is not None else None
        if limit is not None:
            self._slots.release(trigger, limit)

    def _authorize(self, rule_id: str, outlets: list[AssetEvent]) -> None:
        if not outlets:
            return
        stored = self._rules.get_rule(rule_id) if self._rules is not None else None
        declared = list(stored.rule.outlets) if stored is not None else []
        refused = outside_outlets(declared, (o.asset_key for o in outlets))
        if refused:
            raise AuthorizationError(
                f"outlet {', '.join(refused)} is outside the outlets rule {rule_id!r} declares "
                f"({', '.join(declared) or 'none'}); nothing was recorded"
            )


def _parse(body: Any) -> RunCompletion:
    if not isinstance(body, dict):
        raise ValidationError('body must be {"status": "SUCCEEDED" | "FAILED", "outlets": [...]}', field="body")
    try:
        completion = RunCompletion.model_validate(body)
    except PydanticValidationError as exc:
        raise ValidationError(describe_validation_error(exc), field="body") from exc
    if completion.status == "FAILED" and completion.outlets:
        raise ValidationError("a FAILED run registers no outlets", field="outlets")
    return completion
