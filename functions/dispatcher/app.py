"""Dispatcher: DynamoDB stream of new claims → run manifest in S3 → start the run → mark SUCCEEDED / FAILED."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import prewarm
from lakehook.handlers import handle_dispatch_batch
from lakehook.observability import logger, metrics

prewarm("table", "manifest_store", "secret_store")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_dispatch_batch(event)
