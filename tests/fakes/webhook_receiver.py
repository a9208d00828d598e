"""A webhook receiver that keeps the contract lakehook's webhook target relies on.

- It checks ``X-Lakehook-Signature`` (HMAC-SHA256 of ``"<t>.<raw body>"`` with the shared secret, as
  lakehook's push API does) and answers 401 when it does not verify.
- It requires ``Idempotency-Key`` (400 without) and remembers every key: the first request for a key
  starts a run (202 ``{"runId": ...}``), any later one answers 409 with the same run id.
- ``script`` queues misbehaviour for the next requests: ``"503"`` (fails before acting), ``"503-after"``
  (starts the run, then answers 503), ``"429"`` (``Retry-After: 0``), ``"400"``, ``"302"``, ``"slow-after"``
  (starts the run, then answers later than the client waits).
"""

from __future__ import annotations

import time
from collections import Counter

from lakehook.domain.errors import AuthenticationError
from lakehook.domain.signing import verify
from tests.fakes.http_server import FakeServer, Handler, Request, Response


class WebhookReceiver(FakeServer):
    def __init__(self, secret: str, slow_seconds: float = 1.0) -> None:
        super().__init__()
        self.secret = secret
        self.slow_seconds = slow_seconds
        self.runs: Counter[str] = Counter()
        self.run_ids: dict[str, str] = {}
        self.payloads: list[dict[str, object]] = []
        self.script: list[str] = []

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {("POST", "/hooks/{name}"): self.receive}

    def receive(self, request: Request) -> Response:
        try:
            verify(self.secret, request.body, request.headers.get("x-lakehook-signature"), int(time.time()))
        except AuthenticationError as exc:
            return Response(401, {"error": str(exc)})
        key = request.headers.get("idempotency-key")
        if not key:
            return Response(400, {"error": "Idempotency-Key is required"})
        with self.lock:
            action = self.script.pop(0) if self.script else None
            if action == "503":
                return Response(503, {"error": "unavailable"})
            if action == "429":
                return Response(429, {"error": "slow down"}, headers={"Retry-After": "0"})
            if action == "400":
                return Response(400, {"error": "unknown pipeline"})
            if action == "302":
                return Response(302, None, headers={"Location": "https://elsewhere.example.com/"})
            if key in self.run_ids:
                return Response(409, {"runId": self.run_ids[key], "error": "already started"})
            self.runs[key] += 1
            self.run_ids[key] = f"wh-{len(self.run_ids) + 1}"
            self.payloads.append(request.json())
            run_id = self.run_ids[key]
        if action == "503-after":
            return Response(503, {"error": "internal error after enqueueing"})
        if action == "slow-after":
            return Response(202, {"runId": run_id}, delay=self.slow_seconds)
        return Response(202, {"runId": run_id})
