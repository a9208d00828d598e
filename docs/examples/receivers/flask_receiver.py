"""A webhook receiver in Flask (FastAPI works the same way: hand ``handle`` the headers and the raw body).

Deliveries are deduplicated across processes and hosts through DynamoDB when ``DEDUP_TABLE`` is set (a
table with a string partition key ``pk``, TTL on ``expiresAt``); in memory otherwise.

    LAKEHOOK_URL=... LAKEHOOK_TARGET_SECRET=... DEDUP_TABLE=lakehook-receiver flask --app flask_receiver run
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, request

from lakehook.receiver import (
    CompletionClient,
    DedupStore,
    DynamoDBDedupStore,
    InMemoryDedupStore,
    Invocation,
    WebhookReceiver,
    snapshot_outlet,
)

OUTLET = "paimon://lake/dws_db/dws_gmv_daily"


def dedup_store(dynamodb_client: Any = None) -> DedupStore:
    table = os.environ.get("DEDUP_TABLE")
    if not table:
        return InMemoryDedupStore()
    if dynamodb_client is None:
        import boto3

        dynamodb_client = boto3.client("dynamodb")
    return DynamoDBDedupStore(dynamodb_client, table)


def create_app(
    secret: str, api_url: str, store: DedupStore | None = None, run: Callable[[Invocation], int] | None = None
) -> Flask:
    completions = CompletionClient(api_url)

    def start(invocation: Invocation) -> dict[str, Any]:
        # A real app hands this to a worker (Celery, a queue, a thread); the run below is quick.
        snapshot = run(invocation) if run else max(p.snapshot_id or 0 for p in invocation.inputs)
        completions.complete(invocation, "SUCCEEDED", [snapshot_outlet(OUTLET, snapshot)])
        return {"runId": f"flask-{invocation.trigger_key}"}

    receiver = WebhookReceiver(secret, start, store or dedup_store())
    app = Flask(__name__)

    @app.post("/hooks/gmv")
    def hook() -> Response:
        answer = receiver.handle(dict(request.headers), request.get_data())
        return Response(answer.content(), status=answer.status, headers=dict(answer.headers))

    return app


if os.environ.get("LAKEHOOK_TARGET_SECRET"):  # `flask --app flask_receiver run`
    app = create_app(os.environ["LAKEHOOK_TARGET_SECRET"], os.environ["LAKEHOOK_URL"])
