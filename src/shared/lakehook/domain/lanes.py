"""A lane: what the resolver plans for one cursor. An unpartitioned group is one lane (its group cursor); a
partitioned group is one lane per partition (each partition's cursor). Every lane is planned by the same loop,
:func:`plan_lane`: evaluate under the cursor, claim what is READY (:func:`lakehook.domain.planned_claims.plan_claim`),
move the cursor as the claim would, and evaluate again from there (EACH_VERSION's next version waits for the claim
just planned, head of line; a window backlog's next window is ready at once), until the lane is not ready or has
used the claims it may make in this invocation. The verdict it ends on says what happens next (:meth:`Lane.next`):
a wait that lifts by itself defers the lane to its end; a lane still ready has used its claims and goes on in the
next invocation.

Pure: the resolver's plan (:mod:`lakehook.usecases.resolve_plan`) and explain both plan lanes here, so what explain
says is what a claiming evaluation does by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.status import Status
from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.domain.verdicts import GroupEvaluation

# Verdicts that lift by themselves at ``until`` (a covered window closes when its lateness has passed).
TIMED = (
    Status.COOLDOWN,
    Status.QUIET_PERIOD,
    Status.BLOCKED_BY_COVERAGE,
    Status.WAITING_FOR_VERSION,
    Status.WAITING_FOR_SCHEDULE,  # the next tick
    Status.WAITING_FOR_RUN_WINDOW,  # the window's next opening
    Status.CATCHING_UP,  # a window backlog: the next evaluation's start
)


class DeferWhy(StrEnum):
    """Why a lane (a group, or a partition) is evaluated again later, with nothing else changing."""

    WAIT_ENDS = "the verdict lifts by itself then (cooldown, quiet period, coverage, a gap settling, a tick)"
    HISTORY_GAP = "a member's history has a gap its owner may still fill; look again once it is final"
    CLAIMS_USED = "the lane used its claims for this invocation; the rest of its backlog goes on next"


Evaluate = Callable[[GroupCursor | None, Trigger | None], GroupEvaluation]
"""a lane's verdict under a cursor and the trigger it names (head of line)"""

Claim = Callable[[GroupEvaluation, GroupCursor | None], PlannedClaim]
"""the claim of a READY verdict under a cursor"""


@dataclass(frozen=True)
class Lane:
    """One lane's plan: ``verdicts[i]`` is the verdict ``claims[i]`` claims, and the last verdict (one more than the
    claims) the one the lane settles on, under the cursor the claims leave. ``error``: a rule error met after the
    claims before it (the lane fails; the claims stand). ``partition``: None for an unpartitioned group."""

    partition: str | None
    cursor: GroupCursor | None  # the cursor the lane was planned from (None: it never ran)
    verdicts: tuple[GroupEvaluation, ...]
    claims: tuple[PlannedClaim, ...]
    error: BaseException | None = None

    @property
    def verdict(self) -> GroupEvaluation:
        """The lane's verdict now (what explain shows)."""
        return self.verdicts[0]

    @property
    def settled(self) -> GroupEvaluation:
        """The verdict the lane ends on, once its claims are made."""
        return self.verdicts[-1]

    @property
    def after(self) -> GroupCursor | None:
        """The lane's cursor once its claims are made."""
        return self.claims[-1].moved() if self.claims else self.cursor

    def next(self, now: int) -> tuple[int, DeferWhy] | None:
        """When (and why) the lane is evaluated again with nothing else changing: still ready, now (its claims were
        used); a wait that lifts by itself, at its end; else None (news wakes it)."""
        if self.error is not None:
            return None
        settled = self.settled
        if settled.ready:
            return (now, DeferWhy.CLAIMS_USED)
        if settled.status in TIMED and settled.until is not None:
            return (settled.until, DeferWhy.WAIT_ENDS)
        return None

    def without_claims(self) -> Lane:
        """This lane as planned before any claim (its first claim's key was claimed before, under this very cursor:
        nothing to make)."""
        return Lane(self.partition, self.cursor, self.verdicts[:1], ())


def plan_lane(
    evaluate: Evaluate,
    claim: Claim,
    cursor: GroupCursor | None,
    previous: Trigger | None,
    budget: int,
    *,
    partition: str | None = None,
    rule_error: Callable[[BaseException], bool] = lambda _: False,
) -> Lane:
    """Plan one lane from ``cursor`` (and ``previous``, the trigger it names), at most ``budget`` claims (see the
    module docstring). An error ``rule_error`` accepts ends the lane with the claims planned before it; any other
    propagates."""
    start = cursor
    verdicts: list[GroupEvaluation] = []
    claims: list[PlannedClaim] = []
    try:
        verdict = evaluate(cursor, previous)
        verdicts.append(verdict)
        while verdict.ready and len(claims) < budget:
            planned = claim(verdict, cursor)
            claims.append(planned)
            cursor, previous = planned.moved(), planned.holds_line
            verdict = evaluate(cursor, previous)
            verdicts.append(verdict)
    except Exception as exc:
        if not rule_error(exc):
            raise
        return Lane(partition, start, tuple(verdicts), tuple(claims), exc)
    return Lane(partition, start, tuple(verdicts), tuple(claims))
