"""Metrics and a log line per ingested event, for every way in (push, lineage, the event bus, polls, compensation,
run completion)."""

from __future__ import annotations

from collections.abc import Sequence

from lakehook.domain.events import AssetEvent, EventResult, EventType, IngestStatus
from lakehook.freshness_metrics import MetricSink
from lakehook.observability import MetricName, logger, metrics


def count_results(results: Sequence[EventResult], sink: MetricSink = metrics, *, log_each: bool = True) -> None:
    """Count ingested events by outcome (received, and state updated / deduplicated / stale / invalid), once per
    way in: push, lineage and the event bus at their entry, polls and compensation in the poll worker, outlets at
    run completion. ``log_each``: a log line ``event ingested`` per event (the poll worker logs its own summary)."""
    metric_for = {
        IngestStatus.ACCEPTED: MetricName.STATE_UPDATED,
        IngestStatus.DUPLICATE: MetricName.EVENT_DEDUPLICATED,
        IngestStatus.STALE: MetricName.EVENT_STALE,
        IngestStatus.REJECTED: MetricName.EVENT_INVALID,
    }
    sink.add_metric(name=MetricName.EVENT_RECEIVED, unit="Count", value=len(results))
    for result in results:
        sink.add_metric(name=metric_for[result.status], unit="Count", value=1)
        if log_each:
            logger.info(
                "event ingested",
                extra={"event_id": result.event_id, "status": result.status.value, "reason": result.reason},
            )


def publish_cdc_lag(
    events: Sequence[AssetEvent | EventResult], results: Sequence[EventResult], now: int, sink: MetricSink = metrics
) -> None:
    """For each accepted ``CDC_LAG_RECOVERED`` (``events`` and ``results`` side by side, as ingested): the lag the
    CDC source still had as it declared itself recovered, ``now - watermark`` in seconds (0 when the watermark is
    ahead of the clock). No asset key as a dimension (one time series, as the RFC's other lags); the log line
    ``cdc lag recovered`` names the asset."""
    for event, result in zip(events, results, strict=True):
        if (
            not isinstance(event, AssetEvent)
            or event.event_type is not EventType.CDC_LAG_RECOVERED
            or event.watermark is None
            or result.status is not IngestStatus.ACCEPTED
        ):
            continue
        seconds = max(0, now - event.watermark) / 1000
        sink.add_metric(name=MetricName.CDC_LAG, unit="Seconds", value=seconds)
        logger.info(
            "cdc lag recovered",
            extra={"asset_key": event.asset_key, "watermark": event.watermark, "lag_seconds": seconds},
        )
