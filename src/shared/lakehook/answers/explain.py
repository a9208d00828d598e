"""Explain's answers per group (``GET /rules/{ruleId}/explain``, the evaluate, sensor and backtest answers that
carry it), each built from the resolver's own verdict (``domain.verdicts``): a group's, its members', its
partitions', its schedule's and its require tree's.

Fields are declared in the order the explanation has always written them, so the body is unchanged; those a
verdict does not have are absent (``reason``, ``lastTrigger`` and the schedule's fields are there, null when
unknown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from lakehook.answers.base import Answer, Iso, SourceHealthAnswer, Window, present
from lakehook.answers.freshness import RuleFreshnessAnswer
from lakehook.answers.triggers import PinnedInputAnswer, TriggerSummary
from lakehook.domain.schedule_explanation import local_iso
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.member_verdict import MemberEvaluation
    from lakehook.domain.requirements import NodeVerdict
    from lakehook.domain.schedule_explanation import ScheduleExplanation as ScheduleVerdict
    from lakehook.domain.triggers import Trigger
    from lakehook.domain.triggers import Window as TriggerWindow
    from lakehook.domain.verdicts import Backlog as BacklogVerdict
    from lakehook.domain.verdicts import GroupEvaluation
    from lakehook.domain.verdicts import PartialCommit as PartialCommitVerdict
    from lakehook.ports.rules import RuleError


class MemberExplanation(Answer):
    asset_key: str = Field(alias="assetKey")
    alias: str | None = Field(default=None, description="the alias the rule names the member by, if it does")
    status: str = Field(description="READY or what blocks the member, e.g. BLOCKED_BY_QUALITY")
    current: dict[str, Any]
    required: dict[str, Any]
    reason: str | None
    source_health: SourceHealthAnswer | None = Field(
        default=None, alias="sourceHealth", description="a polled member whose source is not HEALTHY: its health"
    )

    @classmethod
    def from_domain(cls, member: MemberEvaluation) -> MemberExplanation:
        """The member's verdict: its alias only where the rule names it by one."""
        return cls(
            asset_key=member.asset_key,
            **present(alias=member.alias),
            status=member.status.value,
            current=member.current,
            required=member.required,
            reason=member.reason,
        )


class Backlog(Answer):
    pending_windows: int = Field(alias="pendingWindows", description="closed windows not run yet, the next included")
    next: Window = Field(description="the next window to run: start and end")
    next_at: Iso = Field(alias="nextAt", description="when it may start (maxRunsPerEvaluation per evaluation)")

    @classmethod
    def from_domain(cls, backlog: BacklogVerdict) -> Backlog:
        return cls(pending_windows=backlog.pending, next=_window(backlog.next), next_at=ms_to_iso(backlog.next_at))


class SkippedVersion(Answer):
    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(alias="snapshotId")
    reason: str | None = Field(description="e.g. version 3 arrived after 5 and will not run for rule export")
    trigger_key: str = Field(alias="triggerKey", description="the SKIPPED trigger that records it")
    skipped_at: Iso = Field(alias="skippedAt")

    @classmethod
    def from_domain(cls, trigger: Trigger) -> SkippedVersion:
        """A late version explain lists as skipped: which, why, and the SKIPPED trigger that records it."""
        pin = trigger.inputs[0]
        return cls(
            asset_key=pin.asset_key,
            snapshot_id=pin.snapshot_id,
            reason=trigger.reason,
            trigger_key=trigger.trigger_key,
            skipped_at=ms_to_iso(trigger.created_at),
        )


class Tick(Answer):
    """One tick of a schedule, in UTC and in the schedule's time zone."""

    utc: Iso
    local: str = Field(description="the same instant in the schedule's time zone, with its offset")

    @classmethod
    def at(cls, ms: int | None, timezone: str) -> Tick | None:
        return None if ms is None else cls(utc=ms_to_iso(ms), local=local_iso(ms, timezone))


class TickWait(Answer):
    """A member the tick waits for: its status and reason, as the group's evaluation judged it."""

    asset_key: str = Field(alias="assetKey")
    status: str
    reason: str | None

    @classmethod
    def from_domain(cls, member: MemberEvaluation) -> TickWait:
        return cls(asset_key=member.asset_key, status=member.status.value, reason=member.reason)


class ScheduleExplanation(Answer):
    """A scheduled group's cron, its ticks and what its next run waits for."""

    cron: str
    timezone: str
    never_fires: bool = Field(alias="neverFires", description="the cron matches no date: it has no ticks")
    last_tick: Tick | None = Field(alias="lastTick", description="the latest tick at or before evaluatedAt")
    next_tick: Tick | None = Field(alias="nextTick", description="the first tick after evaluatedAt")
    pending_tick: Tick | None = Field(
        alias="pendingTick",
        description="the tick the group fires for next: lastTick until it ran for it (missed ticks coalesce), "
        "then nextTick; null when the group could not be evaluated",
    )
    ran_for_last_tick: bool | None = Field(alias="ranForLastTick")
    waits_for: list[TickWait] | None = Field(
        alias="waitsFor",
        description="the members not satisfied for pendingTick, as the resolver judges them (empty: only the "
        "time); null when the group could not be evaluated (ERROR)",
    )
    reason: str | None = Field(description="why the schedule has no ticks (neverFires)")

    @classmethod
    def from_domain(cls, schedule: ScheduleVerdict) -> ScheduleExplanation:
        """Every field, null where the schedule does not know it (no ticks, or an evaluation that failed)."""
        zone = schedule.schedule.timezone
        waits = schedule.waits_for
        return cls(
            cron=schedule.schedule.cron,
            timezone=zone,
            never_fires=schedule.never_fires is not None,
            last_tick=Tick.at(schedule.last_tick, zone),
            next_tick=Tick.at(schedule.next_tick, zone),
            pending_tick=Tick.at(schedule.pending_tick, zone),
            ran_for_last_tick=schedule.ran_for_last_tick,
            waits_for=None if waits is None else [TickWait.from_domain(m) for m in waits],
            reason=schedule.never_fires,
        )


class PartitionExplanation(Answer):
    """One partition of a partitioned group: its status and what it waits for."""

    partition: str = Field(description="the partition key, e.g. dt=2026-12-01")
    status: str
    reason: str | None = Field(description="e.g. dt=2026-12-01: waiting for paimon://lake/ods/payments (…)")
    waiting_for: list[str] | None = Field(default=None, alias="waitingFor", description="the members not satisfied")
    pins: list[PinnedInputAnswer] | None = Field(default=None, description="READY: what its run would pin")
    until: Iso | None = Field(
        default=None, description="a wait that ends by itself (COOLDOWN, WAITING_FOR_RUN_WINDOW, ...): when it ends"
    )

    @classmethod
    def from_domain(cls, verdict: GroupEvaluation) -> PartitionExplanation:
        """One partition's line on its group's board: the key, status, reason, and what it would pin."""
        waiting = [m.asset_key for m in verdict.members if m.status is not Status.READY]
        return cls(
            partition=verdict.partition or "",
            status=verdict.status.value,
            reason=verdict.reason,
            **present(waiting_for=waiting or None, pins=_pins(verdict), until=_until(verdict)),
        )


class PartialCommit(Answer):
    """A partitioned member's newest data commit whose partitions explain evaluated in part (docs/partitions.md)."""

    asset_key: str = Field(alias="assetKey")
    snapshot_id: int = Field(alias="snapshotId")
    touched: int = Field(description="how many partitions the commit touched")
    evaluated: int = Field(
        description="how many of its keys (the first, sorted) explain evaluated: the state keeps a commit's first "
        "1000, and one evaluation at most 1000 facts' worth (a fan-out key weighs the partitions it names)"
    )

    @classmethod
    def from_domain(cls, commit: PartialCommitVerdict) -> PartialCommit:
        return cls(
            asset_key=commit.asset_key,
            snapshot_id=commit.snapshot_id,
            touched=commit.touched,
            evaluated=commit.evaluated,
        )


class RequireNode(Answer):
    """One node of a group's require tree and its verdict: a reference (``ref``, the member's assets) or an operator
    (``op``: allOf, anyOf or atLeast, with how many of its terms must hold and how many do)."""

    ref: str | None = Field(default=None, description="a reference: the member's name, alias or assetKey")
    op: str | None = Field(default=None, description="an operator: allOf, anyOf or atLeast")
    holds: bool = Field(
        description="whether the node holds on the members that hold now (and, after a claim under "
        "ALL_UPDATED, advanced)"
    )
    asset_keys: list[str] | None = Field(default=None, alias="assetKeys", description="a reference: its assets")
    needed: int | None = Field(default=None, description="an operator: how many of its terms must hold")
    holding: int | None = Field(default=None, description="an operator: how many of its terms hold")
    terms: list[RequireNode] | None = Field(default=None, description="an operator: its terms' verdicts")

    @classmethod
    def from_domain(cls, node: NodeVerdict) -> RequireNode:
        """A reference's assets, or an operator's count and its terms' verdicts."""
        if node.ref is not None:
            return cls(ref=node.ref, holds=node.holds, asset_keys=list(node.members))
        return cls(
            op=node.op,
            holds=node.holds,
            needed=node.needed,
            holding=node.holding,
            terms=[cls.from_domain(t) for t in node.terms],
        )


class GroupExplanation(Answer):
    group_id: str = Field(alias="groupId")
    status: str
    reason: str | None = Field(
        description="why the group does not run; 'cannot decide: <asset> is BLOCKED since … because …' when a member's "
        "source is BLOCKED or has a GAP"
    )
    members: list[MemberExplanation]
    until: Iso | None = Field(
        default=None, description="a wait that ends by itself (COOLDOWN, WAITING_FOR_RUN_WINDOW, ...): when it ends"
    )
    backlog: Backlog | None = Field(
        default=None, description="a group stepping through windows, behind the newest closed one"
    )
    schedule: ScheduleExplanation | None = Field(default=None, description="present for a scheduled group")
    partition: str | None = Field(default=None, description="a verdict for one partition: its key")
    pending_partitions: int | None = Field(
        default=None, alias="pendingPartitions", description="a partitioned group: how many partitions are pending"
    )
    partitions: list[PartitionExplanation] | None = Field(
        default=None,
        description="a partitioned group (partitionBy): its pending partitions and those its members' newest commits "
        "touched, newest keys first, at most 20",
    )
    partial_commits: list[PartialCommit] | None = Field(
        default=None,
        alias="partialCommits",
        description="a partitioned group: its members' newest data commits whose partitions explain evaluated only in "
        "part (absent when none); a PUT of the rule or evaluate now evaluates the same first keys and hands the rest "
        "to the resolver",
    )
    require: RequireNode | None = Field(
        default=None, description="a group with a require tree: the tree's verdict at every node"
    )
    pins: list[PinnedInputAnswer] | None = Field(default=None, description="READY: the versions its run would pin")
    window: Window | None = Field(default=None, description="READY, a windowed group: the window its run is for")
    last_trigger: TriggerSummary | None = Field(
        default=None, alias="lastTrigger", description="the group's newest trigger; null: it never triggered"
    )
    skipped: list[SkippedVersion] | None = Field(
        default=None,
        description="EACH_VERSION: the newest late snapshots (up to 20) that arrived after the group had run a newer "
        "one, so never run; GET /rules/{ruleId}/triggers?status=SKIPPED lists them all",
    )
    waiting_reason: str | None = Field(
        default=None, alias="waitingReason", description="a group that cannot decide: the resolver's own reason"
    )
    cannot_decide: list[SourceHealthAnswer] | None = Field(
        default=None,
        alias="cannotDecide",
        description="a group not READY with members whose source is BLOCKED or has a GAP: their health",
    )

    @classmethod
    def from_domain(cls, verdict: GroupEvaluation) -> GroupExplanation:
        """The group's verdict (what explain adds, its last trigger, late skips and sources' health, is set by
        :meth:`with_history` and ``usecases.source_health``): each part only where the verdict has it."""
        pending, require = verdict.pending_partitions, verdict.require
        partitions = None if pending is None else [PartitionExplanation.from_domain(p) for p in verdict.partitions]
        return cls(
            group_id=verdict.group_id,
            status=verdict.status.value,
            reason=verdict.reason,
            members=[MemberExplanation.from_domain(m) for m in verdict.members],
            **present(
                until=_until(verdict),
                backlog=None if verdict.backlog is None else Backlog.from_domain(verdict.backlog),
                schedule=None if verdict.schedule is None else ScheduleExplanation.from_domain(verdict.schedule),
                partition=verdict.partition,
                pending_partitions=pending,
                partitions=partitions,
                partial_commits=[PartialCommit.from_domain(c) for c in verdict.partial] or None,
                require=None if require is None else RequireNode.from_domain(require),
                pins=_pins(verdict),
                window=None if verdict.window is None or not verdict.ready else _window(verdict.window),
            ),
        )

    def with_history(self, last: Trigger | None, skipped: list[Trigger] | None) -> GroupExplanation:
        """Explain's group: the verdict with its newest trigger (null: never triggered) and, for an EACH_VERSION
        rule (``skipped`` not None), the late versions it skipped."""
        self.last_trigger = None if last is None else TriggerSummary.from_domain(last)
        if skipped is not None:
            self.skipped = [SkippedVersion.from_domain(t) for t in skipped]
        return self


def _window(window: TriggerWindow) -> Window:
    return Window.from_ms(window.start, window.end)


def _until(verdict: GroupEvaluation) -> Iso | None:
    return None if verdict.until is None else ms_to_iso(verdict.until)


def _pins(verdict: GroupEvaluation) -> list[PinnedInputAnswer] | None:
    """READY: the versions it would pin (an empty list stays: a READY verdict always says what it pins)."""
    return [PinnedInputAnswer.from_domain(p) for p in verdict.pins] if verdict.ready else None


class SlotWaiter(Answer):
    trigger_key: str = Field(alias="triggerKey")
    position: int = Field(description="its place in the queue (1: next)")
    claimed_at: Iso = Field(alias="claimedAt")


class SlotScopeExplanation(Answer):
    partition: str | None = Field(description="a partitioned group's runs of this partition; null: the rule's runs")
    in_flight: list[str] = Field(alias="inFlight", description="the triggers whose runs hold a slot now")
    waiting: list[SlotWaiter] = Field(description="the first 20 waiting, in claim order")
    waiting_count: int = Field(alias="waitingCount")


class InFlightExplanation(Answer):
    """A rule with maxInFlight: its runs in flight and the claimed triggers waiting for a slot, per scope."""

    max_in_flight: int = Field(alias="maxInFlight")
    max_run_seconds: int = Field(alias="maxRunSeconds", description="in force (the default when the rule sets none)")
    waiting_count: int = Field(alias="waitingCount")
    scopes: list[SlotScopeExplanation] = Field(description="only scopes with a run in flight or a trigger waiting")


class RuleErrorAnswer(Answer):
    """Why the rule's evaluation last failed (a bug in the rule or in lakehook, never the infrastructure), and when."""

    message: str
    at: Iso
    group_id: str | None = Field(alias="groupId", description="the group it failed in, when one")

    @classmethod
    def from_domain(cls, error: RuleError) -> RuleErrorAnswer:
        return cls(message=error.message, at=ms_to_iso(error.at), group_id=error.group_id)


class Explanation(Answer):
    """``GET /rules/{ruleId}/explain``: every group's verdict, READY or what blocks it, as the resolver decides."""

    rule_id: str = Field(alias="ruleId")
    enabled: bool
    mode: str = Field(description="the rule's policy.mode: ALL_UPDATED, ANY_UPDATED or EACH_VERSION")
    start_from: str = Field(alias="startFrom", description="the rule's policy.startFrom: LATEST or NEXT_CHANGE")
    ready: bool
    groups: list[GroupExplanation]
    last_trigger: TriggerSummary | None = Field(
        default=None, alias="lastTrigger", description="the rule's newest trigger (of any group); null: none yet"
    )
    last_error: RuleErrorAnswer | None = Field(
        default=None, alias="lastError", description="why the rule's last evaluation failed; null: it did not"
    )
    evaluated_at: Iso = Field(alias="evaluatedAt")
    freshness: RuleFreshnessAnswer | None = Field(
        default=None, description="a rule (or a member) that promises freshness: whether it keeps it; absent otherwise"
    )
    in_flight: InFlightExplanation | None = Field(
        default=None, alias="inFlight", description="a rule with maxInFlight: its runs in flight and who waits"
    )
