"""POST JSON with retries, standard library only: the push client and ``lakehook.receiver`` share it.

429, 5xx and connection errors are retried with full jitter over an exponential ceiling (a server's
``Retry-After`` is a floor); any other 4xx is final. Callers turn the two outcomes into their own errors.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class HttpRejectedError(Exception):
    """The server refused the request (a 4xx other than 429): retrying would not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class RefusedError(Exception):
    """A refusal with the HTTP status the API answered: the base of each client's ``*RejectedError``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class HttpUnavailableError(Exception):
    """Every attempt failed with 429, 5xx or a connection error; the message names the last one."""


@dataclass
class Retrying:
    """How hard to try; ``attempts`` is how many the last call made (for logs and tests)."""

    max_attempts: int = 5
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 10.0
    timeout_seconds: float = 10.0
    sleep: Callable[[float], None] = field(default=time.sleep)
    attempts: int = 0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def post_json(self, url: str, body: bytes, headers: Callable[[], Mapping[str, str]]) -> dict[str, Any]:
        """POST ``body``; ``headers`` is called per attempt (a signature is made at send time). The answer's
        JSON object, or raises :class:`HttpRejectedError` / :class:`HttpUnavailableError`."""
        return self.send_json("POST", url, body, headers)

    def send_json(
        self, method: str, url: str, body: bytes | None, headers: Callable[[], Mapping[str, str]]
    ) -> dict[str, Any]:
        """``post_json`` for any method (a GET sends no body)."""
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            self.attempts = attempt
            request = urllib.request.Request(url, data=body, method=method, headers=dict(headers()))
            retry_after: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_seconds) as answer:
                    parsed = json.loads(answer.read() or b"{}")
                    return parsed if isinstance(parsed, dict) else {}
            except urllib.error.HTTPError as exc:
                text = exc.read().decode("utf-8", "replace")
                if exc.code not in RETRY_STATUSES:
                    raise HttpRejectedError(exc.code, message_of(text)) from exc
                last = f"{exc.code}: {message_of(text)}"
                retry_after = _seconds(exc.headers.get("Retry-After"))
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt < self.max_attempts:
                self.sleep(self.delay(attempt, retry_after))
        raise HttpUnavailableError(f"gave up after {self.max_attempts} attempts; last error {last}")

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Full jitter over an exponential ceiling; a server's Retry-After is a floor."""
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempt - 1))
        delay = random.uniform(0, ceiling)  # jitter, not cryptography
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff_seconds))
        return delay


def message_of(text: str) -> str:
    """The ``message`` of a lakehook error answer, else the text's start."""
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    return str(data.get("message", text[:500])) if isinstance(data, dict) else text[:500]


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
