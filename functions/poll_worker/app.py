"""Poll worker: SQS batches of tables → poll (or compensate) each, isolated; partial batch failures."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.domain.errors import ValidationError
from lakehook.observability import logger, metrics
from lakehook.usecases.plan_polls import WorkMode, parse_after, parse_safety_net, parse_work

prewarm("table")  # its clients at init, not in the first invocation (Lambda only)

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    try:
        mode, asset_keys = parse_work(record.json_body)
        after = parse_after(record.json_body) if mode is WorkMode.FILL else None
        safety_net = parse_safety_net(record.json_body)
    except (ValidationError, ValueError) as exc:  # a malformed message never succeeds: log it, do not retry it
        logger.error("poll message dropped", extra={"reason": str(exc), "message_id": record.message_id})
        return
    summary = current().run_poll_work(mode, asset_keys, after, safety_net=safety_net)
    logger.info("poll work done", extra=summary)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
