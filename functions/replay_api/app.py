"""Replay API: POST /triggers/{triggerKey}/replay → pre-flight the pinned inputs, then claim the replay.

A function of its own (same routes module as the ingest API) because the pre-flight reads Iceberg /
Paimon tables and spooled objects: it carries the lakehouse layer and those read permissions, which
the public ingest API does not need. It traces requests' calls too: pyiceberg reads a REST catalog with it.
Its one route's module (``triggers``) is included at init: every request of this function is served by it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lakehook.api.app import build_app
from lakehook.container import prewarm
from lakehook.observability import logger, metrics, tracer

prewarm("table", "manifest_store")  # its clients at init, not in the first invocation (Lambda only)

app = build_app(include=("triggers",))


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
@tracer(patch_modules=("botocore", "requests")).capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
