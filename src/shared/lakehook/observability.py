"""Logger, metrics and tracer shared by every function (Powertools).

The tracer is built only by the functions that trace (the HTTP APIs): building it imports the X-Ray SDK,
which the other functions never use. It patches only the libraries the function calls out through: by
default botocore (every AWS call); patching everything the SDK supports would also import requests and
sqlite3 at init for a function that never uses them.
"""

from __future__ import annotations

import os
import warnings
from functools import cache
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

NAMESPACE = "Lakehook"

# Management routes emit no metrics; Powertools would warn on every such invocation.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service="lakehook")
metrics = Metrics(namespace=NAMESPACE, service="lakehook")


def trace_id() -> str | None:
    """The invocation's X-Ray trace id (the ``Root`` of ``_X_AMZN_TRACE_ID``, which Lambda sets per request)."""
    from lakehook.domain.log_context import root_trace_id

    return root_trace_id(os.environ.get("_X_AMZN_TRACE_ID"))


@cache
def tracer(patch_modules: tuple[str, ...] = ("botocore",)) -> Tracer:
    """The functions' X-Ray tracer (off where POWERTOOLS_TRACE_DISABLED is set or outside Lambda), with a
    subsegment for each call through ``patch_modules``."""
    from aws_lambda_powertools import Tracer

    return Tracer(service="lakehook", disabled=None, patch_modules=patch_modules)


class MetricName:
    """The RFC's metric names (seed 000, section 6.1)."""

    EVENT_RECEIVED = "lakehouse_asset_event_received_total"
    EVENT_DEDUPLICATED = "lakehouse_asset_event_deduplicated_total"
    EVENT_INVALID = "lakehouse_asset_event_invalid_total"
    EVENT_STALE = "lakehouse_asset_event_stale_total"
    STATE_UPDATED = "lakehouse_asset_state_updated_total"
    RULE_EVALUATION_ERROR = "lakehouse_rule_evaluation_error_total"
    RULES_OVERDUE = "lakehouse_rules_overdue"  # rules past their expectedBy / maxWaitSeconds, per freshness check
    ASSETS_OVERDUE = "lakehouse_assets_overdue"  # assets past their maxAgeSeconds, per freshness check
    RULES_UNCHECKED = "lakehouse_rules_unchecked"  # rules whose freshness could not be checked (logged why)
    # polled assets whose source is BLOCKED or has a GAP (domain.source_health), per freshness check (logged which)
    SOURCES_UNTRUSTED = "lakehouse_asset_sources_untrusted"
    # The RFC's waits (section 6.3's alarms), each the longest at one freshness check (gauges: take the maximum).
    STATE_LAG = "lakehouse_asset_state_lag_seconds"  # the age of a registered asset's newest snapshot
    WATERMARK_LAG = "lakehouse_asset_watermark_lag_seconds"  # how far an asset's watermark is behind the clock
    # at each accepted CDC_LAG_RECOVERED: how far its watermark (where the CDC source caught up to) is behind the
    # clock as lakehook takes it in, the lag the source still had when it declared itself recovered
    CDC_LAG = "lakehouse_asset_cdc_lag_seconds"
    # how long a group of an enabled rule has been BLOCKED_BY_QUALITY (0: none is)
    BLOCKED_BY_QUALITY = "lakehouse_asset_dependency_blocked_by_quality_seconds"
    COMMIT_NOTICE_POLLED = "lakehouse_commit_notice_polled_total"  # a Glue / S3 commit notice queued a poll
    COMMIT_NOTICE_IGNORED = "lakehouse_commit_notice_ignored_total"  # one that named no registered table
    # a bus event naming a producer's source, put from an account the producer does not take events from
    BUS_EVENT_FOREIGN_ACCOUNT = "lakehouse_bus_event_foreign_account_total"
    # a Glue Data Quality result's verdict not recorded: for no registered table, or no snapshot it can be pinned to
    QUALITY_VERDICT_UNRECORDED = "lakehouse_quality_verdict_unrecorded_total"
    # a started run of a rule with confirm whose window passed with no outlet commit carrying its trigger key
    RUN_NOT_ADVANCED = "lakehouse_run_not_advanced_total"
