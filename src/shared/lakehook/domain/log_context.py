"""The RFC's log context (seed 000, section 6) of a claimed trigger: what the claim and dispatch log lines carry
beside the trigger key, so one filter in CloudWatch Logs Insights follows a run from the request that caused it.

- ``traceId``: the request's trace id (the Lambda invocation's X-Ray trace, given by the caller: no asset event
  carries a trace id of its own today), None outside Lambda.
- ``partitionKey``: the partition a partitioned group's run is for (None: a whole-table run).
- ``schemaId`` and ``watermark``: per pinned asset (``{assetKey: value}``), the schema id and watermark of the
  version the trigger pins; an asset whose version has none is left out, and an empty mapping is None. A run reads
  several assets, so one value would name only one of them.
"""

from __future__ import annotations

from typing import Any

from lakehook.domain.triggers import Trigger


def trigger_log_context(trigger: Trigger, trace_id: str | None) -> dict[str, Any]:
    schema_ids = {p.asset_key: p.schema_id for p in trigger.inputs if p.schema_id is not None}
    watermarks = {p.asset_key: p.watermark for p in trigger.inputs if p.watermark is not None}
    return {
        "traceId": trace_id,
        "partitionKey": trigger.partition,
        "schemaId": schema_ids or None,
        "watermark": watermarks or None,
    }


def root_trace_id(header: str | None) -> str | None:
    """The ``Root`` of an X-Ray trace header (``Root=1-…;Parent=…;Sampled=0``, Lambda's ``_X_AMZN_TRACE_ID``);
    a header without one is taken whole, and an empty one is None."""
    if not header:
        return None
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == "Root" and value:
            return value
    return header.strip() or None
