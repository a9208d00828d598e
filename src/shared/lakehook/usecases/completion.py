"""Run completion: a downstream run reports how it ended and, on success, the assets it changed.

``POST /runs/{triggerKey}/complete`` with ``{"status": "SUCCEEDED" | "FAILED", "outlets": [event, ...]}``.
Outlets are ordinary asset events (or events through an alias) and enter the normal ingest path with
``SourceType.RUN_COMPLETION``: recorded once, state advanced, rules woken, so an ODS -> DWD -> DWS -> ADS
chain advances with no cron (seed 002). The caller is authenticated like a push: a producer's outlets
must lie under its key prefixes; management credentials may write any asset.

A completion is idempotent (outlet events are deduplicated by identity) and may arrive before the
dispatcher has marked the claim SUCCEEDED (a fast run). A SKIPPED claim had no run and refuses one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import ConflictError, NotFoundError, ValidationError
from lakehook.domain.events import EventResult, SourceType
from lakehook.domain.producers import Producer
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import TriggerStatus
from lakehook.observability import logger
from lakehook.ports.aliases import AliasStore
from lakehook.ports.dispatch import TriggerLedger
from lakehook.usecases.aliases import ingest_through_aliases
from lakehook.usecases.ingest import IngestEvents, describe_validation_error

MAX_OUTLETS = 100


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

    def to_api(self) -> dict[str, Any]:
        return {"triggerKey": self.trigger_key, "status": self.status, "results": [r.to_api() for r in self.results]}


class CompleteRun:
    """Record a run's end on its claim and ingest its outlets."""

    def __init__(
        self, ledger: TriggerLedger, ingest: IngestEvents, aliases: AliasStore, clock: Callable[[], int] = now_ms
    ) -> None:
        self._ledger = ledger
        self._ingest = ingest
        self._aliases = aliases
        self._clock = clock

    def __call__(self, trigger_key: str, body: Any, producer: Producer | None) -> CompletionResult:
        """Raises ValidationError (bad body), NotFoundError (no such trigger), ConflictError (SKIPPED),
        AuthorizationError (an outlet outside the producer's prefixes; nothing is recorded then)."""
        if not isinstance(body, dict):
            raise ValidationError('body must be {"status": "SUCCEEDED" | "FAILED", "outlets": [...]}', field="body")
        try:
            completion = RunCompletion.model_validate(body)
        except PydanticValidationError as exc:
            raise ValidationError(describe_validation_error(exc), field="body") from exc
        if completion.status == "FAILED" and completion.outlets:
            raise ValidationError("a FAILED run registers no outlets", field="outlets")
        entry = self._ledger.get(trigger_key)
        if entry is None:
            raise NotFoundError(f"trigger {trigger_key!r} does not exist")
        if entry.status is TriggerStatus.SKIPPED:
            raise ConflictError(f"trigger {trigger_key!r} was skipped; it has no run to complete")
        results = ingest_through_aliases(
            completion.outlets, self._ingest, self._aliases, SourceType.RUN_COMPLETION, producer
        )
        if not self._ledger.record_completion(trigger_key, completion.status, self._clock()):
            raise ConflictError(f"trigger {trigger_key!r} cannot take a completion")
        logger.info(
            "run completed",
            extra={
                "trigger_key": trigger_key,
                "rule_id": entry.trigger.rule_id,
                "status": completion.status,
                "outlets": len(results),
            },
        )
        return CompletionResult(trigger_key, completion.status, results)
