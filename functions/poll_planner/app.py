"""Poll planner: on each schedule, queue every registered table for the poll workers (fan-out); on a commit
the lakehouse announced (a Glue table change, an S3 commit file, through EventBridge), queue exactly the
tables it names (``usecases.plan_polls.PlanPollsFor`` tells the two apart)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.observability import logger, metrics

prewarm("table", "work_queue")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    done = current().plan_polls_for(event)
    for name in done.counted:
        metrics.add_metric(name=name, unit="Count", value=1)
    logger.info(done.message, extra=done.answer)
    return done.answer
