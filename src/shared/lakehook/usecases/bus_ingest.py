"""Pushes put on the stack's EventBridge bus: for AWS-native writers (Glue jobs, EMR steps, Step Functions) that
would rather ``PutEvents`` than sign HTTP.

IAM authorizes the writer (``events:PutEvents`` on the bus); the event's ``source`` says which producer it is:
each source belongs to one producer (``eventSources`` of ``PUT /producers/{id}``), whose prefixes then apply
as to a signed push. The source is whatever the writer put, so it binds only together with what EventBridge
itself vouches for: the event's ``account``, the account whose principal called PutEvents, which must be one
of the producer's ``busAccounts`` (none listed: the stack's own account). The event's ``resources`` are the
writer's to set as well, and prove nothing. docs/event-bus.md has the trust model. The ``detail`` is what
``POST /asset-events`` takes: one event or ``{"events": [...]}``. Everything a signed push gets applies:
validation per event, aliases, deduplication. What cannot be taken is rejected with the reason, never raised:
EventBridge invokes the function asynchronously, and a retry would only fail the same way.

AWS Glue Data Quality's own "Data Quality Evaluation Results Available" events (source ``aws.glue-dataquality``,
from the default bus) are quality verdicts, not pushes: ``usecases/glue_quality.py`` takes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.domain.errors import AuthorizationError, ValidationError
from lakehook.domain.events import EventResult, SourceType
from lakehook.domain.glue_quality import GLUE_DQ_RESULTS, GLUE_DQ_SOURCE
from lakehook.domain.producers import Producer
from lakehook.event_metrics import count_results
from lakehook.freshness_metrics import MetricSink
from lakehook.observability import MetricName, logger, metrics
from lakehook.ports import ProducerRegistry
from lakehook.ports.aliases import AliasStore
from lakehook.usecases.aliases import ingest_through_aliases
from lakehook.usecases.glue_quality import IngestGlueQuality
from lakehook.usecases.ingest import IngestEvents, envelope_events

ASSET_EVENTS = "Lakehook Asset Events"  # the detail-type writers put their events under


@dataclass(frozen=True)
class BusReport:
    """What one bus event became: one result per asset event, or why none was taken."""

    event_id: str
    source: str
    producer_id: str | None = None
    results: list[EventResult] = field(default_factory=list)
    rejected: str | None = None
    account: str | None = None
    unbound_account: bool = False  # rejected because the producer does not take events from the account
    # a Glue Data Quality result: per registered table, the verdict recorded (RECORDED) or why not (UNMATCHED,
    # NOT_PINNED), with the reason
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unrecorded_verdicts(self) -> bool:
        return any(v.get("status") != "RECORDED" for v in self.verdicts)

    def to_log(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "bus_event_id": self.event_id,
            "source": self.source,
            "producer": self.producer_id,
            "account": self.account,
        }
        if self.rejected:
            found["rejected"] = self.rejected
        else:
            found["results"] = [r.model_dump(mode="json", by_alias=True, exclude={"index"}) for r in self.results]
        if self.verdicts:
            found["verdicts"] = self.verdicts
        return found


class IngestBusEvents:
    def __init__(
        self,
        producers: ProducerRegistry,
        ingest: IngestEvents,
        aliases: AliasStore,
        limit: int,
        glue_quality: IngestGlueQuality | None = None,
    ) -> None:
        self._producers = producers
        self._ingest = ingest
        self._aliases = aliases
        self._limit = limit
        self._glue_quality = glue_quality

    def __call__(self, event: Mapping[str, Any], stack_account: str | None = None) -> BusReport:
        """``stack_account``: the account the stack runs in (whose events a producer without ``busAccounts``
        takes); unknown, such a producer takes none."""
        event_id = str(event.get("id", ""))[:128]
        source = event.get("source")
        raw_account = event.get("account")
        account = raw_account[:64] if isinstance(raw_account, str) else None
        if not isinstance(source, str) or not source:
            return BusReport(event_id, str(source)[:256], rejected="the event has no source", account=account)
        if source == GLUE_DQ_SOURCE and event.get("detail-type") == GLUE_DQ_RESULTS and self._glue_quality:
            found = self._glue_quality(event, account, stack_account)
            return BusReport(
                event_id,
                source,
                results=found.results,
                rejected=found.rejected,
                account=account,
                verdicts=found.verdicts,
            )
        if event.get("detail-type") != ASSET_EVENTS:
            return BusReport(
                event_id,
                source,
                rejected=f"detail-type {event.get('detail-type')!r} is not {ASSET_EVENTS!r}",
                account=account,
            )
        producer = self._claiming_producer(source)
        if producer is None:
            return BusReport(
                event_id,
                source,
                rejected=f"no producer claims EventBridge source {source!r} (PUT /producers/{{id}} with eventSources)",
                account=account,
            )
        if account is None or not producer.takes_bus_events_from(account, stack_account):
            return _unbound_account(event_id, source, producer, account, stack_account)
        try:
            raw = envelope_events(event.get("detail"), self._limit)
            results = ingest_through_aliases(raw, self._ingest, self._aliases, SourceType.EVENTBRIDGE, producer)
        except (ValidationError, AuthorizationError) as exc:
            return BusReport(event_id, source, producer.producer_id, rejected=str(exc), account=account)
        return BusReport(event_id, source, producer.producer_id, results=results, account=account)

    def _claiming_producer(self, source: str) -> Producer | None:
        """The producer that claims the EventBridge source and still names it, if any."""
        owner = self._producers.event_source_owner(source[:256])
        producer = self._producers.get_producer(owner) if owner else None
        return producer if producer is not None and source in producer.event_sources else None


def _unbound_account(
    event_id: str, source: str, producer: Producer, account: str | None, stack_account: str | None
) -> BusReport:
    """The refusal of an event put from an account the claiming producer does not take bus events from."""
    allowed = producer.bus_accounts or ([stack_account] if stack_account else [])
    return BusReport(
        event_id,
        source,
        producer.producer_id,
        rejected=f"source {source!r} is producer {producer.producer_id!r}'s only in events put from "
        f"account(s) {', '.join(allowed) or '(none known: list busAccounts)'}; this one was put from "
        f"{account or '(no account)'!s} (busAccounts of PUT /producers/{{id}})",
        account=account,
        unbound_account=True,
    )


def account_of(function_arn: str) -> str | None:
    """The account of a Lambda function ARN (``arn:aws:lambda:<region>:<account>:function:<name>``)."""
    parts = function_arn.split(":")
    return parts[4] if len(parts) > 5 and parts[4].isdigit() and len(parts[4]) == 12 else None


def report_bus_event(report: BusReport, sink: MetricSink = metrics) -> dict[str, Any]:
    """What the bus function counts and logs of one report, answering its log line. A rejected event is counted
    invalid (and foreign, from an account its producer does not take) and never raised: EventBridge would retry an
    event that can only fail the same way. A taken one counts its events' outcomes; a Glue Data Quality result not
    recorded (no registered table, or no snapshot to pin it to) is counted and logged as a warning."""
    if report.rejected:
        sink.add_metric(name=MetricName.EVENT_INVALID, unit="Count", value=1)
        if report.unbound_account:
            sink.add_metric(name=MetricName.BUS_EVENT_FOREIGN_ACCOUNT, unit="Count", value=1)
        logger.warning("bus event rejected", extra=report.to_log())
    elif report.unrecorded_verdicts:
        # a Glue Data Quality result for no registered table, or that no snapshot can be pinned to: visible here
        count_results(report.results, sink)
        unrecorded = sum(1 for v in report.verdicts if v.get("status") != "RECORDED")
        sink.add_metric(name=MetricName.QUALITY_VERDICT_UNRECORDED, unit="Count", value=unrecorded)
        logger.warning("quality verdict not recorded", extra=report.to_log())
    else:
        count_results(report.results, sink)
        logger.info("bus event ingested", extra=report.to_log())
    return report.to_log()
