"""The resolver's writes: perform a :class:`lakehook.usecases.resolve_plan.Plan`.

First the batch's bookkeeping: its EACH_VERSION members' state images kept as ``HIST#<state version>`` items, the
SKIPPED triggers of late snapshots (before those snapshots enter the log, and a late commit touching a partition
before it is kept as the partition's version), the versions of the partitions of EACH_VERSION partitioned groups
(batched puts), the plan's partition facts (one conditional write each, advance-only), and the snapshots it saw
logged. Then group by group, in the plan's order, each
isolated (a rule error fails its group only): the planned claims, each conditional on its cursor (the group's, or
its partition's); then the deferral, or the targeted polls of the gaps, or the rule error recorded on the rule.

Reads here are only what no decision depends on, or what a lost race needs: a pinned snapshot older than the state
gets its schema id, commit time and metadata location from its recorded event (the run manifest pins them; the
trigger key depends on the snapshot id only), and a claim that lost a race reads the cursor that beat it (when the
failed condition did not return it) and the trigger it names, and the group is planned again from there.

Every group takes one path (:meth:`ApplyPlan._lanes`), its lanes' (:mod:`lakehook.usecases.resolve_claims`): an
unpartitioned group is one lane, a partitioned group one lane per partition; the claims are made in rounds, up to 50
lanes' next claims in one transaction, each conditional on its lane's cursor, the time left checked before each
round; a lane whose claim lost a race is planned again from the cursor that won. Then the group is settled from
what its claims left, as its plan settles it (:meth:`lakehook.domain.plan_lanes.PlanLanes.settle`): its pending
marks (a partitioned group's: new ones in one batched write, the cleared ones each under the mark it was read with,
the time left checked before each 100), what it carries over, its deferral, its verdict and its gap polls, or the
rule error a lane met. What differs between the kinds of lane is only how a claim is made ready and how a lane is
planned again (:class:`_GroupLane`, :class:`_PartitionLanes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from lakehook.domain.errors import ConflictError
from lakehook.domain.evaluation import Gap, steps_by_snapshot
from lakehook.domain.json_form import json_form
from lakehook.domain.lanes import Lane
from lakehook.domain.log_context import trigger_log_context
from lakehook.domain.plan_lanes import PartitionPlan, PartitionsPlan, PlanLanes
from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.rules import Group, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput
from lakehook.domain.versions import SnapshotLog, SnapshotRecord
from lakehook.observability import logger, trace_id
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import (
    AssetRecheck,
    ClaimOutcome,
    Deferral,
    GroupRef,
    RuleError,
    StateChange,
)
from lakehook.usecases.resolve_claims import Claimed, ClaimLanes, LaneKind
from lakehook.usecases.resolve_continue import group_messages, next_page_message, slice_message, slices
from lakehook.usecases.resolve_gather import Gathered
from lakehook.usecases.resolve_partitions import in_order
from lakehook.usecases.resolve_plan import GroupPlan, Plan, PlanResolution
from lakehook.usecases.resolve_report import (
    ResolveReport,
    ResolverLimits,
    ResolverStores,
    RuleFailure,
    TimeLeft,
    describe_error,
    in_time,
)

CLEARS_PER_CHECK = 100  # pending marks cleared (one transaction of conditional deletes) between two looks at the time


class ApplyPlan:
    """Perform a plan's writes (see the module docstring)."""

    def __init__(
        self,
        stores: ResolverStores,
        limits: ResolverLimits,
        rule_error: Callable[[BaseException], bool],
    ) -> None:
        self._stores = stores
        self._limits = limits
        self._rule_error = rule_error

    def __call__(
        self,
        plan: Plan,
        gathered: Gathered,
        planner: PlanResolution,
        now: int,
        report: ResolveReport,
        time_left: TimeLeft | None = None,
    ) -> set[GroupRef]:
        """Write what ``plan`` says; ``planner`` plans a group again after a lost race. With ``time_left``, an
        invocation about to reach its timeout stops before its next group (:class:`OutOfTime`). The groups whose
        claim found a late snapshot noted on their cursor since it was read: what was read does not hold that
        snapshot, so they are to be gathered and planned again (the late snapshot's push answered that it runs in
        order)."""
        in_time(time_left, self._limits)
        if gathered.owned:
            self._stores.history.record(gathered.owned, now)
        # a late commit's skip before its partition version is kept: a redelivered batch finds the version kept and
        # takes it for handled (then its skip was recorded)
        self._skip_late(plan, now, report)
        if plan.versions and self._stores.partitions is not None:
            self._stores.partitions.record_versions(plan.versions, now)  # before the facts: a fact has its version
        if self._stores.partitions is not None:  # after their versions: a gap closes with them
            self._log_commits(self._stores.partitions, gathered, now, report)
        if plan.facts and self._stores.partitions is not None:
            self._stores.partitions.advance([f.fact for f in plan.facts], now)
        if gathered.seen:
            self._stores.history.record_snapshots(gathered.seen, now)
        for ref, oldest in plan.first_seen:  # after the log holds them: a group not run yet starts at them
            self._stores.triggers.note_first_seen(ref, oldest)
        persisted = {k: set(v) for k, v in gathered.persisted.items()}
        again: set[GroupRef] = set()
        for group_plan in plan.groups:
            in_time(time_left, self._limits)
            try:
                if not self._lanes(group_plan, gathered, planner, persisted, now, report, time_left):
                    again.add(group_plan.ref)
            except Exception as exc:
                if not self._rule_error(exc):
                    raise
                self._fail_group(group_plan.rule, group_plan.group, exc, now, report)
        return again

    def _log_commits(self, store: PartitionStore, gathered: Gathered, now: int, report: ResolveReport) -> None:
        """EACH_VERSION per partition: note the pieces of the commits still known in part, and log the commits known
        whole: the batch's, and those whose last piece a racing invocation noted meanwhile (their groups are deferred
        to now: a partition may wait at such a commit, and this invocation's reads did not know it whole); the others
        the batch holds in part are logged as such (a partition whose next version is one tells a gap before it)."""
        done = store.note_pieces(gathered.pieces, now) if gathered.pieces else {}
        commits = {asset: list(records) for asset, records in gathered.commits.items()}
        for (asset, _), record in done.items():
            commits.setdefault(asset, []).append(record)
        in_part = {
            asset: [r for r in records if (asset, r.order) not in done] for asset, records in gathered.in_part.items()
        }
        if commits or any(in_part.values()):
            store.log_commits(commits, now, in_part)
        woken = {asset for asset, _ in done}
        for rule, group in gathered.work if woken else ():
            if in_order(rule, group) and any(m.asset_key in woken for m in group.partitioned_members):
                deferral = Deferral(rule.rule_id, group.group_id, now)
                self._stores.deferrals.defer(deferral)
                report.deferred.append(deferral)

    # --- one group ------------------------------------------------------------------------------------

    def _lanes(
        self,
        plan: GroupPlan,
        gathered: Gathered,
        planner: PlanResolution,
        persisted: dict[str, set[int]],
        now: int,
        report: ResolveReport,
        time_left: TimeLeft | None,
    ) -> bool:
        """One group, on one path for every group (an unpartitioned group is its one lane): a backfill's end first,
        then its lanes' claims in order (:class:`lakehook.usecases.resolve_claims.ClaimLanes`; a lost race plans the
        lane again from the cursor that beat it), then what the group settles on from what the claims left
        (:meth:`_settle`). False when the group is to be gathered and planned again: another resolver moved its
        cursor before the backfill's end, or a late snapshot was noted on it since it was read."""
        if plan.error is not None and not plan.lanes.partitions:
            raise plan.error  # a rule error met before any lane was planned: the group fails
        if not self._point(plan, plan.lanes, report):
            return False
        lanes = planner.lanes(plan.rule, plan.group)
        kind: LaneKind[PartitionPlan]
        if plan.per_partition:
            kind = _PartitionLanes(plan.group, lanes, report)
        else:
            kind = _GroupLane(self._stores, self._limits, gathered, plan, lanes, persisted, now, report)
        claimed = self._claim_lanes(kind, plan.lanes.partitions, report, time_left)
        if claimed.again:
            extra = {"rule_id": plan.ref[0], "group_id": plan.ref[1]}
            logger.info("a late version arrived during the claim; gathered again", extra=extra)
            return False
        if plan.lanes.partitions and not claimed.items:
            return True  # a racing resolver claimed each lane's key first, under this very cursor: nothing left to do
        self._settle(plan, lanes.settle(claimed.items), gathered.batch.changed, now, report, time_left)
        return True

    def _claim_lanes(
        self,
        kind: LaneKind[PartitionPlan],
        items: Sequence[PartitionPlan],
        report: ResolveReport,
        time_left: TimeLeft | None,
    ) -> Claimed[PartitionPlan]:
        claimed = ClaimLanes(
            self._stores.triggers, kind, self._limits.max_conflicts, lambda: in_time(time_left, self._limits)
        )(items)
        report.conflicts += claimed.conflicts
        return claimed

    def _settle(
        self,
        plan: GroupPlan,
        settled: PartitionsPlan,
        changed: list[str],
        now: int,
        report: ResolveReport,
        time_left: TimeLeft | None,
    ) -> None:
        """After the claims: the rule error a lane met (the claims made stand); else the group's pending marks and
        clears, what it carries over, its deferral, the verdict it settles on, and its gap polls."""
        if settled.error is not None:
            self._fail_group(plan.rule, plan.group, settled.error, now, report)
            return
        self._pending(plan, settled, now, time_left)
        self._carry_over(plan, settled, report)
        if settled.deferral is not None:
            self._stores.deferrals.defer(settled.deferral)
            report.deferred.append(settled.deferral)
        board = settled.board(plan.group, explain=False)
        report.verdict(plan.ref, board)
        self._fill(settled.gaps)  # a commit a lane waits at (EACH_VERSION): a targeted poll
        if not board.ready:
            logger.debug(
                "dependency not ready",
                extra={
                    "rule_id": plan.rule.rule_id,
                    "group_id": plan.group.group_id,
                    "status": board.status.value,
                    "reason": board.reason,
                    "asset_key": changed[0] if len(changed) == 1 else None,
                    "asset_keys": changed,
                },
            )

    def _pending(self, plan: GroupPlan, settled: PartitionsPlan, now: int, time_left: TimeLeft | None) -> None:
        """The partitions newly pending (one batched write) and those that leave the pending list (each under the
        mark it was read with, the time left looked at before each 100); none for an unpartitioned group."""
        if not settled.marks and not settled.clears:
            return
        store = self._stores.partitions
        assert store is not None  # the gather read the group's partitions
        rule_id, group_id = plan.ref
        if settled.marks:
            store.mark_pending(rule_id, group_id, [m.partition for m in settled.marks], now)
        clears = [(c.partition, c.mark) for c in settled.clears]
        for start in range(0, len(clears), CLEARS_PER_CHECK):  # a transaction each: the time left looked at between
            in_time(time_left, self._limits)
            store.clear_pending(rule_id, group_id, dict(clears[start : start + CLEARS_PER_CHECK]))

    def _fill(self, gaps: Sequence[Gap]) -> None:
        """Ask for a targeted poll of each table with a gap: it reads the table from the snapshot before the gap,
        whatever the poller's offset, so the missing snapshot enters the log (or never exists and settles)."""
        queue = self._stores.poll_queue
        if queue is None or not gaps:
            return
        first = {g.asset_key: g for g in sorted(gaps, key=lambda g: g.order, reverse=True)}
        messages = [
            {"mode": "fill", "assetKeys": [g.asset_key], "after": {"snapshotId": g.snapshot_id, "order": g.order}}
            for g in first.values()
        ]
        queue.send(messages)
        for gap in first.values():
            logger.info(
                "snapshot gap: targeted poll requested",
                extra={"asset_key": gap.asset_key, "snapshot_id": gap.snapshot_id, "status": "WAITING_FOR_VERSION"},
            )

    # --- partitioned groups ------------------------------------------------------------------------

    def _point(self, plan: GroupPlan, planned: PartitionsPlan, report: ResolveReport) -> bool:
        """The group's claim recording a backfill's end (:func:`lakehook.domain.partition_start.backfill_point`), made
        before its partitions' claims, which were planned from it. False when another resolver moved the group's cursor
        first: the group is gathered and planned again."""
        point = planned.point
        if point is None:
            return True
        result = self._stores.triggers.claim(point.trigger, point.moved(), point.expected)
        if result.outcome is ClaimOutcome.CURSOR_MOVED:
            return False
        if result.outcome is ClaimOutcome.CLAIMED:
            report.claimed.append(point.trigger)
            extra = {"rule_id": plan.ref[0], "group_id": plan.ref[1], "trigger_key": point.trigger.trigger_key}
            logger.info("backfill end recorded", extra={**extra, "status": point.trigger.status.value})
        return True

    def _carry_over(self, plan: GroupPlan, settled: PartitionsPlan, report: ResolveReport) -> None:
        """What the group could not do in this invocation, to the resolver queue: its ready partitions past its
        claims (one invocation's claims a message), and the next page of its pending partitions."""
        queue = self._stores.resolver_queue
        if queue is None or not (settled.continued or settled.more):
            return
        rule_id, group_id = plan.ref
        messages = group_messages(rule_id, group_id, settled.continued, self._limits.max_partition_claims)
        if settled.more is not None:
            messages.append(next_page_message(rule_id, group_id, settled.more))
        report.carried += queue.send(messages)
        logger.info(
            "partitions carried over",
            extra={
                "rule_id": rule_id,
                "group_id": group_id,
                "status": "CARRIED",
                "count": len(settled.continued),
                "after": settled.more,
            },
        )

    # --- late snapshots ------------------------------------------------------------------------------

    def _skip_late(self, plan: Plan, now: int, report: ResolveReport) -> None:
        """Record the SKIPPED ``late`` trigger of each snapshot of this batch a group ran past
        (:mod:`lakehook.domain.late_versions`): it cannot run in order any more. The skip's key is the version's,
        so a retry writes it once."""
        for skip in plan.skips:
            if self._stores.triggers.put_replay(skip):
                report.skipped.append(skip)
                logger.info(
                    "late version skipped",
                    extra={
                        "rule_id": skip.rule_id,
                        "group_id": skip.group_id,
                        "asset_key": skip.inputs[0].asset_key if skip.inputs else None,
                        "snapshot_id": skip.inputs[0].snapshot_id if skip.inputs else None,
                        "trigger_key": skip.trigger_key,
                        "status": skip.status.value,
                        "reason": skip.reason,
                    },
                )

    # --- failures ------------------------------------------------------------------------------------

    def _fail_group(self, rule: Rule, group: Group, exc: BaseException, now: int, report: ResolveReport) -> None:
        """A rule error: record it on the rule, count it, and evaluate the group again after ``retry_ms``."""
        message = describe_error(exc)
        report.failed.append(RuleFailure(rule.rule_id, group.group_id, message))
        logger.error(
            "rule evaluation failed",
            extra={"rule_id": rule.rule_id, "group_id": group.group_id, "reason": message, "status": "FAILED"},
            exc_info=exc,
        )
        self._stores.rules.record_error(rule.rule_id, RuleError(message, now, group.group_id))
        deferral = Deferral(rule.rule_id, group.group_id, now + self._limits.retry_ms)
        self._stores.deferrals.defer(deferral)
        report.deferred.append(deferral)

    def fail_assets(self, unreadable: Sequence[tuple[str, BaseException]], now: int, report: ResolveReport) -> None:
        """Assets whose rules could not be read: each is checked again after ``retry_ms``."""
        for asset_key, exc in unreadable:
            message = describe_error(exc)
            report.failed.append(RuleFailure("", None, f"{asset_key}: {message}"))
            logger.error(
                "rules of an asset could not be read",
                extra={"asset_key": asset_key, "reason": message, "status": "FAILED"},
                exc_info=exc,
            )
            recheck = AssetRecheck(asset_key, now + self._limits.retry_ms)
            self._stores.deferrals.recheck([asset_key], recheck.due_at)
            report.rechecks.append(recheck)

    def clear_errors(self, refs: Sequence[GroupRef]) -> None:
        """Groups that evaluated fine: their ``lastError`` goes."""
        for rule_id, group_id in refs:
            self._stores.rules.clear_error(rule_id, group_id)

    def carry_partitions(self, changes: Sequence[StateChange]) -> None:
        """Before a failed batch is retried (and perhaps given up): the partitions its commits touched, to the resolver
        queue, so they are evaluated whatever Lambda does with the batch (a recheck evaluates an asset's newest commit
        only). Best effort, as :meth:`leave_rechecks`; a slice resolved twice runs nothing twice."""
        queue = self._stores.resolver_queue
        if queue is None:
            return
        try:
            messages = [slice_message(c) for c in slices(changes, self._limits.max_facts)]
            if messages:
                queue.send(messages)
        except Exception:
            logger.exception("partitions of a failed batch not carried over", extra={"status": "FAILED"})

    def leave_rechecks(self, changes: Sequence[StateChange], deferred: Sequence[Deferral], now: int) -> None:
        """Before a failed batch is retried (and perhaps given up): durable markers, so the sweep evaluates its
        assets' rules and its deferred groups again whatever Lambda does with the batch. Best effort: the
        infrastructure just failed, and Lambda retries the batch anyway."""
        due = now + self._limits.retry_ms
        try:
            assets = sorted({c.asset_key for c in changes})
            if assets:
                self._stores.deferrals.recheck(assets, due)
            for item in deferred:
                self._stores.deferrals.defer(Deferral(item.rule_id, item.group_id, due))
        except Exception:
            logger.exception("recheck markers not written", extra={"status": "FAILED", "asset_keys": len(changes)})
        else:
            logger.warning("resolver batch failed; rechecks left", extra={"status": "FAILED", "due_at": due})


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


class _GroupLane:
    """An unpartitioned group's one lane: its verdicts reported as its claims are made, its pins described (and,
    EACH_VERSION, its snapshots known only from the state logged) before each claim; planned again from the cursor
    that won with the trigger it names (head of line) and the claims per invocation left; after ``max_conflicts``
    lost races, a ConflictError fails the group (retried); done when a racing resolver claimed its key first."""

    def __init__(
        self,
        stores: ResolverStores,
        limits: ResolverLimits,
        gathered: Gathered,
        plan: GroupPlan,
        lanes: PlanLanes,
        persisted: dict[str, set[int]],
        now: int,
        report: ResolveReport,
    ) -> None:
        self._stores, self._limits, self._gathered, self._plan, self._lanes = stores, limits, gathered, plan, lanes
        self._persisted, self._now, self._report = persisted, now, report
        self._made = 0  # claims made, over every plan of the lane

    def lane(self, item: PartitionPlan) -> Lane:
        return item.lane

    def prepare(self, item: PartitionPlan, index: int) -> PlannedClaim:
        self._report.verdict(self._plan.ref, item.lane.verdicts[index])
        claim = item.lane.claims[index]
        claim = claim.with_pins(self._described(claim.trigger.inputs, self._gathered.inputs.states))
        if claim.log_pins:
            plan = self._plan
            self._log_pinned(
                plan.ref,
                plan.group,
                claim.trigger.inputs,
                self._gathered.group(plan.ref).versions.snapshots,
                self._persisted,
                self._now,
            )
        return claim

    def claimed(self, item: PartitionPlan, claim: PlannedClaim) -> None:
        self._made += 1
        trigger = claim.trigger
        self._report.claimed.append(trigger)
        changed = self._gathered.batch.changed
        logger.info(
            "trigger claimed",
            extra={
                "rule_id": trigger.rule_id,
                "group_id": trigger.group_id,
                "trigger_key": trigger.trigger_key,
                "status": trigger.status.value,
                "reason": trigger.reason,
                "asset_key": changed[0] if len(changed) == 1 else None,
                "asset_keys": changed,
                "inputs": [json_form(p) for p in trigger.inputs],
                **trigger_log_context(trigger, trace_id()),
            },
        )

    def again(self, item: PartitionPlan, fresh: GroupCursor, made: int) -> PartitionPlan:
        ref = self._plan.ref
        logger.debug("claim lost a race", extra={"rule_id": ref[0], "group_id": ref[1], "status": "CONFLICT"})
        previous = self._stores.triggers.get(fresh.trigger_key) if fresh.trigger_key else None
        budget = self._limits.max_claims_per_group - self._made
        return self._lanes.partitions([None], {None: fresh}, budget, {None: previous})[0]

    def give_up(self, item: PartitionPlan, fresh: GroupCursor) -> PartitionPlan:
        ref = self._plan.ref
        raise ConflictError(f"group {ref[0]}/{ref[1]} kept moving; giving up for this batch")

    def taken(self, item: PartitionPlan) -> PartitionPlan | None:
        ref = self._plan.ref
        logger.warning("trigger key already claimed", extra={"rule_id": ref[0], "group_id": ref[1]})
        return None

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
        found = self._stores.reader.snapshots(unknown)
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

    def _log_pinned(
        self,
        ref: GroupRef,
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
            self._stores.history.record_snapshots(wanted, now)
            for key in wanted:
                self._report.logged_pins.setdefault(key, set()).add(ref)


class _PartitionLanes:
    """A partitioned group's lanes, one per partition: each claimed as planned (its pins are its facts'); one that
    lost a race planned again from the cursor that won with the claim it had, after ``max_conflicts`` lost races
    left pending for its next invocation, and one whose key was claimed under this very cursor kept without its
    claim."""

    def __init__(self, group: Group, partitions: PlanLanes, report: ResolveReport) -> None:
        self._group, self._partitions, self._report = group, partitions, report

    def lane(self, item: PartitionPlan) -> Lane:
        return item.lane

    def prepare(self, item: PartitionPlan, index: int) -> PlannedClaim:
        return item.lane.claims[index]

    def claimed(self, item: PartitionPlan, claim: PlannedClaim) -> None:
        trigger = claim.trigger
        self._report.claimed.append(trigger)
        extra = {
            "rule_id": trigger.rule_id,
            "group_id": trigger.group_id,
            "partition": item.partition,
            "trigger_key": trigger.trigger_key,
            "status": trigger.status.value,
            **trigger_log_context(trigger, trace_id()),
        }
        logger.info("trigger claimed", extra=extra)

    def again(self, item: PartitionPlan, fresh: GroupCursor, made: int) -> PartitionPlan:
        logger.debug("partition claim lost a race", extra={"partition": item.partition, "status": "CONFLICT"})
        return _still_failing(item, self._partitions.partitions([item.partition], {item.partition: fresh}, 1)[0])

    def give_up(self, item: PartitionPlan, fresh: GroupCursor) -> PartitionPlan:
        return _still_failing(item, self._partitions.partitions([item.partition], {item.partition: fresh}, 0)[0])

    def taken(self, item: PartitionPlan) -> PartitionPlan:
        return _still_failing(item, item.unclaimed(self._group))


def _still_failing(item: PartitionPlan, planned: PartitionPlan) -> PartitionPlan:
    """``planned`` (the partition as it goes on after its claim lost) keeping the rule error ``item``'s plan met: the
    group's planning stopped at that partition, so the partitions after it were never planned and the group must
    still fail (and be retried), whether or not the partition meets the error again from the cursor that won."""
    error = item.lane.error
    if error is None or planned.lane.error is not None:
        return planned
    return PartitionPlan(replace(planned.lane, error=error), planned.pending, None)
