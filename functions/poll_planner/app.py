"""Poll planner: on each schedule, queue every registered table for the poll workers (fan-out)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current
from lakehook.observability import logger, metrics
from lakehook.usecases.plan_polls import WorkMode


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    mode = WorkMode(event.get("mode", WorkMode.POLL))  # the schedule's Input; a bare Scheduled Event polls
    report = current().plan_polls(mode)
    logger.info("polls planned", extra={"mode": mode.value, "assets": report.assets, "messages": report.messages})
    return {"mode": mode.value, "assets": report.assets, "messages": report.messages}
