"""The resolver's part for partitioned groups: keep the facts a batch brings, evaluate the partitions they touched
(and the pending ones), and claim each READY partition once, under its own cursor.

Budget per invocation and partitioned group (docs/partitions.md, "Request counts per commit"): one conditional
write per new (asset, mapping, partition) fact, at most the touched keys one commit keeps; one query of the group's
pending partitions (a page); batched reads of the facts and partition cursors the evaluated partitions need; one
transaction per claim, at most ``max_claims`` per group (the rest stay pending, deferred to the next invocation);
one batched write of the pending partitions that changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.evaluation import GroupEvaluation, Status
from lakehook.domain.partition_evaluation import (
    FactKey,
    PartitionFact,
    evaluate_partition,
    fact_keys,
    facts_of,
    member_keys,
    partition_of_fact,
    summarize,
)
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.rules import Group, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import (
    GroupCursor,
    PinnedInput,
    Trigger,
    TriggerStatus,
    partition_cursor_id,
    trigger_key,
)
from lakehook.domain.versions import SnapshotRecord
from lakehook.observability import logger
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import ClaimOutcome, Deferral, DeferralStore, GroupRef, TriggerStore

PENDING_PAGE = 1000  # pending partitions re-evaluated per group and invocation (newest keys first)
EXPLAIN_PAGE = 20  # partitions explain shows per group

Touched = Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]]
"""per asset key, the data commits a batch brought and the partitions each touched"""


def touched_of_states(states: Mapping[str, AssetState]) -> dict[str, list[tuple[SnapshotRecord, TouchedPartitions]]]:
    """What the states' own newest data commits touched (``latestPartitions`` of ``latestData``)."""
    found: dict[str, list[tuple[SnapshotRecord, TouchedPartitions]]] = {}
    for key, state in states.items():
        parts, data = state.latest_partitions, state.latest_data
        if parts is not None and data is not None and parts.order == data.order:
            found.setdefault(key, []).append((data, parts))
    return found


def partition_pins(
    store: PartitionStore | None, group: Group, partition: str, states: Mapping[str, AssetState]
) -> dict[str, PinnedInput]:
    """What a manual run of ``partition`` pins for each partitioned member of ``group`` (by asset key): the newest
    data commit touching it (a rollup: the newest of its units, once every unit has one), from the kept facts and
    those the members' newest commits bring (``latestPartitions``, as an evaluation takes them). A member with no
    such commit is a ConflictError naming it; a partition that can be none of a member's, a ValidationError."""
    _check_fits(group, partition)
    wanted = {m.asset_key: member_keys(group, m, partition) for m in group.partitioned_members}
    every = {k for keys in wanted.values() for k in keys}
    facts = store.facts(every) if store is not None else {}
    for fact in _facts_of_states(group, states):
        if fact.key in every and fact.newer_than(facts.get(fact.key)):
            facts[fact.key] = fact
    return {asset: _newest(asset, partition, keys, facts) for asset, keys in wanted.items()}


def _check_fits(group: Group, partition: str) -> None:
    """A ValidationError naming ``partition`` when it can be no partition of a partitioned member's mapping (a value
    that is no time value of the grain the member cuts it to)."""
    assert group.partition_by is not None
    for member in group.partitioned_members:
        assert member.partition is not None
        misfit = member.partition.misfit(partition, group.partition_by)
        if misfit is not None:
            raise ValidationError(
                f"partition {partition!r} is no partition of {member.asset_key}: {misfit}", "partition"
            )


def _newest(asset: str, partition: str, keys: Sequence[FactKey], facts: Mapping[FactKey, PartitionFact]) -> PinnedInput:
    """The pin of the newest of a member's facts for the partition (its units, for a rollup); a ConflictError naming
    the member when one is missing."""
    missing = [k[2] for k in keys if k not in facts]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        which = partition if len(keys) == 1 else f"{len(missing)} of the {len(keys)} units of {partition} ({shown})"
        raise ConflictError(
            f"member {asset} has no data commit touching {which} yet; a manual run of a partition pins one for each "
            "partitioned member"
        )
    return max((facts[k] for k in keys), key=lambda f: f.order).pin()


def _facts_of_states(group: Group, states: Mapping[str, AssetState]) -> list[PartitionFact]:
    """The facts the states' newest data commits give ``group`` (``latestPartitions``)."""
    return [
        fact
        for key, found in touched_of_states(states).items()
        for record, parts in found
        for fact in facts_of(group, key, parts, record)
    ]


@dataclass
class _Round:
    """One resolve of a partitioned group: what its partitions are evaluated with, and what it claimed and deferred."""

    rule: Rule
    group: Group
    states: Mapping[str, AssetState]
    facts: Mapping[FactKey, PartitionFact]
    now: int
    claim: bool
    registered: Mapping[str, bool] | None
    claimed: list[Trigger] = field(default_factory=list)
    deferrals: list[Deferral] = field(default_factory=list)

    def evaluate(self, partition: str, cursor: GroupCursor | None) -> GroupEvaluation:
        return evaluate_partition(
            self.rule, self.group, partition, self.facts, self.states, cursor, self.now, self.registered
        )


def _facts_for(
    store: PartitionStore, group: Group, partitions: Sequence[str], brought: Mapping[FactKey, PartitionFact]
) -> dict[FactKey, PartitionFact]:
    """The facts the partitions need (batched reads), with what this batch brought, kept above (or, for explain,
    as if kept) where newer."""
    wanted = [k for p in partitions for k in fact_keys(group, p)]
    facts = store.facts(wanted) if wanted else {}
    for key in wanted:
        fact = brought.get(key)
        if fact is not None and fact.newer_than(facts.get(key)):
            facts[key] = fact
    return facts


def _has_news(group: Group, verdict: GroupEvaluation) -> bool:
    """Whether a partitioned member touched the partition since its last run (it stays pending until it runs)."""
    partitioned = (m for m, g in zip(verdict.members, group.members, strict=True) if g.partition is not None)
    return any(m.status is Status.READY for m in partitioned)


def _keep_pending(
    store: PartitionStore,
    rule_id: str,
    group_id: str,
    page: Mapping[str, str],
    pending: Sequence[str],
    done: Sequence[str],
    now: int,
) -> int:
    """Mark the newly pending partitions (those read pending keep their mark), clear those that ran or have nothing
    new (only what was pending when read, under its mark); how many are pending now."""
    marked = [p for p in pending if p not in page]
    if marked:
        store.mark_pending(rule_id, group_id, marked, now)
    cleared = {p: page[p] for p in done if p in page}
    if cleared:
        store.clear_pending(rule_id, group_id, cleared)
    return len((set(page) | set(pending)) - set(done))


class PartitionResolution:
    """Evaluate and claim partitioned groups (see the module docstring)."""

    def __init__(
        self,
        store: PartitionStore | None,
        triggers: TriggerStore,
        deferrals: DeferralStore,
        max_claims: int,
        max_conflicts: int,
    ) -> None:
        self._store = store
        self._triggers = triggers
        self._deferrals = deferrals
        self._max_claims = max_claims
        self._max_conflicts = max_conflicts

    def record(
        self, work: Sequence[tuple[Rule, Group]], touched: Touched, now: int, *, claim: bool
    ) -> tuple[dict[GroupRef, set[str]], dict[FactKey, PartitionFact]]:
        """Keep the facts ``touched`` gives the partitioned groups of ``work`` (with ``claim``), and answer per group
        the partitions they name (a redelivered batch names them again, so a claim a failure cut off is made), and the
        facts themselves (explain evaluates with them as if kept, so it says what a claiming evaluation does)."""
        facts: dict[FactKey, PartitionFact] = {}
        named: dict[GroupRef, set[str]] = {}
        for rule, group in work:
            for key in dict.fromkeys(m.asset_key for m in group.partitioned_members):
                for record, parts in touched.get(key, ()):
                    for fact in facts_of(group, key, parts, record):
                        if fact.newer_than(facts.get(fact.key)):
                            facts[fact.key] = fact
                        named.setdefault((rule.rule_id, group.group_id), set()).add(partition_of_fact(group, fact))
        if facts and claim:
            self._need_store().advance(sorted(facts.values(), key=lambda f: f.key), now)
        return named, facts

    def resolve(
        self,
        rule: Rule,
        group: Group,
        states: Mapping[str, AssetState],
        named: set[str],
        now: int,
        *,
        claim: bool,
        registered: Mapping[str, bool] | None = None,
        brought: Mapping[FactKey, PartitionFact] | None = None,
    ) -> tuple[GroupEvaluation, list[Trigger], list[Deferral]]:
        """The group's verdict (its partitions' verdicts on its board), the triggers claimed, the deferrals left."""
        store = self._need_store()
        gid = group.group_id
        page = store.pending(rule.rule_id, gid, PENDING_PAGE if claim else EXPLAIN_PAGE)
        partitions = sorted(named | set(page), reverse=True)  # newest first: keys of dates sort by time
        facts = _facts_for(store, group, partitions, brought or {})
        cursors = self._cursors(rule.rule_id, gid, partitions)
        work = _Round(rule, group, states, facts, now, claim, registered)
        verdicts: list[GroupEvaluation] = []
        pending: list[str] = []
        done: list[str] = []
        for partition in partitions:
            verdict = self._settle(work, partition, cursors.get(partition))
            verdicts.append(verdict)
            (pending if _has_news(group, verdict) else done).append(partition)
            if verdict.until is not None and verdict.status in (Status.COOLDOWN, Status.QUIET_PERIOD):
                work.deferrals.append(Deferral(rule.rule_id, gid, verdict.until))
        if claim:
            count = _keep_pending(store, rule.rule_id, gid, page, pending, done, now)
        else:
            count = store.count_pending(rule.rule_id, gid)
        return self._board(work, verdicts, count)

    def _cursors(self, rule_id: str, group_id: str, partitions: Sequence[str]) -> dict[str, GroupCursor]:
        """The partitions' own cursors (batched reads), by partition; absent for one that never ran."""
        if not partitions:
            return {}
        ids = {p: partition_cursor_id(group_id, p) for p in partitions}
        found = self._triggers.get_cursors([(rule_id, i) for i in ids.values()])
        return {p: c for p, i in ids.items() if (c := found.get((rule_id, i))) is not None}

    def _settle(self, work: _Round, partition: str, cursor: GroupCursor | None) -> GroupEvaluation:
        """The partition's verdict, claimed when READY (and claiming): a claim another resolver won is decided again
        under the cursor it left, at most ``max_conflicts`` times; past ``max_claims`` the group defers itself."""
        rule, group, now = work.rule, work.group, work.now
        verdict = work.evaluate(partition, cursor)
        for _ in range(self._max_conflicts + 1):
            if not (verdict.ready and work.claim):
                break
            if len(work.claimed) >= self._max_claims:  # a long backlog: the next invocation goes on
                work.deferrals.append(Deferral(rule.rule_id, group.group_id, now))
                break
            trigger, fresh = self._claim(rule, group, partition, verdict, cursor, now)
            if trigger is not None:
                work.claimed.append(trigger)
            elif fresh is None or (cursor is not None and fresh.seq == cursor.seq):
                break  # the key was claimed before, under this very cursor: nothing to decide again
            cursor = fresh
            verdict = work.evaluate(partition, cursor)
        return verdict

    def _board(
        self, work: _Round, verdicts: list[GroupEvaluation], count: int
    ) -> tuple[GroupEvaluation, list[Trigger], list[Deferral]]:
        """The group's own verdict over its partitions', the claims, and the earliest deferral (kept when claiming)."""
        status, reason = summarize(verdicts)
        if work.claimed:
            status, reason = Status.READY, f"{len(work.claimed)} partitions claimed"
        first = min(work.deferrals, key=lambda d: d.due_at, default=None)
        if first is not None and work.claim:
            self._deferrals.defer(first)
        board = GroupEvaluation(
            work.group.group_id,
            status,
            (),
            reason=reason,
            until=first.due_at if first is not None else None,
            partitions=tuple(verdicts[:EXPLAIN_PAGE]),
            pending_partitions=count,
        )
        return board, work.claimed, [first] if first is not None else []

    def _claim(
        self,
        rule: Rule,
        group: Group,
        partition: str,
        verdict: GroupEvaluation,
        cursor: GroupCursor | None,
        now: int,
    ) -> tuple[Trigger | None, GroupCursor | None]:
        """One claim of the partition's run under its cursor: the trigger and the moved cursor, or None and the
        cursor as it now is (another resolver moved it first)."""
        base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id, partition)
        at = max(now, base.claimed_at or 0)
        key = trigger_key(rule.rule_id, group.group_id, verdict.pins, None, base.replay_epoch, partition=partition)
        trigger = Trigger(
            trigger_key=key,
            rule_id=rule.rule_id,
            group_id=group.group_id,
            status=TriggerStatus.TRIGGERING,
            inputs=verdict.pins,
            partition=partition,
            replay_epoch=base.replay_epoch,
            sequence=base.seq + 1,
            created_at=at,
            updated_at=at,
            reason=verdict.reason,
        )
        moved = base.after(trigger, {})
        result = self._triggers.claim(trigger, moved, cursor)
        extra = {"rule_id": rule.rule_id, "group_id": group.group_id, "partition": partition, "trigger_key": key}
        if result.outcome is ClaimOutcome.CLAIMED:
            logger.info("trigger claimed", extra={**extra, "status": trigger.status.value})
            return trigger, moved
        logger.debug("partition claim lost a race", extra={**extra, "status": result.outcome.value})
        ref = (rule.rule_id, base.group_id)
        return None, result.cursor or self._triggers.get_cursors([ref]).get(ref)

    def _need_store(self) -> PartitionStore:
        if self._store is None:
            raise ValueError("a partitioned group needs the resolver's partition store, and none is configured")
        return self._store
