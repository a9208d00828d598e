"""Build the API resolver: routers, error mapping and the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from lakehook import __version__
from lakehook.api.http import check_body_size, json_response
from lakehook.api.routes import assets, events, producers, watermarks
from lakehook.domain.errors import (
    AuthenticationError,
    AuthorizationError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    ValidationError,
)
from lakehook.domain.events import EventResult, PushEnvelope
from lakehook.observability import logger

ERROR_STATUS: dict[type[Exception], tuple[int, str]] = {
    ValidationError: (400, "BAD_REQUEST"),
    AuthenticationError: (401, "UNAUTHENTICATED"),
    AuthorizationError: (403, "FORBIDDEN"),
    NotFoundError: (404, "NOT_FOUND"),
    ConflictError: (409, "CONFLICT"),
    PayloadTooLargeError: (413, "PAYLOAD_TOO_LARGE"),
}


def _error(status: int, code: str, message: str, field: str | None = None) -> Response[str]:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return json_response(body, status)


def _size_limit(app: APIGatewayRestResolver, next_middleware: Any) -> Any:
    check_body_size(app.current_event)
    return next_middleware(app)


def build_app() -> APIGatewayRestResolver:
    """The resolver with every route; handlers call ``resolve`` on it."""
    app = APIGatewayRestResolver(enable_validation=True)
    app.use(middlewares=[_size_limit])
    for module in (events, producers, assets, watermarks):
        app.include_router(module.router)

    for error_type, (status, code) in ERROR_STATUS.items():
        def handle(exc: Exception, status: int = status, code: str = code) -> Response[str]:
            logger.info("request refused", extra={"status": status, "reason": str(exc)})
            return _error(status, code, str(exc), getattr(exc, "field", None))

        app.exception_handler(error_type)(handle)

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[str]:
        problems = []
        fields = []
        for error in exc.errors():
            loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
            fields.append(".".join(loc))
            problems.append(f"{'.'.join(loc) or 'body'}: {str(error.get('msg', 'invalid')).removeprefix('Value error, ')}")
        return _error(400, "BAD_REQUEST", "; ".join(problems), fields[0] if fields else None)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        return Response(status_code=200, content_type="application/json", body=openapi_document(app))

    return app


def openapi_document(app: APIGatewayRestResolver) -> str:
    """The generated OpenAPI document, plus the push body that the push route parses itself."""
    spec = json.loads(app.get_openapi_json_schema(title="lakehook", version=__version__))
    operation = spec.get("paths", {}).get("/asset-events", {}).get("post")
    if operation is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": PushEnvelope.model_json_schema()}},
        }
        operation.setdefault("responses", {})["200"] = {
            "description": "one result per event",
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {"results": {"type": "array", "items": EventResult.model_json_schema(by_alias=True)}},
            }}},
        }
        operation["parameters"] = [
            {"name": "X-Lakehook-Producer", "in": "header", "required": False, "schema": {"type": "string"}},
            {"name": "X-Lakehook-Signature", "in": "header", "required": False,
             "schema": {"type": "string", "example": "t=1725963330,v1=<hex hmac-sha256>"}},
        ]
    return json.dumps(spec)
