"""A webhook receiver's side of the contract, for any web framework (and WSGI directly).

:meth:`WebhookReceiver.handle` takes the request's headers and raw body and answers what lakehook expects:

- 401 unless ``X-Lakehook-Signature`` signs the body with the target's secret (lakehook fails such a
  trigger for good: a wrong secret is not fixed by retrying);
- 400 for a body that is not an invocation, or an ``Idempotency-Key`` that is not its ``triggerKey``;
- the first delivery of a trigger key calls ``start(invocation)`` and answers 200 ``{"runId", "triggerKey"}``;
- a key already answered gets the same 200 again; a key whose first delivery is still being handled gets
  409 (lakehook counts both as "already started", never as a failure);
- ``start`` raising answers 503 and forgets the key, so lakehook's retry starts it.

``start`` should be quick (hand the work to a queue or a thread): lakehook waits ``timeoutSeconds`` (10 by
default) and then sends the same key again; the store turns that second delivery into a 409.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.client.signing import (
    DEFAULT_TOLERANCE_SECONDS,
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    SignatureError,
    verify_signature,
)
from lakehook.receiver.dedup import DedupStore, InMemoryDedupStore
from lakehook.receiver.payload import InvalidPayloadError, Invocation, parse_invocation

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1024 * 1024
StartRun = Callable[[Invocation], "str | Mapping[str, Any] | None"]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status and a JSON body."""

    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})

    def content(self) -> bytes:
        return json.dumps(dict(self.body), sort_keys=True).encode()


class WebhookReceiver:
    """Verifies, parses and deduplicates webhook deliveries; calls ``start`` once per trigger key.

    ``start`` answers the run id (a string), a JSON object to answer (it should carry ``runId``), or None
    (the trigger key is the run id).
    """

    def __init__(
        self,
        secret: str | bytes,
        start: StartRun,
        store: DedupStore | None = None,
        *,
        tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._start = start
        self.store = store or InMemoryDedupStore()
        self._tolerance = tolerance_seconds
        self._clock = clock

    def handle(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """The answer to one delivery (headers in any case)."""
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            verify_signature(
                self._secret,
                body,
                lowered.get(SIGNATURE_HEADER.lower()),
                now=self._clock(),
                tolerance_seconds=self._tolerance,
            )
        except SignatureError as exc:
            return Answer(401, {"message": str(exc)})
        try:
            invocation = parse_invocation(body)
        except InvalidPayloadError as exc:
            return Answer(400, {"message": f"not a lakehook invocation: {exc}"})
        key = invocation.trigger_key
        idempotency_key = lowered.get(IDEMPOTENCY_HEADER.lower())
        if idempotency_key is not None and idempotency_key != key:
            return Answer(400, {"message": f"{IDEMPOTENCY_HEADER} is not the payload's triggerKey"})
        seen = self.store.begin(key)
        if seen is not None:
            if seen.in_progress:
                return Answer(409, {"message": "this trigger key is being started already", "triggerKey": key})
            return Answer(200, seen.answer or {"triggerKey": key})
        try:
            started = self._start(invocation)
        except Exception as exc:  # the user's code: anything it raises means the run did not start
            self.store.release(key)
            log.warning("run did not start", extra={"trigger_key": key, "reason": str(exc)})
            return Answer(503, {"message": f"the run did not start: {type(exc).__name__}", "triggerKey": key})
        if isinstance(started, Mapping):
            answer: dict[str, Any] = {"runId": key, **started, "triggerKey": key}
        else:
            answer = {"runId": str(started) if started is not None else key, "triggerKey": key}
        self.store.finish(key, answer)
        return Answer(200, answer)

    def wsgi(self, path: str | None = None) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
        """A WSGI application serving ``handle`` on POST (on ``path`` only, when given)."""

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            answer = self._wsgi_answer(environ, path)
            content = answer.content()
            headers = [*answer.headers.items(), ("Content-Length", str(len(content)))]
            start_response(f"{answer.status} {_REASONS.get(answer.status, 'Unknown')}", headers)
            return [content]

        return app

    def _wsgi_answer(self, environ: dict[str, Any], path: str | None) -> Answer:
        if path is not None and environ.get("PATH_INFO", "") != path:
            return Answer(404, {"message": "not found"})
        if environ.get("REQUEST_METHOD") != "POST":
            return Answer(405, {"message": "POST only"}, {"Content-Type": "application/json", "Allow": "POST"})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return Answer(400, {"message": "bad Content-Length"})
        if length > MAX_BODY_BYTES:
            return Answer(413, {"message": f"the body is over {MAX_BODY_BYTES} bytes"})
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {k[5:].replace("_", "-"): str(v) for k, v in environ.items() if k.startswith("HTTP_")}
        return self.handle(headers, body)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    503: "Service Unavailable",
}
