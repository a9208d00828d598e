"""Partitioned groups (``partitionBy``) in the resolver's three steps: what the gather reads for them
(:class:`PartitionInputs`, read by :class:`lakehook.usecases.resolve_gather.GatherInputs`), the facts a batch brings,
and what their lanes read (:class:`PartitionedGroup`: the one plan of every group,
:class:`lakehook.domain.plan_lanes.PlanLanes`, over the kept facts and the partitions' cursors; per partition its
verdict, the claim to make, whether it stays pending, and why; the group's pending marks and deferral), which
:class:`lakehook.usecases.resolve_apply.ApplyPlan` performs. Explain is the same gather and plan, so the partitions it
shows are the plan's.

Budget per invocation and partitioned group (docs/partitions.md, "Request counts per commit"): one conditional
put per new (asset, mapping, partition) fact, 100 to a transaction, at most ``max_facts`` (shared by every group
mapping the asset alike); one query of the group's pending partitions (a page); batched reads of the facts and
partition cursors the evaluated partitions need; the claims 50 to a transaction, at most ``max_partition_claims``
for all partitioned groups (the rest carried to the resolver queue); one batched write of the partitions newly
pending and one conditional delete per partition that leaves the pending list, 100 to a transaction.
``EACH_VERSION`` adds the batch's commits kept as the partitions' versions (batched puts), one batched read of the
triggers the evaluated partitions' cursors name (head of line), per partition whose run succeeded and that has an
older version waiting, one query per partitioned member for its next version and one per (table, cursor order) for
the table's commits logged after it (a gap before the next version) (at most ``max_version_reads`` an invocation:
the partitions past them are carried to the resolver queue), one batched read of the batch's versions below their
partition's cursor (were they kept before?), and one conditional put per commit of the batch whose partitions are
known (the table's commit log) (docs/partitions.md, "EACH_VERSION per partition").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from lakehook.domain.coverage import Span
from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.evaluation import GroupEvaluation, evaluate_group
from lakehook.domain.lanes import Lane
from lakehook.domain.late_versions import late_in_partition
from lakehook.domain.partition_evaluation import (
    FactKey,
    PartitionFact,
    fact_keys,
    facts_of,
    member_keys,
    partition_view,
    partitions_of_fact,
    touched_since,
    units_needed,
)
from lakehook.domain.partitions import TouchedPartitions
from lakehook.domain.plan_lanes import Book, PendingWhy, PlanLanes
from lakehook.domain.planned_claims import PlannedClaim, plan_claim
from lakehook.domain.rules import Group, Member, Mode, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger
from lakehook.domain.verdicts import Gap
from lakehook.domain.versions import SnapshotRecord
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import GroupRef

Touched = Mapping[str, Sequence[tuple[SnapshotRecord, TouchedPartitions]]]
"""per asset key, the data commits a batch brought and the partitions each touched"""

Versions = Mapping[FactKey, Sequence[PartitionFact]]
"""EACH_VERSION: per (asset, mapping, partition) data commits touching it"""


def in_order(rule: Rule, group: Group) -> bool:
    """Whether a partitioned group runs each version of its partitions in order (EACH_VERSION per partition)."""
    return group.partition_by is not None and rule.policy.mode is Mode.EACH_VERSION


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
    needed = {m.asset_key: units_needed(group, m, len(wanted[m.asset_key])) for m in group.partitioned_members}
    every = {k for keys in wanted.values() for k in keys}
    facts = store.facts(every) if store is not None else {}
    for fact in _facts_of_states(group, states):
        if fact.key in every and fact.newer_than(facts.get(fact.key)):
            facts[fact.key] = fact
    return {asset: _newest(asset, partition, keys, facts, needed[asset]) for asset, keys in wanted.items()}


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


def _newest(
    asset: str, partition: str, keys: Sequence[FactKey], facts: Mapping[FactKey, PartitionFact], needed: int
) -> PinnedInput:
    """The pin of the newest of a member's facts for the partition (its units, for a rollup: each of them, or the
    ``needed`` of ``atLeast``); a ConflictError naming the member when one is missing."""
    missing = [k[2] for k in keys if k not in facts]
    if len(keys) - len(missing) < needed:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        if len(keys) == 1:
            which = partition if keys[0][2] == partition else f"{keys[0][2]} (fanned out to {partition})"
        elif needed < len(keys):
            which = f"at least {needed} of the {len(keys)} units of {partition} (it has {len(keys) - len(missing)}; "
            which += f"missing {shown})"
        else:
            which = f"{len(missing)} of the {len(keys)} units of {partition} ({shown})"
        raise ConflictError(
            f"member {asset} has no data commit touching {which} yet; a manual run of a partition pins one for each "
            "partitioned member"
        )
    return max((facts[k] for k in keys if k in facts), key=lambda f: f.order).pin()


def _facts_of_states(group: Group, states: Mapping[str, AssetState]) -> list[PartitionFact]:
    """The facts the states' newest data commits give ``group`` (``latestPartitions``)."""
    return [
        fact
        for key, found in touched_of_states(states).items()
        for record, parts in found
        for fact in facts_of(group, key, parts, record)
    ]


# --- what the gather reads for a partitioned group, and what a batch brings ---------------------------


@dataclass(frozen=True)
class PartitionInputs:
    """What the gather read for one partitioned group: the partitions its batch names, its pending page (each with
    its mark), the kept facts and the cursors of those partitions, and (explain) how many are pending."""

    named: frozenset[str]
    page: Mapping[str, str]
    facts: Mapping[FactKey, PartitionFact]
    cursors: Mapping[str, GroupCursor]
    counted: int | None = None  # explain reads a short page: the count it shows is read
    more: str | None = None  # the page of pending partitions was full: the next page starts below this key
    whole: bool = False  # the page holds every pending partition (read from the newest key, not full)
    past: tuple[str, ...] = ()  # partitions past the invocation's fact reads: carried to the work queue
    # EACH_VERSION: per partition with news, the next stored versions of its members' keys after its cursor; the
    # trigger each such partition's cursor names (head of line); the versions of the batch below a partition's
    # cursor that were stored already (a redelivered batch: they ran or were skipped then, they are not late now)
    versions: Mapping[str, Mapping[FactKey, tuple[PartitionFact, ...]]] = field(default_factory=dict)
    previous: Mapping[str, Trigger] = field(default_factory=dict)
    known: frozenset[tuple[FactKey, int]] = frozenset()
    # EACH_VERSION: per partition, per partitioned member's asset, a gap of its table's commits before its next version
    gaps: Mapping[str, Mapping[str, Gap]] = field(default_factory=dict)
    # a group with a coverage member: per coverage member's asset, its merged intervals over the partitions' spans
    coverage: Mapping[str, Sequence[Span]] = field(default_factory=dict)
    # EACH_VERSION: the batch's commits touching its members' (asset, mapping, partition) keys (kept by the apply)
    batch_versions: Versions = field(default_factory=dict)

    @property
    def partitions(self) -> list[str]:
        """The partitions to evaluate, newest first (keys of dates sort by time)."""
        return sorted(self.named | set(self.page), reverse=True)

    def carrying(self, past: Sequence[str]) -> PartitionInputs:
        """These inputs without ``past`` (a read bound reached: not evaluated here), carried to the work queue."""
        gone = set(past)
        return replace(
            self,
            named=self.named - gone,
            page={p: m for p, m in self.page.items() if p not in gone},
            whole=False,
            past=(*self.past, *past),
        )


def facts_to_write(
    brought: Mapping[FactKey, PartitionFact], read: Sequence[PartitionInputs]
) -> tuple[PlannedFact, ...]:
    """The facts a batch brought that the apply writes (first, one conditional write each): every one newer than
    the fact the gather read for its key, if it read one; by key."""
    kept: dict[FactKey, PartitionFact] = {}
    for inputs in read:
        kept.update(inputs.facts)
    planned = []
    for key in sorted(brought):
        fact, known = brought[key], kept.get(key)
        if fact.newer_than(known):
            planned.append(PlannedFact(fact, FactWhy.FIRST if known is None else FactWhy.NEWER))
    return tuple(planned)


def brought_facts(
    work: Sequence[tuple[Rule, Group]], touched: Touched
) -> tuple[dict[GroupRef, frozenset[str]], dict[FactKey, PartitionFact]]:
    """Per partitioned group of ``work`` the partitions ``touched`` names (a redelivered batch names them again, so
    a claim a failure cut off is made; a fan-out member's fact names every unit of its value), and the facts it
    gives them, the newest per key (shared by every rule mapping an asset alike)."""
    facts: dict[FactKey, PartitionFact] = {}
    named: dict[GroupRef, set[str]] = {}
    for rule, group in work:
        if group.partition_by is None:
            continue
        for key in dict.fromkeys(m.asset_key for m in group.partitioned_members):
            for record, parts in touched.get(key, ()):
                for fact in facts_of(group, key, parts, record):
                    if fact.newer_than(facts.get(fact.key)):
                        facts[fact.key] = fact
                    named.setdefault((rule.rule_id, group.group_id), set()).update(partitions_of_fact(group, fact))
    return {ref: frozenset(parts) for ref, parts in named.items()}, facts


# --- the plan of a partitioned group (pure) --------------------------------------------------------------


class FactWhy(StrEnum):
    """Why the apply writes a fact (one conditional write: kept only if newer than the one kept then)."""

    FIRST = "no fact of this (asset, mapping, partition) was read: the first commit known to touch it"
    NEWER = "newer than the fact kept: a data commit of this batch touched the partition since"


@dataclass(frozen=True)
class PlannedFact:
    fact: PartitionFact
    why: FactWhy


class PartitionedGroup(PlanLanes):
    """A partitioned group's lanes, one per partition (:class:`lakehook.domain.plan_lanes.PlanLanes`), from what
    the gather read for it: each evaluated over the kept facts with what this batch brought, at most one claim per
    partition an invocation (claims are made 50 partitions to a transaction, one per partition's cursor), pending
    while a partitioned member touched it since its last run. No I/O."""

    def __init__(
        self,
        rule: Rule,
        group: Group,
        inputs: PartitionInputs,
        brought: Mapping[FactKey, PartitionFact],
        states: Mapping[str, AssetState],
        now: int,
        *,
        registered: Mapping[str, bool] | None = None,
        carry: bool = False,
        start: GroupCursor | None = None,
        point: PlannedClaim | None = None,
        rule_error: Callable[[BaseException], bool] = lambda _: False,
    ) -> None:
        book = Book(inputs.page, inputs.past, inputs.counted, inputs.whole, inputs.more)
        super().__init__(rule, group, now, book, carry=carry, per_lane=1, rule_error=rule_error)
        self.inputs, self.brought, self.states, self.registered = inputs, brought, states, registered
        self.versions: Versions = inputs.batch_versions  # EACH_VERSION: the batch's commits touching its partitions
        self.start = start  # the group's cursor: the point its partitions start from (partition_start)
        self._point = point  # a backfill's end to record there first (``start`` is the cursor it leaves)
        self._facts = self.facts()

    @property
    def point(self) -> PlannedClaim | None:
        return self._point

    def facts(self) -> dict[FactKey, PartitionFact]:
        """The kept facts, with what this batch brought where newer (as the apply keeps them first)."""
        facts = dict(self.inputs.facts)
        for key, fact in self.brought.items():
            if fact.newer_than(facts.get(key)):
                facts[key] = fact
        return facts

    def keys(self) -> list[str | None]:
        return list(self.inputs.partitions)

    def cursor(self, key: str | None) -> GroupCursor | None:
        assert key is not None
        return self.inputs.cursors.get(key)

    def previous(self, key: str | None) -> Trigger | None:
        assert key is not None
        return self.inputs.previous.get(key)

    def may_claim(self, key: str | None, cursor: GroupCursor | None) -> bool:
        """Not EACH_VERSION under a cursor another resolver moved: its run and next version are read again, next
        time."""
        return not (in_order(self.rule, self.group) and cursor is not self.cursor(key))

    def pending(self, key: str | None, lane: Lane) -> PendingWhy:
        assert key is not None
        touched = touched_since(self.group, key, self._facts, lane.after, self.start)
        return PendingWhy.NEWS if touched else PendingWhy.RAN

    def evaluate(self, key: str | None, cursor: GroupCursor | None, previous: Trigger | None) -> GroupEvaluation:
        assert key is not None
        view, cursor = partition_view(
            self.rule,
            self.group,
            key,
            self._facts,
            self.states,
            cursor,
            self.registered,
            versions=self._versions(key),
            gaps=self.inputs.gaps.get(key),
            start=self.start,
        )
        return evaluate_group(
            self.rule,
            self.group,
            self.states,
            cursor,
            self.now,
            registered=self.registered,
            coverage=self.inputs.coverage,
            previous=previous,
            partition=view,
        )

    def claim(self, key: str | None, verdict: GroupEvaluation, cursor: GroupCursor | None) -> PlannedClaim:
        return plan_claim(self.rule, self.group, verdict, cursor, self.states, self.now, key)

    def skips(self) -> tuple[Trigger, ...]:
        """EACH_VERSION: the SKIPPED ``late`` trigger of each commit of the batch touching a partition below the
        version that partition last ran with (it arrived after a newer one ran: it cannot run in order any more), unless
        it was stored before (a redelivered batch: it ran, or its skip was recorded, then), or it was there when a
        startFrom NEXT_CHANGE rule started (no run was owed to it)."""
        if not in_order(self.rule, self.group):
            return ()
        found: dict[str, Trigger] = {}
        started = self.start.pins if self.start is not None and self.start.baseline else {}
        for partition in (*self.inputs.partitions, *self.inputs.past):  # carried ones too: the batch is not
            cursor = self.inputs.cursors.get(partition)
            if cursor is None or cursor.seq == 0:
                continue
            for member in self.group.partitioned_members:
                for skip in self._late_of_member(partition, cursor, member, started.get(member.asset_key)):
                    found[skip.trigger_key] = skip
        return tuple(found.values())

    def _late_of_member(
        self, partition: str, cursor: GroupCursor, member: Member, there: PinnedInput | None
    ) -> Iterator[Trigger]:
        """The skips of one member's commits touching ``partition`` below the version it last ran with: not known
        before, and at or past the member's floor (its ``minSnapshotId``, or past where the rule started)."""
        last, floor = cursor.pins.get(member.asset_key), member.condition.min_snapshot_id
        if last is None:
            return
        floor = max(floor or 0, there.ordinal[0] + 1) if there is not None else floor
        for key in member_keys(self.group, member, partition):
            for version in self.versions.get(key, ()):
                if version.order >= last.ordinal[0] or (key, version.order) in self.inputs.known:
                    continue
                if floor is None or version.order >= floor:
                    yield late_in_partition(
                        self.rule, self.group.group_id, partition, version.pin(), last, cursor, self.now
                    )

    def _versions(self, partition: str) -> dict[FactKey, list[PartitionFact]] | None:
        """EACH_VERSION: the known commits touching ``partition`` per fact key, the stored ones read after its cursor
        and the batch's (the apply stores them first); None for a group of another mode."""
        if not in_order(self.rule, self.group):
            return None
        read = self.inputs.versions.get(partition, {})
        return {k: [*read.get(k, ()), *self.versions.get(k, ())] for k in fact_keys(self.group, partition)}
