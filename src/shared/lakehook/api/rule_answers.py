"""The rule routes' answers (see ``api.answers``): a stored rule is the rule model itself, plus its revision."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from lakehook.answers.base import Answer, Iso, NextToken, SourceHealthAnswer
from lakehook.answers.freshness import RuleFreshnessAnswer
from lakehook.answers.triggers import PlannedRun, TriggerSummary
from lakehook.domain.rules import Rule


class RuleAnswer(Rule):
    """A stored rule: the rule as written plus its revision and times."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    revision: int | None = Field(default=None, description="absent in a dry run's answer, as are the times")
    created_at: Iso | None = Field(default=None, alias="createdAt")
    updated_at: Iso | None = Field(default=None, alias="updatedAt")
    dry_run: bool | None = Field(default=None, alias="dryRun", description="true: validated, nothing written")
    would_start: list[PlannedRun] | None = Field(
        default=None,
        alias="wouldStart",
        description="a dry run's answer only: the runs writing the rule would start now (the resolver's plan)",
    )


class RulePage(Answer):
    items: list[RuleAnswer]
    next_token: str | None = NextToken


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


class Backlog(Answer):
    pending_windows: int = Field(alias="pendingWindows", description="closed windows not run yet, the next included")
    next: dict[str, str] = Field(description="the next window to run: start and end")
    next_at: Iso = Field(alias="nextAt", description="when it may start (maxRunsPerEvaluation per evaluation)")


class SkippedVersion(Answer):
    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(alias="snapshotId")
    reason: str | None = Field(description="e.g. version 3 arrived after 5 and will not run for rule export")
    trigger_key: str = Field(alias="triggerKey", description="the SKIPPED trigger that records it")
    skipped_at: Iso = Field(alias="skippedAt")


class Tick(Answer):
    """One tick of a schedule, in UTC and in the schedule's time zone."""

    utc: Iso
    local: str = Field(description="the same instant in the schedule's time zone, with its offset")


class TickWait(Answer):
    """A member the tick waits for: its status and reason, as the group's evaluation judged it."""

    asset_key: str = Field(alias="assetKey")
    status: str
    reason: str | None


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


class PartitionExplanation(Answer):
    """One partition of a partitioned group: its status and what it waits for."""

    partition: str = Field(description="the partition key, e.g. dt=2026-12-01")
    status: str
    reason: str | None = Field(description="e.g. dt=2026-12-01: waiting for paimon://lake/ods/payments (…)")
    waiting_for: list[str] | None = Field(default=None, alias="waitingFor", description="the members not satisfied")
    pins: list[dict[str, Any]] | None = Field(default=None, description="READY: what its run would pin")
    until: Iso | None = Field(
        default=None, description="a wait that ends by itself (COOLDOWN, WAITING_FOR_RUN_WINDOW, ...): when it ends"
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


class RequireNode(Answer):
    """One node of a group's require tree and its verdict: a reference (``ref``, the member's assets) or an operator
    (``op``: allOf, anyOf or atLeast, with how many of its terms must hold and how many do)."""

    holds: bool = Field(
        description="whether the node holds on the members that hold now (and, after a claim under "
        "ALL_UPDATED, advanced)"
    )
    ref: str | None = Field(default=None, description="a reference: the member's name, alias or assetKey")
    asset_keys: list[str] | None = Field(default=None, alias="assetKeys", description="a reference: its assets")
    op: str | None = Field(default=None, description="an operator: allOf, anyOf or atLeast")
    needed: int | None = Field(default=None, description="an operator: how many of its terms must hold")
    holding: int | None = Field(default=None, description="an operator: how many of its terms hold")
    terms: list[RequireNode] | None = Field(default=None, description="an operator: its terms' verdicts")


class GroupExplanation(Answer):
    group_id: str = Field(alias="groupId")
    status: str
    reason: str | None = Field(
        description="why the group does not run; 'cannot decide: <asset> is BLOCKED since … because …' when a member's "
        "source is BLOCKED or has a GAP"
    )
    waiting_reason: str | None = Field(
        default=None, alias="waitingReason", description="a group that cannot decide: the resolver's own reason"
    )
    cannot_decide: list[SourceHealthAnswer] | None = Field(
        default=None,
        alias="cannotDecide",
        description="a group not READY with members whose source is BLOCKED or has a GAP: their health",
    )
    members: list[MemberExplanation]
    backlog: Backlog | None = Field(
        default=None, description="a group stepping through windows, behind the newest closed one"
    )
    skipped: list[SkippedVersion] | None = Field(
        default=None,
        description="EACH_VERSION: the newest late snapshots (up to 20) that arrived after the group had run a newer "
        "one, so never run; GET /rules/{ruleId}/triggers?status=SKIPPED lists them all",
    )
    schedule: ScheduleExplanation | None = Field(default=None, description="present for a scheduled group")
    require: RequireNode | None = Field(
        default=None, description="a group with a require tree: the tree's verdict at every node"
    )
    partitions: list[PartitionExplanation] | None = Field(
        default=None,
        description="a partitioned group (partitionBy): its pending partitions and those its members' newest commits "
        "touched, newest keys first, at most 20",
    )
    pending_partitions: int | None = Field(
        default=None, alias="pendingPartitions", description="a partitioned group: how many partitions are pending"
    )
    partial_commits: list[PartialCommit] | None = Field(
        default=None,
        alias="partialCommits",
        description="a partitioned group: its members' newest data commits whose partitions explain evaluated only in "
        "part (absent when none); a PUT of the rule or evaluate now evaluates the same first keys and hands the rest "
        "to the resolver",
    )
    last_trigger: TriggerSummary | None = Field(
        default=None, alias="lastTrigger", description="the group's newest trigger; null: it never triggered"
    )


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


class Explanation(Answer):
    rule_id: str = Field(alias="ruleId")
    ready: bool
    groups: list[GroupExplanation]
    last_trigger: TriggerSummary | None = Field(
        default=None, alias="lastTrigger", description="the rule's newest trigger (of any group); null: none yet"
    )
    evaluated_at: Iso = Field(alias="evaluatedAt")
    in_flight: InFlightExplanation | None = Field(
        default=None, alias="inFlight", description="a rule with maxInFlight: its runs in flight and who waits"
    )
    freshness: RuleFreshnessAnswer | None = Field(
        default=None, description="a rule (or a member) that promises freshness: whether it keeps it; absent otherwise"
    )


class Evaluation(Explanation):
    """The explanation after an evaluation, and what it claimed."""

    trigger_key: str | None = Field(alias="triggerKey", description="the key claimed (the first), or null")
    claimed: list[str]
    manual: bool = Field(description="a forced, manual run")
