"""In-memory stores of the resolver's ports: the backtest's throw-away set, and the unit tests' fakes (re-exported by
tests/fakes/memory_rules.py). Thread-safe: each holds its lock over its own state (the state reader reads through the
stores it is given, which hold theirs)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from lakehook.adapters.memory.paging import page_of as _page
from lakehook.domain.events import AssetEvent, EventType
from lakehook.domain.input_details import EventRef
from lakehook.domain.requests import RecordedRequest
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState, snapshot_record
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord, Verdict, quality_verdict
from lakehook.ports.rules import (
    AssetRecheck,
    Claim,
    ClaimOutcome,
    ClaimResult,
    Deferral,
    DeferralStore,
    GroupRef,
    RequestClaim,
    ResolutionInputs,
    RuleError,
    RuleStore,
    StateHistory,
    StateReader,
    StoredRule,
    TriggerStore,
)
from lakehook.ports.store import Page


class InMemoryRuleStore(RuleStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: dict[str, StoredRule] = {}
        self.index: dict[str, set[str]] = {}

    def put_rule(self, rule: Rule, now_ms: int) -> StoredRule:
        with self._lock:
            old = self.rules.get(rule.rule_id)
            if old is not None:
                for key in old.rule.asset_keys:
                    self.index.get(key, set()).discard(rule.rule_id)
            stored = StoredRule(rule, (old.revision if old else 0) + 1, old.created_at if old else now_ms, now_ms)
            self.rules[rule.rule_id] = stored
            for key in rule.asset_keys:
                self.index.setdefault(key, set()).add(rule.rule_id)
            return stored

    def get_rule(self, rule_id: str) -> StoredRule | None:
        with self._lock:
            return self.rules.get(rule_id)

    def get_rules(self, rule_ids: Collection[str]) -> dict[str, Rule]:
        with self._lock:
            return {i: self.rules[i].rule for i in rule_ids if i in self.rules}

    def list_rules(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        with self._lock:
            ordered = [self.rules[k] for k in sorted(self.rules)]
        return _page(ordered, limit, next_token, "rules")

    def delete_rule(self, rule_id: str) -> bool:
        with self._lock:
            old = self.rules.pop(rule_id, None)
            if old is None:
                return False
            for key in old.rule.asset_keys:
                self.index.get(key, set()).discard(rule_id)
            return True

    def rules_for_asset(self, asset_key: str) -> list[Rule]:
        with self._lock:
            return [self.rules[i].rule for i in sorted(self.index.get(asset_key, ()))]

    def record_error(self, rule_id: str, error: RuleError) -> None:
        with self._lock:
            stored = self.rules.get(rule_id)
            if stored is not None:
                self.rules[rule_id] = replace(stored, last_error=error)

    def clear_error(self, rule_id: str, group_id: str) -> None:
        with self._lock:
            stored = self.rules.get(rule_id)
            if stored is not None and stored.last_error is not None and stored.last_error.group_id == group_id:
                self.rules[rule_id] = replace(stored, last_error=None)


class InMemoryTriggerStore(TriggerStore):
    """The resolver's claims. Every InMemoryTriggerLedger over this store works on them under this store's
    ``lock`` and keeps its bookkeeping per claim in ``ledger_books``, as every dispatcher over one table works
    on the same claim items: two ledgers over one store are two dispatcher processes, never two copies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.triggers: dict[str, Trigger] = {}
        self.cursors: dict[GroupRef, GroupCursor] = {}
        self.claim_order: list[str] = []
        self.ledger_books: dict[str, Any] = {}  # the ledger's leases and failure bookkeeping, by trigger key
        self.requests: dict[str, RecordedRequest] = {}  # REQUEST#<key>: the first answer under a request key

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        ref = (cursor.rule_id, cursor.group_id)
        with self.lock:
            now = self.cursors.get(ref)
            expected_seq = expected.seq if expected is not None else 0
            expected_late = expected.late_seq if expected is not None else 0
            moved = (now.seq if now else 0) != expected_seq or (now.late_seq if now else 0) != expected_late
            if trigger.trigger_key in self.triggers:
                return ClaimResult(ClaimOutcome.DUPLICATE, now if moved else None)
            if moved:
                return ClaimResult(ClaimOutcome.CURSOR_MOVED, now)
            self.triggers[trigger.trigger_key] = trigger
            self.cursors[ref] = cursor
            self.claim_order.append(trigger.trigger_key)
            return ClaimResult(ClaimOutcome.CLAIMED, cursor)

    def claim_many(self, claims: Sequence[Claim]) -> list[ClaimResult]:
        # one claim after the other, through claim (which a test's store may override to race or fail a claim): as
        # the adapter's transactions, whose claims never share an item, answer them
        return [self.claim(c.trigger, c.cursor, c.expected) for c in claims]

    def admit_late(
        self, refs: Collection[GroupRef], order: int, asset_key: str | None = None
    ) -> dict[GroupRef, GroupCursor]:
        with self.lock:
            for ref in refs:
                now = self.cursors.get(ref) or GroupCursor.initial(*ref)
                self.cursors[ref] = now.arrived_late(order, asset_key)
            return {ref: self.cursors[ref] for ref in refs}

    def forget_unstarted(self, refs: Collection[GroupRef]) -> None:
        with self.lock:
            for ref in refs:
                if ref in self.cursors and self.cursors[ref].seq == 0:
                    del self.cursors[ref]

    def note_first_seen(self, ref: GroupRef, orders: Mapping[str, int]) -> GroupCursor:
        with self.lock:
            self.cursors[ref] = (self.cursors.get(ref) or GroupCursor.initial(*ref)).saw_first(orders)
            return self.cursors[ref]

    def put_replay(self, trigger: Trigger) -> bool:
        with self.lock:
            if trigger.trigger_key in self.triggers:
                return False
            self.triggers[trigger.trigger_key] = trigger
            self.claim_order.append(trigger.trigger_key)
            return True

    def put_replay_once(self, trigger: Trigger, request: RecordedRequest) -> RequestClaim:
        with self.lock:
            taken = self.requests.get(request.key)
            if taken is not None and taken.expires_at > request.created_at // 1000:
                return RequestClaim(False, taken)
            if trigger.trigger_key in self.triggers:
                return RequestClaim(False)
            self.triggers[trigger.trigger_key] = trigger
            self.claim_order.append(trigger.trigger_key)
            self.requests[request.key] = request
            return RequestClaim(True)

    def get_request(self, key: str, now_ms: int) -> RecordedRequest | None:
        with self.lock:
            found = self.requests.get(key)
            return found if found is not None and found.expires_at > now_ms // 1000 else None

    def get(self, trigger_key: str) -> Trigger | None:
        with self.lock:
            return self.triggers.get(trigger_key)

    def get_many(self, trigger_keys: Collection[str]) -> dict[str, Trigger]:
        with self.lock:
            return {k: self.triggers[k] for k in trigger_keys if k in self.triggers}

    def list_for_rule(
        self, rule_id: str, status: TriggerStatus | None = None, limit: int = 50, next_token: str | None = None
    ) -> Page[Trigger]:
        with self.lock:
            mine = [t for t in self.triggers.values() if t.rule_id == rule_id and status in (None, t.status)]
        # newest first by the claim's own date, as the per-rule index orders them (not by when they were written)
        mine.sort(key=lambda t: (t.created_at, t.sequence, t.trigger_key), reverse=True)
        return _page(mine, limit, next_token, f"triggers:{rule_id}")

    def get_cursors(self, refs: Collection[GroupRef]) -> dict[GroupRef, GroupCursor]:
        with self.lock:
            return {r: self.cursors[r] for r in refs if r in self.cursors}


class InMemoryStateReader(StateReader):
    """Reads states through a function (e.g. an InMemoryAssetStore's ``get_state``) and cursors from a store."""

    def __init__(
        self,
        get_state: Callable[[str], AssetState | None],
        triggers: TriggerStore,
        events: Callable[[], Iterable[AssetEvent]] | None = None,
    ) -> None:
        self._get_state = get_state
        self._triggers = triggers
        self._events = events
        self._lock = threading.Lock()
        self.reads = 0  # batched reads made, for request-budget assertions

    def snapshots(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], SnapshotRecord]:
        """From ``events`` (e.g. an InMemoryAssetStore's recorded events), when given."""
        pairs = set(wanted)
        found: dict[tuple[str, int], SnapshotRecord] = {}
        for event in self._events() if self._events is not None else ():
            pair = (event.asset_key, event.snapshot_id or 0)
            if event.event_type is EventType.SNAPSHOT_COMMITTED and pair in pairs:
                found[pair] = snapshot_record(event)
        return found

    def recorded_events(self, wanted: Collection[EventRef]) -> dict[EventRef, AssetEvent]:
        """From ``events``, when given."""
        refs = set(wanted)
        recorded = self._events() if self._events is not None else ()
        return {ref: e for e in recorded if (ref := (e.asset_key, e.event_type, e.version)) in refs}

    def quality_verdicts(self, wanted: Collection[tuple[str, int]]) -> dict[tuple[str, int], Verdict]:
        """From ``events``, when given."""
        pairs = set(wanted)
        checks: dict[tuple[str, int], set[EventType]] = {}
        for event in self._events() if self._events is not None else ():
            pair = (event.asset_key, event.snapshot_id or 0)
            if event.event_type in (EventType.QUALITY_CHECK_PASSED, EventType.QUALITY_CHECK_FAILED) and pair in pairs:
                checks.setdefault(pair, set()).add(event.event_type)
        return {
            pair: quality_verdict(EventType.QUALITY_CHECK_PASSED in seen, EventType.QUALITY_CHECK_FAILED in seen)
            for pair, seen in checks.items()
        }

    def get_states(self, asset_keys: Collection[str]) -> dict[str, AssetState]:
        found = {k: self._get_state(k) for k in asset_keys}
        return {k: s for k, s in found.items() if s is not None}

    def read(self, asset_keys: Collection[str], cursors: Collection[GroupRef]) -> ResolutionInputs:
        with self._lock:
            self.reads += 1
        return ResolutionInputs(self.get_states(asset_keys), self._triggers.get_cursors(cursors))


class InMemoryStateHistory(StateHistory):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: dict[str, dict[int, AssetState]] = {}
        self.snapshots: dict[str, dict[int, LoggedSnapshot]] = {}

    def record(self, states: Mapping[str, Sequence[AssetState]], now_ms: int) -> None:
        with self._lock:
            for key, items in states.items():
                for state in items:
                    self.states.setdefault(key, {})[state.version] = state

    def between(self, asset_key: str, first_version: int, last_version: int) -> list[AssetState]:
        with self._lock:
            kept = self.states.get(asset_key, {})
            return [kept[v] for v in sorted(kept) if first_version <= v <= last_version]

    def record_snapshots(self, snapshots: Mapping[str, Sequence[SnapshotRecord]], now_ms: int) -> None:
        with self._lock:
            for key, records in snapshots.items():
                log = self.snapshots.setdefault(key, {})
                for record in records:
                    log.setdefault(record.order, LoggedSnapshot(record, now_ms))

    def log_snapshot(self, asset_key: str, record: SnapshotRecord, now_ms: int, *, late: bool = False) -> bool:
        with self._lock:
            log = self.snapshots.setdefault(asset_key, {})
            if record.order in log:
                return False
            log[record.order] = LoggedSnapshot(record, now_ms, late=late)
            return True

    def snapshots_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        with self._lock:
            log = self.snapshots.get(asset_key, {})
            return [log[o] for o in sorted(log) if o > order][:limit]


def _due_order(deferral: Deferral | AssetRecheck) -> str:
    """Oldest first, then as the DynamoDB due-time index sorts (``<dueAt>#<ruleId>#<groupId>``, ``…#ASSET#<key>``)."""
    if isinstance(deferral, AssetRecheck):
        return f"{deferral.due_at:015d}#ASSET#{deferral.asset_key}"
    return f"{deferral.due_at:015d}#{deferral.rule_id}#{deferral.group_id}"


class InMemoryDeferralStore(DeferralStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pending: dict[GroupRef, Deferral] = {}
        self.rechecks: dict[str, AssetRecheck] = {}
        self.marked: list[Deferral | AssetRecheck] = []

    def defer(self, deferral: Deferral) -> None:
        with self._lock:
            self.pending[(deferral.rule_id, deferral.group_id)] = deferral

    def recheck(self, asset_keys: Collection[str], due_at: int) -> None:
        with self._lock:
            for key in asset_keys:
                self.rechecks[key] = AssetRecheck(key, due_at)

    def due(self, now_ms: int, limit: int) -> list[Deferral | AssetRecheck]:
        with self._lock:
            items: list[Deferral | AssetRecheck] = [*self.pending.values(), *self.rechecks.values()]
            ready = sorted((d for d in items if d.due_at <= now_ms), key=_due_order)
            return ready[:limit]

    def mark_due(self, deferral: Deferral | AssetRecheck, now_ms: int) -> bool:
        with self._lock:
            if isinstance(deferral, AssetRecheck):
                if self.rechecks.get(deferral.asset_key) != deferral:
                    return False
                del self.rechecks[deferral.asset_key]
            else:
                ref = (deferral.rule_id, deferral.group_id)
                if self.pending.get(ref) != deferral:
                    return False
                del self.pending[ref]
            self.marked.append(deferral)
            return True
