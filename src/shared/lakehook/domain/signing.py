"""HMAC request signatures: ``X-Lakehook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>``.

The signed message is ``"<t>.<raw body>"``; a signature is valid for a tolerance window
around the receiver's clock, so a captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac

from lakehook.domain.errors import AuthenticationError

SIGNATURE_HEADER = "X-Lakehook-Signature"
PRODUCER_HEADER = "X-Lakehook-Producer"
# A route that takes a signature (or a completion token) has no IAM authorizer on AWS, so it never sees an IAM
# identity; its IAM variant, the same path under this prefix, does (see lakehook.api.auth).
IAM_PREFIX = "/iam"
DEFAULT_TOLERANCE_SECONDS = 300


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The header value for a body signed at ``timestamp`` (unix seconds)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def parse_signature(header: str) -> tuple[int, list[str]]:
    """Split a header into its timestamp and v1 signatures (several allowed during rotation)."""
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            if not (value.isascii() and value.isdigit()):
                raise AuthenticationError("signature timestamp t= is not unix seconds")
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value.lower())
    if timestamp is None or not signatures:
        raise AuthenticationError("signature header must be t=<unix seconds>,v1=<hex hmac-sha256>")
    return timestamp, signatures


def verify(
    secret: str, body: bytes, header: str | None, now_seconds: int, tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS
) -> None:
    """Raise AuthenticationError unless the header signs the body within the tolerance."""
    if not header:
        raise AuthenticationError(f"missing {SIGNATURE_HEADER} header")
    timestamp, signatures = parse_signature(header)
    if abs(now_seconds - timestamp) > tolerance_seconds:
        raise AuthenticationError(f"signature timestamp is outside the {tolerance_seconds} s tolerance")
    expected = sign(secret, body, timestamp).split("v1=", 1)[1]
    # Compare bytes: compare_digest refuses str with non-ASCII characters (a TypeError, not a 401).
    if not any(hmac.compare_digest(expected.encode(), candidate.encode()) for candidate in signatures):
        raise AuthenticationError("signature does not match the body")
