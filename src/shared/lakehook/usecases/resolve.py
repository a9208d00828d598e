"""The resolver: when asset states change, evaluate every rule naming them and claim what is ready.

Budget per invocation (a stream batch, deduplicated by asset): one reverse-index query per
changed asset (the rules of the asset, RFC 3.8), ONE batched read of every member state and group
cursor those rules need (shared across rules), one transaction per claim. ``EACH_VERSION`` rules
add one history query per member that has versions between the cursor and now it did not see.

EACH_VERSION and history. The asset state keeps only the newest versions, so the resolver keeps
the history itself: before evaluating, it stores the new state images of its batch (only for
assets that are members of an EACH_VERSION rule) as ``HIST#<state version>`` items. Each claim
advances every member to its NEXT known satisfying version after the cursor, and the loop repeats
until caught up. A resolver handling another asset's records reads that history and stops at a
gap (the owner may still be writing it); the owner, processing its records in stream order,
knows a gap below its first record is final (a record that exhausted its retries) and steps over.

Cooldown and quiet period. Nothing sleeps: the resolver writes a deferral (``DEFER#<group>``,
due at the end of the wait); :class:`SweepDeferred`, on a schedule, marks due deferrals DUE, and
that write's stream record (which the resolver's FilterCriteria lets through) re-evaluates the group.

Idempotence. Claims are keyed by the pinned versions and conditional on the group cursor, so
redelivered records, moto's duplicate INSERT records and racing resolvers claim each key once;
a lost race re-evaluates with the cursor the failed condition returned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lakehook.domain.errors import ConflictError
from lakehook.domain.evaluation import GroupEvaluation, Status, VersionLog, backfills_of, evaluate_group, select_member
from lakehook.domain.rules import Group, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus, trigger_key
from lakehook.observability import logger
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.rules import (
    ClaimOutcome,
    Deferral,
    DeferralStore,
    GroupRef,
    RuleStore,
    StateChange,
    StateHistory,
    StateReader,
    TriggerStore,
)
from lakehook.usecases.coverage import coverage_of_groups

READY_METRIC = "lakehouse_asset_dependency_ready_total"
BLOCKED_METRIC = "lakehouse_asset_dependency_blocked_by"


@dataclass
class ResolveReport:
    """What one invocation did: claims (in claim order), final verdicts, deferrals, lost races."""

    claimed: list[Trigger] = field(default_factory=list)
    verdicts: dict[GroupRef, GroupEvaluation] = field(default_factory=dict)
    deferred: list[Deferral] = field(default_factory=list)
    conflicts: int = 0

    def blocked_by(self) -> Counter[str]:
        """Why groups that did not fire in this invocation are waiting (metric dimension values)."""
        fired = {(t.rule_id, t.group_id) for t in self.claimed}
        return Counter(
            v.status.blocked_by
            for ref, v in self.verdicts.items()
            if ref not in fired and v.status not in (Status.READY, Status.DISABLED)
        )


Observer = Callable[[ResolveReport], None]


def emit_metrics(report: ResolveReport) -> None:
    """Powertools EMF: dependency-ready claims, and blocked groups by what blocks them."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from lakehook.observability import NAMESPACE

    ready = sum(1 for t in report.claimed if t.status is TriggerStatus.TRIGGERING)
    if ready:
        with single_metric(name=READY_METRIC, unit=MetricUnit.Count, value=ready, namespace=NAMESPACE):
            pass
    for reason, count in sorted(report.blocked_by().items()):
        with single_metric(name=BLOCKED_METRIC, unit=MetricUnit.Count, value=count, namespace=NAMESPACE) as metric:
            metric.add_dimension(name="blocked_by", value=reason)


class ResolveAssetChange:
    """Evaluate the rules of changed assets (and due deferrals) and claim ready triggers exactly once."""

    def __init__(
        self,
        rules: RuleStore,
        reader: StateReader,
        triggers: TriggerStore,
        history: StateHistory,
        deferrals: DeferralStore,
        clock: Callable[[], int] = now_ms,
        observer: Observer | None = emit_metrics,
        max_conflicts: int = 10,
        max_claims_per_group: int = 100,
        history_settle_ms: int = 15 * 60_000,
        coverage: CoverageStore | None = None,
    ) -> None:
        self._coverage = coverage
        self._rules = rules
        self._reader = reader
        self._triggers = triggers
        self._history = history
        self._deferrals = deferrals
        self._clock = clock
        self._observer = observer
        self._max_conflicts = max_conflicts
        self._max_claims = max_claims_per_group
        # A state unchanged this long has had its stream records handled (or dropped) by its owner:
        # a gap left in its history then never fills, and EACH_VERSION steps over it.
        self._settle_ms = history_settle_ms

    def __call__(self, changes: Sequence[StateChange] = (), deferred: Sequence[Deferral] = ()) -> ResolveReport:
        """Resolve a batch: changed assets (deduplicated, images kept in order) and due deferrals."""
        now = self._clock()
        report = ResolveReport()
        changed: list[str] = []
        images: dict[str, list[AssetState]] = {}
        for change in changes:
            if change.asset_key not in images:
                changed.append(change.asset_key)
                images[change.asset_key] = []
            if change.state is not None and change.state.version > 0:
                images[change.asset_key].append(change.state)

        rules: dict[str, Rule] = {}
        focus: dict[str, set[str]] = {}
        for asset_key in changed:
            for rule in self._rules.rules_for_asset(asset_key):
                rules[rule.rule_id] = rule
                focus.setdefault(rule.rule_id, set()).update(g.group_id for g in rule.groups_with(asset_key))
        wanted = {d.rule_id for d in deferred} - rules.keys()
        if wanted:
            rules.update(self._rules.get_rules(wanted))
        for item in deferred:
            rule_or_none = rules.get(item.rule_id)
            if rule_or_none is not None and rule_or_none.group(item.group_id) is not None:
                focus.setdefault(item.rule_id, set()).add(item.group_id)

        work = [
            (rule, group)
            for rule_id in sorted(focus)
            if (rule := rules[rule_id]).enabled
            for group in rule.groups
            if group.group_id in focus[rule_id]
        ]
        if not work:
            return report

        versioned = {k for rule, g in work if _each_version(rule, g) for k in g.asset_keys}
        owned = {k: images[k] for k in changed if k in versioned and images[k]}
        if owned:
            self._history.record(owned, now)

        assets = sorted({k for _, g in work for k in g.asset_keys})
        inputs = self._reader.read(assets, [(r.rule_id, g.group_id) for r, g in work])
        logs, recheck = self._logs(work, inputs.states, inputs.cursors, owned, now)

        for rule, group in work:
            self._resolve_group(
                rule,
                group,
                inputs.states,
                inputs.cursors.get((rule.rule_id, group.group_id)),
                now,
                logs,
                report,
                changed,
            )
            verdict = report.verdicts.get((rule.rule_id, group.group_id))
            due = [recheck[k] for k in group.asset_keys if k in recheck]
            if _each_version(rule, group) and verdict is not None and not verdict.ready and due:
                # A member has a newer version behind a history gap its owner may still fill: look again
                # once the gap is known final, even if nothing else changes meanwhile.
                deferral = Deferral(rule.rule_id, group.group_id, min(due))
                self._deferrals.defer(deferral)
                report.deferred.append(deferral)
        if self._observer is not None:
            self._observer(report)
        return report

    # --- EACH_VERSION history ----------------------------------------------------------------------

    def _logs(
        self,
        work: list[tuple[Rule, Group]],
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
        owned: dict[str, list[AssetState]],
        now: int,
    ) -> tuple[dict[str, VersionLog], dict[str, int]]:
        """What is known of each EACH_VERSION member's versions (this batch, the stored history, now), and
        when the history of a member with newer versions, handled by another resolver, will be final."""
        ranges: dict[str, tuple[int, int]] = {}
        members: set[str] = set()
        for rule, group in work:
            if not _each_version(rule, group):
                continue
            members.update(group.asset_keys)
            cursor = cursors.get((rule.rule_id, group.group_id))
            if cursor is None:
                continue
            for member in group.members:
                last = cursor.pins.get(member.asset_key)
                state = states.get(member.asset_key)
                pin = select_member(member, state).pin if state is not None else None
                if last is None or state is None or pin is None or pin.ordinal <= last.ordinal:
                    continue  # nothing newer than the cursor, so no history to look at
                mine = owned.get(member.asset_key)
                upto = min(s.version for s in mine) - 1 if mine else state.version - 1
                first = last.state_version + 1
                if first <= upto:
                    low, high = ranges.get(member.asset_key, (first, upto))
                    ranges[member.asset_key] = (min(low, first), max(high, upto))
        logs: dict[str, VersionLog] = {}
        recheck: dict[str, int] = {}
        for key in members:
            known: list[AssetState] = list(owned.get(key, ()))
            if key in ranges:
                known.extend(self._history.between(key, *ranges[key]))
            state = states.get(key)
            if state is not None:
                known.append(state)
            mine = owned.get(key)
            if mine:
                lost_before = min(s.version for s in mine)
            elif state is not None and (state.updated_at or 0) + self._settle_ms <= now:
                lost_before = state.version
            else:
                lost_before = 0
            logs[key] = VersionLog.of(known, lost_before=lost_before)
            if state is not None and key in ranges:
                reached = [s.version for s in logs[key].after(ranges[key][0] - 1)]
                if state.version not in reached:  # stopped at a gap the owner may still fill
                    recheck[key] = (state.updated_at or now) + self._settle_ms
        return logs, recheck

    # --- one group -----------------------------------------------------------------------------------

    def _resolve_group(
        self,
        rule: Rule,
        group: Group,
        states: dict[str, AssetState],
        cursor: GroupCursor | None,
        now: int,
        logs: dict[str, VersionLog],
        report: ResolveReport,
        changed: list[str],
    ) -> None:
        ref = (rule.rule_id, group.group_id)
        conflicts = claims = 0
        # read once: later windows of this loop lie inside what the first cursor still needed
        spans = coverage_of_groups(self._coverage, [(group, cursor)], now) if group.covers else None
        while True:
            if claims >= self._max_claims:
                # A long EACH_VERSION or window backlog: continue in a later invocation, not in this one.
                deferral = Deferral(rule.rule_id, group.group_id, now)
                self._deferrals.defer(deferral)
                report.deferred.append(deferral)
                return
            verdict = evaluate_group(rule, group, states, cursor, now, logs=logs, coverage=spans)
            report.verdicts[ref] = verdict
            if not verdict.ready:
                self._settle(rule, group, verdict, report, changed)
                return
            base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id)
            # Never before the group's previous claim (racing resolvers read their clocks at different
            # times), so a group's triggers list newest first in claim order.
            at = max(now, base.claimed_at or 0)
            key = trigger_key(rule.rule_id, group.group_id, verdict.pins, verdict.window, base.replay_epoch)
            trigger = Trigger(
                trigger_key=key,
                rule_id=rule.rule_id,
                group_id=group.group_id,
                status=TriggerStatus.SKIPPED if verdict.skip else TriggerStatus.TRIGGERING,
                inputs=verdict.pins,
                window=verdict.window,
                replay_epoch=base.replay_epoch,
                sequence=base.seq + 1,
                created_at=at,
                updated_at=at,
                reason=verdict.reason,
            )
            moved = base.after(trigger, backfills_of(group, states))
            result = self._triggers.claim(trigger, moved, cursor)
            if result.outcome is ClaimOutcome.CLAIMED:
                report.claimed.append(trigger)
                cursor = moved
                claims += 1
                logger.info(
                    "trigger claimed",
                    extra={
                        "rule_id": rule.rule_id,
                        "group_id": group.group_id,
                        "trigger_key": key,
                        "status": trigger.status.value,
                        "reason": trigger.reason,
                        "asset_key": changed[0] if len(changed) == 1 else None,
                        "asset_keys": changed,
                        "inputs": [p.to_api() for p in trigger.inputs],
                    },
                )
                continue
            conflicts += 1
            report.conflicts += 1
            fresh = result.cursor
            if fresh is None:
                fresh = self._triggers.get_cursors([ref]).get(ref)
            if fresh is None or (cursor is not None and fresh.seq == cursor.seq):
                logger.warning(
                    "trigger key already claimed",
                    extra={
                        "rule_id": rule.rule_id,
                        "group_id": group.group_id,
                        "trigger_key": key,
                        "status": result.outcome.value,
                    },
                )
                return
            if conflicts > self._max_conflicts:
                raise ConflictError(f"group {rule.rule_id}/{group.group_id} kept moving; giving up for this batch")
            logger.debug(
                "claim lost a race",
                extra={
                    "rule_id": rule.rule_id,
                    "group_id": group.group_id,
                    "trigger_key": key,
                    "status": result.outcome.value,
                },
            )
            cursor = fresh

    def _settle(
        self, rule: Rule, group: Group, verdict: GroupEvaluation, report: ResolveReport, changed: list[str]
    ) -> None:
        """Not ready: defer a cooldown or quiet period to its end; log the reason."""
        if verdict.status in _TIMED and verdict.until is not None:
            deferral = Deferral(rule.rule_id, group.group_id, verdict.until)
            self._deferrals.defer(deferral)
            report.deferred.append(deferral)
        logger.debug(
            "dependency not ready",
            extra={
                "rule_id": rule.rule_id,
                "group_id": group.group_id,
                "status": verdict.status.value,
                "reason": verdict.reason,
                "asset_key": changed[0] if len(changed) == 1 else None,
                "asset_keys": changed,
            },
        )


# Verdicts that lift by themselves at ``until`` (a covered window closes when its lateness has passed).
_TIMED = (Status.COOLDOWN, Status.QUIET_PERIOD, Status.BLOCKED_BY_COVERAGE)


def _each_version(rule: Rule, group: Group) -> bool:
    return rule.policy.mode is Mode.EACH_VERSION and group.window is None


class SweepDeferred:
    """On a schedule: mark due deferrals DUE; each mark's stream record re-evaluates its group."""

    def __init__(self, deferrals: DeferralStore, clock: Callable[[], int] = now_ms, limit: int = 500) -> None:
        self._deferrals = deferrals
        self._clock = clock
        self._limit = limit

    def __call__(self) -> list[Deferral]:
        """The deferrals this sweep marked due."""
        now = self._clock()
        marked = [d for d in self._deferrals.due(now, self._limit) if self._deferrals.mark_due(d, now)]
        if marked:
            logger.info("deferred evaluations due", extra={"status": "DUE", "count": len(marked)})
        return marked
