"""The shapes the API answers, as pydantic models for the OpenAPI document.

The routes build their answers with the domain's ``to_api()``; these models describe those bodies so
clients (and the schemathesis contract test) can check them. Fields other helpers may add later are
allowed (the models do not forbid extra fields); what is listed here is what every answer carries.
Instants in answers are ISO 8601 strings in UTC; ``commitTime`` and watermarks stay epoch milliseconds.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lakehook.domain.assets import AssetFormat, AssetSource
from lakehook.domain.events import EventStatusLiteral, EventType
from lakehook.domain.lineage import LineageMapping
from lakehook.domain.rules import Rule

Iso = str  # an ISO 8601 instant in UTC, e.g. 2025-06-01T10:05:00Z
NextToken = Field(default=None, alias="nextToken", description="pass back as ?nextToken= for the next page")


# Answers only describe bodies for the OpenAPI document (routes answer with to_api()): their schemas are built
# when the document is, not when a function imports the routes.
class _Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)


class Window(_Answer):
    """``[start, end)``."""

    start: Iso
    end: Iso


class EventResult(_Answer):
    event_id: str | None = Field(alias="eventId", description="null when the event was too malformed to identify")
    status: EventStatusLiteral = Field(
        description="ACCEPTED: recorded, and the asset state moved to it (or already held it). "
        "DUPLICATE: this event identity was recorded before; nothing written. "
        "STALE: recorded as evidence, but the state already holds a newer version and never moves back; "
        "a late snapshot is still logged for EACH_VERSION rules, which run it in order (the reason says so), "
        "and a late data snapshot still counts as the newest data change after a compaction. "
        "REJECTED: not recorded; the reason names the field."
    )
    reason: str | None = Field(description="why, for every status but ACCEPTED")


class PushAnswer(_Answer):
    results: list[EventResult] = Field(description="one per pushed event, in order")


class ProducerAnswer(_Answer):
    producer_id: str = Field(alias="producerId")
    asset_key_prefixes: list[str] = Field(alias="assetKeyPrefixes")
    secret_ref: str = Field(alias="secretRef", description="where the signing secret is stored")
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")
    lineage_datasets: list[LineageMapping] = Field(default_factory=list, alias="lineageDatasets")
    event_sources: list[str] = Field(default_factory=list, alias="eventSources")
    secret: str | None = Field(default=None, description="the signing secret: only on creation or rotation")
    api_key: str | None = Field(
        default=None,
        alias="apiKey",
        description="the OpenLineage transport's api_key (<producerId>:<secret>): only with the secret",
    )


class LineageResult(_Answer):
    event_id: str | None = Field(alias="eventId", description="null unless recorded")
    status: Literal["ACCEPTED", "DUPLICATE", "STALE", "REJECTED", "POLL_QUEUED"] = Field(
        description="as POST /asset-events answers; POLL_QUEUED: an Iceberg output, whose order (the sequence "
        "number) lineage does not carry: a poll of the registered table was queued and records the snapshot"
    )
    reason: str | None = Field(description="why, for every status but ACCEPTED")


class LineageAnswer(_Answer):
    event_type: str | None = Field(alias="eventType", description="the RunEvent's; only COMPLETE records events")
    results: list[LineageResult] = Field(description="one per output dataset, in order")


class ProducerPage(_Answer):
    items: list[ProducerAnswer]
    next_token: str | None = NextToken


class AssetAnswer(_Answer):
    asset_key: str = Field(alias="assetKey")
    format: AssetFormat
    source: AssetSource | None = None
    description: str | None = None


class AssetPage(_Answer):
    items: list[AssetAnswer]
    next_token: str | None = NextToken


class AssetStateAnswer(_Answer):
    """The advance-only state; fields an asset never had are absent."""

    asset_key: str = Field(alias="assetKey")
    version: int = Field(description="0 for a registered asset without any recorded event")
    registered: bool
    latest_snapshot_id: int | None = Field(default=None, alias="latestSnapshotId")
    latest_schema_id: int | None = Field(default=None, alias="latestSchemaId")
    latest_commit_time: int | None = Field(default=None, alias="latestCommitTime")
    watermark: int | None = None
    tags: list[str] | None = None
    quality_status: str | None = Field(default=None, alias="qualityStatus")
    schema_status: str | None = Field(default=None, alias="schemaStatus")
    updated_at: Iso | None = Field(default=None, alias="updatedAt")
    poll_status: dict[str, Any] | None = Field(default=None, alias="pollStatus", description="registered sources")


class RecordedEvent(_Answer):
    """An event as recorded: the fields of the pushed or polled event (see AssetEvent) and how it arrived."""

    model_config = ConfigDict(extra="allow")

    event_type: EventType = Field(alias="eventType")
    asset_key: str = Field(alias="assetKey")
    event_id: str = Field(alias="eventId")
    source: str = Field(
        description="how it arrived: PUSH, POLL, COMPENSATION (a missed-event poll), RUN_COMPLETION, VERIFICATION "
        "(a verified spool manifest), LINEAGE (an OpenLineage RunEvent) or EVENTBRIDGE (put on the stack's bus)"
    )
    received_at: Iso = Field(alias="receivedAt")
    producer_id: str | None = Field(default=None, alias="producerId")
    interval: Window | None = None


class EventPage(_Answer):
    items: list[RecordedEvent]
    next_token: str | None = NextToken


class CoverageReport(_Answer):
    asset_key: str = Field(alias="assetKey")
    start: Iso
    end: Iso
    covered: bool
    missing: list[Window] = Field(description="the uncovered sub-intervals, in order")
    partition_key: str | None = Field(default=None, alias="partitionKey")


class RuleAnswer(Rule):
    """A stored rule: the rule as written plus its revision and times."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    revision: int | None = Field(default=None, description="absent in a dry run's answer, as are the times")
    created_at: Iso | None = Field(default=None, alias="createdAt")
    updated_at: Iso | None = Field(default=None, alias="updatedAt")
    dry_run: bool | None = Field(default=None, alias="dryRun", description="true: validated, nothing written")


class RulePage(_Answer):
    items: list[RuleAnswer]
    next_token: str | None = NextToken


class MemberExplanation(_Answer):
    asset_key: str = Field(alias="assetKey")
    status: str = Field(description="READY or what blocks the member, e.g. BLOCKED_BY_QUALITY")
    current: dict[str, Any]
    required: dict[str, Any]
    reason: str | None


class GroupExplanation(_Answer):
    group_id: str = Field(alias="groupId")
    status: str
    reason: str | None
    members: list[MemberExplanation]


class Explanation(_Answer):
    rule_id: str = Field(alias="ruleId")
    ready: bool
    groups: list[GroupExplanation]
    last_trigger: dict[str, Any] | None = Field(default=None, alias="lastTrigger")
    evaluated_at: Iso = Field(alias="evaluatedAt")


class Evaluation(Explanation):
    """The explanation after an evaluation, and what it claimed."""

    trigger_key: str | None = Field(alias="triggerKey", description="the key claimed (the first), or null")
    claimed: list[str]
    manual: bool = Field(description="a forced, manual run")


class PinnedInputAnswer(_Answer):
    asset_key: str = Field(alias="assetKey")
    snapshot_id: int | None = Field(default=None, alias="snapshotId")
    schema_id: int | None = Field(default=None, alias="schemaId")
    watermark: int | None = None
    commit_time: int | None = Field(default=None, alias="commitTime")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")


class RunStateAnswer(_Answer):
    state: str = Field(description="the target's own word, e.g. Airflow's queued")
    detail: str | None = Field(default=None, description="e.g. that the DAG is paused, so the run stays queued")
    checked_at: Iso = Field(alias="checkedAt")


class TriggerAnswer(_Answer):
    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    status: Literal["TRIGGERING", "SUCCEEDED", "FAILED", "SKIPPED"]
    inputs: list[PinnedInputAnswer]
    window: Window | None = None
    replay_epoch: int = Field(alias="replayEpoch")
    attempts: int
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")
    manifest_uri: str | None = Field(default=None, alias="manifestUri")
    reason: str | None = None
    target_run_id: str | None = Field(default=None, alias="targetRunId")
    replay_of: str | None = Field(default=None, alias="replayOf")
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


class TriggerPage(_Answer):
    items: list[TriggerAnswer]
    next_token: str | None = NextToken


class PreflightAnswer(_Answer):
    ok: bool
    items: list[dict[str, Any]] = Field(description="one check per pinned input")


class ReplayAnswer(_Answer):
    trigger_key: str = Field(alias="triggerKey", description="the trigger replayed")
    dry_run: bool = Field(alias="dryRun")
    preflight: PreflightAnswer
    replay: TriggerAnswer | None = Field(description="the new claim; null for a dry run")


class CompletionAnswer(_Answer):
    trigger_key: str = Field(alias="triggerKey")
    status: Literal["SUCCEEDED", "FAILED"] = Field(description="the recorded status: the first one reported")
    completed_at: Iso = Field(alias="completedAt")
    repeated: bool = Field(description="true when this completion was already recorded")
    results: list[EventResult] = Field(description="one per outlet")


class AliasAnswer(_Answer):
    name: str
    asset_keys: list[str] = Field(alias="assetKeys")
    description: str | None
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")


class AliasPage(_Answer):
    items: list[AliasAnswer]
    next_token: str | None = NextToken


class WatermarkAnswer(_Answer):
    namespace: str
    asset_key: str = Field(alias="assetKey")
    key: str
    value: Any
    version: int = Field(description="increases by one on every write; the compare-and-set token")
    updated_at: Iso = Field(alias="updatedAt")


class WatermarkList(_Answer):
    items: list[WatermarkAnswer]


class Deleted(_Answer):
    deleted: Literal[True]
