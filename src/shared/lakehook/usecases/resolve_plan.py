"""The resolver's decision, and nothing else: given what was gathered (:mod:`lakehook.usecases.resolve_gather`) and
the clock, a :class:`Plan`: per group the verdicts, the claims to make (in order), the deferral to leave, the gaps
to ask a targeted poll for, or the rule error met (a partitioned group: per partition its verdict, claim and pending
mark, :class:`lakehook.usecases.resolve_partitions.PartitionsPlan`); the late snapshots to record as SKIPPED; the
partition facts to keep; and, for an EACH_VERSION group that has never run and could not run now, the oldest
snapshots of its members the batch brought, to note on its cursor (its first run starts at them when it comes).
No I/O: it reads no store and writes none, so explain (which only plans) says what a claiming evaluation (which
plans, then applies the plan: :mod:`lakehook.usecases.resolve_apply`) does.

Claims in a plan are planned as if each one succeeds: each moves the group's cursor, and the group is evaluated
again from there (EACH_VERSION's next version, a window backlog's next window) until it is not ready or has used
its claims per invocation. A claim lost to a racing resolver makes the apply plan the group again from the cursor
the lost race returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lakehook.domain.errors import UnreadableItemError
from lakehook.domain.evaluation import Gap, GroupEvaluation, Status, evaluate_group, steps_by_snapshot
from lakehook.domain.lanes import DeferWhy, Lane, plan_lane
from lakehook.domain.partition_evaluation import PartitionFact
from lakehook.domain.partition_start import backfill_point
from lakehook.domain.planned_claims import PlannedClaim, plan_claim
from lakehook.domain.rules import Group, Rule
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import Deferral, GroupRef
from lakehook.usecases.resolve_gather import Gathered, each_version
from lakehook.usecases.resolve_partitions import (
    PartitionsPlan,
    PlannedFact,
    PlanPartitions,
    facts_to_write,
)
from lakehook.usecases.resolve_report import ResolveReport, RuleFailure, describe_error


@dataclass(frozen=True)
class PlannedDeferral:
    deferral: Deferral
    why: DeferWhy


@dataclass(frozen=True)
class GroupPlan:
    """What the resolver does with one group. ``verdicts[i]`` is the verdict ``claims[i]`` claims; a verdict after
    the last claim is the one the group settles on (not ready). ``error``: a rule error met after the claims before
    it (the group fails, the claims stand). ``partitions``: a partitioned group's plan, per partition
    (:class:`lakehook.usecases.resolve_partitions.PartitionsPlan`; its verdicts and claims are there)."""

    rule: Rule
    group: Group
    lane: Lane | None = None  # an unpartitioned group's one lane
    deferral: PlannedDeferral | None = None
    gaps: tuple[Gap, ...] = ()
    error: BaseException | None = None
    partitions: PartitionsPlan | None = None

    @property
    def ref(self) -> GroupRef:
        return (self.rule.rule_id, self.group.group_id)

    @property
    def verdicts(self) -> tuple[GroupEvaluation, ...]:
        return self.lane.verdicts if self.lane is not None else ()

    @property
    def claims(self) -> tuple[PlannedClaim, ...]:
        return self.lane.claims if self.lane is not None else ()

    @property
    def settled(self) -> GroupEvaluation | None:
        """The verdict the group ends on once its claims are made (READY: it used its claims for this invocation);
        None when a rule error ended it first."""
        return self.verdicts[-1] if len(self.verdicts) > len(self.claims) else None

    def explain(self, report: ResolveReport, now: int) -> None:
        """What explain answers for the group: its verdict now, or the rule error that keeps it from one (a rule
        error met only after planned claims is the claiming evaluation's to record; the verdict now stands); for a
        partitioned group, its partitions' verdicts now. The claims it plans go to ``report.planned``: what a claiming
        evaluation now would claim (``PUT /rules/{ruleId}?dryRun=true`` lists them)."""
        if self.partitions is not None:
            report.planned.extend(c.trigger for c in self.partitions.claims)
            report.verdict(self.ref, self.partitions.board(self.group, explain=True))
            return
        report.planned.extend(c.trigger for c in self.claims)
        if self.verdicts:
            report.verdict(self.ref, self.verdicts[0])
            return
        assert self.error is not None  # a lane evaluates once at least, unless a rule error stops it first
        message = describe_error(self.error)
        ticks = ScheduleExplanation.unevaluated(self.group.schedule, now) if self.group.schedule else None
        report.verdict(self.ref, GroupEvaluation(self.group.group_id, Status.ERROR, (), reason=message, schedule=ticks))
        report.failed.append(RuleFailure(self.rule.rule_id, self.group.group_id, message))


@dataclass(frozen=True)
class Plan:
    """What one invocation does: the partition facts to keep (first), per group (in evaluation order) its plan, and
    the late snapshots to record."""

    groups: tuple[GroupPlan, ...]
    skips: tuple[Trigger, ...] = ()
    facts: tuple[PlannedFact, ...] = ()
    versions: tuple[PartitionFact, ...] = ()  # EACH_VERSION partitioned groups: the batch's commits per partition
    first_seen: tuple[tuple[GroupRef, dict[str, int]], ...] = ()  # to note on cursors of groups not run yet


class PlanResolution:
    """Decide, from what was gathered and the clock, what the resolver does (see the module docstring)."""

    def __init__(
        self,
        gathered: Gathered,
        now: int,
        *,
        max_claims: int,
        rule_error: Callable[[BaseException], bool],
        registered: Mapping[str, bool] | None = None,
        carry: bool = False,
        max_partition_claims: int | None = None,
    ) -> None:
        self._carry = carry
        # partitioned groups share max_partition_claims (a queue carries the rest); without a queue (None), each has
        # max_claims of its own and defers itself for the rest
        self._max_partition_claims = max_partition_claims
        self._gathered = gathered
        self._now = now
        self._max_claims = max_claims
        self._rule_error = rule_error
        self._registered = registered

    @property
    def gathered(self) -> Gathered:
        return self._gathered

    def __call__(self) -> Plan:
        """The plan of every group gathered, and the late snapshots its batch brought."""
        gathered = self._gathered
        groups = []
        left = self._max_partition_claims  # partitioned groups share one bound of claims per invocation
        for rule, group in gathered.work:
            ref = (rule.rule_id, group.group_id)
            budget = self._max_claims if group.partition_by is None or left is None else left
            planned = self.group(rule, group, gathered.cursor(ref), gathered.previous.get(ref), budget)
            if planned.partitions is not None and left is not None:
                left -= len(planned.partitions.claims)
            groups.append(planned)
        skips = tuple(
            item.trigger(gathered.inputs.cursors[(item.rule.rule_id, item.group_id)], self._now)
            for item in gathered.late
        ) + tuple(skip for g in groups if g.partitions is not None for skip in g.partitions.skips)
        facts = facts_to_write(gathered.brought, list(gathered.partitions.values()))
        versions = tuple(v for kept in gathered.versions.values() for v in kept)
        first_seen = tuple(noted for g in groups if (noted := self._first_seen(g)) is not None)
        return Plan(tuple(groups), skips, facts, versions, first_seen)

    def _first_seen(self, planned: GroupPlan) -> tuple[GroupRef, dict[str, int]] | None:
        """An EACH_VERSION group that has never run and claims nothing now (a member missing, a quiet period, a run
        window ...): the oldest snapshot of each member stepping by snapshot that the batch brought, where its cursor
        does not note one as old already. Noted on the cursor, they are where its first run starts, whenever it comes
        (the gather reads the snapshot log from them), instead of only the versions a later batch brings."""
        rule, group = planned.rule, planned.group
        if planned.claims or planned.error is not None or not each_version(rule, group):
            return None
        cursor = self._gathered.cursor(planned.ref)
        if cursor is not None and cursor.seq > 0:
            return None
        oldest: dict[str, int] = {}
        for member in group.members:
            orders = [r.order for r in self._gathered.seen.get(member.asset_key, ())]
            noted = cursor.first_seen_of(member.asset_key) if cursor is not None else None
            if steps_by_snapshot(member) and orders and (noted is None or min(orders) < noted):
                oldest[member.asset_key] = min(orders)
        return (planned.ref, oldest) if oldest else None

    def group(
        self, rule: Rule, group: Group, cursor: GroupCursor | None, previous: Trigger | None, budget: int
    ) -> GroupPlan:
        """One group's plan from ``cursor`` (and the trigger it names, head of line), at most ``budget`` claims: its
        one lane (:func:`lakehook.domain.lanes.plan_lane`), or a partitioned group's lanes, one per partition."""
        ref = (rule.rule_id, group.group_id)
        try:
            unreadable = self._gathered.inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys)
            if unreadable is not None:
                raise UnreadableItemError(unreadable)
            if ref in self._gathered.errors:
                raise self._gathered.errors[ref]
            if group.partition_by is not None:
                planned = self.partitions(rule, group)(budget)
                gaps = tuple(gap for p in planned.partitions for gap in p.verdict.gaps)  # EACH_VERSION: polled for
                return GroupPlan(rule, group, partitions=planned, gaps=gaps)
        except Exception as exc:
            if not self._rule_error(exc):
                raise
            return GroupPlan(rule, group, error=exc)
        lane = plan_lane(
            lambda at, before: self._evaluate(rule, group, at, before),
            lambda verdict, at: plan_claim(rule, group, verdict, at, self._gathered.inputs.states, self._now),
            cursor,
            previous,
            budget,
            rule_error=self._rule_error,
        )
        if lane.error is not None:
            return GroupPlan(rule, group, lane, error=lane.error)
        return GroupPlan(rule, group, lane, self._deferral(rule, group, lane), tuple(lane.settled.gaps))

    def partitions(self, rule: Rule, group: Group) -> PlanPartitions:
        """The planner of a partitioned group's partitions, from what was gathered for it: from the point its cursor
        records (:mod:`lakehook.domain.partition_start`), or the one a backfill that completed since makes (claimed
        first)."""
        gathered = self._gathered
        cursor = gathered.cursor((rule.rule_id, group.group_id))
        point = backfill_point(rule, group, gathered.inputs.states, cursor, self._now)
        return PlanPartitions(
            rule,
            group,
            gathered.partitions[(rule.rule_id, group.group_id)],
            gathered.brought,
            gathered.inputs.states,
            self._now,
            self._registered,
            self._carry,
            gathered.versions,
            start=point.moved() if point is not None else cursor,
            point=point,
        )

    def _evaluate(
        self, rule: Rule, group: Group, cursor: GroupCursor | None, previous: Trigger | None
    ) -> GroupEvaluation:
        gathered = self._gathered
        return evaluate_group(
            rule,
            group,
            gathered.inputs.states,
            cursor,
            self._now,
            registered=self._registered,
            logs=gathered.logs,
            coverage=gathered.coverage.get((rule.rule_id, group.group_id)),
            snapshots=gathered.snapshots,
            previous=previous,
        )

    def _deferral(self, rule: Rule, group: Group, lane: Lane) -> PlannedDeferral | None:
        """The lane's own next look (its claims used, a wait that ends by itself); else, for an EACH_VERSION member
        behind a history gap its owner may still fill, a look once the gap is final, even if nothing else changes."""
        found = lane.next(self._now)
        if found is not None:
            return PlannedDeferral(Deferral(rule.rule_id, group.group_id, found[0]), found[1])
        due = [self._gathered.recheck[k] for k in group.asset_keys if k in self._gathered.recheck]
        if each_version(rule, group) and due:
            return PlannedDeferral(Deferral(rule.rule_id, group.group_id, min(due)), DeferWhy.HISTORY_GAP)
        return None
