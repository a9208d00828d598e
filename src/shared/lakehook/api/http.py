"""Small HTTP helpers shared by the routes: auth, bodies, JSON answers."""

from __future__ import annotations

import base64
import json
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from lakehook.container import current
from lakehook.domain.errors import (
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
    ValidationError,
)
from lakehook.domain.json_input import decode_utf8


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, separators=(",", ":")),
        headers=headers,
    )


def raw_body(event: APIGatewayProxyEvent) -> bytes:
    """The body exactly as sent: the bytes a signature covers. Bytes that cannot be recovered are a 400."""
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except ValueError as exc:
            raise ValidationError("request body is marked base64 but is not valid base64", field="body") from exc
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the bytes on the wire were not UTF-8
        raise ValidationError("request body is not UTF-8; send UTF-8 JSON", field="body") from exc


def check_body(event: APIGatewayProxyEvent) -> None:
    """Size, media type, encoding and JSON limits of a request body (if it has one); raises the 4xx error."""
    data = raw_body(event)
    if not data:
        return
    limit = current().settings.max_body_bytes
    if len(data) > limit:
        raise PayloadTooLargeError(f"request body is {len(data)} bytes; the limit is {limit}")
    encoding = str(event.get_header_value("Content-Encoding", default_value="", case_sensitive=False) or "")
    if encoding.strip().lower() not in ("", "identity"):
        raise UnsupportedMediaTypeError(f"Content-Encoding {encoding!r} is not supported; send the body uncompressed")
    content_type = str(event.get_header_value("Content-Type", default_value="", case_sensitive=False) or "")
    if content_type and "json" not in content_type.lower():
        raise UnsupportedMediaTypeError(f"Content-Type {content_type!r} is not supported; send application/json")
    decode_utf8(data)
    _ = event.json_body  # parsed once with the bounded parser (the resolver's deserializer) and cached


def json_body(event: APIGatewayProxyEvent) -> Any:
    """The parsed JSON body (bounded: see ``lakehook.domain.json_input``); an empty body is a 400."""
    data = raw_body(event)
    if not data.strip():
        raise ValidationError("request body is empty; expected JSON", field="body")
    decode_utf8(data)
    return event.json_body
