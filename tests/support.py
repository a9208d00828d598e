"""Test helpers shared across suites: the table from template.yaml, request counting, signing."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lakehook.domain.signing import sign
from lakehook.local.template import Template

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Template.load(ROOT / "template.yaml")


def create_table(dynamodb_client: Any, table_name: str) -> None:
    """Create the table exactly as template.yaml declares it (keys, index, stream, TTL)."""
    TEMPLATE.create_table(dynamodb_client, table_name)


def mark_claims_succeeded(table: Any) -> int:
    """Do what the dispatcher does once each claimed run started: mark every TRIGGERING claim SUCCEEDED, noted as
    releasing its group's next version as the dispatcher notes an EACH_VERSION rule's (``releasesNext``: that
    write's stream record wakes the group's next version). Answers how many were marked."""
    marked = 0
    for item in table.scan()["Items"]:
        if item.get("itemType") == "TRIGGER" and item["status"] == "TRIGGERING":
            table.update_item(
                Key={"PK": item["PK"], "SK": item["SK"]},
                UpdateExpression="SET #s = :s, releasesNext = :r",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": "SUCCEEDED", ":r": True},
            )
            marked += 1
    return marked


class RequestCounter:
    """Counts AWS API calls a boto3 client makes, by operation name (stable on noisy machines)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.written = 0  # DynamoDB items the counted requests asked to write (a transaction's each, a batch's each)
        self._lock = threading.Lock()

    def attach(self, client: Any) -> RequestCounter:
        client.meta.events.register("before-call.*.*", self._count)
        client.meta.events.register("before-parameter-build.*.*", self._count_items)  # the request's own parameters
        return self

    def _count(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls[model.name] += 1

    def _count_items(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.written += written_items(model.name, params)

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    @contextmanager
    def measure(self) -> Iterator[Counter[str]]:
        before = Counter(self.calls)
        delta: Counter[str] = Counter()
        yield delta
        delta.update(self.calls - before)


def written_items(operation: str, params: dict[str, Any]) -> int:
    """How many DynamoDB items one request asks to write: a transaction's and a batch's each count (a transaction of
    two items is two writes), a single-item write one, a read none."""
    if operation == "TransactWriteItems":
        return len(params.get("TransactItems", []))
    if operation == "BatchWriteItem":
        return sum(len(requests) for requests in params.get("RequestItems", {}).values())
    return 1 if operation in ("PutItem", "UpdateItem", "DeleteItem") else 0


def signed_headers(producer_id: str, secret: str, body: bytes, at: int | None = None) -> dict[str, str]:
    ts = int(time.time()) if at is None else at
    return {
        "Content-Type": "application/json",
        "X-Lakehook-Producer": producer_id,
        "X-Lakehook-Signature": sign(secret, body, ts),
    }


def api_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    raw: str | None = None,
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event, as API Gateway or the local runtime sends it."""
    text = raw if raw is not None else (None if body is None else json.dumps(body))
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers or {},
        "multiValueHeaders": {k: [v] for k, v in (headers or {}).items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method,
            "path": path,
            "stage": "local",
            "requestId": "test-request",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": text,
        "isBase64Encoded": False,
    }


class FakeLambdaContext:
    """The attributes of a Lambda context that Powertools reads (logger, metrics, tracer)."""

    function_name = "lakehook-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:lakehook-test"
    aws_request_id = "test-request"
    log_group_name = "/aws/lambda/lakehook-test"
    log_stream_name = "test"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


_HANDLERS: dict[str, Any] = {}


def load_handler(function: str) -> Any:
    """``functions/<function>/app.py``'s ``lambda_handler``, imported from its file as Lambda would."""
    if function not in _HANDLERS:
        import importlib.util

        path = ROOT / "functions" / function / "app.py"
        spec = importlib.util.spec_from_file_location(f"lakehook_function_{function}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _HANDLERS[function] = module.lambda_handler
    return _HANDLERS[function]
