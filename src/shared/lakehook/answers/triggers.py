"""The trigger routes' answers (see ``api.answers``), replay's included, each built from its domain object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from lakehook.answers.base import Answer, Iso, NextToken, Window, iso_or_none, present
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.confirmation import Confirmation
    from lakehook.domain.triggers import PinnedInput, RunState, SlotWait, Trigger
    from lakehook.domain.triggers import Window as TriggerWindow
    from lakehook.usecases.replay import ReplayOutcome
    from lakehook.usecases.spool import ChecklistItem, PreflightReport


class PinnedInputAnswer(Answer):
    """The version of one member a trigger pins; fields it does not have are absent."""

    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(default=None, alias="snapshotId")
    snapshot_order: int | None = Field(
        default=None, alias="snapshotOrder", description="its place in history when not the id (Iceberg: sequence)"
    )
    schema_id: int | None = Field(default=None, alias="schemaId")
    watermark: int | None = None
    commit_time: int | None = Field(default=None, alias="commitTime")
    state_version: int = Field(default=0, alias="stateVersion", description="the asset state version it was read at")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")
    manifest_sha256: str | None = Field(
        default=None, alias="manifestSha256", description="the SHA-256 of that spool manifest as verified"
    )
    metadata_location: str | None = Field(
        default=None, alias="metadataLocation", description="Iceberg: the metadata.json that holds the snapshot"
    )
    tag: str | None = Field(default=None, description="the tag a tag member pinned")

    @classmethod
    def from_domain(cls, pin: PinnedInput) -> PinnedInputAnswer:
        return cls.model_validate(pin.model_dump(by_alias=True, exclude_none=True))


class RunStateAnswer(Answer):
    state: str = Field(description="the target's own word, e.g. Airflow's queued")
    detail: str | None = Field(default=None, description="e.g. that the DAG is paused, so the run stays queued")
    checked_at: Iso = Field(alias="checkedAt")

    @classmethod
    def from_domain(cls, state: RunState) -> RunStateAnswer:
        return cls(state=state.state, detail=state.detail, checked_at=ms_to_iso(state.checked_at))


class ConfirmationAnswer(Answer):
    state: Literal["CONFIRMED", "NOT_ADVANCED"] = Field(
        description="CONFIRMED: an outlet commit carried the trigger key; NOT_ADVANCED: none by confirmBy"
    )
    decided_at: Iso = Field(alias="decidedAt")
    asset_key: str | None = Field(default=None, alias="assetKey", description="CONFIRMED: the outlet table")
    snapshot_id: int | None = Field(default=None, alias="snapshotId", description="CONFIRMED: the commit")
    commit_time: Iso | None = Field(default=None, alias="commitTime")
    late: bool = Field(default=False, description="CONFIRMED after it had been NOT_ADVANCED")

    @classmethod
    def from_domain(cls, confirmation: Confirmation) -> ConfirmationAnswer:
        data = confirmation.model_dump(by_alias=True, mode="json", exclude_none=True)
        data.update(decidedAt=ms_to_iso(confirmation.decided_at))
        if confirmation.commit_time is not None:
            data.update(commitTime=ms_to_iso(confirmation.commit_time))
        return cls.model_validate(data)


class SlotWaitAnswer(Answer):
    """A claimed trigger held back by its rule's maxInFlight (docs/rules.md, "Runs in flight")."""

    since: Iso = Field(description="when it began waiting")
    position: int | None = Field(default=None, description="its place in the queue (1: next), in claim order")
    in_flight: int | None = Field(default=None, alias="inFlight", description="runs of its scope in flight now")
    max_in_flight: int | None = Field(default=None, alias="maxInFlight")

    @classmethod
    def from_domain(cls, wait: SlotWait) -> SlotWaitAnswer:
        return cls(
            since=ms_to_iso(wait.since),
            position=wait.position,
            in_flight=wait.in_flight,
            max_in_flight=wait.max_in_flight,
        )


class TriggerAnswer(Answer):
    waiting_for_slot: SlotWaitAnswer | None = Field(
        default=None,
        alias="waitingForSlot",
        description="TRIGGERING and waiting for a run slot (the rule's maxInFlight); absent otherwise",
    )
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

    @classmethod
    def from_domain(cls, trigger: Trigger) -> TriggerAnswer:
        return cls(**_slot_wait(trigger), **_claim(trigger), **_choices(trigger), **_run(trigger), **_confirm(trigger))


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

    @classmethod
    def from_domain(cls, trigger: Trigger) -> TriggerSummary:
        """Its window, partition, confirmation and failure only where it has them."""
        confirmation = trigger.confirmation
        return cls(
            trigger_key=trigger.trigger_key,
            group_id=trigger.group_id,
            status=trigger.status.value,
            created_at=ms_to_iso(trigger.created_at),
            inputs=[PinnedInputAnswer.from_domain(p) for p in trigger.inputs],
            **present(
                window=_window(trigger.window),
                partition=trigger.partition,
                confirmation=None if confirmation is None else ConfirmationAnswer.from_domain(confirmation),
            ),
            **_failure(trigger),
        )


def _window(window: TriggerWindow | None) -> Window | None:
    return None if window is None else Window.from_ms(window.start, window.end)


def _slot_wait(trigger: Trigger) -> dict[str, Any]:
    """``waitingForSlot`` while it is TRIGGERING and held back by the rule's maxInFlight (absent otherwise)."""
    if trigger.slot_wait is None or trigger.status.value != "TRIGGERING":
        return {}
    return {"waiting_for_slot": SlotWaitAnswer.from_domain(trigger.slot_wait)}


def _claim(trigger: Trigger) -> dict[str, Any]:
    """What the claim itself says."""
    return {
        "trigger_key": trigger.trigger_key,
        "rule_id": trigger.rule_id,
        "group_id": trigger.group_id,
        "status": trigger.status.value,
        "inputs": [PinnedInputAnswer.from_domain(p) for p in trigger.inputs],
        "window": _window(trigger.window),
        "partition": trigger.partition,
        "replay_epoch": trigger.replay_epoch,
        "attempts": trigger.attempts,
        "created_at": ms_to_iso(trigger.created_at),
        "updated_at": ms_to_iso(trigger.updated_at),
        "manifest_uri": trigger.manifest_uri,
        "reason": trigger.reason,
        "target_run_id": trigger.target_run_id,
        "replay_of": trigger.replay_of,
    }


def _choices(trigger: Trigger) -> dict[str, Any]:
    """A replay's choices (``startFrom``, ``variables``), those made only: a plain run's answer has neither."""
    return present(start_from=trigger.start_from, variables=trigger.variables)


def _run(trigger: Trigger) -> dict[str, Any]:
    """What the run reported and how a failed dispatch goes on."""
    return {
        "run_status": trigger.run_status,
        "completed_at": iso_or_none(trigger.completed_at),
        "outlets": None if trigger.outlets is None else list(trigger.outlets),
        "failure": None if trigger.failure is None else trigger.failure.value,
        "failure_code": trigger.failure_code,
        "failing_since": iso_or_none(trigger.failing_since),
        "next_attempt_at": iso_or_none(trigger.next_attempt_at),
        "retries": trigger.retries,
        "run_state": None if trigger.run_state is None else RunStateAnswer.from_domain(trigger.run_state),
    }


def _failure(trigger: Trigger) -> dict[str, Any]:
    """A FAILED trigger's failure as its dispatch recorded it: RETRYABLE or FINAL, and why (the target's answer)."""
    if trigger.status.value != "FAILED":
        return {}
    kind = {} if trigger.failure is None else {"failure": trigger.failure.value}
    return {**kind, "failure_reason": trigger.reason}


def _confirm(trigger: Trigger) -> dict[str, Any]:
    """``confirmBy`` and ``confirmation`` where the rule asks for them: a plain run's answer has neither."""
    confirmation = trigger.confirmation
    return present(
        confirm_by=iso_or_none(trigger.confirm_by),
        confirmation=None if confirmation is None else ConfirmationAnswer.from_domain(confirmation),
    )


class PlannedRun(Answer):
    """A run a rule's dry run says the write would start: what its claim would be."""

    trigger_key: str = Field(alias="triggerKey", description="the claim's key, if nothing changes before the write")
    group_id: str = Field(alias="groupId")
    partition: str | None = Field(default=None, description="a partitioned group's partition")
    window: Window | None = Field(default=None, description="a windowed group's window")
    inputs: list[PinnedInputAnswer] = Field(description="the versions it would pin")
    reason: str | None = Field(default=None, description="why the group (partition) is ready")

    @classmethod
    def from_domain(cls, trigger: Trigger) -> PlannedRun:
        """The claim the write would make: its partition or window only where it has one."""
        return cls(
            trigger_key=trigger.trigger_key,
            group_id=trigger.group_id,
            **present(
                partition=trigger.partition,
                window=_window(trigger.window),
            ),
            inputs=[PinnedInputAnswer.from_domain(p) for p in trigger.inputs],
            reason=trigger.reason,
        )


class TriggerPage(Answer):
    items: list[TriggerAnswer]
    next_token: str | None = NextToken


class PreflightItemAnswer(Answer):
    """One line of a replay's pre-flight checklist."""

    check: Literal["MANIFEST_SEALED", "SNAPSHOT_RETAINED", "SCHEMA_COMPATIBLE"]
    asset_key: str = Field(alias="assetKey")
    status: Literal["PASSED", "FAILED", "SKIPPED"] = Field(description="SKIPPED: could not apply; never blocks")
    reason: str
    detail: dict[str, Any] | None = Field(default=None, description="what was compared (absent when nothing)")

    @classmethod
    def from_domain(cls, item: ChecklistItem) -> PreflightItemAnswer:
        detail = {"detail": item.detail} if item.detail else {}
        return cls(
            check=item.check.value, asset_key=item.asset_key, status=item.status.value, reason=item.reason, **detail
        )


class PreflightAnswer(Answer):
    ok: bool
    items: list[PreflightItemAnswer] = Field(description="one check per pinned input")

    @classmethod
    def from_domain(cls, report: PreflightReport) -> PreflightAnswer:
        return cls(ok=report.ok, items=[PreflightItemAnswer.from_domain(i) for i in report.items])


class ReplayAnswer(Answer):
    trigger_key: str = Field(alias="triggerKey", description="the trigger replayed")
    dry_run: bool = Field(alias="dryRun")
    preflight: PreflightAnswer
    replay: TriggerAnswer | None = Field(description="the new claim; null for a dry run")

    @classmethod
    def from_domain(cls, outcome: ReplayOutcome) -> ReplayAnswer:
        return cls(
            trigger_key=outcome.replays.trigger_key,
            dry_run=outcome.replay is None,
            preflight=PreflightAnswer.from_domain(outcome.report),
            replay=None if outcome.replay is None else TriggerAnswer.from_domain(outcome.replay),
        )
