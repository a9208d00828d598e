"""The state step of ingest: the use case decides the change, the store applies it, the use case reads the answer.

One store request per decision: the change goes to the store as one conditional write (``AssetStore.apply_change``);
a refusal comes back with the fields the failed guard saw, and the decision (ALREADY: that very change is there; or
STALE, and a late event's remainder sent as one more change) is made here, not by the store.
"""

from __future__ import annotations

from lakehook.domain.events import AssetEvent
from lakehook.domain.state import advance_for
from lakehook.domain.state_changes import Advance, already_applied
from lakehook.ports.store import AdvanceOutcome, AssetStore, ChangeApplied


def advance_state(store: AssetStore, event: AssetEvent, now_ms: int, recorded_at: int | None = None) -> AdvanceOutcome:
    """Move the event's asset state forward by it; never backwards, never twice.

    ``recorded_at`` (default ``now_ms``) is when the event identity was first recorded: it orders an event that
    carries no time of its own (see :mod:`lakehook.domain.ordering`).
    """
    change = advance_for(event, now_ms if recorded_at is None else recorded_at)
    if change is None:
        return AdvanceOutcome.NO_STATE
    return apply_change(store, event.asset_key, change, event.event_id, now_ms)


def apply_change(store: AssetStore, asset_key: str, change: Advance, marker: str, now_ms: int) -> AdvanceOutcome:
    """Apply a decided change (an event's advance, or one no event asks for: a manifest's verdict, a confirmation);
    ``marker`` names its cause."""
    result = store.apply_change(asset_key, change, marker, now_ms)
    if isinstance(result, ChangeApplied):
        return AdvanceOutcome.ADVANCED
    if already_applied(result.seen, change):
        return AdvanceOutcome.ALREADY
    if change.late is not None:  # a late event: what of it still applies, under its own guard
        store.apply_change(asset_key, change.late, marker, now_ms)
    return AdvanceOutcome.STALE
