"""Deferral sweep: mark due quiet-period and cooldown re-evaluations, which wakes the resolver via the stream."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.observability import logger, metrics
from lakehook.wiring_rules import sweep_deferred


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    due = sweep_deferred()
    logger.info("deferrals swept", extra={"due": due})
    return {"due": due}
