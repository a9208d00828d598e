"""The request signature of lakehook's contract, both ways, standard library only: ``X-Lakehook-Signature:
t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>``.

The one signing module of the client side: the push client (:mod:`lakehook.client.push`) signs its pushes with
:func:`sign`, the receiver (:mod:`lakehook.receiver`) checks webhook deliveries with :func:`verify_signature`.
It is the scheme lakehook's server checks on pushes and signs webhooks with (``lakehook.domain.signing``, held
to the same signatures by ``tests/unit/test_client_signing.py``). Verify the raw bytes as received, before
parsing them: any re-encoding changes the HMAC.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Lakehook-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
TRIGGER_KEY_HEADER = "X-Lakehook-Trigger-Key"
DEFAULT_TOLERANCE_SECONDS = 300


class SignatureError(ValueError):
    """The request is not signed by the secret (missing, malformed, stale or wrong signature)."""


def sign(secret: str | bytes, body: bytes, timestamp: int) -> str:
    """The header value lakehook sends for ``body`` at ``timestamp`` (for tests of your own receiver)."""
    key = secret.encode() if isinstance(secret, str) else secret
    mac = hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(
    secret: str | bytes,
    body: bytes,
    header: str | None,
    *,
    now: float | None = None,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> int:
    """Raise SignatureError unless ``header`` signs ``body`` with ``secret`` within the tolerance around
    ``now`` (default: the clock); answer the signature's timestamp. Several ``v1=`` values are accepted
    (any one matching is enough), so a secret can be rotated without a gap."""
    if not header:
        raise SignatureError(f"missing {SIGNATURE_HEADER} header")
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if name == "t" and value.isascii() and value.isdigit():
            timestamp = int(value)
        elif name == "v1":
            candidates.append(value.strip().lower())
    if timestamp is None or not candidates:
        raise SignatureError(f"{SIGNATURE_HEADER} must be t=<unix seconds>,v1=<hex hmac-sha256>")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise SignatureError(f"the signature's timestamp is more than {tolerance_seconds} s away from now")
    expected = sign(secret, body, timestamp).split("v1=", 1)[1].encode()
    # Compare bytes of ASCII only: compare_digest refuses non-ASCII text.
    if not any(c.isascii() and hmac.compare_digest(expected, c.encode()) for c in candidates):
        raise SignatureError("the signature does not match the body")
    return timestamp
