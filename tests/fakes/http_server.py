"""A threaded HTTP server on 127.0.0.1 (port 0) with a tiny router, for the fake targets."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()}


@dataclass
class Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (after the work is done): a read timeout


Handler = Callable[[Request], Response]


class FakeServer:
    """Routes ``(method, path)`` to handlers; subclasses register routes in ``routes()``.

    ``requests`` keeps every request seen, in order. Use as a context manager.
    """

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.lock = threading.RLock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query={k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()},
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                with server.lock:
                    server.requests.append(request)
                response = server.dispatch(request)
                if response.delay:
                    threading.Event().wait(response.delay)
                payload = b"" if response.body is None else json.dumps(response.body).encode()
                try:
                    self.send_response(response.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its read timeout): the work is done all the same

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}"

    def dispatch(self, request: Request) -> Response:
        for (method, pattern), handler in self.routes().items():
            if method != request.method:
                continue
            match = _match(pattern, request.path)
            if match is not None:
                request.query.update(match)
                return handler(request)
        return Response(404, {"detail": "Not Found"})

    def routes(self) -> dict[tuple[str, str], Handler]:
        raise NotImplementedError

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _match(pattern: str, path: str) -> dict[str, str] | None:
    """``/a/{x}/b`` against ``/a/1/b`` -> ``{"x": "1"}``; None when it does not match."""
    want, got = pattern.strip("/").split("/"), path.strip("/").split("/")
    if len(want) != len(got):
        return None
    found: dict[str, str] = {}
    for w, g in zip(want, got, strict=True):
        if w.startswith("{") and w.endswith("}"):
            found[w[1:-1]] = unquote(g)
        elif w != g:
            return None
    return found
