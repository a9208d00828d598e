"""The one plan of a group: every group is planned per partition, by :class:`PlanLanes`. An unpartitioned group is
the one-partition case (one lane under the group-wide key, None: its group cursor); a partitioned group has one lane
per partition (each partition's cursor). Both are planned by the same loop: per lane its verdict, its claims
(:func:`lakehook.domain.lanes.plan_lane`), whether it stays pending, and when it is looked at again; then the group is
settled (:meth:`PlanLanes.settle`): its pending marks and clears, what goes on in the resolver queue, its deferral,
its late versions to skip, the gaps to ask a poll for, or the rule error a lane met. What differs between the two
kinds of group is only what a lane reads, which :class:`PlanLanes` leaves to its two kinds:
:class:`lakehook.usecases.resolve_plan.WholeGroup` (the states, logs and coverage the gather read) and
:class:`lakehook.usecases.resolve_partitions.PartitionedGroup` (the kept facts, the partitions' cursors).

Pure: explain is the same gather and this plan without the apply, so what explain shows is what a claiming
evaluation does by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lakehook.domain.deferrals import Deferral
from lakehook.domain.evaluation import GroupEvaluation, Status
from lakehook.domain.lanes import TIMED, DeferWhy, Lane, plan_lane
from lakehook.domain.partition_evaluation import summarize
from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.rules import Group, Rule
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.domain.verdicts import Gap

EXPLAIN_PAGE = 20  # partitions explain shows per group

Key = str | None
"""a lane's key: a partition, or None (an unpartitioned group's one lane, the group-wide key)"""


class PendingWhy(StrEnum):
    """Why a partition is marked pending, or its mark cleared."""

    NEWS = "a partitioned member touched it since its last run (or it waits for its claim): it stays pending"
    RAN = "it ran, or has nothing new since its last run: it leaves the pending list"


@dataclass(frozen=True)
class PartitionPlan:
    """One lane (a partition, or an unpartitioned group's one): its lane (:class:`lakehook.domain.lanes.Lane`: its
    verdict now, what explain shows, under its cursor; the claims to make; the verdict it settles on), whether it stays
    pending and why (None: the group keeps no pending list), and when it is evaluated again with nothing else
    changing."""

    lane: Lane
    pending: PendingWhy | None
    defer: tuple[int, DeferWhy] | None

    @property
    def partition(self) -> str:
        assert self.lane.partition is not None
        return self.lane.partition

    @property
    def cursor(self) -> GroupCursor | None:
        return self.lane.cursor

    @property
    def verdict(self) -> GroupEvaluation:
        return self.lane.verdict

    @property
    def settled(self) -> GroupEvaluation:
        return self.lane.settled

    @property
    def claim(self) -> PlannedClaim | None:
        return self.lane.claims[0] if self.lane.claims else None

    def unclaimed(self, group: Group) -> PartitionPlan:
        """This partition without its claim (the key was claimed before, under this very cursor)."""
        why = PendingWhy.NEWS if _has_news(group, self.verdict) else PendingWhy.RAN
        return PartitionPlan(self.lane.without_claims(), why, None)


@dataclass(frozen=True)
class PlannedMark:
    partition: str
    why: PendingWhy


@dataclass(frozen=True)
class PlannedClear:
    partition: str
    mark: str  # the mark it was read with: one a racing resolver marked again since stays pending
    why: PendingWhy


@dataclass(frozen=True)
class PartitionsPlan:
    """A group's plan: per lane (newest partition first) its plan; the pending marks to add and clear; the deferral
    (the earliest of its lanes') and why; how many partitions are pending after it; the gaps its lanes wait at; the
    rule error a lane met (the group fails; the claims planned before it stand)."""

    partitions: tuple[PartitionPlan, ...]
    marks: tuple[PlannedMark, ...] = ()
    clears: tuple[PlannedClear, ...] = ()
    deferral: Deferral | None = None
    why: DeferWhy | None = None
    pending: int | None = None  # None: not known (the group read no whole page of its pending partitions)
    continued: tuple[str, ...] = ()  # ready partitions past the claims, carried over to the work queue
    more: str | None = None  # the pending partitions below this key are scanned next, through the work queue
    skips: tuple[Trigger, ...] = ()  # EACH_VERSION: commits that touched a partition after it ran a newer one
    point: PlannedClaim | None = None  # the group's claim recording a backfill's end, made before the partitions'
    gaps: tuple[Gap, ...] = ()  # EACH_VERSION: the commits a lane waits at, for a targeted poll
    error: BaseException | None = None

    @property
    def claims(self) -> tuple[PlannedClaim, ...]:
        return tuple(c for p in self.partitions for c in p.lane.claims)

    @property
    def whole(self) -> Lane | None:
        """The group-wide lane of an unpartitioned group (None for a partitioned one)."""
        lanes = self.partitions
        return lanes[0].lane if len(lanes) == 1 and lanes[0].lane.partition is None else None

    def board(self, group: Group, *, explain: bool) -> GroupEvaluation:
        """The group's own verdict over its lanes': now (explain), or as a claiming evaluation leaves it. The one lane
        of an unpartitioned group is the group: its verdict is the group's."""
        whole = self.whole
        if whole is not None:
            return whole.verdict if explain else whole.settled
        if explain:
            verdicts = [p.verdict for p in self.partitions]
            until = min((w for v in verdicts if (w := _wait(v)) is not None), default=None)
        else:
            verdicts = [p.settled for p in self.partitions]
            until = self.deferral.due_at if self.deferral is not None else None
        status, reason = summarize(verdicts)
        claimed = len(self.claims)
        if claimed and not explain:
            status, reason = Status.READY, f"{claimed} partitions claimed"
        return GroupEvaluation(
            group.group_id,
            status,
            (),
            reason=reason,
            until=until,
            partitions=tuple(verdicts[:EXPLAIN_PAGE]),
            pending_partitions=self.pending,
        )


@dataclass(frozen=True)
class Book:
    """What a group keeps of its lanes beside their cursors: its pending partitions (each with its mark), those
    carried past this invocation's reads, how many are pending, and where its next page starts. An unpartitioned
    group keeps none of it (the empty book)."""

    page: Mapping[str, str]
    past: tuple[str, ...] = ()
    counted: int | None = None
    whole: bool = False
    more: str | None = None


class PlanLanes:
    """Plan one group's lanes (see the module docstring): at most ``budget`` claims among them, at most
    ``per_lane`` per lane (None: a lane may use the whole budget), the lanes in :meth:`keys` order (newest
    partitions first); a lane still ready past them goes on next (carried to the work queue when ``carry``, else
    the group defers itself to the next invocation). No I/O. Its kinds say what a lane reads."""

    def __init__(
        self,
        rule: Rule,
        group: Group,
        now: int,
        book: Book,
        *,
        carry: bool = False,
        per_lane: int | None = None,
        rule_error: Callable[[BaseException], bool] = lambda _: False,
    ) -> None:
        self.rule, self.group, self.now, self.book = rule, group, now, book
        self.carry, self.per_lane, self.rule_error = carry, per_lane, rule_error

    # --- what a kind of group says ----------------------------------------------------------------------------

    def keys(self) -> list[Key]:
        """The lanes to plan, in order."""
        raise NotImplementedError

    def cursor(self, key: Key) -> GroupCursor | None:
        """The lane's cursor as read."""
        raise NotImplementedError

    def previous(self, key: Key) -> Trigger | None:
        """The trigger the lane's cursor names as read (head of line)."""
        raise NotImplementedError

    def evaluate(self, key: Key, cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        raise NotImplementedError

    def claim(self, key: Key, verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        raise NotImplementedError

    def may_claim(self, key: Key, cursor: GroupCursor | None) -> bool:
        """Whether the lane may claim under ``cursor`` in this invocation."""
        return True

    def pending(self, key: Key, lane: Lane) -> PendingWhy | None:
        """Whether the lane stays pending (None: the group keeps no pending list)."""
        return None

    def skips(self) -> tuple[Trigger, ...]:
        """The late versions the batch brought that the group's lanes ran past (SKIPPED)."""
        return ()

    def fallback(self) -> tuple[int, DeferWhy] | None:
        """When the group is looked at again when none of its lanes defers itself."""
        return None

    @property
    def point(self) -> PlannedClaim | None:
        """The group's claim recording a backfill's end, made before its lanes' (planned from the cursor it leaves)."""
        return None

    # --- the one plan -----------------------------------------------------------------------------------------

    def __call__(self, budget: int) -> PartitionsPlan:
        keys = self.keys()
        return self.settle(self.partitions(keys, {k: self.cursor(k) for k in keys}, budget))

    def partitions(
        self,
        keys: Sequence[Key],
        cursors: Mapping[Key, GroupCursor | None],
        budget: int,
        previous: Mapping[Key, Trigger | None] | None = None,
    ) -> list[PartitionPlan]:
        """The plans of the lanes ``keys`` (in this order) under ``cursors`` (and ``previous``, the triggers they
        name: as read when not given), at most ``budget`` claims among them; a lane's rule error ends the group's
        planning there (the group fails; the claims planned before it stand)."""
        planned: list[PartitionPlan] = []
        for key in keys:
            before = previous[key] if previous is not None and key in previous else self.previous(key)
            plan = self.partition(key, cursors.get(key), before, budget)
            budget -= len(plan.lane.claims)
            planned.append(plan)
            if plan.lane.error is not None:
                break
        return planned

    def partition(self, key: Key, cursor: GroupCursor | None, previous: Trigger | None, budget: int) -> PartitionPlan:
        """One lane (:func:`lakehook.domain.lanes.plan_lane`): claimed when READY, then its verdict under the moved
        cursor (its claim the trigger its next version waits for, EACH_VERSION), within ``per_lane`` claims."""
        limit = budget if self.per_lane is None else min(budget, self.per_lane)
        lane = plan_lane(
            lambda at, before: self.evaluate(key, at, before),
            lambda verdict, at: self.claim(key, verdict, at),
            cursor,
            previous,
            max(limit, 0) if self.may_claim(key, cursor) else 0,
            partition=key,
            rule_error=self.rule_error,
        )
        return PartitionPlan(lane, self.pending(key, lane), lane.next(self.now))

    def settle(self, planned: Sequence[PartitionPlan]) -> PartitionsPlan:
        """The group's plan from its lanes' plans: its pending marks and clears (:meth:`_marks`), what goes on in the
        resolver queue, the earliest deferral (else the group's own fallback); or the rule error a lane met."""
        error = next((p.lane.error for p in planned if p.lane.error is not None), None)
        if error is not None:
            return PartitionsPlan(tuple(planned), error=error, point=self.point)
        book = self.book
        marks, clears = self._marks(planned)
        continued, first = self._carried(planned)
        first = first if first is not None else self.fallback()
        left = len(set(book.page) | {m.partition for m in marks}) - len(clears)
        return PartitionsPlan(
            tuple(planned),
            tuple(m for m in marks if m.partition not in book.page),
            clears,
            Deferral(self.rule.rule_id, self.group.group_id, first[0]) if first is not None else None,
            first[1] if first is not None else None,
            book.counted if book.counted is not None else left if book.whole else None,
            (*continued, *book.past),
            book.more if self.carry else None,
            self.skips(),
            self.point,
            tuple(gap for p in planned for gap in p.settled.gaps),
        )

    def _marks(self, planned: Sequence[PartitionPlan]) -> tuple[tuple[PlannedMark, ...], tuple[PlannedClear, ...]]:
        """The partitions pending after the plan (one read pending keeps its mark: only the new ones are written),
        and those read pending that ran or have nothing new, each cleared under the mark it was read with."""
        page = self.book.page
        marks = tuple(PlannedMark(p.partition, p.pending) for p in planned if p.pending is PendingWhy.NEWS)
        clears = tuple(
            PlannedClear(p.partition, page[p.partition], p.pending)
            for p in planned
            if p.pending is PendingWhy.RAN and p.partition in page
        )
        return marks, clears

    def _carried(self, planned: Sequence[PartitionPlan]) -> tuple[tuple[str, ...], tuple[int, DeferWhy] | None]:
        """The ready partitions past the claims that go to the work queue (when there is one: else the group defers
        itself to the next invocation for them), and the earliest deferral of the others."""
        used = DeferWhy.CLAIMS_USED
        carried = tuple(p.partition for p in planned if self.carry and p.defer is not None and p.defer[1] is used)
        defers = [p.defer for p in planned if p.defer is not None and not (self.carry and p.defer[1] is used)]
        return carried, min(defers, key=lambda d: d[0], default=None)


def _wait(verdict: GroupEvaluation) -> int | None:
    """When a partition's wait ends by itself (a cooldown, a quiet period, the next tick, a window closing), if it
    waits for such a thing."""
    return verdict.until if verdict.status in TIMED else None


def _has_news(group: Group, verdict: GroupEvaluation) -> bool:
    """Whether a partitioned member touched the partition since its last run (it stays pending until it runs)."""
    partitioned = (m for m, g in zip(verdict.members, group.members, strict=True) if g.partition is not None)
    return any(m.status is Status.READY for m in partitioned)
