"""Poll planner: on each schedule, queue every registered table for the poll workers (fan-out); on a commit
the lakehouse announced (a Glue table change, an S3 commit file, through EventBridge), queue exactly the
tables it names."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.domain.time import parse_instant_ms
from lakehook.observability import MetricName, logger, metrics
from lakehook.usecases.plan_polls import WorkMode

prewarm("table", "work_queue")  # its clients at init, not in the first invocation (Lambda only)

NOTICE_SOURCES = ("aws.glue", "aws.s3")


def scheduled_tick(event: dict[str, Any]) -> int | None:
    """The tick a Scheduled Event stands for (its ``time``: the same on a retry of it), else None (now)."""
    try:
        return parse_instant_ms(event["time"])
    except (KeyError, ValueError):
        return None


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("source") in NOTICE_SOURCES:
        notice = current().plan_notified_polls(event)
        metrics.add_metric(
            name=MetricName.COMMIT_NOTICE_IGNORED if notice.ignored else MetricName.COMMIT_NOTICE_POLLED,
            unit="Count",
            value=1,
        )
        logger.info("commit notice", extra=notice.to_log())
        return notice.to_log()
    mode = WorkMode(event.get("mode", WorkMode.POLL))  # the schedule's Input; a bare Scheduled Event polls
    report = current().plan_polls(mode, scheduled_tick(event))
    logger.info("polls planned", extra={"mode": mode.value, "assets": report.assets, "messages": report.messages})
    return {"mode": mode.value, "assets": report.assets, "messages": report.messages}
