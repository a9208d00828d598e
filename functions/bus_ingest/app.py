"""Bus ingest: "Lakehook Asset Events" put on the stack's EventBridge bus by AWS-native writers -> pushes
(``usecases.bus_ingest``: what one becomes, and what is counted and logged of it)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.observability import logger, metrics
from lakehook.usecases.bus_ingest import account_of, report_bus_event

prewarm("table", "verification_queue")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # the stack's own account: a producer without busAccounts takes events put from it only
    return report_bus_event(current().ingest_bus_events(event, account_of(context.invoked_function_arn)))
