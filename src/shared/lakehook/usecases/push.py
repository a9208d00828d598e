"""Push events (``POST /asset-events``): one event, or an envelope of them, from a producer or an operator."""

from __future__ import annotations

from typing import Any

from lakehook.domain.errors import AuthorizationError
from lakehook.domain.events import EventResult, SourceType
from lakehook.domain.producers import Producer
from lakehook.event_metrics import count_results
from lakehook.ports.aliases import AliasStore
from lakehook.usecases.aliases import ingest_through_aliases
from lakehook.usecases.ingest import IngestEvents, envelope_events


class PushEvents:
    """The pushed body's events (at most ``limit``), each ingested through the alias it may name, and counted."""

    def __init__(self, ingest: IngestEvents, aliases: AliasStore, limit: int, *, enabled: bool = True) -> None:
        """``enabled`` False: the stack's push receiver is off (PushReceiver=Disabled); every push is refused."""
        self._enabled = enabled
        self._ingest = ingest
        self._aliases = aliases
        self._limit = limit

    def __call__(self, body: Any, producer: Producer | None) -> list[EventResult]:
        """One result per concrete event, in order (``producer`` None: management credentials, any asset).
        Raises AuthorizationError (403) when the push receiver is off, before anything is read or recorded."""
        if not self._enabled:
            raise AuthorizationError(
                "the push receiver is off on this stack (PushReceiver=Disabled): its events come by polling, "
                "the event bus and lineage"
            )
        raw_events = envelope_events(body, self._limit)
        results = ingest_through_aliases(raw_events, self._ingest, self._aliases, SourceType.PUSH, producer)
        count_results(results)
        return results
