"""Dispatcher: DynamoDB stream of new claims → run manifest in S3 → start the run → mark SUCCEEDED / FAILED."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.observability import logger, metrics
from lakehook.wiring_dispatch import handle_dispatch_batch


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_dispatch_batch(event)
