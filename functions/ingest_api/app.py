"""Ingest API: API Gateway → the lakehook HTTP routes (push, producers, assets, watermarks)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.api.app import build_app
from lakehook.container import prewarm
from lakehook.observability import logger, metrics, tracer

prewarm("table", "secret_store", "verification_queue")  # its clients at init, not in the first invocation (Lambda only)

app = build_app()


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
