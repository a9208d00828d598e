"""Deferral sweep: mark due quiet-period, cooldown and schedule re-evaluations, which wakes the resolver via
the stream; on its freshness schedule (every 5 minutes), count what is overdue (rules and assets), measure the longest
waits (state lag, watermark lag, blocked by quality) for the metrics and alarms, and mark NOT_ADVANCED the started
runs whose confirm window passed with no outlet commit carrying their trigger key (it reads the claims of every rule
with ``confirm`` of the ledger's lookback: every 5 minutes, not every minute, for a fifth of the reads).
``usecases.deferral_sweep.SweepOnSchedule`` tells the two schedules apart."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.observability import logger, metrics

prewarm("table")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return current().deferral_sweep(event)
