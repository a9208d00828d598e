"""Runs confirmed by their output commit, and runs that did not advance their outlets.

:class:`ConfirmRuns` is called by the poller (the scheduled poll, a commit notice's poll, compensation) with the
commits it just ingested: each that carries a trigger key (``lakehook.trigger-key``, read by the format's reader
into ``SnapshotInfo.trigger_key``) and changed data confirms that trigger, when the table is one of its rule's
``outlets``. The commit itself went through the ordinary ingest path first, so the outlet's new state wakes the
rules that read it: an ODS -> DWD -> DWS -> ADS chain runs with no completion callback at all.

:class:`SweepNotAdvanced` is the deferral sweep's part: every started run whose ``confirmBy`` passed with no
confirmation (and that did not report FAILED) becomes NOT_ADVANCED, counted in ``lakehouse_run_not_advanced_total``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lakehook.domain.completion import covers
from lakehook.domain.confirmation import Confirmation, ConfirmationState, confirmed_output, unconfirmed_output
from lakehook.domain.snapshots import SnapshotInfo, snapshot_event
from lakehook.domain.state_changes import Advance
from lakehook.domain.time import now_ms
from lakehook.domain.versions import changes_data
from lakehook.freshness_metrics import MetricSink
from lakehook.observability import MetricName, logger
from lakehook.ports import AssetStore
from lakehook.ports.dispatch import TriggerLedger
from lakehook.ports.rules import RuleStore, UnreadableRuleError
from lakehook.usecases.ingest_state import apply_change
from lakehook.usecases.run_slots import RunSlotGate

RULES_PER_PAGE = 100


# why a data commit carrying a key confirmed nothing, as explain says it of a confirmationStatus member's version
_UNCONFIRMED_WHY = {
    "NO_TRIGGER": "no trigger of that key had a run (none was claimed, or it was SKIPPED)",
    "NOT_AN_OUTLET": "the table is not among the outlets of that trigger's rule",
    "RULE_UNREADABLE": "that trigger's rule does not load, so nothing was decided",
}


class ConfirmOutcome(StrEnum):
    CONFIRMED = "CONFIRMED"  # this commit confirmed the trigger (late, when it had been NOT_ADVANCED)
    ALREADY = "ALREADY"  # the trigger was confirmed before (by this commit or another)
    NO_DATA_CHANGE = "NO_DATA_CHANGE"  # a compaction or another commit that changed no data confirms nothing
    NO_TRIGGER = "NO_TRIGGER"  # the key names no trigger (or a SKIPPED one, which had no run)
    NOT_AN_OUTLET = "NOT_AN_OUTLET"  # the table is not among the outlets of the trigger's rule
    RULE_UNREADABLE = "RULE_UNREADABLE"  # the trigger's rule does not load: nothing is decided, the poll goes on


@dataclass(frozen=True)
class ConfirmResult:
    trigger_key: str
    asset_key: str
    snapshot_id: int
    outcome: ConfirmOutcome


class ConfirmRuns:
    """Record CONFIRMED on the triggers that outlet commits name (one read of the claim and the rule, one
    conditional write, per commit carrying a key; commits without one cost nothing). ``slots``: a confirmed run
    no longer counts against its rule's ``maxInFlight``: its slot goes to the next trigger waiting, as a completion's
    does (a run that confirms and then reports frees it once). ``assets``: the commit is kept on the outlet's state as
    its newest confirmed one (``confirmationStatus`` members downstream; one conditional write per confirming commit),
    which wakes the rules reading the table."""

    def __init__(
        self,
        ledger: TriggerLedger,
        rules: RuleStore,
        clock: Callable[[], int] = now_ms,
        slots: RunSlotGate | None = None,
        assets: AssetStore | None = None,
    ) -> None:
        self._ledger = ledger
        self._rules = rules
        self._clock = clock
        self._slots = slots
        self._assets = assets

    def __call__(self, asset_key: str, snapshots: Sequence[SnapshotInfo]) -> list[ConfirmResult]:
        results = [self._one(asset_key, s) for s in snapshots if s.trigger_key is not None]
        for result in results:
            logger.info(
                "outlet commit",
                extra={
                    "trigger_key": result.trigger_key,
                    "asset_key": result.asset_key,
                    "snapshot_id": result.snapshot_id,
                    "outcome": result.outcome.value,
                },
            )
        return results

    def _one(self, asset_key: str, snapshot: SnapshotInfo) -> ConfirmResult:
        key = snapshot.trigger_key or ""
        if not changes_data(snapshot.commit_kind, snapshot.data_changed):
            return ConfirmResult(key, asset_key, snapshot.snapshot_id, ConfirmOutcome.NO_DATA_CHANGE)
        entry = self._ledger.get(key)
        if entry is None:
            return self._unconfirmed(key, asset_key, snapshot, ConfirmOutcome.NO_TRIGGER)
        try:
            stored = self._rules.get_rule(entry.trigger.rule_id)
        except UnreadableRuleError:  # a rule's problem never stops its outlet table's polling (explain says it)
            return self._unconfirmed(key, asset_key, snapshot, ConfirmOutcome.RULE_UNREADABLE)
        outlets = stored.rule.outlets if stored is not None else []
        if not any(covers(prefix, asset_key) for prefix in outlets):
            return self._unconfirmed(key, asset_key, snapshot, ConfirmOutcome.NOT_AN_OUTLET)
        outcome = self._record(key, asset_key, snapshot)
        if outcome in (ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY):  # ALREADY: a redelivery finishes the write
            self._keep_on_state(asset_key, snapshot, lambda order: confirmed_output(snapshot.snapshot_id, order, key))
        elif outcome is ConfirmOutcome.NO_TRIGGER:
            self._unconfirmed(key, asset_key, snapshot, outcome)
        limit = stored.rule.policy.slot_limit if stored is not None else None
        if outcome is ConfirmOutcome.CONFIRMED and self._slots is not None and limit is not None:
            self._slots.release(entry.trigger, limit)
        return ConfirmResult(key, asset_key, snapshot.snapshot_id, outcome)

    def _unconfirmed(self, key: str, asset_key: str, snapshot: SnapshotInfo, outcome: ConfirmOutcome) -> ConfirmResult:
        """A data commit whose key confirmed nothing: kept on the outlet's state with why, for explain."""
        why = _UNCONFIRMED_WHY[outcome.value]
        self._keep_on_state(
            asset_key, snapshot, lambda order: unconfirmed_output(snapshot.snapshot_id, order, key, why)
        )
        return ConfirmResult(key, asset_key, snapshot.snapshot_id, outcome)

    def _keep_on_state(self, asset_key: str, snapshot: SnapshotInfo, advance: Callable[[int], Advance]) -> None:
        """What the commit said of its run, on the outlet's state (advance-only by the commit's order)."""
        if self._assets is None:
            return
        try:
            order = snapshot_event(asset_key, snapshot).snapshot_order
        except ValueError:  # a commit that is no valid event (an Iceberg one without its order) was not ingested
            return
        if order is None:
            return
        marker = f"confirmation:{snapshot.trigger_key}:{snapshot.snapshot_id}"
        apply_change(self._assets, asset_key, advance(order), marker, self._clock())

    def _record(self, key: str, asset_key: str, snapshot: SnapshotInfo) -> ConfirmOutcome:
        confirmed = Confirmation.confirmed(asset_key, snapshot.snapshot_id, snapshot.commit_time, self._clock())
        if self._ledger.record_confirmation(key, confirmed):
            return ConfirmOutcome.CONFIRMED
        entry = self._ledger.get(key)
        current = entry.trigger.confirmation if entry is not None else None
        if current is None:  # the claim is gone, or SKIPPED (it had no run)
            return ConfirmOutcome.NO_TRIGGER
        if current.state is ConfirmationState.CONFIRMED:  # by a redelivery of this commit, or an earlier one
            return ConfirmOutcome.ALREADY
        late = confirmed.model_copy(update={"late": True})
        if self._ledger.record_confirmation(key, late, replacing=ConfirmationState.NOT_ADVANCED):
            return ConfirmOutcome.CONFIRMED
        return ConfirmOutcome.ALREADY  # another poller confirmed it in between


class SweepNotAdvanced:
    """Mark NOT_ADVANCED every started run whose confirmation window passed without an outlet commit carrying its
    key; answer their trigger keys. ``metrics`` counts each once (the write is conditional: a racing sweep or a
    confirmation that lands first wins, and nothing is counted twice)."""

    def __init__(
        self,
        ledger: TriggerLedger,
        rules: RuleStore,
        clock: Callable[[], int] = now_ms,
        metrics: MetricSink | None = None,
        limit: int = 100,
    ) -> None:
        self._ledger = ledger
        self._rules = rules
        self._clock = clock
        self._metrics = metrics
        self._limit = limit

    def __call__(self) -> list[str]:
        now = self._clock()
        marked: list[str] = []
        confirmed = self._rules_with_confirm()
        if not confirmed:  # no rule asks for confirmation: no claim is read
            return marked
        for entry in self._ledger.unconfirmed(confirmed, now, self._limit):
            if not self._ledger.record_confirmation(entry.trigger_key, Confirmation.not_advanced(now)):
                continue
            marked.append(entry.trigger_key)
            if self._metrics is not None:  # one series, no dimension (the alarm's); the log line names the rule
                self._metrics.add_metric(name=MetricName.RUN_NOT_ADVANCED, unit="Count", value=1)
            logger.warning(
                "run did not advance its outlets",
                extra={
                    "trigger_key": entry.trigger_key,
                    "rule_id": entry.trigger.rule_id,
                    "status": ConfirmationState.NOT_ADVANCED.value,
                    "reason": "no outlet commit carried the trigger key within confirm.withinSeconds",
                },
            )
        return marked

    def _rules_with_confirm(self) -> list[str]:
        """The ids of the rules with ``confirm`` (one paged read of the rules)."""
        found: list[str] = []
        token: str | None = None
        while True:
            page = self._rules.list_rules(RULES_PER_PAGE, token)
            found += [stored.rule.rule_id for stored in page.items if stored.rule.confirm is not None]
            token = page.next_token
            if token is None:
                return found
