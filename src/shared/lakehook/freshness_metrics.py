"""The freshness check's metrics: what is overdue (counts) and the longest waits (seconds), as gauges of one check.

No asset key or rule id is a dimension: one time series per metric whatever the number of tables, and the alarms
read the maximum. The log line ``longest waits`` names whose each wait is (``GET /assets/state`` and explain say
more)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from lakehook.observability import MetricName, metrics

if TYPE_CHECKING:  # the deferral sweep imports this as its use case is built; the freshness check loads on its schedule
    from lakehook.usecases.freshness import FreshnessReport


class MetricSink(Protocol):
    """Powertools ``Metrics`` fits."""

    def add_metric(self, name: str, unit: str, value: float) -> Any: ...


def publish_freshness(report: FreshnessReport, sink: MetricSink = metrics) -> None:
    sink.add_metric(name=MetricName.RULES_OVERDUE, unit="Count", value=len(report.rules))
    sink.add_metric(name=MetricName.ASSETS_OVERDUE, unit="Count", value=len(report.assets))
    sink.add_metric(name=MetricName.RULES_UNCHECKED, unit="Count", value=len(report.unchecked))
    if report.sources_checked:  # 0 included, so the alarm sees the sources mended
        sink.add_metric(name=MetricName.SOURCES_UNTRUSTED, unit="Count", value=len(report.untrusted))
    if report.state_lag is not None:  # only assets with a committed snapshot have a state lag
        sink.add_metric(name=MetricName.STATE_LAG, unit="Seconds", value=report.state_lag.seconds)
    if report.watermark_lag is not None:  # only assets with a watermark have a watermark lag
        sink.add_metric(name=MetricName.WATERMARK_LAG, unit="Seconds", value=report.watermark_lag.seconds)
    if report.quality_blocked is not None:
        sink.add_metric(name=MetricName.BLOCKED_BY_QUALITY, unit="Seconds", value=report.quality_blocked.seconds)
    elif report.quality_gated:  # quality-gated rules, none blocked: 0, so the alarm sees a wait end
        sink.add_metric(name=MetricName.BLOCKED_BY_QUALITY, unit="Seconds", value=0)
