"""Small HTTP helpers shared by the routes: auth, bodies, JSON answers."""

from __future__ import annotations

import base64
import hmac
import json
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from lakehook.container import current
from lakehook.domain.errors import AuthenticationError, PayloadTooLargeError, ValidationError


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, separators=(",", ":")),
        headers=headers,
    )


def raw_body(event: APIGatewayProxyEvent) -> bytes:
    """The body exactly as sent: the bytes a signature covers."""
    body = event.body or ""
    return base64.b64decode(body) if event.is_base64_encoded else body.encode("utf-8")


def check_body_size(event: APIGatewayProxyEvent) -> None:
    limit = current().settings.max_body_bytes
    size = len(raw_body(event))
    if size > limit:
        raise PayloadTooLargeError(f"request body is {size} bytes; the limit is {limit}")


def json_body(event: APIGatewayProxyEvent) -> Any:
    """The parsed JSON body; malformed JSON is a ValidationError (400)."""
    check_body_size(event)
    data = raw_body(event)
    if not data.strip():
        raise ValidationError("request body is empty; expected JSON", field="body")
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"request body is not valid JSON: {exc}", field="body") from exc


def is_admin(event: APIGatewayProxyEvent) -> bool:
    """Management credentials: the local bearer token, or an IAM identity API Gateway verified."""
    token = current().settings.admin_token
    if token:
        header = event.get_header_value("Authorization", default_value="", case_sensitive=False) or ""
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
    identity = event.request_context.identity
    return bool(identity.user_arn or identity.caller)


def require_admin(event: APIGatewayProxyEvent) -> None:
    if not is_admin(event):
        if current().settings.admin_token:
            raise AuthenticationError("management routes need 'Authorization: Bearer <admin token>'")
        raise AuthenticationError("management routes need an IAM-signed (SigV4) request")
