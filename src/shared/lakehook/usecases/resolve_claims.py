"""The claims of a group's lanes, made: one path for every group (an unpartitioned group is one lane, its group
cursor; a partitioned group one lane per partition, each under its own cursor: :mod:`lakehook.domain.lanes`).

Claims are made in rounds. A round makes the next planned claim of up to ``MAX_CLAIMS_PER_TRANSACTION`` lanes in
one transaction (:meth:`lakehook.ports.rules.TriggerStore.claim_many`: each claim conditional on its lane's cursor;
a transaction names a cursor once, so a lane's second claim, planned from the cursor its first one moves, waits for
the next round), the time left looked at before each round. A claim whose condition failed ends its lane's round:

- a racing resolver claimed the same key under this very cursor: nothing is left to make (the lane ends there);
- a late snapshot was noted on the cursor since it was read: what was read does not hold it, so the group is to be
  gathered and planned again (:attr:`Claimed.again`);
- another resolver moved the cursor: the lane is planned again from the cursor that won, within the claims it had
  left, at most ``max_conflicts`` times (then it gives up: a group raises a ConflictError and is retried after its
  retry time, a partition stays pending for its next invocation).

What differs between the kinds of lane is only how a lane is planned again, what its claim logs first, and how it
gives up: :class:`LaneKind`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from lakehook.domain.lanes import Lane
from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.triggers import GroupCursor
from lakehook.ports.rules import MAX_CLAIMS_PER_TRANSACTION, Claim, ClaimOutcome, ClaimResult, TriggerStore

Item = TypeVar("Item")


class LaneKind(Protocol[Item]):
    """How one kind of lane (a group's, a partition's) is claimed: its plan item's lane, what a claim does first, how
    the lane is planned again after a lost race, and how it ends."""

    def lane(self, item: Item) -> Lane: ...

    def prepare(self, item: Item, index: int) -> PlannedClaim:
        """The lane's claim ``index`` as it is made (a group's pins described for the run manifest, its snapshots
        logged), just before it is."""
        ...

    def claimed(self, item: Item, claim: PlannedClaim) -> None:
        """A claim made: report and log it."""
        ...

    def again(self, item: Item, fresh: GroupCursor, made: int) -> Item:
        """The lane planned again from ``fresh`` (another resolver moved its cursor), ``made`` of its claims made."""
        ...

    def give_up(self, item: Item, fresh: GroupCursor) -> Item:
        """The lane after ``max_conflicts`` lost races (or raise)."""
        ...

    def taken(self, item: Item) -> Item | None:
        """The lane once a racing resolver claimed its key under this very cursor: as applied, or None (done)."""
        ...


@dataclass(frozen=True)
class Claimed(Generic[Item]):
    """The lanes as applied, in the plan's order (each as last planned; a lane a racing resolver finished is not
    among them), how many claims lost a race, and whether a late snapshot noted on a cursor since it was read sends
    the group to be gathered again (then the lanes are not worth applying further)."""

    items: list[Item]
    conflicts: int = 0
    again: bool = False


@dataclass
class _Open(Generic[Item]):
    item: Item
    index: int  # the lane's place in the plan: the lanes as applied keep the plan's order
    made: int = 0  # of the item's lane's claims
    conflicts: int = 0


class ClaimLanes(Generic[Item]):
    """Make the planned claims of a group's lanes (see the module docstring)."""

    def __init__(
        self, triggers: TriggerStore, kind: LaneKind[Item], max_conflicts: int, in_time: Callable[[], None]
    ) -> None:
        self._triggers = triggers
        self._kind = kind
        self._max_conflicts = max_conflicts
        self._in_time = in_time

    def __call__(self, items: Sequence[Item]) -> Claimed[Item]:
        open_ = [_Open(item, n) for n, item in enumerate(items)]
        done: list[_Open[Item]] = []
        conflicts = 0
        while open_:
            self._in_time()
            round_, rest = _next_round(open_, self._kind)
            claiming = [o for o in round_ if self._left(o)]
            done += [o for o in round_ if not self._left(o)]
            made = [self._kind.prepare(o.item, o.made) for o in claiming]
            results = self._triggers.claim_many([Claim(c.trigger, c.moved(), c.expected) for c in made]) if made else []
            following: list[_Open[Item]] = []
            for entry, claim, result in zip(claiming, made, results, strict=True):
                if result.outcome is ClaimOutcome.CLAIMED:
                    self._kind.claimed(entry.item, claim)
                    entry.made += 1
                    following.append(entry)
                    continue
                conflicts += 1
                if _noted_since(claim, result):
                    return Claimed([], conflicts, again=True)
                found = self._lost(entry, claim, result)
                if found is not None:
                    (following if found[1] else done).append(found[0])
            open_ = [*following, *rest]
        return Claimed([o.item for o in sorted(done, key=lambda o: o.index)], conflicts)

    def _left(self, entry: _Open[Item]) -> bool:
        """Whether the lane has a planned claim still to make."""
        return entry.made < len(self._kind.lane(entry.item).claims)

    def _lost(self, entry: _Open[Item], claim: PlannedClaim, result: ClaimResult) -> tuple[_Open[Item], bool] | None:
        """A lane whose claim lost, and whether it has claims to make again: ended as applied (its key was claimed
        under this very cursor; None: nothing is left of it), given up, or planned again from the cursor that won."""
        kind = self._kind
        fresh = result.cursor
        if fresh is None:
            ref = (claim.trigger.rule_id, claim.base.group_id)
            fresh = self._triggers.get_cursors([ref]).get(ref)
        if fresh is None or (claim.expected is not None and fresh.seq == claim.expected.seq):
            taken = kind.taken(entry.item)
            return (_Open(taken, entry.index), False) if taken is not None else None
        if entry.conflicts >= self._max_conflicts:
            return _Open(kind.give_up(entry.item, fresh), entry.index), False
        return _Open(kind.again(entry.item, fresh, entry.made), entry.index, 0, entry.conflicts + 1), True


def _next_round(open_: Sequence[_Open[Item]], kind: LaneKind[Item]) -> tuple[list[_Open[Item]], list[_Open[Item]]]:
    """The lanes whose next claim is made in this round (up to ``MAX_CLAIMS_PER_TRANSACTION`` claims, with the lanes
    that have none left among them), and the rest."""
    claims = 0
    for n, entry in enumerate(open_):
        claims += entry.made < len(kind.lane(entry.item).claims)
        if claims > MAX_CLAIMS_PER_TRANSACTION:
            return list(open_[:n]), list(open_[n:])
    return list(open_), []


def _noted_since(claim: PlannedClaim, result: ClaimResult) -> bool:
    """Whether a lost claim found a late snapshot noted on the cursor since the cursor it was planned over was read
    (``late_seq``: the plans made from one read, and the ones after a lost race, share it)."""
    return result.cursor is not None and result.cursor.late_seq != claim.base.late_seq
