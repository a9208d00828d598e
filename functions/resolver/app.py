"""Resolver: DynamoDB stream batches of asset state changes and due deferrals → evaluate rules → claim; and the
messages of its own queue (SQS): the work one invocation carried over past its bound.

The batch is resolved as a whole rather than record by record (Powertools' BatchProcessor): the changed
assets are deduplicated and their rules' member states read in one BatchGetItem, and an EACH_VERSION rule
never sees a later version before an earlier one that failed. On an error the first record is reported
failed, so Lambda retries the batch in order; claims are idempotent.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.container import prewarm
from lakehook.handlers import handle_resolver_queue, handle_stream_batch
from lakehook.observability import logger, metrics

prewarm("table", "resolver_queue")  # its clients at init, not in the first invocation (Lambda only)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    records = event.get("Records") or []
    if records and records[0].get("eventSource") == "aws:sqs":
        return handle_resolver_queue(event, time_left=context.get_remaining_time_in_millis)
    return handle_stream_batch(event, time_left=context.get_remaining_time_in_millis)
