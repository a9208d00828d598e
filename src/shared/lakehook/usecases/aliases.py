"""Aliases: manage them, and expand events sent through one into events of its concrete assets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lakehook.domain.aliases import Alias, AliasSpec, validate_alias_name
from lakehook.domain.errors import NotFoundError
from lakehook.domain.events import EventResult, IngestStatus, SourceType
from lakehook.domain.producers import Producer
from lakehook.domain.time import now_ms
from lakehook.ports.aliases import AliasStore
from lakehook.ports.store import Page
from lakehook.usecases.ingest import IngestEvents

ALIAS_FIELD = "alias"


class ManageAliases:
    """``PUT /aliases/{name}`` and ``GET /aliases/{name}``."""

    def __init__(self, store: AliasStore, clock: Callable[[], int] = now_ms) -> None:
        self._store = store
        self._clock = clock

    def check(self, name: str, spec: AliasSpec) -> Alias:
        """The alias a put would write (``?dryRun=true``): everything checked, nothing written."""
        now = self._clock()
        return Alias(
            name=validate_alias_name(name),
            asset_keys=tuple(spec.asset_keys),
            description=spec.description,
            created_at=now,
            updated_at=now,
        )

    def put(self, name: str, spec: AliasSpec) -> tuple[Alias, bool]:
        """Create or replace; answers the alias and whether it was created."""
        alias = self.check(name, spec)
        created = self._store.put_alias(alias)
        stored = self._store.get_alias(alias.name)
        return (stored or alias), created

    def list(self, limit: int, next_token: str | None = None) -> Page[Alias]:
        return self._store.list_aliases(limit, next_token)

    def get(self, name: str) -> Alias:
        alias = self._store.get_alias(validate_alias_name(name))
        if alias is None:
            raise NotFoundError(f"alias {name!r} does not exist")
        return alias


def expand_aliases(raw_events: Sequence[Any], store: AliasStore) -> list[Any]:
    """Each event that names ``"alias"`` instead of ``"assetKey"`` becomes one event per concrete asset of
    the alias (in the alias's order); an unknown alias, or both fields, gives a REJECTED EventResult in its
    place. Other events pass unchanged. Aliases are read once per name."""
    cache: dict[str, Alias | None] = {}
    expanded: list[Any] = []
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict) or ALIAS_FIELD not in raw:
            expanded.append(raw)
            continue
        name = raw[ALIAS_FIELD]
        if "assetKey" in raw:
            expanded.append(_rejected(index, "give either assetKey or alias, not both"))
            continue
        if not isinstance(name, str):
            expanded.append(_rejected(index, "alias must be a string"))
            continue
        if name not in cache:
            cache[name] = store.get_alias(name)
        alias = cache[name]
        if alias is None:
            expanded.append(_rejected(index, f"alias {name!r} does not exist"))
            continue
        body = {k: v for k, v in raw.items() if k != ALIAS_FIELD}
        expanded.extend({**body, "assetKey": key} for key in alias.asset_keys)
    return expanded


def _rejected(index: int, reason: str) -> EventResult:
    return EventResult(status=IngestStatus.REJECTED, reason=f"{ALIAS_FIELD}: {reason}", index=index)


def ingest_through_aliases(
    raw_events: Sequence[Any],
    ingest: IngestEvents,
    store: AliasStore,
    source: SourceType,
    producer: Producer | None = None,
) -> list[EventResult]:
    """Ingest raw events, each event naming an alias counting for every concrete asset of it.

    Answers one result per concrete event (an alias of three assets gives three), in order; the
    alias store is read only when some event names an alias.
    """
    if not any(isinstance(e, dict) and ALIAS_FIELD in e for e in raw_events):
        return ingest.ingest_raw(raw_events, source, producer)
    expanded = expand_aliases(raw_events, store)
    raw = [e for e in expanded if not isinstance(e, EventResult)]
    ingested = iter(ingest.ingest_raw(raw, source, producer) if raw else [])
    return [e if isinstance(e, EventResult) else next(ingested) for e in expanded]
