"""Time helpers: the API speaks ISO 8601 UTC, the table formats epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_EPOCH_MS = 2**63 - 1  # a Java long, as Iceberg and Paimon store instants
MAX_ISO_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant ISO 8601 can show


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(datetime.now(tz=UTC).timestamp() * 1000)


def ms_to_iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 in UTC with a trailing Z."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    text = dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")


def parse_instant_ms(value: object) -> int:
    """Accept epoch milliseconds (int) or an ISO 8601 string with a zone; answer epoch milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected an ISO 8601 timestamp or epoch milliseconds, got a boolean")
    if isinstance(value, int):
        return _bounded(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():  # str.isdigit alone accepts '²' and other scripts' digits
            return _bounded(int(text))
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from exc
        if dt.tzinfo is None:
            raise ValueError(f"timestamp {value!r} has no time zone; use UTC with a trailing Z")
        return _bounded(int(dt.timestamp() * 1000))
    raise ValueError("expected an ISO 8601 timestamp or epoch milliseconds")


def _bounded(ms: int) -> int:
    if ms < 0:
        raise ValueError("epoch milliseconds must not be negative")
    if ms > MAX_EPOCH_MS:
        raise ValueError("epoch milliseconds must fit a 64-bit integer")
    return ms
