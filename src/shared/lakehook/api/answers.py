"""The shapes the API answers, as pydantic models: the routes answer them and the OpenAPI document describes them.

A route builds its answer from domain objects with the model's ``from_domain`` and answers its ``dump()``, so
the document cannot drift from the body. A few are still assembled as dicts by their use case or route from
parts built so (explain's top level around its groups' ``GroupExplanation``, a recorded event)
and only described by their model; the domain builds none (it has no ``to_api``). Fields other helpers may add
later are allowed (the models do not forbid extra fields); what is listed here is what every answer carries.
Instants in answers are ISO 8601 strings in UTC; ``commitTime`` and watermarks stay epoch milliseconds.

The rules' answers are in ``api.rule_answers``; explain's groups', the triggers' and the base in
``lakehook.answers`` (the replay and backtest use cases build trigger answers too): a route module imports only
its own answers' domain models (the rule answers are the rule model itself), so the replay API and the first
request of any other route do not build the rule models for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from lakehook.answers.base import Answer, Iso, NextToken, Window
from lakehook.domain.events import EventStatusLiteral, EventType
from lakehook.domain.lineage import LineageMapping, QueuedPoll
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.aliases import Alias
    from lakehook.domain.events import EventResult as IngestResult
    from lakehook.domain.producers import Producer
    from lakehook.domain.watermarks import WatermarkRecord
    from lakehook.usecases.completion import CompletionResult


class EventResult(Answer):
    event_id: str | None = Field(alias="eventId", description="null when the event was too malformed to identify")
    status: EventStatusLiteral = Field(
        description="ACCEPTED: recorded, and the asset state moved to it (or already held it). "
        "DUPLICATE: this event identity was recorded before; nothing written. "
        "STALE: recorded as evidence, but the state already holds a newer version and never moves back; "
        "a late snapshot is still logged for EACH_VERSION rules: the reason names each rule that already ran a newer "
        'version ("version 3 arrived after 5 and will not run for rule X") and those that still run it in order; '
        "and a late data snapshot still counts as the newest data change after a compaction. "
        "REJECTED: not recorded; the reason names the field."
    )
    reason: str | None = Field(description="why, for every status but ACCEPTED")

    @classmethod
    def from_domain(cls, result: IngestResult) -> EventResult:
        return cls(event_id=result.event_id, status=result.status.value, reason=result.reason)


class PushAnswer(Answer):
    results: list[EventResult] = Field(description="one per pushed event, in order")

    @classmethod
    def from_domain(cls, results: list[IngestResult]) -> PushAnswer:
        return cls(results=[EventResult.from_domain(r) for r in results])


class ProducerAnswer(Answer):
    producer_id: str = Field(alias="producerId")
    asset_key_prefixes: list[str] = Field(alias="assetKeyPrefixes")
    secret_ref: str = Field(alias="secretRef", description="where the signing secret is stored")
    description: str | None = None
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")
    secret_version: int = Field(
        default=0, alias="secretVersion", description="counts the secret's rotations (0: never rotated)"
    )
    lineage_datasets: list[LineageMapping] = Field(default_factory=list, alias="lineageDatasets")
    event_sources: list[str] = Field(default_factory=list, alias="eventSources")
    lineage_bearer: bool = Field(
        default=False, alias="lineageBearer", description="whether POST /api/v1/lineage takes the apiKey as a bearer"
    )
    bus_accounts: list[str] = Field(
        default_factory=list, alias="busAccounts", description="empty: the stack's own account only"
    )
    watermark_namespaces: list[str] = Field(
        default_factory=list, alias="watermarkNamespaces", description="the watermark namespaces it may use"
    )
    secret: str | None = Field(default=None, description="the signing secret: only on creation or rotation")
    api_key: str | None = Field(
        default=None,
        alias="apiKey",
        description="the OpenLineage transport's api_key (<producerId>:<secret>): only with the secret; taken "
        "by POST /api/v1/lineage only from a producer with lineageBearer: true",
    )

    @classmethod
    def from_domain(cls, producer: Producer, secret: str | None = None, key: str | None = None) -> ProducerAnswer:
        """A producer as registered; ``secret`` and its ``key`` only on creation or rotation."""
        data = producer.model_dump(by_alias=True, exclude_none=True)
        data.update(createdAt=ms_to_iso(producer.created_at), updatedAt=ms_to_iso(producer.updated_at))
        if secret is not None:
            data.update(secret=secret, apiKey=key)
        return cls.model_validate(data)


class LineageResult(Answer):
    event_id: str | None = Field(alias="eventId", description="null unless recorded")
    status: Literal["ACCEPTED", "DUPLICATE", "STALE", "REJECTED", "POLL_QUEUED"] = Field(
        description="as POST /asset-events answers; POLL_QUEUED: an Iceberg output, whose order (the sequence "
        "number) lineage does not carry, or an output that reports no version: a poll of the registered table "
        "was queued and records the snapshot"
    )
    reason: str | None = Field(description="why, for every status but ACCEPTED")

    @classmethod
    def from_domain(cls, result: IngestResult | QueuedPoll) -> LineageResult:
        if isinstance(result, QueuedPoll):
            return cls(event_id=None, status="POLL_QUEUED", reason=result.reason)
        return cls(event_id=result.event_id, status=result.status.value, reason=result.reason)


class LineageAnswer(Answer):
    event_type: str | None = Field(alias="eventType", description="the RunEvent's; only COMPLETE records events")
    results: list[LineageResult] = Field(description="one per output dataset, in order")

    @classmethod
    def from_domain(cls, event_type: str | None, results: list[IngestResult | QueuedPoll]) -> LineageAnswer:
        return cls(event_type=event_type, results=[LineageResult.from_domain(r) for r in results])


class ProducerPage(Answer):
    items: list[ProducerAnswer]
    next_token: str | None = NextToken


class RecordedEvent(Answer):
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


class EventPage(Answer):
    items: list[RecordedEvent]
    next_token: str | None = NextToken


class CoverageReport(Answer):
    asset_key: str = Field(alias="assetKey")
    start: Iso
    end: Iso
    covered: bool
    missing: list[Window] = Field(description="the uncovered sub-intervals, in order")
    covered_ratio: float = Field(
        alias="coveredRatio",
        ge=0,
        le=1,
        description="coveredMs / totalMs, computed exactly and rounded to 4 decimal places (half to even): "
        "0.9999 or even 1.0 may still have a gap of a few milliseconds; covered is the exact verdict",
    )
    covered_ms: int = Field(alias="coveredMs", ge=0, description="milliseconds of [start, end) covered")
    total_ms: int = Field(alias="totalMs", ge=1, description="milliseconds of [start, end): end - start")
    partition_key: str | None = Field(default=None, alias="partitionKey")


class CompletionAnswer(Answer):
    trigger_key: str = Field(alias="triggerKey")
    status: Literal["SUCCEEDED", "FAILED"] = Field(description="the recorded status: the first one reported")
    completed_at: Iso = Field(alias="completedAt")
    repeated: bool = Field(description="true when this completion was already recorded")
    results: list[EventResult] = Field(description="one per outlet")

    @classmethod
    def from_domain(cls, result: CompletionResult) -> CompletionAnswer:
        return cls(
            trigger_key=result.trigger_key,
            status=result.status,
            completed_at=ms_to_iso(result.completed_at),
            repeated=not result.first,
            results=[EventResult.from_domain(r) for r in result.results],
        )


class AliasAnswer(Answer):
    name: str
    asset_keys: list[str] = Field(alias="assetKeys")
    description: str | None
    created_at: Iso = Field(alias="createdAt")
    updated_at: Iso = Field(alias="updatedAt")

    @classmethod
    def from_domain(cls, alias: Alias) -> AliasAnswer:
        return cls(
            name=alias.name,
            asset_keys=list(alias.asset_keys),
            description=alias.description,
            created_at=ms_to_iso(alias.created_at),
            updated_at=ms_to_iso(alias.updated_at),
        )


class AliasPage(Answer):
    items: list[AliasAnswer]
    next_token: str | None = NextToken


class WatermarkAnswer(Answer):
    namespace: str
    asset_key: str = Field(alias="assetKey")
    key: str
    value: Any
    version: int = Field(description="increases by one on every write; the compare-and-set token")
    updated_at: Iso = Field(alias="updatedAt")

    @classmethod
    def from_domain(cls, record: WatermarkRecord) -> WatermarkAnswer:
        return cls.model_validate({**record.model_dump(by_alias=True), "updatedAt": ms_to_iso(record.updated_at)})


class WatermarkList(Answer):
    items: list[WatermarkAnswer]


class Deleted(Answer):
    deleted: Literal[True]
