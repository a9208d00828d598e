"""The resolver: when asset states change, evaluate every rule naming them and claim what is ready.

Budget per invocation (a stream batch, deduplicated by asset): one reverse-index query per
changed asset (the rules of the asset, RFC 3.8), ONE batched read of every member state and group
cursor those rules need (shared across rules), one transaction per claim. ``EACH_VERSION`` rules
add one history query per member that has versions between the cursor and now it did not see, and
members gated on quality checks one batched read of the checks on the logged snapshots whose verdict
the state does not hold (their ``QUALITY_CHECK_*`` event items, addressed by identity). A late snapshot a
group already ran past costs one log query and one put: the SKIPPED trigger that records it
(:mod:`lakehook.domain.late_versions`), and, when the log holds it (a claim pinned it on its quality verdict), a
page of the rule's triggers, to tell whether this group ran it; a claim pinning a snapshot the log does not hold
yet one put that logs it, so its event's record, when it comes, is not taken for a late one.

Catch-up. A group stepping through windows and behind the newest closed one starts at most the rule's
``maxRunsPerEvaluation`` of them per evaluation (a minute, :data:`lakehook.domain.triggers.CATCH_UP_PERIOD_MS`,
counted in the cursor), then answers CATCHING_UP with the backlog and defers itself to the next evaluation.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from lakehook.domain.errors import ConflictError, UnreadableItemError
from lakehook.domain.evaluation import (
    Gap,
    GroupEvaluation,
    Status,
    VersionLog,
    backfills_of,
    evaluate_group,
    select_member,
    steps_by_snapshot,
)
from lakehook.domain.late_versions import passed_over
from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Member, Mode, Policy, Rule
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.state import AssetState
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.domain.versions import LoggedSnapshot, SnapshotLog, SnapshotRecord, Verdict, lineage_of
from lakehook.observability import MetricName, logger
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.queue import WorkQueue
from lakehook.ports.rules import (
    AssetRecheck,
    ClaimOutcome,
    Deferral,
    DeferralStore,
    GroupRef,
    RuleError,
    RuleStore,
    StateChange,
    StateHistory,
    StateReader,
    TriggerStore,
)
from lakehook.usecases.coverage import coverage_of_groups
from lakehook.usecases.late_versions import ran_for_group
from lakehook.usecases.resolve_partitions import PartitionResolution, Touched, touched_of_states

READY_METRIC = "lakehouse_asset_dependency_ready_total"
BLOCKED_METRIC = "lakehouse_asset_dependency_blocked_by"


# Errors of the data a rule evaluates, or of the code evaluating it: retrying the batch cannot help, so the rule
# records them and the batch goes on. Anything else (the SDK's errors, OSError for connections and timeouts,
# ConflictError for contention) is the infrastructure's: the batch fails and Lambda retries it.
RULE_ERRORS: tuple[type[BaseException], ...] = (
    ArithmeticError,
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    AssertionError,
    RecursionError,
)


def is_rule_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug of one rule (its data or the code evaluating it), not the infrastructure's."""
    return isinstance(exc, RULE_ERRORS)


@dataclass(frozen=True)
class RuleFailure:
    """A rule (group) whose evaluation raised a rule error; the rest of the batch went on."""

    rule_id: str
    group_id: str | None
    message: str


@dataclass
class ResolveReport:
    """What one invocation did: claims (in claim order), final verdicts, deferrals, lost races, failed rules."""

    claimed: list[Trigger] = field(default_factory=list)
    verdicts: dict[GroupRef, GroupEvaluation] = field(default_factory=dict)
    deferred: list[Deferral] = field(default_factory=list)
    conflicts: int = 0
    failed: list[RuleFailure] = field(default_factory=list)
    rechecks: list[AssetRecheck] = field(default_factory=list)
    # the verdict each group had when it was first evaluated in this invocation (before its claims moved it)
    first_verdicts: dict[GroupRef, GroupEvaluation] = field(default_factory=dict)
    # late snapshots an EACH_VERSION group had already run past: recorded as SKIPPED, never run
    skipped: list[Trigger] = field(default_factory=list)

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
    if report.failed:
        errors = len(report.failed)
        with single_metric(
            name=MetricName.RULE_EVALUATION_ERROR, unit=MetricUnit.Count, value=errors, namespace=NAMESPACE
        ):
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
        rule_error: Callable[[BaseException], bool] = is_rule_error,
        retry_ms: int = 60_000,
        poll_queue: WorkQueue | None = None,
        partitions: PartitionStore | None = None,
    ) -> None:
        # partitioned groups (partitionBy): their facts, pending partitions and per-partition claims
        self._partitioned = PartitionResolution(partitions, triggers, deferrals, max_claims_per_group, max_conflicts)
        # where a gap in an EACH_VERSION member's snapshot log asks for a targeted poll of its table
        self._poll_queue = poll_queue
        self._coverage = coverage
        self._rule_error = rule_error
        # When a failed rule (or a failed batch's assets) is evaluated again: the next sweep after this.
        self._retry_ms = retry_ms
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

    def __call__(
        self, changes: Sequence[StateChange] = (), deferred: Sequence[Deferral | AssetRecheck] = ()
    ) -> ResolveReport:
        """Resolve a batch: changed assets (deduplicated, images kept in order) and due deferrals and rechecks.

        One rule's error is recorded on the rule (``lastError``, a metric, a retry through the sweep) and the
        batch goes on. An infrastructure error fails the batch so Lambda retries it; first, rechecks of its
        assets and deferrals are left, so the sweep re-evaluates them even if Lambda gives the batch up.
        """
        now = self._clock()
        report = ResolveReport()
        rechecked = [StateChange(d.asset_key) for d in deferred if isinstance(d, AssetRecheck)]
        groups = [d for d in deferred if isinstance(d, Deferral)]
        changes = [*changes, *rechecked]
        try:
            self._resolve_batch(changes, groups, now, report)
        except Exception:
            self._leave_rechecks(changes, groups, now)
            raise
        if self._observer is not None:
            self._observer(report)
        return report

    def evaluate(
        self,
        rule: Rule,
        *,
        claim: bool = True,
        group_ids: Sequence[str] | None = None,
        registered: Mapping[str, bool] | None = None,
    ) -> ResolveReport:
        """Evaluate one rule now, with the same reads and the same decision as a stream batch, and claim what is
        ready (a PUT of the rule, ``POST /rules/{id}/evaluate``); ``claim=False`` only decides (explain).

        A rule error raises here (the caller answers it); ``registered`` only sharpens why a stateless member
        is blocked."""
        now = self._clock()
        report = ResolveReport()
        work = [(rule, g) for g in rule.groups if group_ids is None or g.group_id in group_ids]
        if work:
            self._resolve_work(work, [], {}, now, report, claim=claim, registered=registered)
            failed = {f.group_id for f in report.failed}
            for group in (g for _, g in work if claim and g.group_id not in failed):
                self._rules.clear_error(rule.rule_id, group.group_id)
        if claim and self._observer is not None:
            self._observer(report)
        return report

    def start(self, rule: Rule, group_ids: Sequence[str]) -> list[Trigger]:
        """``startFrom: NEXT_CHANGE``: record, per group, the versions that satisfy it now as its starting point (a
        SKIPPED claim that moves the cursor without a run), so only newer versions fire. Call it before the rule
        is written (or re-enabled): a resolver that sees the rule then already sees its starting point."""
        now = self._clock()
        # The starting point is what a LATEST evaluation would claim now, whatever cooldown or quiet period holds.
        eager = rule.model_copy(update={"policy": Policy(mode=rule.policy.mode, backfill=rule.policy.backfill)})
        groups = [g for g in rule.groups if g.group_id in group_ids]
        refs = [(rule.rule_id, g.group_id) for g in groups]
        inputs = self._reader.read(sorted({k for g in groups for k in g.asset_keys}), refs)
        started: list[Trigger] = []
        for group in groups:
            unreadable = inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys)
            if unreadable is not None:
                raise UnreadableItemError(unreadable)
            cursor = inputs.cursors.get((rule.rule_id, group.group_id))
            spans = coverage_of_groups(self._coverage, [(group, None)], now) if group.covers else None
            verdict = evaluate_group(eager, group, inputs.states, None, now, coverage=spans)
            if not verdict.ready or not _newer(verdict, cursor):
                continue  # nothing satisfies it yet (its first satisfying versions are new), or nothing new
            base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id)
            at = max(now, base.claimed_at or 0)
            trigger = Trigger(
                trigger_key=trigger_key(
                    rule.rule_id, group.group_id, verdict.pins, verdict.window, base.replay_epoch, marker="start"
                ),
                rule_id=rule.rule_id,
                group_id=group.group_id,
                status=TriggerStatus.SKIPPED,
                inputs=verdict.pins,
                window=verdict.window,
                replay_epoch=base.replay_epoch,
                sequence=base.seq + 1,
                created_at=at,
                updated_at=at,
                reason="startFrom NEXT_CHANGE: the versions present when the rule started; only newer ones run",
            )
            moved = base.after(trigger, backfills_of(group, inputs.states), baseline=True)
            if self._triggers.claim(trigger, moved, cursor).outcome is ClaimOutcome.CLAIMED:
                started.append(trigger)
                logger.info(
                    "rule starting point recorded",
                    extra={"rule_id": rule.rule_id, "group_id": group.group_id, "trigger_key": trigger.trigger_key},
                )
        return started

    # --- one batch -----------------------------------------------------------------------------------

    def _resolve_batch(
        self, changes: Sequence[StateChange], deferred: Sequence[Deferral], now: int, report: ResolveReport
    ) -> None:
        """The changed assets' rules and the deferred groups, evaluated (and claimed) as one piece of work."""
        batch = _Batch.of(changes)
        rules, focus = self._rules_of(batch.changed, now, report)
        retried = self._deferred_groups(deferred, rules, focus)
        work = [
            (rule, group)
            for rule_id in sorted(focus)
            if (rule := rules[rule_id]).enabled
            for group in rule.groups
            if group.group_id in focus[rule_id]
        ]
        if not work:
            return
        self._resolve_work(
            work, batch.changed, batch.images, now, report, claim=True, recorded=batch.recorded, touched=batch.touched
        )
        failed = {(f.rule_id, f.group_id) for f in report.failed}
        for ref in sorted(retried - failed):
            # A deferral is how a failed group is retried: it evaluated fine, so its lastError goes.
            self._rules.clear_error(*ref)

    def _rules_of(
        self, changed: Sequence[str], now: int, report: ResolveReport
    ) -> tuple[dict[str, Rule], dict[str, set[str]]]:
        """The rules naming the changed assets (reverse index), and per rule the groups that name them."""
        rules: dict[str, Rule] = {}
        focus: dict[str, set[str]] = {}
        for asset_key in changed:
            try:
                found = self._rules.rules_for_asset(asset_key)
            except Exception as exc:
                if not self._rule_error(exc):
                    raise
                # e.g. a stored rule that no longer parses: the asset's other rules cannot be told apart from
                # it, so the asset is checked again later; other assets go on.
                self._fail_asset(asset_key, exc, now, report)
                continue
            for rule in found:
                rules[rule.rule_id] = rule
                focus.setdefault(rule.rule_id, set()).update(g.group_id for g in rule.groups_with(asset_key))
        return rules, focus

    def _deferred_groups(
        self, deferred: Sequence[Deferral], rules: dict[str, Rule], focus: dict[str, set[str]]
    ) -> set[GroupRef]:
        """Add the due deferrals' groups (and their rules) to the work; the groups that still exist."""
        wanted = {d.rule_id for d in deferred} - rules.keys()
        if wanted:
            rules.update(self._rules.get_rules(wanted))
        retried: set[GroupRef] = set()
        for item in deferred:
            rule_or_none = rules.get(item.rule_id)
            if rule_or_none is not None and rule_or_none.group(item.group_id) is not None:
                focus.setdefault(item.rule_id, set()).add(item.group_id)
                retried.add((item.rule_id, item.group_id))
        return retried

    def _resolve_work(
        self,
        work: list[tuple[Rule, Group]],
        changed: list[str],
        images: dict[str, list[AssetState]],
        now: int,
        report: ResolveReport,
        *,
        claim: bool,
        registered: Mapping[str, bool] | None = None,
        recorded: Mapping[str, Sequence[SnapshotRecord]] | None = None,
        touched: Touched | None = None,
    ) -> None:
        """Read what the groups need once, then decide (and with ``claim``, claim) group by group, each isolated."""

        versioned = {k for rule, g in work if _each_version(rule, g) for k in g.asset_keys}
        owned = {k: images[k] for k in changed if k in versioned and images[k]}
        seen = _seen_snapshots(owned, recorded or {}, versioned)
        if owned and claim:
            self._history.record(owned, now)

        assets = sorted({k for _, g in work for k in g.asset_keys})
        inputs = self._reader.read(assets, [(r.rule_id, g.group_id) for r, g in work])
        partitioned = [(r, g) for r, g in work if g.partition_by is not None]
        named: dict[GroupRef, set[str]] = {}
        brought: dict[FactKey, PartitionFact] = {}
        if partitioned:
            # a stream batch brings the commits it recorded; an evaluation (a PUT, evaluate now, explain) takes the
            # partitions the members' newest data commits touched, so a new rule starts from what is there (LATEST)
            found = touched if touched is not None else touched_of_states(inputs.states)
            named, brought = self._partitioned.record(partitioned, found, now, claim=claim)
        if claim and recorded:
            self._skip_late(work, recorded, inputs.cursors, now, report)
        if seen and claim:
            self._history.record_snapshots(seen, now)
        logs, recheck = self._logs(work, inputs.states, inputs.cursors, owned, now)
        persisted: dict[str, set[int]] = {}  # per asset, the orders known to be in the stored snapshot log
        snapshots = self._snapshot_logs(work, inputs.states, inputs.cursors, seen, now, persisted)
        snapshots = self._judged(work, snapshots, inputs.states, inputs.cursors)
        previous = self._previous_triggers(work, inputs.cursors)

        for rule, group in work:
            try:
                unreadable = inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys)
                if unreadable is not None:
                    raise UnreadableItemError(unreadable)
                if group.partition_by is not None:
                    self._resolve_partitions(rule, group, inputs.states, named, brought, now, report, claim, registered)
                    continue
                self._resolve_group(
                    rule,
                    group,
                    inputs.states,
                    inputs.cursors.get((rule.rule_id, group.group_id)),
                    now,
                    logs,
                    report,
                    changed,
                    claim=claim,
                    registered=registered,
                    snapshots=snapshots,
                    previous=previous,
                    persisted=persisted,
                )
            except Exception as exc:
                if not self._rule_error(exc):
                    raise
                if claim:
                    self._fail_group(rule, group, exc, now, report)
                else:  # explain: show it, change nothing
                    message = _describe(exc)
                    report.failed.append(RuleFailure(rule.rule_id, group.group_id, message))
                    ticks = ScheduleExplanation.unevaluated(group.schedule, now) if group.schedule else None
                    report.verdicts[(rule.rule_id, group.group_id)] = GroupEvaluation(
                        group.group_id, Status.ERROR, (), reason=message, schedule=ticks
                    )
                continue
            if not claim:
                continue
            verdict = report.verdicts.get((rule.rule_id, group.group_id))
            due = [recheck[k] for k in group.asset_keys if k in recheck]
            deferred = any((d.rule_id, d.group_id) == (rule.rule_id, group.group_id) for d in report.deferred)
            if _each_version(rule, group) and verdict is not None and not verdict.ready and due and not deferred:
                # A member has a newer version behind a history gap its owner may still fill: look again
                # once the gap is known final, even if nothing else changes meanwhile.
                deferral = Deferral(rule.rule_id, group.group_id, min(due))
                self._deferrals.defer(deferral)
                report.deferred.append(deferral)

    def _resolve_partitions(
        self,
        rule: Rule,
        group: Group,
        states: dict[str, AssetState],
        named: Mapping[GroupRef, set[str]],
        brought: Mapping[FactKey, PartitionFact],
        now: int,
        report: ResolveReport,
        claim: bool,
        registered: Mapping[str, bool] | None,
    ) -> None:
        """A partitioned group: the partitions this batch touched (an evaluation: those its members' newest commits
        touched) and the pending ones, each claimed once when READY."""
        ref = (rule.rule_id, group.group_id)
        partitions = set(named.get(ref, ()))
        verdict, claimed, deferred = self._partitioned.resolve(
            rule, group, states, partitions, now, claim=claim, registered=registered, brought=brought
        )
        report.verdicts[ref] = verdict
        report.first_verdicts.setdefault(ref, verdict)
        report.claimed.extend(claimed)
        report.deferred.extend(deferred)

    # --- failures ------------------------------------------------------------------------------------

    def _fail_group(self, rule: Rule, group: Group, exc: BaseException, now: int, report: ResolveReport) -> None:
        """A rule error: record it on the rule, count it, and evaluate the group again after ``retry_ms``."""
        message = _describe(exc)
        report.failed.append(RuleFailure(rule.rule_id, group.group_id, message))
        logger.error(
            "rule evaluation failed",
            extra={"rule_id": rule.rule_id, "group_id": group.group_id, "reason": message, "status": "FAILED"},
            exc_info=exc,
        )
        self._rules.record_error(rule.rule_id, RuleError(message, now, group.group_id))
        deferral = Deferral(rule.rule_id, group.group_id, now + self._retry_ms)
        self._deferrals.defer(deferral)
        report.deferred.append(deferral)

    def _fail_asset(self, asset_key: str, exc: BaseException, now: int, report: ResolveReport) -> None:
        message = _describe(exc)
        report.failed.append(RuleFailure("", None, f"{asset_key}: {message}"))
        logger.error(
            "rules of an asset could not be read",
            extra={"asset_key": asset_key, "reason": message, "status": "FAILED"},
            exc_info=exc,
        )
        recheck = AssetRecheck(asset_key, now + self._retry_ms)
        self._deferrals.recheck([asset_key], recheck.due_at)
        report.rechecks.append(recheck)

    def _leave_rechecks(self, changes: Sequence[StateChange], deferred: Sequence[Deferral], now: int) -> None:
        """Before a failed batch is retried (and perhaps given up): durable markers, so the sweep evaluates its
        assets' rules and its deferred groups again whatever Lambda does with the batch. Best effort: the
        infrastructure just failed, and Lambda retries the batch anyway."""
        due = now + self._retry_ms
        try:
            assets = sorted({c.asset_key for c in changes})
            if assets:
                self._deferrals.recheck(assets, due)
            for item in deferred:
                self._deferrals.defer(Deferral(item.rule_id, item.group_id, due))
        except Exception:
            logger.exception("recheck markers not written", extra={"status": "FAILED", "asset_keys": len(changes)})
        else:
            logger.warning("resolver batch failed; rechecks left", extra={"status": "FAILED", "due_at": due})

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
                needed = self._history_range(member, cursor.pins.get(member.asset_key), states, owned)
                if needed is not None:
                    low, high = ranges.get(member.asset_key, needed)
                    ranges[member.asset_key] = (min(low, needed[0]), max(high, needed[1]))
        logs: dict[str, VersionLog] = {}
        recheck: dict[str, int] = {}
        for key in members:
            state = states.get(key)
            logs[key] = self._version_log(key, ranges.get(key), state, owned.get(key), now)
            if state is not None and key in ranges:
                reached = [s.version for s in logs[key].after(ranges[key][0] - 1)]
                if state.version not in reached:  # stopped at a gap the owner may still fill
                    recheck[key] = (state.updated_at or now) + self._settle_ms
        return logs, recheck

    def _history_range(
        self,
        member: Member,
        last: PinnedInput | None,
        states: dict[str, AssetState],
        owned: dict[str, list[AssetState]],
    ) -> tuple[int, int] | None:
        """The state versions of a member's history to read: from the cursor's up to what this batch or the state
        holds, when the member has a version newer than the cursor's; None when nothing newer."""
        state = states.get(member.asset_key)
        try:
            pin = select_member(member, state).pin if state is not None else None
        except Exception as exc:
            if not self._rule_error(exc):
                raise
            return None  # the group's evaluation meets the same error and records it
        if last is None or state is None or pin is None or pin.ordinal <= last.ordinal:
            return None  # nothing newer than the cursor, so no history to look at
        mine = owned.get(member.asset_key)
        upto = min(s.version for s in mine) - 1 if mine else state.version - 1
        first = last.state_version + 1
        return (first, upto) if first <= upto else None

    def _version_log(
        self,
        key: str,
        needed: tuple[int, int] | None,
        state: AssetState | None,
        mine: list[AssetState] | None,
        now: int,
    ) -> VersionLog:
        """One member's known states, and below which version a gap is final: below this batch's own first record,
        or below a state unchanged for the settle time (its owner handled or dropped its records)."""
        known: list[AssetState] = list(mine or ())
        if needed is not None:
            known.extend(self._history.between(key, *needed))
        if state is not None:
            known.append(state)
        if mine:
            lost_before = min(s.version for s in mine)
        elif state is not None and (state.updated_at or 0) + self._settle_ms <= now:
            lost_before = state.version
        else:
            lost_before = 0
        return VersionLog.of(known, lost_before=lost_before)

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
        *,
        claim: bool = True,
        registered: Mapping[str, bool] | None = None,
        snapshots: Mapping[str, SnapshotLog] | None = None,
        previous: Mapping[GroupRef, Trigger] | None = None,
        persisted: dict[str, set[int]] | None = None,
    ) -> None:
        ref = (rule.rule_id, group.group_id)
        conflicts = claims = 0
        last = (previous or {}).get(ref)
        # read once: later windows of this loop lie inside what the first cursor still needed
        spans = coverage_of_groups(self._coverage, [(group, cursor)], now) if group.covers else None
        while True:
            if claims >= self._max_claims:
                # A long EACH_VERSION or window backlog: continue in a later invocation, not in this one.
                deferral = Deferral(rule.rule_id, group.group_id, now)
                self._deferrals.defer(deferral)
                report.deferred.append(deferral)
                return
            verdict = evaluate_group(
                rule,
                group,
                states,
                cursor,
                now,
                registered=registered,
                logs=logs,
                coverage=spans,
                snapshots=snapshots,
                previous=last,
            )
            report.verdicts[ref] = verdict
            report.first_verdicts.setdefault(ref, verdict)
            if not claim:
                return
            if not verdict.ready:
                self._settle(rule, group, verdict, report, changed)
                self._fill(verdict.gaps)
                return
            verdict = replace(verdict, pins=self._described(verdict.pins, states))
            if _each_version(rule, group):
                self._log_pinned(group, verdict.pins, snapshots or {}, persisted or {}, now)
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
            catch_up = at if verdict.backlog is not None else None  # a window behind the newest closed one
            moved = base.after(trigger, backfills_of(group, states), catch_up_at=catch_up)
            result = self._triggers.claim(trigger, moved, cursor)
            if result.outcome is ClaimOutcome.CLAIMED:
                report.claimed.append(trigger)
                cursor = moved
                last = trigger  # head of line: the next version waits for this one
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
            last = self._triggers.get(fresh.trigger_key) if fresh.trigger_key else None

    def _fill(self, gaps: Sequence[Gap]) -> None:
        """Ask for a targeted poll of each table with a gap: it reads the table from the snapshot before the gap,
        whatever the poller's offset, so the missing snapshot enters the log (or never exists and settles)."""
        if self._poll_queue is None or not gaps:
            return
        first = {g.asset_key: g for g in sorted(gaps, key=lambda g: g.order, reverse=True)}
        messages = [
            {"mode": "fill", "assetKeys": [g.asset_key], "after": {"snapshotId": g.snapshot_id, "order": g.order}}
            for g in first.values()
        ]
        self._poll_queue.send(messages)
        for gap in first.values():
            logger.info(
                "snapshot gap: targeted poll requested",
                extra={"asset_key": gap.asset_key, "snapshot_id": gap.snapshot_id, "status": "WAITING_FOR_VERSION"},
            )

    # --- EACH_VERSION snapshot log and head of line ---------------------------------------------------

    def _skip_late(
        self,
        work: list[tuple[Rule, Group]],
        recorded: Mapping[str, Sequence[SnapshotRecord]],
        cursors: Mapping[GroupRef, GroupCursor],
        now: int,
        report: ResolveReport,
    ) -> None:
        """Record a SKIPPED ``late`` trigger for each snapshot of this batch that an EACH_VERSION group ran past
        before the snapshot was known (:mod:`lakehook.domain.late_versions`): it cannot run in order any more.

        Before the snapshot enters the log: a snapshot already logged was known in time (it ran, or runs), unless
        another group's claim logged it (``ran_for_group`` asks this group's runs), and a redelivered record of it
        finds it logged. The skip's key is the version's, so a retry writes it once."""
        late = [
            found
            for rule, group in work
            for key, records in recorded.items()
            if key in group.asset_keys
            for record in records
            if (found := passed_over(rule, group, cursors.get((rule.rule_id, group.group_id)), record, key))
        ]
        logged: dict[tuple[str, int], bool] = {}
        for item in late:
            where = (item.asset_key, item.record.order)
            if where not in logged:
                after = self._history.snapshots_after(item.asset_key, item.record.order - 1, 1)
                logged[where] = bool(after) and after[0].record.order == item.record.order
            if logged[where] and ran_for_group(
                self._triggers, item.rule.rule_id, item.group_id, item.asset_key, item.record
            ):
                continue  # a claim logged it: this group ran it before its push came (its quality verdict named it)
            cursor = cursors[(item.rule.rule_id, item.group_id)]
            skip = item.trigger(cursor, now)
            if self._triggers.put_replay(skip):
                report.skipped.append(skip)
                logger.info(
                    "late version skipped",
                    extra={
                        "rule_id": item.rule.rule_id,
                        "group_id": item.group_id,
                        "asset_key": item.asset_key,
                        "snapshot_id": item.record.snapshot_id,
                        "trigger_key": skip.trigger_key,
                        "status": skip.status.value,
                        "reason": skip.reason,
                    },
                )

    def _snapshot_logs(
        self,
        work: list[tuple[Rule, Group]],
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
        seen: Mapping[str, Sequence[SnapshotRecord]],
        now: int,
        persisted: dict[str, set[int]] | None = None,
    ) -> dict[str, SnapshotLog]:
        """Per EACH_VERSION member stepping by snapshot: the logged snapshots after the oldest cursor that needs
        them (one query per such asset), the snapshots this batch saw, and the state's own newest ones;
        ``persisted`` gets the orders of those known to be stored (read, or logged by this batch)."""
        since: dict[str, int | None] = {}
        for rule, group in work:
            if not _each_version(rule, group):
                continue
            cursor = cursors.get((rule.rule_id, group.group_id))
            for member in group.members:
                if not steps_by_snapshot(member):
                    continue
                key = member.asset_key
                last = cursor.pins.get(key) if cursor is not None and cursor.seq > 0 else None
                if last is None or last.snapshot_id is None:
                    since.setdefault(key, None)
                    continue
                held = since.get(key)
                since[key] = last.ordinal[0] if held is None else min(held, last.ordinal[0])
        logs: dict[str, SnapshotLog] = {}
        limit = 2 * self._max_claims + 10
        for key, start in since.items():
            state = states.get(key)
            entries = [LoggedSnapshot(r, now) for r in seen.get(key, ())]
            complete = True
            newest = state.latest_record.order if state is not None and state.latest_record is not None else None
            if start is not None and newest is not None and newest > start:
                stored = self._history.snapshots_after(key, start, limit)
                complete = len(stored) < limit
                entries = stored + entries
            if persisted is not None:
                persisted[key] = {e.record.order for e in entries}
            if state is not None and complete:
                at = state.updated_at if state.updated_at is not None else now
                entries += [LoggedSnapshot(r, at) for r in (state.latest_record, state.latest_data) if r is not None]
            logs[key] = SnapshotLog.of(entries, lineage_of(key), self._settle_ms)
        return logs

    def _log_pinned(
        self,
        group: Group,
        pins: Sequence[PinnedInput],
        snapshots: Mapping[str, SnapshotLog],
        persisted: dict[str, set[int]],
        now: int,
    ) -> None:
        """Before a claim: log each pinned snapshot known only from the state (its event's stream record not handled
        yet), so when that record comes it finds the snapshot logged and is not taken for one that arrived late.
        One conditional put per such snapshot; none when the log holds it (read, or logged by this batch)."""
        wanted: dict[str, list[SnapshotRecord]] = {}
        for pin in pins:
            log = snapshots.get(pin.asset_key)
            member = next((m for m in group.members if m.asset_key == pin.asset_key), None)
            if log is None or pin.snapshot_id is None or member is None or not steps_by_snapshot(member):
                continue
            order = pin.ordinal[0]
            known = persisted.setdefault(pin.asset_key, set())
            if order in known:
                continue
            entry = next((e for e in log.entries if e.record.order == order), None)
            # a pin the log does not hold (the newest quality-passed snapshot, its own event not handled yet): what
            # the pin knows of it; the event's fuller record, when it comes, finds it logged
            record = entry.record if entry is not None else _pinned_record(pin, order)
            wanted.setdefault(pin.asset_key, []).append(record)
            known.add(order)
        if wanted:
            self._history.record_snapshots(wanted, now)

    def _judged(
        self,
        work: list[tuple[Rule, Group]],
        logs: dict[str, SnapshotLog],
        states: dict[str, AssetState],
        cursors: dict[GroupRef, GroupCursor],
    ) -> dict[str, SnapshotLog]:
        """The snapshot logs of members gated on quality checks, with the verdict of each snapshot still to run (after
        the oldest cursor that needs it; every logged one for a group not started yet): what the state tells (its
        newest verdicts), else one batched read of those snapshots' quality events (no read when none is left)."""
        since = _quality_floors(work, logs, cursors)
        if not since:
            return logs
        verdicts: dict[tuple[str, int], Verdict] = {}
        wanted: list[tuple[str, int]] = []
        for key, floor in sorted(since.items()):
            state = states.get(key)
            for entry in logs[key].after(floor):
                told = state.quality_of(entry.record) if state is not None else None
                if told is None:
                    wanted.append((key, entry.record.snapshot_id))
                else:
                    verdicts[(key, entry.record.snapshot_id)] = told
        if wanted:
            verdicts.update(self._reader.quality_verdicts(wanted))
        judged = dict(logs)
        for key in since:
            judged[key] = logs[key].with_quality({sid: v for (k, sid), v in verdicts.items() if k == key})
        return judged

    def _previous_triggers(
        self, work: list[tuple[Rule, Group]], cursors: dict[GroupRef, GroupCursor]
    ) -> dict[GroupRef, Trigger]:
        """The trigger each EACH_VERSION group's cursor names (head of line), one read per such group."""
        found: dict[GroupRef, Trigger] = {}
        for rule, group in work:
            cursor = cursors.get((rule.rule_id, group.group_id))
            if rule.policy.mode is not Mode.EACH_VERSION or cursor is None or not cursor.trigger_key:
                continue
            trigger = self._triggers.get(cursor.trigger_key)
            if trigger is not None:
                found[(rule.rule_id, group.group_id)] = trigger
        return found

    def _described(self, pins: tuple[PinnedInput, ...], states: dict[str, AssetState]) -> tuple[PinnedInput, ...]:
        """Pins of snapshots older than the state (a quality pass, a tag, a version of EACH_VERSION) get their
        schema id, commit time and metadata location from the snapshot's recorded event: the run manifest pins
        them. The trigger key depends on the snapshot id only, so this never changes which key is claimed."""
        unknown: list[tuple[str, int]] = [
            (p.asset_key, p.snapshot_id)
            for p in pins
            if p.snapshot_id is not None and p.schema_id is None and not _described_by_state(p, states.get(p.asset_key))
        ]
        if not unknown:
            return pins
        found = self._reader.snapshots(unknown)
        described = []
        for pin in pins:
            record = found.get((pin.asset_key, pin.snapshot_id)) if pin.snapshot_id is not None else None
            if record is not None:
                pin = pin.model_copy(
                    update={
                        "schema_id": record.schema_id,
                        "commit_time": pin.commit_time if pin.commit_time is not None else record.commit_time,
                        "metadata_location": pin.metadata_location or record.metadata_location,
                    }
                )
            described.append(pin)
        return tuple(described)

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


def _pinned_record(pin: PinnedInput, order: int) -> SnapshotRecord:
    assert pin.snapshot_id is not None
    return SnapshotRecord(
        snapshot_id=pin.snapshot_id,
        order=order,
        schema_id=pin.schema_id,
        commit_time=pin.commit_time,
        metadata_location=pin.metadata_location,
    )


def _described_by_state(pin: PinnedInput, state: AssetState | None) -> bool:
    """Whether the state itself holds what is known of the pinned snapshot (its newest, or newest data change)."""
    if state is None:
        return False
    data = state.latest_data
    return pin.snapshot_id == state.latest_snapshot_id or (data is not None and pin.snapshot_id == data.snapshot_id)


# Verdicts that lift by themselves at ``until`` (a covered window closes when its lateness has passed).
_TIMED = (
    Status.COOLDOWN,
    Status.QUIET_PERIOD,
    Status.BLOCKED_BY_COVERAGE,
    Status.WAITING_FOR_VERSION,
    Status.WAITING_FOR_SCHEDULE,  # the next tick
    Status.CATCHING_UP,  # a window backlog: the next evaluation's start
)


def _seen_snapshots(
    owned: Mapping[str, Sequence[AssetState]], recorded: Mapping[str, Sequence[SnapshotRecord]], versioned: set[str]
) -> dict[str, list[SnapshotRecord]]:
    """The snapshots a batch brought for EACH_VERSION members: recorded events (late ones too) and state images."""
    seen: dict[str, list[SnapshotRecord]] = {}
    for key in versioned:
        found = list(recorded.get(key, ()))
        for state in owned.get(key, ()):
            found += [r for r in (state.latest_record, state.latest_data) if r is not None]
        if found:
            seen[key] = found
    return seen


@dataclass(frozen=True)
class _Batch:
    """A batch's changes by asset: the assets in first-seen order, their state images and recorded snapshots."""

    changed: list[str]
    images: dict[str, list[AssetState]]
    recorded: dict[str, list[SnapshotRecord]]
    touched: dict[str, list[tuple[SnapshotRecord, TouchedPartitions]]]

    @classmethod
    def of(cls, changes: Sequence[StateChange]) -> _Batch:
        batch = cls([], {}, {}, {})
        for change in changes:
            if change.asset_key not in batch.images:
                batch.changed.append(change.asset_key)
                batch.images[change.asset_key] = []
            if change.state is not None and change.state.version > 0:
                batch.images[change.asset_key].append(change.state)
            if change.snapshot is not None:
                batch.recorded.setdefault(change.asset_key, []).append(change.snapshot)
                if change.partitions is not None:
                    batch.touched.setdefault(change.asset_key, []).append((change.snapshot, change.partitions))
            if change.state is not None:
                for key, found in touched_of_states({change.asset_key: change.state}).items():
                    batch.touched.setdefault(key, []).extend(found)
        return batch


def _quality_floors(
    work: list[tuple[Rule, Group]], logs: Mapping[str, SnapshotLog], cursors: Mapping[GroupRef, GroupCursor]
) -> dict[str, int]:
    """Per EACH_VERSION member gated on quality checks: the order above which its snapshots' verdicts are needed
    (the oldest cursor's; -1 for a group not started yet)."""
    since: dict[str, int] = {}
    for rule, group in work:
        if not _each_version(rule, group):
            continue
        cursor = cursors.get((rule.rule_id, group.group_id))
        for member in group.members:
            key = member.asset_key
            if not (member.condition.quality_status and steps_by_snapshot(member) and key in logs):
                continue
            last = cursor.pins.get(key) if cursor is not None and cursor.seq > 0 else None
            floor = last.ordinal[0] if last is not None and last.snapshot_id is not None else -1
            since[key] = min(since.get(key, floor), floor)
    return since


def _each_version(rule: Rule, group: Group) -> bool:
    return rule.policy.mode is Mode.EACH_VERSION and group.window is None


def _describe(exc: BaseException) -> str:
    """``<ExceptionType>: <message>``, cut to what an API answer should carry."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:999] + "…"


def _newer(verdict: GroupEvaluation, cursor: GroupCursor | None) -> bool:
    """Whether a ready verdict holds anything the cursor has not: a newer pin or window."""
    if cursor is None or cursor.seq == 0:
        return True
    if verdict.window is not None and (cursor.window is None or verdict.window.end > cursor.window.end):
        return True
    return any(
        (last := cursor.pins.get(p.asset_key)) is None or p.ordinal > last.ordinal or p.identity() != last.identity()
        for p in verdict.pins
    )


class SweepDeferred:
    """On a schedule: mark due deferrals DUE; each mark's stream record re-evaluates its group. Rechecks (a failed
    batch's assets) and a failed rule's retries are deferrals too: this sweep is what keeps them from stranding."""

    def __init__(self, deferrals: DeferralStore, clock: Callable[[], int] = now_ms, limit: int = 500) -> None:
        self._deferrals = deferrals
        self._clock = clock
        self._limit = limit

    def __call__(self) -> list[Deferral | AssetRecheck]:
        """The deferrals (and asset rechecks) this sweep marked due."""
        now = self._clock()
        marked = [d for d in self._deferrals.due(now, self._limit) if self._deferrals.mark_due(d, now)]
        if marked:
            logger.info("deferred evaluations due", extra={"status": "DUE", "count": len(marked)})
        return marked
