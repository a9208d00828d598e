"""The console's HTTP server: the page and its files, and ``/api/*`` forwarded to the lakehook API.

The browser only ever talks to this server (same origin). It forwards each ``/api/<path>`` the page uses to
the API with the caller's credentials (the local stack's admin token, or SigV4 with the caller's AWS
credentials for a deployed stack), so nothing new is exposed on AWS and no credential reaches the page.

It forwards only the method and path pairs the pages call (``lakehook.console.allowlist``): reads, and the
three changes the console makes (evaluate a rule, retry and replay a trigger). Anything else, a push to
``/asset-events`` or a producer's secret included, is refused before a credential is attached.

It listens on loopback only, and guards against other web pages the browser may have open: the ``Host``
header must name loopback (a DNS-rebinding page's host does not); a request another site started
(``Sec-Fetch-Site``) is refused; and a change must come from the console's own origin (``Origin`` equal to
``Host``) carrying ``X-Lakehook-Console`` with this server's session token, which only a page of this origin
can read (``/console.json``, no CORS): a cross-site form cannot set a header, and a cross-site script that
tries gets a CORS preflight this server never approves.
"""

from __future__ import annotations

import hmac
import json
import logging
import mimetypes
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lakehook.cli_commands.api import ApiClient, CliError
from lakehook.console.allowlist import refusal

STATIC = Path(__file__).resolve().parent / "static"
CONSOLE_HEADER = "X-Lakehook-Console"
MAX_BODY_BYTES = 1 << 20
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
_SHUTDOWN_POLL_SECONDS = 0.1  # how soon stop() returns: serve_forever checks for a shutdown this often

logger = logging.getLogger(__name__)

ClientFactory = Callable[[], ApiClient]


def auth_mode(api: ApiClient) -> str:
    """How the console reaches the API: ``admin token``, ``SigV4`` or ``none``."""
    if api.admin_token:
        return "admin token"
    return "SigV4" if api.uses_sigv4 else "none"


class ConsoleServer:
    """Serves the console on 127.0.0.1; ``new_client`` builds the API client each serving thread uses."""

    def __init__(self, new_client: ClientFactory, port: int = 0, host: str = "127.0.0.1") -> None:
        self._new_client = new_client
        self._clients = threading.local()
        probe = new_client()
        self.api_url = probe.url
        self.auth = auth_mode(probe)
        # Proves a change comes from a page this server served: only a same-origin page can read it.
        self.session_token = secrets.token_urlsafe(32)
        self._httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def client(self) -> ApiClient:
        """This thread's API client (a requests Session is not shared between threads)."""
        client: ApiClient | None = getattr(self._clients, "api", None)
        if client is None:
            client = self._clients.api = self._new_client()
        return client

    def is_session_token(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.session_token.encode())

    def start(self) -> ConsoleServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(_SHUTDOWN_POLL_SECONDS,), name="lakehook-console", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever(_SHUTDOWN_POLL_SECONDS)

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
        self._httpd.server_close()

    def __enter__(self) -> ConsoleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def forward(self, method: str, path_and_query: str, body: bytes | None) -> tuple[int, Any]:
        """One API call with the console's credentials; every answer is passed back as it came."""
        path, _, query = path_and_query.partition("?")
        target = path + (f"?{query}" if query else "")
        try:
            return self.client().request(method, target, raw=body, accept=tuple(range(400, 600)))
        except CliError as exc:  # unreachable, or no credentials to sign with
            return 502, {"error": "BAD_GATEWAY", "message": str(exc)}


def _handler(console: ConsoleServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "lakehook-console"

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_OPTIONS(self) -> None:  # a CORS preflight: never approved
            self._serve("OPTIONS")

        def _serve(self, method: str) -> None:
            if not _loopback_host(self.headers.get("Host")):
                self._refuse(403, "the console answers requests for 127.0.0.1 or localhost only")
                return
            # The request target as it came (no URL parsing, which reads //host/... as a host): the path the
            # allow-list checks is the path forwarded.
            path, _, query = self.path.partition("#")[0].partition("?")
            if path.startswith("/api/"):
                self._forward(method, path.removeprefix("/api"), query)
            elif method != "GET":
                self._refuse(405, f"{path} takes GET only; the console's API calls go to /api/", allow=("GET",))
            elif path == "/console.json":
                self._json(200, {"apiUrl": console.api_url, "auth": console.auth, "token": console.session_token})
            else:
                self._file(path)

        def _forward(self, method: str, path: str, query: str) -> None:
            refused = refusal(method, path)
            if refused is not None:
                self._refuse(refused.status, refused.message, allow=refused.allow)
                return
            site = self.headers.get("Sec-Fetch-Site")
            if site not in (None, "same-origin", "none"):  # "none": typed in the address bar
                self._refuse(403, f"a request another site started ({site}) is refused")
                return
            body: bytes | None = None
            if method != "GET":
                if not console.is_session_token(self.headers.get(CONSOLE_HEADER)):
                    self._refuse(
                        403, f"a change needs the {CONSOLE_HEADER} header with the session token the console's page has"
                    )
                    return
                origin = self.headers.get("Origin")
                if origin and not _same_origin(origin, self.headers.get("Host")):
                    self._refuse(403, f"a change from another origin ({origin}) is refused")
                    return
                length = _length(self.headers.get("Content-Length"))
                if length is None:
                    self._refuse(400, "Content-Length is not a number of bytes")
                    return
                if length > MAX_BODY_BYTES:
                    self._refuse(413, "the body is larger than the limit")
                    return
                body = self.rfile.read(length) if length else b"{}"
            status, answer = console.forward(method, path + (f"?{query}" if query else ""), body)
            self._json(status, answer)

        def _file(self, path: str) -> None:
            name = "index.html" if path in ("", "/") else path.lstrip("/")
            found = (STATIC / name).resolve()
            if not found.is_relative_to(STATIC) or not found.is_file():
                self._refuse(404, f"no such file: {path}")
                return
            data = found.read_bytes()
            kind = _TYPES.get(found.suffix) or mimetypes.guess_type(found.name)[0] or "application/octet-stream"
            self.send_response(200)
            self.send_header("Content-Type", f"{kind}; charset=utf-8" if kind.startswith("text/") else kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-cache")
            self._security_headers()
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, answer: Any, allow: tuple[str, ...] = ()) -> None:
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            if allow:
                self.send_header("Allow", ", ".join(allow))
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self._security_headers()
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self, status: int, message: str, allow: tuple[str, ...] = ()) -> None:
            code = {403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE"}
            self._json(status, {"error": code.get(status, "BAD_REQUEST"), "message": message}, allow)

        def _security_headers(self) -> None:
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header(
                "Content-Security-Policy",
                "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            )

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("console request", extra={"request": format % args})

    return Handler


def _loopback_host(host: str | None) -> bool:
    if not host:
        return False
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.lower() in LOOPBACK_HOSTS


def _length(header: str | None) -> int | None:
    text = (header or "0").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None


def _same_origin(origin: str, host: str | None) -> bool:
    """The page's origin is the console's own: ``http://`` and the host (and port) the request was sent to."""
    parts = urlsplit(origin)
    return parts.scheme == "http" and host is not None and parts.netloc.lower() == host.lower()
