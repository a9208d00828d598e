"""The trigger routes' answers (see ``api.answers``), replay's included: no domain model in them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lakehook.api.answer_base import Answer, Iso, NextToken, Window


class PinnedInputAnswer(Answer):
    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(default=None, alias="snapshotId")
    schema_id: int | None = Field(default=None, alias="schemaId")
    watermark: int | None = None
    commit_time: int | None = Field(default=None, alias="commitTime")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")


class RunStateAnswer(Answer):
    state: str = Field(description="the target's own word, e.g. Airflow's queued")
    detail: str | None = Field(default=None, description="e.g. that the DAG is paused, so the run stays queued")
    checked_at: Iso = Field(alias="checkedAt")


class ConfirmationAnswer(Answer):
    state: Literal["CONFIRMED", "NOT_ADVANCED"] = Field(
        description="CONFIRMED: an outlet commit carried the trigger key; NOT_ADVANCED: none by confirmBy"
    )
    decided_at: Iso = Field(alias="decidedAt")
    asset_key: str | None = Field(default=None, alias="assetKey", description="CONFIRMED: the outlet table")
    snapshot_id: int | None = Field(default=None, alias="snapshotId", description="CONFIRMED: the commit")
    commit_time: Iso | None = Field(default=None, alias="commitTime")
    late: bool = Field(default=False, description="CONFIRMED after it had been NOT_ADVANCED")


class SlotWaitAnswer(Answer):
    """A claimed trigger held back by its rule's maxInFlight (docs/rules.md, "Runs in flight")."""

    since: Iso = Field(description="when it began waiting")
    position: int | None = Field(default=None, description="its place in the queue (1: next), in claim order")
    in_flight: int | None = Field(default=None, alias="inFlight", description="runs of its scope in flight now")
    max_in_flight: int | None = Field(default=None, alias="maxInFlight")


class TriggerAnswer(Answer):
    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    status: Literal["TRIGGERING", "SUCCEEDED", "FAILED", "SKIPPED"]
    inputs: list[PinnedInputAnswer]
    window: Window | None = None
    partition: str | None = Field(default=None, description="a partitioned group's run: the partition key it ran for")
    replay_epoch: int = Field(alias="replayEpoch")
    attempts: int
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")
    reason: str | None = None
    target_run_id: str | None = Field(default=None, alias="targetRunId")
    replay_of: str | None = Field(default=None, alias="replayOf")
    start_from: str | None = Field(
        default=None, alias="startFrom", description="a replay's choice: where the rerun starts (absent if none)"
    )
    variables: dict[str, str | int | float | bool | None] | None = Field(
        default=None, description="a replay's choice: the variables the rerun overrides (absent if none)"
    )
    run_status: Literal["SUCCEEDED", "FAILED"] | None = Field(
        default=None, alias="runStatus", description="what the run reported (the first terminal status wins)"
    )
    completed_at: Iso | None = Field(default=None, alias="completedAt")
    outlets: list[dict[str, Any]] | None = Field(default=None, description="the outlets the run reported")
    failure: Literal["RETRYABLE", "FINAL"] | None = Field(
        default=None,
        description="a FAILED trigger: RETRYABLE (tried again by itself at nextAttemptAt) or FINAL (needs a retry "
        "by hand once the cause is fixed)",
    )
    failure_code: str | None = Field(default=None, alias="failureCode", description="short, low-cardinality")
    failing_since: Iso | None = Field(default=None, alias="failingSince")
    next_attempt_at: Iso | None = Field(default=None, alias="nextAttemptAt", description="RETRYABLE: when")
    retries: int = Field(default=0, description="retries by hand (POST /triggers/{triggerKey}/retry)")
    run_state: RunStateAnswer | None = Field(
        default=None,
        alias="runState",
        description="what the target said about the run when last asked (at the start, then every 5 minutes while "
        "it waits)",
    )
    confirm_by: Iso | None = Field(
        default=None,
        alias="confirmBy",
        description="a rule with confirm: by when an outlet commit carrying the key must confirm the run (absent "
        "otherwise)",
    )
    confirmation: ConfirmationAnswer | None = Field(
        default=None, description="what the outlet tables show of the run (absent until decided)"
    )
    waiting_for_slot: SlotWaitAnswer | None = Field(
        default=None,
        alias="waitingForSlot",
        description="TRIGGERING and waiting for a run slot (the rule's maxInFlight); absent otherwise",
    )


class TriggerSummary(Answer):
    """A rule's (or a group's) newest trigger, as explain shows it; ``GET /triggers/{triggerKey}`` has the rest."""

    trigger_key: str = Field(alias="triggerKey")
    group_id: str = Field(alias="groupId")
    status: Literal["TRIGGERING", "SUCCEEDED", "FAILED", "SKIPPED"]
    created_at: Iso = Field(alias="createdAt")
    inputs: list[PinnedInputAnswer]
    window: Window | None = Field(default=None, description="a windowed group's run: its window; absent otherwise")
    partition: str | None = Field(
        default=None, description="a partitioned group's run: the partition key it ran for; absent otherwise"
    )
    confirmation: ConfirmationAnswer | None = Field(
        default=None, description="a rule with confirm: CONFIRMED or NOT_ADVANCED once decided; absent otherwise"
    )
    failure: Literal["RETRYABLE", "FINAL"] | None = Field(
        default=None, description="a FAILED trigger: whether it is retried by itself; absent otherwise"
    )
    failure_reason: str | None = Field(
        default=None,
        alias="failureReason",
        description="a FAILED trigger: why, as its dispatch recorded it (e.g. webhook: could not connect)",
    )


class TriggerPage(Answer):
    items: list[TriggerAnswer]
    next_token: str | None = NextToken


class PreflightAnswer(Answer):
    ok: bool
    items: list[dict[str, Any]] = Field(description="one check per pinned input")


class ReplayAnswer(Answer):
    trigger_key: str = Field(alias="triggerKey", description="the trigger replayed")
    dry_run: bool = Field(alias="dryRun")
    preflight: PreflightAnswer
    replay: TriggerAnswer | None = Field(description="the new claim; null for a dry run")
