"""Opaque page tokens: a DynamoDB LastEvaluatedKey as URL-safe base64 JSON."""

from __future__ import annotations

import base64
import json
from typing import Any

from lakehook.domain.errors import ValidationError


def encode_token(last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps(last_key, separators=(",", ":"), sort_keys=True, default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, expect: dict[str, str | None] | None = None) -> dict[str, Any] | None:
    """The start key a token stands for. ``expect`` names the key attributes the listing's keys have,
    each with the value it must hold (or None for any): DynamoDB answers a malformed start key with
    a ValidationException (a 500), so a token from another listing must be a 400 here."""
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = json.loads(raw)
    except (ValueError, json.JSONDecodeError) as exc:
        raise ValidationError("nextToken is not a token this API issued", field="nextToken") from exc
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValidationError("nextToken is not a token this API issued", field="nextToken")
    if expect is not None and (
        set(value) != set(expect) or any(want is not None and value[k] != want for k, want in expect.items())
    ):
        raise ValidationError("nextToken belongs to another listing", field="nextToken")
    return value
