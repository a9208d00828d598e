"""Deferral sweep: mark due quiet-period, cooldown and schedule re-evaluations, which wakes the resolver via
the stream; on its freshness schedule (every 5 minutes), count what is overdue (rules and assets), measure the longest
waits (state lag, watermark lag, blocked by quality) for the metrics and alarms, and mark NOT_ADVANCED the started
runs whose confirm window passed with no outlet commit carrying their trigger key (it reads the claims of every rule
with ``confirm`` of the ledger's lookback: every 5 minutes, not every minute, for a fifth of the reads)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.freshness_metrics import publish_freshness
from lakehook.handlers import sweep_deferred, sweep_not_advanced
from lakehook.observability import logger, metrics

prewarm("table")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("check") == "freshness":  # the Freshness schedule's Input
        report = current().check_freshness()
        publish_freshness(report)
        if report.rules or report.assets or report.unchecked or report.untrusted:
            logger.warning("overdue", extra=report.to_log())
        logger.info("longest waits", extra=report.waits())
        not_advanced = sweep_not_advanced()
        return {
            "notAdvanced": len(not_advanced),
            "rulesOverdue": sorted(report.rules),
            "assetsOverdue": [o.asset_key for o in report.assets],
            "rulesUnchecked": sorted(report.unchecked),
            "waits": report.waits(),
        }
    due = sweep_deferred()
    logger.info("deferrals swept", extra={"due": due})
    return {"due": due}
