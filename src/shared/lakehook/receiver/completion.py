"""Reporting a run's end to lakehook: ``POST {api}{completionPath}`` with ``X-Lakehook-Completion-Token``.

The token came with the invocation and completes that trigger only; the outlets (asset events the run
produced) must lie within the rule's declared ``outlets``. The first terminal status wins: the same
completion again answers 200 with ``repeated: true``, so retrying after a lost answer is safe; a different
one is 409 (:class:`CompletionRejectedError`). 429, 5xx and connection errors are retried with backoff.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lakehook.client.retrying import HttpRejectedError, HttpUnavailableError, Retrying
from lakehook.receiver.payload import Invocation

COMPLETION_TOKEN_HEADER = "X-Lakehook-Completion-Token"


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
        self.api_url = api_url.rstrip("/")
        self._retrying = Retrying(max_attempts, backoff_seconds, max_backoff_seconds, timeout_seconds, sleep)

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
        try:
            return self._retrying.post_json(url, body, lambda: headers)
        except HttpRejectedError as exc:
            raise CompletionRejectedError(exc.status, exc.message) from exc
        except HttpUnavailableError as exc:
            raise CompletionUnavailableError(str(exc)) from exc
