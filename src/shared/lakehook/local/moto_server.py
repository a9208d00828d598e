"""The local stack's moto server, closed to web pages.

moto's server wraps every backend in flask-cors (``CORS(app)``: ``Access-Control-Allow-Origin: *`` on every
answer, preflights included) unless ``MOTO_DISABLE_GLOBAL_CORS`` was set before ``moto.settings`` was first
imported (getmoto/moto#8409; the local runtime imports moto long before). So any web page the developer
opened could read the local Secrets Manager, DynamoDB table and buckets, and with a DNS-rebinding name even
without CORS. Here moto's WSGI application sits behind :class:`BrowserGuard`, which

- answers ``403`` without reaching moto to a request whose ``Origin`` is not the server's own (a web page's
  fetch or form post, its ``OPTIONS`` preflight): AWS SDKs send no ``Origin``;
- answers ``403`` to a request whose ``Host`` is not a loopback name or address (``127.0.0.1``, ``[::1]``,
  ``localhost``, ``*.localhost``): a rebinding name that resolves to 127.0.0.1 is not;
- drops every ``Access-Control-*`` header from moto's answers (global CORS and a bucket's own CORS rules),
  so no browser is ever allowed to read one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from threading import Event, Thread
from typing import Any

from lakehook.domain.url_policy import is_loopback_host

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_REFUSED = b'{"message": "the local stack\'s moto server answers AWS clients on this machine, not web pages"}'


class BrowserGuard:
    """WSGI middleware in front of moto: see the module docstring. ``own_origins``: the server's own
    origins (``http://127.0.0.1:<port>``, ``http://localhost:<port>``), whose pages (moto's dashboard) stay
    same-origin."""

    def __init__(self, app: WsgiApp, own_origins: Callable[[], frozenset[str]]) -> None:
        self._app = app
        self._own_origins = own_origins

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        refusal = self.refusal(environ)
        if refusal is not None:
            start_response(
                "403 Forbidden",
                [("Content-Type", "application/json"), ("Content-Length", str(len(_REFUSED))), ("Vary", "Origin")],
            )
            return [_REFUSED]

        def without_cors(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, exc_info) if exc_info is not None else start_response(status, kept)

        return self._app(environ, without_cors)

    def refusal(self, environ: dict[str, Any]) -> str | None:
        """Why a request is refused (``origin`` / ``host``), or None."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin.rstrip("/").lower() not in self._own_origins():
            return "origin"
        host = str(environ.get("HTTP_HOST") or environ.get("SERVER_NAME") or "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if not is_loopback_host(name.strip("[]") or None):
            return "host"
        return None


class LocalMotoServer:
    """moto's ThreadedMotoServer, with its application behind :class:`BrowserGuard` (same start / stop)."""

    def __init__(self, ip_address: str = "127.0.0.1", port: int = 0) -> None:
        self._ip_address = ip_address
        self._port = port
        self._server: Any = None
        self._thread: Thread | None = None
        self._ready = Event()
        self._error: BaseException | None = None

    def _own_origins(self) -> frozenset[str]:
        port = self.get_host_and_port()[1]
        return frozenset(f"http://{host}:{port}" for host in ("127.0.0.1", "localhost", "[::1]"))

    def _serve(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        app = BrowserGuard(DomainDispatcherApplication(create_backend_app), self._own_origins)
        try:
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
        except BaseException as exc:  # the port is taken, say: start() raises it
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._server.serve_forever()

    def start(self) -> None:
        self._thread = Thread(target=self._serve, name="local-moto", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:  # werkzeug exits (SystemExit) after printing the OSError
            cause = self._error.__context__ or self._error
            raise OSError(f"moto could not listen on {self._ip_address}:{self._port}: {cause}") from self._error

    def get_host_and_port(self) -> tuple[str, int]:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def stop(self) -> None:
        self._ready.clear()
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join()
