"""Reporting a run's end to lakehook: ``POST {api}{completionPath}`` with ``X-Lakehook-Completion-Token``.

The token came with the invocation and completes that trigger only; the outlets (asset events the run
produced) must lie within the rule's declared ``outlets``. The first terminal status wins: the same
completion again answers 200 with ``repeated: true``, so retrying after a lost answer is safe; a different
one is 409 (:class:`CompletionRejectedError`). 429, 5xx and connection errors are retried with backoff.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lakehook.receiver.payload import Invocation

COMPLETION_TOKEN_HEADER = "X-Lakehook-Completion-Token"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class CompletionError(Exception):
    """The completion could not be recorded."""


class CompletionRejectedError(CompletionError):
    """lakehook refused it (a 4xx other than 429): another status already recorded (409), an outlet outside
    the rule's declared outlets (403), a bad token (401), a bad outlet (400). Retrying does not help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class CompletionUnavailableError(CompletionError):
    """Every attempt failed with 429, 5xx or a connection error."""


@dataclass(frozen=True)
class OutletResult:
    """What lakehook did with one outlet event: ACCEPTED, DUPLICATE, STALE or REJECTED."""

    event_id: str | None
    status: str
    reason: str | None = None


@dataclass(frozen=True)
class Completion:
    """The recorded end of the run: the first status reported, and one result per outlet."""

    trigger_key: str
    status: str
    repeated: bool
    results: tuple[OutletResult, ...]


def snapshot_outlet(asset_key: str, snapshot_id: int, **fields: Any) -> dict[str, Any]:
    """A ``SNAPSHOT_COMMITTED`` outlet event (add ``schemaId``, ``commitTime``, ... as keyword arguments)."""
    return {"eventType": "SNAPSHOT_COMMITTED", "assetKey": asset_key, "snapshotId": snapshot_id, **fields}


class CompletionClient:
    """Reports runs' ends to the lakehook API at ``api_url`` (the stack's ``ApiUrl``, with its stage)."""

    def __init__(
        self,
        api_url: str,
        *,
        max_attempts: int = 5,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 10.0,
        timeout_seconds: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.api_url = api_url.rstrip("/")
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self.timeout_seconds = timeout_seconds
        self._sleep = sleep

    def complete(
        self,
        invocation: Invocation,
        status: str = "SUCCEEDED",
        outlets: Iterable[Mapping[str, Any]] = (),
    ) -> Completion:
        """Report ``status`` (SUCCEEDED or FAILED) and the outlets with the invocation's completion token."""
        if status not in ("SUCCEEDED", "FAILED"):
            raise ValueError("status must be SUCCEEDED or FAILED")
        if not invocation.completion_token:
            raise ValueError("the invocation carries no completionToken (report it with management credentials)")
        body = json.dumps({"status": status, "outlets": [dict(o) for o in outlets]}, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", COMPLETION_TOKEN_HEADER: invocation.completion_token}
        answer = self._post(self.api_url + invocation.completion_path, body, headers)
        return Completion(
            trigger_key=str(answer.get("triggerKey", invocation.trigger_key)),
            status=str(answer.get("status")),
            repeated=bool(answer.get("repeated")),
            results=tuple(
                OutletResult(r.get("eventId"), str(r.get("status")), r.get("reason"))
                for r in answer.get("results") or []
            ),
        )

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            request = urllib.request.Request(url, data=body, method="POST", headers=headers)
            retry_after: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_seconds) as answer:
                    parsed = json.loads(answer.read() or b"{}")
                    return parsed if isinstance(parsed, dict) else {}
            except urllib.error.HTTPError as exc:
                text = exc.read().decode("utf-8", "replace")
                if exc.code not in RETRY_STATUSES:
                    raise CompletionRejectedError(exc.code, _message(text)) from exc
                last = f"{exc.code}: {_message(text)}"
                retry_after = _seconds(exc.headers.get("Retry-After"))
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt < self.max_attempts:
                ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempt - 1))
                delay = random.uniform(0, ceiling)  # jitter, not cryptography
                if retry_after is not None:
                    delay = max(delay, min(retry_after, self.max_backoff_seconds))
                self._sleep(delay)
        raise CompletionUnavailableError(f"gave up after {self.max_attempts} attempts; last error {last}")


def _message(text: str) -> str:
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
