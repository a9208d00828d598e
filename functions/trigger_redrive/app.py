"""Trigger compensator: re-drive claims stuck in TRIGGERING and retryable FAILED ones, asking each target first."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import prewarm
from lakehook.handlers import redrive_triggers
from lakehook.observability import logger, metrics

prewarm("table", "manifest_store", "secret_store")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = redrive_triggers()
    logger.info("triggers re-driven", extra=report)
    return report
