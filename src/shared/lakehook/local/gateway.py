"""An HTTP server that plays API Gateway (REST, proxy integration) for the template's Api routes."""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lakehook.local.invoker import FunctionError, LocalFunction
from lakehook.local.template import ApiRoute

# Not an API route (no function serves it, the template does not declare it): the local stack's own
# description of itself, so the CLI can write secrets into the local stack's moto server.
LOCAL_INFO_PATH = "/_local/stack"

log = logging.getLogger("lakehook.local.gateway")

# API Gateway REST rejects larger payloads before the function sees them.
API_GATEWAY_MAX_BODY = 10 * 1024 * 1024
API_GATEWAY_TIMEOUT_SECONDS = 29  # the REST API integration timeout (its default and, until raised, its maximum)
_TEXT_TYPES = ("application/json", "text/", "application/xml", "application/x-www-form-urlencoded")


def proxy_event(
    method: str,
    raw_path: str,
    headers: dict[str, str],
    body: bytes,
    route: ApiRoute,
    path_params: dict[str, str],
    stage: str,
) -> dict[str, Any]:
    """The API Gateway REST v1 proxy event for one request."""
    split = urlsplit(raw_path)
    query = parse_qs(split.query, keep_blank_values=True)
    content_type = headers.get("Content-Type", headers.get("content-type", ""))
    is_text = not body or any(content_type.startswith(t) for t in _TEXT_TYPES)
    try:
        text = body.decode("utf-8") if is_text else None
    except UnicodeDecodeError:
        text = None
    return {
        "resource": route.path,
        "path": split.path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": path_params or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": route.path,
            "httpMethod": method,
            "path": f"/{stage}{split.path}",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent")},
            "accountId": "123456789012",
            "apiId": "local",
        },
        "body": (text if text is not None else base64.b64encode(body).decode()) if body else None,
        "isBase64Encoded": bool(body) and text is None,
    }


class ApiGateway:
    """Serves every Api route of every function; unknown routes answer 404 like a missing resource."""

    def __init__(
        self,
        functions: list[LocalFunction],
        host: str,
        port: int,
        stage: str = "local",
        local_info: dict[str, str] | None = None,
        admin_token: str | None = None,
    ) -> None:
        self.routes = [(route, fn) for fn in functions for route in fn.spec.routes]
        self.stage = stage
        self.local_info = local_info
        self.admin_token = admin_token
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, format: str, *args: Any) -> None:
                log.debug(format, *args)

            def _serve(self) -> None:
                gateway.serve(self)

            def __getattr__(self, name: str) -> Any:
                # http.server answers an HTML 501 for any method without a do_<METHOD>; API Gateway answers
                # every method itself, so every method is served here (TRACE, CONNECT, … included).
                if name.startswith("do_"):
                    return self._serve
                raise AttributeError(name)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self.server.serve_forever, name="lakehook-gateway", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one request as API Gateway would: its body read, its route found, its function invoked."""
        body = _read_body(request)
        if body is None:
            return
        path = urlsplit(request.path).path
        if path == LOCAL_INFO_PATH and self.local_info is not None:
            self._serve_local_info(request)
            return
        matched = self._route(request, path)
        if matched is None:
            return
        route, fn, params = matched
        headers = {k: v for k, v in request.headers.items()}
        event = proxy_event(request.command, request.path, headers, body, route, params, self.stage)
        _answer(request, fn, event)

    def _route(
        self, request: BaseHTTPRequestHandler, path: str
    ) -> tuple[ApiRoute, LocalFunction, dict[str, str]] | None:
        """The route serving the request's method and path, with its path parameters; None once answered 405 (the
        path is served for other methods) or 404 (no route has it)."""
        for route, fn in self.routes:
            params = route.match(request.command, path)
            if params is not None:
                return route, fn, params
        allowed = sorted({r.method.upper() for r, _ in self.routes if r.match(r.method, path) is not None})
        if allowed:
            message = f"{request.command} is not allowed on {path}; use {', '.join(allowed)}"
            _write(request, 405, {"error": "METHOD_NOT_ALLOWED", "message": message}, {"Allow": ", ".join(allowed)})
            return None
        _write(request, 404, {"error": "NOT_FOUND", "message": f"no route {request.command} {path}"})
        return None

    def _serve_local_info(self, request: BaseHTTPRequestHandler) -> None:
        """Where this stack's AWS services are (its moto server), for the CLI's ``secret put``; admin only."""
        if request.headers.get("Authorization") != f"Bearer {self.admin_token}":
            _write(request, 401, {"error": "UNAUTHENTICATED", "message": "needs 'Authorization: Bearer <admin token>'"})
            return
        _write(request, 200, dict(self.local_info or {}))


class BadRequestError(ValueError):
    """A request API Gateway answers 400 before any function sees it."""


_DECIMAL = re.compile(r"[0-9]+")


def body_length(values: list[str]) -> int:
    """The body's length from the request's ``Content-Length`` headers: none is 0, one must be a plain decimal
    number of bytes (not ``abc``, ``-5``, ``+5`` or ``0x10``), and two or more are refused (which one frames the
    body is ambiguous: the request-smuggling case), as API Gateway refuses each with a 400."""
    if len(values) > 1:
        raise BadRequestError(f"Content-Length is given {len(values)} times ({', '.join(map(repr, values))})")
    if not values:
        return 0
    raw = values[0].strip()
    if not _DECIMAL.fullmatch(raw):
        raise BadRequestError(f"Content-Length {values[0]!r} is not a number of bytes")
    return int(raw) if len(raw) <= 18 else sys.maxsize  # longer: too long in any case (413), int() may refuse


def _read_body(request: BaseHTTPRequestHandler) -> bytes | None:
    """The request's body; None once answered 400 (its length is not known: the connection closes) or 413."""
    try:
        length = body_length(request.headers.get_all("Content-Length") or [])
    except BadRequestError as exc:  # the body's end is unknown: answer, and close the connection
        request.close_connection = True
        _write(request, 400, {"message": f"Bad Request: {exc}"}, {"Connection": "close"})
        return None
    if length > API_GATEWAY_MAX_BODY:
        _write(request, 413, {"message": "Request Too Long"})
        return None
    return request.rfile.read(length) if length else b""


def _answer(request: BaseHTTPRequestHandler, fn: LocalFunction, event: dict[str, Any]) -> None:
    """Invoke the function and send its proxy answer, or answer as API Gateway answers a failed function (502, or
    504 when the function outlasts the integration timeout)."""
    try:
        answer = fn.invoke(event)
    except FunctionError as error:
        log.error("function %s failed: %s", fn.spec.name, error)
        if error.error_type == "Sandbox.Timedout" and fn.spec.timeout >= API_GATEWAY_TIMEOUT_SECONDS:
            _write(request, 504, {"message": "Endpoint request timed out"})  # API Gateway gave up first
        else:
            _write(request, 502, {"message": "Internal server error"})  # a failed function, never a hung client
        return
    except Exception:  # the runtime itself failed: API Gateway's 502 too
        log.exception("function %s could not be invoked", fn.spec.name)
        _write(request, 502, {"message": "Internal server error"})
        return
    _write_answer(request, answer)


def _write_answer(request: BaseHTTPRequestHandler, answer: dict[str, Any]) -> None:
    """The function's proxy answer as API Gateway sends it: its status, its headers (a multi-value header wins over
    the single-value one of the same name), its body decoded from base64 when so marked, none to a HEAD."""
    status = int(answer.get("statusCode", 200))
    payload = answer.get("body") or ""
    data = base64.b64decode(payload) if answer.get("isBase64Encoded") else str(payload).encode()
    request.send_response(status)
    sent = set()
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        for value in values:
            request.send_header(name, str(value))
        sent.add(name.lower())
    for name, value in (answer.get("headers") or {}).items():
        if name.lower() not in sent:
            request.send_header(name, str(value))
    request.send_header("Content-Length", str(len(data)))
    request.end_headers()
    if request.command != "HEAD":
        request.wfile.write(data)


def _write(
    request: BaseHTTPRequestHandler, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.send_header(name, value)
    request.send_header("Content-Length", str(len(data)))
    request.end_headers()
    request.wfile.write(data)
