"""lakehook.client.push against a real HTTP server on 127.0.0.1: signing, retries, identity."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lakehook.client import PushClient, PushRejectedError, PushUnavailableError, event_id
from lakehook.domain.events import AssetEvent
from lakehook.domain.signing import verify
from tests.fakes.http_server import FakeServer, Request, Response

SECRET = "s3cr3t"
ORDER = {
    "eventType": "SNAPSHOT_COMMITTED",
    "assetKey": "paimon://lake/ods_db/ods_order_latest",
    "snapshotId": 1001,
    "schemaId": 5,
    "commitTime": 1725963330123,
}


class FlakyIngest(FakeServer):
    """Answers ``failures`` with ``status`` first, then like the ingest route (ids the server would derive)."""

    def __init__(self, failures: int, status: int = 503, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.failures, self.status, self.headers = failures, status, headers or {}
        self.seen: set[str] = set()

    def routes(self) -> dict[tuple[str, str], Any]:
        return {("POST", "/asset-events"): self.ingest}

    def ingest(self, request: Request) -> Response:
        verify(SECRET, request.body, request.headers.get("x-lakehook-signature"), int(time.time()))
        assert request.headers["x-lakehook-producer"] == "writer"
        if self.failures > 0:
            self.failures -= 1
            return Response(self.status, {"error": "UNAVAILABLE", "message": "try later"}, self.headers)
        results = []
        for raw in request.json()["events"]:
            ident = AssetEvent.model_validate(raw).event_id
            results.append({"eventId": ident, "status": "DUPLICATE" if ident in self.seen else "ACCEPTED"})
            self.seen.add(ident)
        return Response(200, {"results": results})


def client(url: str, **kwargs: Any) -> tuple[PushClient, list[float]]:
    sleeps: list[float] = []
    options: dict[str, Any] = {"backoff_seconds": 0.01, **kwargs}
    return PushClient(url, "writer", SECRET, sleep=sleeps.append, **options), sleeps


def test_two_failures_then_success_is_one_event_with_a_stable_id() -> None:
    with FlakyIngest(failures=2) as server:
        push, sleeps = client(server.base_url)
        (result,) = push.send(ORDER)
        assert push.attempts == 3 and len(sleeps) == 2
        assert result.status == "ACCEPTED" and result.recorded
        # every attempt carried the same body, each freshly signed (verify() above accepted all three)
        bodies = {r.body for r in server.requests}
        assert len(server.requests) == 3 and len(bodies) == 1
        # the same event again (a job re-run, a retry after a lost answer) is a DUPLICATE of the same id
        (again,) = push.send(dict(ORDER))
        assert again.status == "DUPLICATE" and again.event_id == result.event_id


def test_client_identity_is_the_servers() -> None:
    events = [
        ORDER,
        {"eventType": "WATERMARK_ADVANCED", "assetKey": "custom://x/y", "watermark": "2025-06-01T10:00:00Z"},
        {"eventType": "TAG_CREATED", "assetKey": "custom://x/y", "tag": "daily-2025-06-01"},
        {
            "eventType": "INTERVAL_COVERED",
            "assetKey": "s3://spool/orders",
            "interval": {"start": "2025-06-01T10:05:00Z", "end": 1748772600000},
            "partitionKey": "dt=2025-06-01",
        },
        {"eventType": "MANIFEST_SEALED", "assetKey": "s3://spool/orders", "manifestUri": "s3://spool/m.json"},
    ]
    for event in events:
        assert event_id(event) == AssetEvent.model_validate(event).event_id, event["eventType"]
    assert event_id(ORDER) != event_id({**ORDER, "snapshotId": 1002})


def test_429_honours_retry_after_and_gives_up_after_max_attempts() -> None:
    with FlakyIngest(failures=10, status=429, headers={"Retry-After": "2"}) as server:
        push, sleeps = client(server.base_url, max_attempts=3, max_backoff_seconds=5)
        with pytest.raises(PushUnavailableError, match="3 attempts; last error 429"):
            push.send(ORDER)
        assert len(server.requests) == 3
        assert sleeps == [2.0, 2.0]  # the jittered delay is below 0.04 s: Retry-After is the floor


def test_a_refusal_is_not_retried() -> None:
    with FlakyIngest(failures=5, status=401) as server:
        push, sleeps = client(server.base_url)
        with pytest.raises(PushRejectedError) as refused:
            push.send(ORDER)
        assert refused.value.status == 401 and "try later" in str(refused.value)
        assert len(server.requests) == 1 and sleeps == []


def test_connection_errors_are_retried_with_growing_jittered_backoff() -> None:
    with FlakyIngest(failures=0) as server:
        url = server.base_url  # the port is free again once the server stops
    push, sleeps = client(url, max_attempts=4, backoff_seconds=1.0, max_backoff_seconds=3.0)
    with pytest.raises(PushUnavailableError, match="4 attempts"):
        push.send(ORDER)
    assert len(sleeps) == 3
    assert all(0 <= s <= ceiling for s, ceiling in zip(sleeps, (1.0, 2.0, 3.0), strict=True))


def test_a_malformed_event_fails_before_any_request() -> None:
    with FlakyIngest(failures=0) as server:
        push, _ = client(server.base_url)
        with pytest.raises(ValueError, match="snapshotId is required"):
            push.send({"eventType": "SNAPSHOT_COMMITTED", "assetKey": "custom://x/y"})
        assert server.requests == []


def test_the_client_imports_only_the_standard_library() -> None:
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "shared"
    probe = (
        "import sys; import lakehook.client; from lakehook.client import PushClient, snapshot_event_from_paimon; "
        "print(sorted(m for m in ('pydantic', 'boto3', 'botocore', 'requests', 'pyiceberg', 'pypaimon') "
        "if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(src)}
    )
    assert found.stdout.strip() == "[]"
