"""Logger, metrics and tracer shared by every function (Powertools)."""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics, Tracer

NAMESPACE = "Lakehook"

# Management routes emit no metrics; Powertools would warn on every such invocation.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service="lakehook")
metrics = Metrics(namespace=NAMESPACE, service="lakehook")
tracer = Tracer(service="lakehook", disabled=None)


class MetricName:
    """The RFC's metric names (seed 000, section 6.1)."""

    EVENT_RECEIVED = "lakehouse_asset_event_received_total"
    EVENT_DEDUPLICATED = "lakehouse_asset_event_deduplicated_total"
    EVENT_INVALID = "lakehouse_asset_event_invalid_total"
    EVENT_STALE = "lakehouse_asset_event_stale_total"
    STATE_UPDATED = "lakehouse_asset_state_updated_total"
    RULE_EVALUATION_ERROR = "lakehouse_rule_evaluation_error_total"
