"""The resolver: when asset states change, evaluate every rule naming them and claim what is ready.

Three steps, so that explain says what the resolver does by construction: gather
(:mod:`lakehook.usecases.resolve_gather`: every store read, batched, before anything is decided; its docstring
gives the budget of reads per invocation), plan (:mod:`lakehook.usecases.resolve_plan`: no I/O; what to claim,
defer, poll for and record, and why) and apply (:mod:`lakehook.usecases.resolve_apply`: the plan's writes, one
transaction per claim; a lost race plans the group again). Explain (:meth:`ResolveAssetChange.evaluate` with
``claim=False``) is gather and plan, without apply. Partitioned groups (``partitionBy``) take the same three steps:
the gather reads their pending partitions, facts and partition cursors; the plan holds, per partition, its verdict,
claim and pending mark (:mod:`lakehook.usecases.resolve_partitions`); the apply keeps the facts first, then claims.

Catch-up. A group stepping through windows and behind the newest closed one starts at most the rule's
``maxRunsPerEvaluation`` of them per evaluation (a minute, :data:`lakehook.domain.triggers.CATCH_UP_PERIOD_MS`,
counted in the cursor), then answers CATCHING_UP with the backlog and defers itself to the next evaluation.

EACH_VERSION and history. The asset state keeps only the newest versions, so the resolver keeps
the history itself: before claiming, it stores the new state images of its batch (only for
assets that are members of an EACH_VERSION rule) as ``HIST#<state version>`` items. Each claim
advances every member to its NEXT known satisfying version after the cursor, and the loop repeats
until caught up. A resolver handling another asset's records reads that history and stops at a
gap (the owner may still be writing it); the owner, processing its records in stream order,
knows a gap below its first record is final (a record that exhausted its retries) and steps over.
A late snapshot (older than the state, so never a state image) is logged by its push and noted on the
cursors of the groups it is a version of (``GroupCursor.late_seq``, ``late_orders``): the gather reads the
log from the oldest one noted before a group's first trigger, and a claim planned before a note fails (it
is conditional on the note count); the group is then gathered and planned again, with the same batch.

Cooldown and quiet period. Nothing sleeps: the resolver writes a deferral (``DEFER#<group>``,
due at the end of the wait); :class:`SweepDeferred`, on a schedule, marks due deferrals DUE, and
that write's stream record (which the resolver's FilterCriteria lets through) re-evaluates the group.

Idempotence. Claims are keyed by the pinned versions and conditional on the group cursor, so
redelivered records, moto's duplicate INSERT records and racing resolvers claim each key once;
a lost race re-evaluates with the cursor the failed condition returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from lakehook.domain.errors import ConflictError, UnreadableItemError
from lakehook.domain.evaluation import GroupEvaluation, PartialCommit, evaluate_group
from lakehook.domain.partition_start import START_REASON, point_claim, start_point, watch_point
from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.rules import Group, Policy, Rule, StartFrom
from lakehook.domain.state import AssetState
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.observability import logger
from lakehook.ports.rules import AssetRecheck, ClaimOutcome, Deferral, DeferralStore, PartitionWork, StateChange
from lakehook.usecases.coverage import coverage_of_groups
from lakehook.usecases.resolve_apply import ApplyPlan
from lakehook.usecases.resolve_continue import evaluation_batch, partial_commits, slice_message, split_batch
from lakehook.usecases.resolve_gather import Batch, GatherInputs, Work
from lakehook.usecases.resolve_group_reads import Wake
from lakehook.usecases.resolve_partitions import touched_of_states
from lakehook.usecases.resolve_plan import Plan, PlanResolution
from lakehook.usecases.resolve_report import (
    BLOCKED_METRIC,
    READY_METRIC,
    RULE_ERRORS,
    Observer,
    ResolveReport,
    ResolverLimits,
    ResolverStores,
    RuleFailure,
    TimeLeft,
    emit_metrics,
    is_rule_error,
)
from lakehook.usecases.resolve_whole_versions import each_version

DEFAULT_LIMITS = ResolverLimits()

__all__ = [
    "BLOCKED_METRIC",
    "READY_METRIC",
    "RULE_ERRORS",
    "Observer",
    "ResolveAssetChange",
    "ResolveReport",
    "ResolverLimits",
    "ResolverStores",
    "RuleFailure",
    "SweepDeferred",
    "emit_metrics",
    "is_rule_error",
]


class ResolveAssetChange:
    """Evaluate the rules of changed assets (and due deferrals) and claim ready triggers exactly once."""

    def __init__(
        self,
        stores: ResolverStores,
        *,
        limits: ResolverLimits = DEFAULT_LIMITS,
        clock: Callable[[], int] = now_ms,
        observer: Observer | None = emit_metrics,
        rule_error: Callable[[BaseException], bool] = is_rule_error,
    ) -> None:
        self._stores = stores
        self._limits = limits
        self._clock = clock
        self._observer = observer
        self._rule_error = rule_error
        self._gather = GatherInputs(stores, limits, rule_error)
        self._apply = ApplyPlan(stores, limits, rule_error)

    def __call__(
        self,
        changes: Sequence[StateChange] = (),
        deferred: Sequence[Deferral | AssetRecheck] = (),
        carried: Sequence[PartitionWork] = (),
        time_left: TimeLeft | None = None,
    ) -> ResolveReport:
        """Resolve a batch: changed assets (deduplicated, images kept in order) and due deferrals and rechecks, and
        partition work carried over from an invocation that reached its bound (:mod:`.resolve_continue`).

        One rule's error is recorded on the rule (``lastError``, a metric, a retry through the sweep) and the
        batch goes on. An infrastructure error fails the batch so Lambda retries it; first, rechecks of its
        assets and deferrals are left, so the sweep re-evaluates them even if Lambda gives the batch up, and the
        partitions its commits touched are sent to the resolver queue. With ``time_left``, an invocation about to
        reach its timeout stops before its next write and fails the same way (:class:`OutOfTime`), so a timeout
        never kills it with nothing left behind.
        """
        now = self._clock()
        report = ResolveReport()
        rechecked = [StateChange(d.asset_key) for d in deferred if isinstance(d, AssetRecheck)]
        groups = [d for d in deferred if isinstance(d, Deferral)]
        changes = [*changes, *rechecked]
        try:
            self._resolve_batch(changes, groups, carried, now, report, time_left)
        except Exception:
            self._apply.leave_rechecks([*changes, *map(StateChange, sorted(report.logged_pins))], groups, now)
            self._apply.carry_partitions(changes)
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
        ready (a PUT of the rule, ``POST /rules/{id}/evaluate``); ``claim=False`` only decides (explain): the
        report is the plan's (:meth:`lakehook.usecases.resolve_plan.GroupPlan.explain`), nothing is written.

        A rule error raises here (the caller answers it); ``registered`` only sharpens why a stateless member
        is blocked."""
        now = self._clock()
        work = [(rule, g) for g in rule.groups if group_ids is None or g.group_id in group_ids]
        if not claim:
            return self._explain(work, now, registered)
        report = ResolveReport()
        if work:
            batch, _ = self._evaluation(work, report)
            self._resolve_work(work, batch, now, report, registered=registered)
            try:
                self._wake_logged(now, report)
            except Exception:  # another rule's infrastructure error: this rule's claims stand, the sweep re-checks
                self._apply.leave_rechecks([StateChange(k) for k in sorted(report.logged_pins)], (), now)
            # the woken groups of other rules fail on their own rules (and may share a group id)
            failed = {f.group_id for f in report.failed if f.rule_id == rule.rule_id}
            self._apply.clear_errors([(rule.rule_id, g.group_id) for _, g in work if g.group_id not in failed])
        if self._observer is not None:
            self._observer(report)
        return report

    def plan(self, changes: Sequence[StateChange] = (), deferred: Sequence[Deferral] = ()) -> Plan:
        """What resolving this batch now would do, gathered and planned, nothing written: with no race, the claims,
        deferrals and skips a call with the same batch makes (``tests/unit/test_resolve_plan.py``), and for partitioned
        groups the fact writes and pending marks too (``tests/unit/test_partition_plan.py``)."""
        now = self._clock()
        batch = Batch.of(changes)
        found = self._gather.rules(batch.changed, deferred, batch.sliced, bare=batch.bare)
        return self._planner(found.work, batch, now, None, wake=found.wake)() if found.work else Plan(())

    def start(self, rule: Rule, group_ids: Sequence[str]) -> list[Trigger]:
        """``startFrom: NEXT_CHANGE``: record, per group, the versions that satisfy it now as its starting point (a
        SKIPPED claim that moves the cursor without a run), so only newer versions fire. Call it before the rule
        is written (or re-enabled): a resolver that sees the rule then already sees its starting point. A partitioned
        group with ``backfill: SKIP`` records the backfills completed before it (they are not its to skip)."""
        now = self._clock()
        # The starting point is what a LATEST evaluation would claim now, whatever cooldown or quiet period holds.
        eager = rule.model_copy(update={"policy": Policy(mode=rule.policy.mode, backfill=rule.policy.backfill)})
        groups = [g for g in rule.groups if g.group_id in group_ids]
        refs = [(rule.rule_id, g.group_id) for g in groups]
        inputs = self._stores.reader.read(sorted({k for g in groups for k in g.asset_keys}), refs)
        started: list[Trigger] = []
        for group in groups:
            unreadable = inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys)
            if unreadable is not None:
                raise UnreadableItemError(unreadable)
            cursor = inputs.cursors.get((rule.rule_id, group.group_id))
            planned = self._starting_point(rule.policy, eager, group, inputs.states, cursor, now)
            if planned is None:
                continue  # nothing satisfies it yet (its first satisfying versions are new), or nothing new
            trigger = planned.trigger
            if self._stores.triggers.claim(trigger, planned.moved(), cursor).outcome is ClaimOutcome.CLAIMED:
                started.append(trigger)
                logger.info(
                    "rule starting point recorded",
                    extra={"rule_id": rule.rule_id, "group_id": group.group_id, "trigger_key": trigger.trigger_key},
                )
        return started

    def _starting_point(
        self,
        policy: Policy,
        eager: Rule,
        group: Group,
        states: Mapping[str, AssetState],
        cursor: GroupCursor | None,
        now: int,
    ) -> PlannedClaim | None:
        """A group's starting point: what a LATEST evaluation would claim now (a partitioned group: each partitioned
        member's newest data commit, every partition starting from there: :mod:`lakehook.domain.partition_start`; with
        ``backfill: SKIP`` and LATEST, the backfills its members completed before, which it does not skip)."""
        if group.partition_by is not None and policy.start_from is StartFrom.NEXT_CHANGE:
            return start_point(eager, group, states, cursor, now)
        if group.partition_by is not None:
            return watch_point(eager, group, states, cursor, now)
        if policy.start_from is not StartFrom.NEXT_CHANGE:
            return None
        spans = coverage_of_groups(self._stores.coverage, [(group, None)], now) if group.covers else None
        verdict = evaluate_group(eager, group, states, None, now, coverage=spans)
        if not verdict.ready or not _newer(verdict, cursor):
            return None
        return point_claim(
            eager,
            group,
            cursor,
            verdict.pins,
            states,
            now,
            reason=START_REASON,
            marker="start",
            baseline=True,
            window=verdict.window,
        )

    # --- one batch -----------------------------------------------------------------------------------

    def _resolve_batch(
        self,
        changes: Sequence[StateChange],
        deferred: Sequence[Deferral],
        carried: Sequence[PartitionWork],
        now: int,
        report: ResolveReport,
        time_left: TimeLeft | None = None,
    ) -> None:
        """The changed assets' rules and the deferred groups, evaluated (and claimed) as one piece of work, bounded:
        the partitions past ``max_facts`` go to the resolver queue first."""
        batch = Batch.of(changes)
        found = self._gather.rules(batch.changed, deferred, batch.sliced, carried, batch.bare)
        self._apply.fail_assets(found.unreadable, now, report)
        if not found.work:
            return
        batch = self._bound(batch, found.work, report)
        self._resolve_work(found.work, batch, now, report, wake=found.wake, time_left=time_left)
        self._wake_logged(now, report, time_left)
        failed = {(f.rule_id, f.group_id) for f in report.failed}
        # A deferral is how a failed group is retried: it evaluated fine, so its lastError goes.
        self._apply.clear_errors(sorted(found.retried - failed))

    def _wake_logged(self, now: int, report: ResolveReport, time_left: TimeLeft | None = None) -> None:
        """The EACH_VERSION groups of each asset whose snapshot log a claim grew with a snapshot known only from its
        pin (``ResolveReport.logged_pins``), evaluated again in this invocation: one may wait at exactly that gap, and
        no stream record would tell it (explain, reading the log, already sees the snapshot). Each asset once per
        invocation, the groups whose claim logged it aside; no read in the common case (nothing logged from a pin)."""
        woken: set[str] = set()
        while logged := sorted(report.logged_pins.keys() - woken):
            woken.update(logged)
            loggers = {ref for key in logged for ref in report.logged_pins[key]}
            batch = Batch.of([StateChange(key) for key in logged])
            found = self._gather.rules(batch.changed, (), batch.sliced, bare=batch.bare)
            work = [(r, g) for r, g in found.work if each_version(r, g) and (r.rule_id, g.group_id) not in loggers]
            if work:
                self._resolve_work(work, batch, now, report, time_left=time_left)

    def _bound(self, batch: Batch, work: Work, report: ResolveReport) -> Batch:
        """The batch with at most ``max_facts`` partition facts to write; the slices past them sent to the resolver
        queue before anything is written (a failure here fails the batch, which is retried whole)."""
        queue = self._stores.resolver_queue
        if queue is None:
            return batch
        kept, rest = split_batch(batch, work, self._limits.max_facts)
        if rest:
            report.carried += queue.send([slice_message(c) for c in rest])
            logger.info(
                "partitions carried over",
                extra={"status": "CARRIED", "count": len(rest), "asset_keys": sorted({c.asset_key for c in rest})},
            )
        return kept

    def _planner(
        self,
        work: Work,
        batch: Batch,
        now: int,
        registered: Mapping[str, bool] | None,
        *,
        explain: bool = False,
        wake: Wake | None = None,
    ) -> PlanResolution:
        gathered = self._gather(work, batch, now, explain=explain, wake=wake)
        return PlanResolution(
            gathered,
            now,
            max_claims=self._limits.max_claims_per_group,
            rule_error=self._rule_error,
            registered=registered,
            carry=self._stores.resolver_queue is not None,
            max_partition_claims=self._limits.max_partition_claims if self._stores.resolver_queue else None,
        )

    def _resolve_work(
        self,
        work: Work,
        batch: Batch,
        now: int,
        report: ResolveReport,
        registered: Mapping[str, bool] | None = None,
        wake: Wake | None = None,
        time_left: TimeLeft | None = None,
    ) -> None:
        """Gather what the groups need once, plan, and apply the plan; a group whose claim found a late snapshot
        noted on its cursor since it was read is gathered and planned again, with the same batch (a few times at
        most: then the batch fails, and is retried)."""
        for _ in range(self._limits.max_conflicts + 1):
            planner = self._planner(work, batch, now, registered, wake=wake)
            again = self._apply(planner(), planner.gathered, planner, now, report, time_left)
            if not again:
                return
            work = [(rule, group) for rule, group in work if (rule.rule_id, group.group_id) in again]
        raise ConflictError(f"late versions kept arriving for {sorted(again)}; giving up for this batch")

    def _explain(self, work: Work, now: int, registered: Mapping[str, bool] | None) -> ResolveReport:
        """Gather and plan, without applying: each group's verdict now, from its plan (a partitioned group: its
        partitions' verdicts in the plan, from a short page of its pending partitions; the newest partitions are the
        first of the plan either way, so they are planned alike)."""
        if not work:
            return ResolveReport()  # no group asked for: nothing to read
        report = ResolveReport()
        batch, partial = self._evaluation(work, None)
        for group_plan in self._planner(work, batch, now, registered, explain=True)().groups:
            group_plan.explain(report, now)
        for rule, group in work:
            ref, members = (rule.rule_id, group.group_id), {m.asset_key for m in group.partitioned_members}
            mine = tuple(c for c in partial if c.asset_key in members)
            if mine and ref in report.verdicts:
                report.verdicts[ref] = replace(report.verdicts[ref], partial=mine)
        return report

    # --- an evaluation no stream batch brought: a PUT, evaluate now, explain -------------------------------

    def _evaluation(self, work: Work, report: ResolveReport | None) -> tuple[Batch, list[PartialCommit]]:
        """What an evaluation no stream batch brought takes: the partitions its partitioned members' newest data
        commits touched (``latestPartitions``, one batched read of their states), at most ``max_facts`` facts of them
        (:func:`evaluation_batch`), and the commits it took only in part. A claiming evaluation (``report``) reads
        the commits' part items too (one query per member) and sends what is past the bound to the resolver's queue
        before it writes anything (without a queue, it takes them all); explain (None) reads no part, sends nothing."""
        members = sorted({m.asset_key for _, g in work if g.partition_by is not None for m in g.partitioned_members})
        if not members:
            return Batch.empty(), []
        states = self._stores.reader.read(members, ()).states
        touched = touched_of_states(states)
        more = self._parts(states) if report is not None else []
        queue = self._stores.resolver_queue
        if report is not None and queue is None:
            whole = Batch.of_touched(touched)
            for change in more:
                assert change.snapshot is not None and change.partitions is not None and whole.touched is not None
                whole.touched.setdefault(change.asset_key, []).append((change.snapshot, change.partitions))
                whole.note_origin(change.asset_key, change.snapshot, change.partitions, change.offset, change.total)
            return whole, []
        kept, rest = evaluation_batch(work, touched, more, self._limits.max_facts)
        if report is not None and queue is not None and rest:
            report.carried += queue.send([slice_message(c) for c in rest])
            logger.info(
                "partitions carried over",
                extra={"status": "CARRIED", "count": len(rest), "asset_keys": sorted({c.asset_key for c in rest})},
            )
        return kept, partial_commits(touched, kept)

    def _parts(self, states: Mapping[str, AssetState]) -> list[StateChange]:
        """The part items of the members' newest data commits (one query each, when the resolver reads parts): the
        keys past the state's first 1000, and a poll's keys that a push recorded first left out (part 0)."""
        assets = self._stores.assets
        if assets is None:
            return []
        found: list[StateChange] = []
        for key, state in states.items():
            newest = state.latest_data
            if newest is None:
                continue
            for part in assets.partition_parts(key, newest.order):
                if part.snapshot.snapshot_id == newest.snapshot_id:
                    found.append(
                        StateChange(
                            key,
                            snapshot=part.snapshot,
                            partitions=part.partitions,
                            offset=part.offset,
                            total=part.total,
                        )
                    )
        return found


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
