"""Time helpers: the API speaks ISO 8601 UTC, the table formats epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# Instants lakehook accepts: 1970-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z. Iceberg and Paimon store them
# as Java longs, but past year 9999 neither ISO 8601 nor Python's datetime can show one: such a value
# would be stored and then break every answer and evaluation that touches it.
MAX_ISO_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant ISO 8601 can show
INSTANT_RANGE = "0 … 253402300799999 (1970-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z)"


def validate_timezone(value: str, name: str = "timezone") -> str:
    """An IANA time zone name (``Europe/Berlin``), else ValueError naming the field ``name``."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"{name} {value!r} is not an IANA time zone (e.g. UTC, Europe/Berlin)") from exc
    return value


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(datetime.now(tz=UTC).timestamp() * 1000)


def ms_to_iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 in UTC with a trailing Z."""
    # Whole seconds plus milliseconds: ms / 1000 as a float loses the last millisecond near year 9999.
    dt = datetime.fromtimestamp(ms // 1000, tz=UTC) + timedelta(milliseconds=ms % 1000)
    text = dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")


def parse_instant_ms(value: object) -> int:
    """Accept epoch milliseconds (an int, or digits in a string, as a query parameter carries them) or
    an ISO 8601 string with a zone; answer epoch milliseconds within ``INSTANT_RANGE``."""
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():  # str.isdigit alone accepts '²' and other scripts' digits
            if len(text) > len(str(MAX_ISO_MS)):  # int() of thousands of digits is slow, then refused
                raise ValueError(f"epoch milliseconds must be within {INSTANT_RANGE}")
            return _bounded(int(text))
    return instant_from_json(value)


def instant_from_json(value: object) -> int:
    """An instant as a JSON body carries it: an integer of epoch milliseconds, or an ISO 8601 string with
    a zone. A number sent as a string (``"1725963330123"``), a float or a boolean is refused."""
    if isinstance(value, bool):
        raise ValueError("expected an ISO 8601 timestamp or epoch milliseconds, got a boolean")
    if isinstance(value, int):
        return _bounded(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            raise ValueError("send epoch milliseconds as a JSON integer, not a string (or an ISO 8601 timestamp)")
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from exc
        if dt.tzinfo is None:
            raise ValueError(f"timestamp {value!r} has no time zone; use UTC with a trailing Z")
        try:
            return _bounded(int(dt.timestamp() * 1000))
        except OverflowError as exc:
            raise ValueError(f"epoch milliseconds must be within {INSTANT_RANGE}") from exc
    raise ValueError("expected an ISO 8601 timestamp or epoch milliseconds (an integer)")


def _bounded(ms: int) -> int:
    if not 0 <= ms <= MAX_ISO_MS:
        raise ValueError(f"epoch milliseconds must be within {INSTANT_RANGE}")
    return ms
