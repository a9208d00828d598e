"""Spool verifier: S3 notifications of new spool manifests, and queued requests for pushed ones → verify, record."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import current, prewarm
from lakehook.domain.errors import ValidationError
from lakehook.observability import logger, metrics

prewarm("table", "object_store")  # its clients at init, not in the first invocation (Lambda only)

processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    try:
        body = record.json_body
    except ValueError as exc:  # a malformed message never succeeds: log it, do not retry it
        logger.error("verification request dropped", extra={"reason": str(exc), "message_id": record.message_id})
        return
    try:
        current().record_manifest_verification.from_request(body)
    except ValidationError as exc:
        logger.error("verification request dropped", extra={"reason": str(exc), "message_id": record.message_id})


def is_s3_notification(event: dict[str, Any]) -> bool:
    records = event.get("Records") or []
    return bool(records) and all(r.get("eventSource") == "aws:s3" for r in records)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_s3_notification(event):
        # S3 retries a failed asynchronous invocation; verifying again is harmless.
        results = current().record_manifest_verification.from_notification(event)
        return {"verified": [r.to_record() for r in results]}  # each verification as it is recorded
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
