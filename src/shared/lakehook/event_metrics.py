"""Metrics and a log line per ingested event, for every way in (push, lineage, the event bus)."""

from __future__ import annotations

from lakehook.domain.events import EventResult, IngestStatus
from lakehook.observability import MetricName, logger, metrics


def count_results(results: list[EventResult]) -> None:
    metric_for = {
        IngestStatus.ACCEPTED: MetricName.STATE_UPDATED,
        IngestStatus.DUPLICATE: MetricName.EVENT_DEDUPLICATED,
        IngestStatus.STALE: MetricName.EVENT_STALE,
        IngestStatus.REJECTED: MetricName.EVENT_INVALID,
    }
    metrics.add_metric(name=MetricName.EVENT_RECEIVED, unit="Count", value=len(results))
    for result in results:
        metrics.add_metric(name=metric_for[result.status], unit="Count", value=1)
        logger.info(
            "event ingested",
            extra={"event_id": result.event_id, "status": result.status.value, "reason": result.reason},
        )
