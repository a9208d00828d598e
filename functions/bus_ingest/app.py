"""Bus ingest: "Lakehook Asset Events" put on the stack's EventBridge bus by AWS-native writers -> pushes."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.event_metrics import count_results
from lakehook.observability import MetricName, logger, metrics
from lakehook.usecases.bus_ingest import BusReport, account_of

prewarm("table", "verification_queue")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # the stack's own account: a producer without busAccounts takes events put from it only
    report: BusReport = current().ingest_bus_events(event, account_of(context.invoked_function_arn))
    if report.rejected:
        # Never raised: EventBridge would retry an event that can only fail the same way.
        metrics.add_metric(name=MetricName.EVENT_INVALID, unit="Count", value=1)
        if report.unbound_account:
            metrics.add_metric(name=MetricName.BUS_EVENT_FOREIGN_ACCOUNT, unit="Count", value=1)
        logger.warning("bus event rejected", extra=report.to_log())
    elif report.unrecorded_verdicts:
        # a Glue Data Quality result for no registered table, or that no snapshot can be pinned to: visible here
        count_results(report.results)
        unrecorded = sum(1 for v in report.verdicts if v.get("status") != "RECORDED")
        metrics.add_metric(name=MetricName.QUALITY_VERDICT_UNRECORDED, unit="Count", value=unrecorded)
        logger.warning("quality verdict not recorded", extra=report.to_log())
    else:
        count_results(report.results)
        logger.info("bus event ingested", extra=report.to_log())
    return report.to_log()
