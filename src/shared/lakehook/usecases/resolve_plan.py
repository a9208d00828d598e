"""The resolver's decision, and nothing else: given what was gathered (:mod:`lakehook.usecases.resolve_gather`) and
the clock, a :class:`Plan`: per group, on one path for every group (:meth:`PlanResolution.group`: its lanes planned
by :class:`lakehook.domain.plan_lanes.PlanLanes`, an unpartitioned group's one lane under the group-wide key,
:class:`WholeGroup`; a partitioned group's partitions,
:class:`lakehook.usecases.resolve_partitions.PartitionedGroup`), per lane the verdicts, the claims to make (in order)
and the pending mark, and the group's deferral, gaps to ask a targeted poll for, or the rule error met; the late
snapshots to record as SKIPPED; the
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
from lakehook.domain.lanes import DeferWhy, Lane
from lakehook.domain.partition_evaluation import PartitionFact
from lakehook.domain.partition_start import backfill_point
from lakehook.domain.plan_lanes import Book, PartitionsPlan, PlanLanes
from lakehook.domain.planned_claims import PlannedClaim, plan_claim
from lakehook.domain.rules import Group, Rule
from lakehook.domain.schedule_explanation import ScheduleExplanation
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import Deferral, GroupRef
from lakehook.usecases.resolve_gather import Gathered
from lakehook.usecases.resolve_partitions import PartitionedGroup, PlannedFact, facts_to_write
from lakehook.usecases.resolve_report import ResolveReport, RuleFailure, describe_error
from lakehook.usecases.resolve_whole_versions import each_version


@dataclass(frozen=True)
class PlannedDeferral:
    deferral: Deferral
    why: DeferWhy


@dataclass(frozen=True)
class GroupPlan:
    """What the resolver does with one group: its lanes' plan (:class:`lakehook.domain.plan_lanes.PartitionsPlan`:
    per lane its verdicts and claims; its pending marks, deferral, gaps, skips), the same for every group: an
    unpartitioned group is its one lane, under the group-wide key. ``lanes.error``: a rule error (met before any lane
    was planned: no lane; or by a lane, after the claims planned before it, which stand)."""

    rule: Rule
    group: Group
    lanes: PartitionsPlan

    @property
    def ref(self) -> GroupRef:
        return (self.rule.rule_id, self.group.group_id)

    @property
    def lane(self) -> Lane | None:
        """An unpartitioned group's one lane (None for a partitioned group, or before any lane was planned)."""
        return self.lanes.whole

    @property
    def error(self) -> BaseException | None:
        return self.lanes.error

    @property
    def per_partition(self) -> bool:
        """Whether the group's lanes are partitions, each under its own cursor (a partitioned group's, none of them
        perhaps; not an unpartitioned group's one lane, nor a rule error met before any lane was planned)."""
        return self.lane is None and (self.error is None or bool(self.lanes.partitions))

    @property
    def verdicts(self) -> tuple[GroupEvaluation, ...]:
        """An unpartitioned group's verdicts: ``verdicts[i]`` is the verdict ``claims[i]`` claims; a verdict after the
        last claim is the one the group settles on (not ready)."""
        return self.lane.verdicts if self.lane is not None else ()

    @property
    def claims(self) -> tuple[PlannedClaim, ...]:
        return self.lanes.claims

    @property
    def gaps(self) -> tuple[Gap, ...]:
        return self.lanes.gaps

    @property
    def deferral(self) -> PlannedDeferral | None:
        found, why = self.lanes.deferral, self.lanes.why
        return PlannedDeferral(found, why) if found is not None and why is not None else None

    @property
    def settled(self) -> GroupEvaluation | None:
        """The verdict the group ends on once its claims are made (READY: it used its claims for this invocation);
        None when a rule error ended it first."""
        return self.verdicts[-1] if len(self.verdicts) > len(self.claims) else None

    def explain(self, report: ResolveReport, now: int) -> None:
        """What explain answers for the group: its verdict now (its lanes' board: a partitioned group's partitions'
        verdicts now), or the rule error that keeps it from one (a rule error an unpartitioned group meets only after
        planned claims is the claiming evaluation's to record; the verdict now stands). The claims it plans go to
        ``report.planned``: what a claiming evaluation now would claim (``PUT /rules/{ruleId}?dryRun=true`` lists
        them)."""
        report.planned.extend(c.trigger for c in self.claims)
        if self.error is None or self.verdicts:
            report.verdict(self.ref, self.lanes.board(self.group, explain=True))
            return
        message = describe_error(self.error)
        ticks = ScheduleExplanation.unevaluated(self.group.schedule, now) if self.group.schedule else None
        report.verdict(self.ref, GroupEvaluation(self.group.group_id, Status.ERROR, (), reason=message, schedule=ticks))
        report.failed.append(RuleFailure(self.rule.rule_id, self.group.group_id, message))


class WholeGroup(PlanLanes):
    """An unpartitioned group's lanes: the one-partition case of :class:`lakehook.domain.plan_lanes.PlanLanes`,
    one lane under the group-wide key (None: the group cursor, and the trigger it names), evaluated over the members'
    states, snapshot logs, coverage and snapshots the gather read (:func:`lakehook.domain.evaluation.evaluate_group`),
    with every claim of the group's budget; it keeps no pending list. With nothing else to wait for, an EACH_VERSION
    member behind a history gap its owner may still fill is looked at again once the gap is final."""

    def __init__(
        self,
        rule: Rule,
        group: Group,
        gathered: Gathered,
        now: int,
        cursor: GroupCursor | None,
        previous: Trigger | None,
        *,
        registered: Mapping[str, bool] | None,
        rule_error: Callable[[BaseException], bool],
    ) -> None:
        super().__init__(rule, group, now, Book({}), rule_error=rule_error)
        self._gathered, self._cursor, self._previous, self._registered = gathered, cursor, previous, registered
        self._own = gathered.group((rule.rule_id, group.group_id))  # what the gather read for this group

    def keys(self) -> list[str | None]:
        return [None]

    def cursor(self, key: str | None) -> GroupCursor | None:
        return self._cursor

    def previous(self, key: str | None) -> Trigger | None:
        return self._previous

    def evaluate(self, key: str | None, cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        own = self._own
        return evaluate_group(
            self.rule,
            self.group,
            self._gathered.inputs.states,
            cursor,
            self.now,
            registered=self._registered,
            logs=own.versions.logs,
            coverage=own.coverage,
            snapshots=own.versions.snapshots,
            previous=previous,
        )

    def claim(self, key: str | None, verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        return plan_claim(self.rule, self.group, verdict, cursor, self._gathered.inputs.states, self.now)

    def fallback(self) -> tuple[int, DeferWhy] | None:
        recheck = self._own.versions.recheck
        due = [recheck[k] for k in self.group.asset_keys if k in recheck]
        return (min(due), DeferWhy.HISTORY_GAP) if each_version(self.rule, self.group) and due else None


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
            own = gathered.group(ref)
            shared = left if own.partitions is not None else None
            budget = shared if shared is not None else self._max_claims
            planned = self.group(rule, group, gathered.cursor(ref), own.previous, budget)
            if shared is not None:
                left = shared - len(planned.claims)
            groups.append(planned)
        skips = tuple(
            item.trigger(gathered.inputs.cursors[(item.rule.rule_id, item.group_id)], self._now)
            for rule, group in gathered.work
            for item in gathered.group((rule.rule_id, group.group_id)).versions.late
        ) + tuple(skip for g in groups for skip in g.lanes.skips)
        read = [own.partitions for own in gathered.groups.values() if own.partitions is not None]
        facts = facts_to_write(gathered.brought, read)
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
        seen = self._gathered.group(planned.ref).versions.seen
        for member in group.members:
            orders = [r.order for r in seen.get(member.asset_key, ())]
            noted = cursor.first_seen_of(member.asset_key) if cursor is not None else None
            if steps_by_snapshot(member) and orders and (noted is None or min(orders) < noted):
                oldest[member.asset_key] = min(orders)
        return (planned.ref, oldest) if oldest else None

    def group(
        self, rule: Rule, group: Group, cursor: GroupCursor | None, previous: Trigger | None, budget: int
    ) -> GroupPlan:
        """One group's plan from ``cursor`` (and the trigger it names, head of line), at most ``budget`` claims: its
        lanes' (:class:`lakehook.domain.plan_lanes.PlanLanes`), one per partition, an unpartitioned group's one
        under the group-wide key."""
        try:
            unreadable = self._gathered.inputs.unreadable(rule.rule_id, group.group_id, group.asset_keys)
            if unreadable is not None:
                raise UnreadableItemError(unreadable)
            error = self._gathered.group((rule.rule_id, group.group_id)).error
            if error is not None:
                raise error
            return GroupPlan(rule, group, self.lanes(rule, group, cursor, previous)(budget))
        except Exception as exc:
            if not self._rule_error(exc):
                raise
            return GroupPlan(rule, group, PartitionsPlan((), error=exc))

    def lanes(
        self, rule: Rule, group: Group, cursor: GroupCursor | None = None, previous: Trigger | None = None
    ) -> PlanLanes:
        """The planner of a group's lanes, from what was gathered for it: an unpartitioned group's one lane from
        ``cursor``; a partitioned group's partitions from the point its cursor records
        (:mod:`lakehook.domain.partition_start`), or the one a backfill that completed since makes (claimed first)."""
        gathered = self._gathered
        ref = (rule.rule_id, group.group_id)
        partitions = gathered.group(ref).partitions
        if partitions is None:
            registered = self._registered
            return WholeGroup(
                rule, group, gathered, self._now, cursor, previous, registered=registered, rule_error=self._rule_error
            )
        start = gathered.cursor(ref)
        point = backfill_point(rule, group, gathered.inputs.states, start, self._now)
        return PartitionedGroup(
            rule,
            group,
            partitions,
            gathered.brought,
            gathered.inputs.states,
            self._now,
            registered=self._registered,
            carry=self._carry,
            start=point.moved() if point is not None else start,
            point=point,
            rule_error=self._rule_error,
        )
