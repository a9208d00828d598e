"""Wait, inside a run already in progress, until an asset condition holds (the sensor, RFC §4 Strategy A).

Standard library only, like the push client::

    from lakehook.client import LakehookClient

    client = LakehookClient("https://api.example.com/prod", token=ADMIN_TOKEN)
    ready = client.wait_for("dwd_orders", timeout=3600)       # raises SensorTimeoutError after an hour
    snapshot = {p["assetKey"]: p["snapshotId"] for p in ready.pins}

``wait_for`` long-polls ``POST /sensors/evaluate`` (each request waits up to 20 s on the server), so a wait of an
hour is about 180 requests, not 3,600. ``evaluate`` asks once. Either names a rule (its groups' conditions, or one
``group_id`` of it) or carries an ad-hoc ``group`` shaped like a rule's group.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehook.client.retrying import HttpRejectedError, HttpUnavailableError, RefusedError, Retrying

SENSOR_PATH = "/sensors/evaluate"
MAX_WAIT_SECONDS = 20  # the server's bound on waitSeconds (lakehook.domain.sensors; held equal by a unit test)


class SensorError(Exception):
    """The condition could not be evaluated."""


class SensorRejectedError(SensorError, RefusedError):
    """The API refused the request (a 4xx other than 429: an unknown rule, a malformed group); retrying won't help."""


class SensorUnavailableError(SensorError):
    """Every attempt failed with 429, 5xx or a connection error."""


@dataclass(frozen=True)
class SensorResult:
    """One answer of ``POST /sensors/evaluate``: ``ready``, the verdict and the pins of the READY group (else of the
    first group, and no pins), and every group's explanation."""

    ready: bool
    verdict: str
    group_id: str
    reason: str | None
    pins: list[dict[str, Any]]
    explanation: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> SensorResult:
        return cls(
            ready=bool(answer["ready"]),
            verdict=str(answer["verdict"]),
            group_id=str(answer["groupId"]),
            reason=answer.get("reason"),
            pins=list(answer.get("pins") or []),
            explanation=dict(answer.get("explanation") or {}),
        )


class SensorTimeoutError(SensorError):
    """The condition did not hold within the timeout; ``last`` is the last answer (what it still waits for)."""

    def __init__(self, timeout: float, last: SensorResult) -> None:
        super().__init__(f"not ready after {timeout:g} s: {last.verdict} ({last.reason})")
        self.last = last


class LakehookClient:
    """Ask lakehook's API whether a condition holds (``evaluate``) or wait until it does (``wait_for``).

    ``token`` is the management bearer token (a local stack's ``--admin-token``); on AWS pass ``headers``, a function
    of the request body answering the headers to send with it (e.g. a SigV4 signature made with botocore)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Callable[[bytes], Mapping[str, str]] | None = None,
        max_attempts: int = 5,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/") + SENSOR_PATH
        self._token = token
        self._headers = headers
        self._clock = clock
        # a long-poll answers after up to MAX_WAIT_SECONDS: the socket must wait longer than that
        self._retrying = Retrying(max_attempts, backoff_seconds, max_backoff_seconds, MAX_WAIT_SECONDS + 15.0, sleep)

    def evaluate(
        self,
        rule: str | None = None,
        *,
        group: Mapping[str, Any] | None = None,
        group_id: str | None = None,
        wait_seconds: int = 0,
    ) -> SensorResult:
        """Evaluate the condition once; with ``wait_seconds`` (at most 20) the server waits for it that long."""
        if (rule is None) == (group is None):
            raise ValueError("name a rule or give a group, not both")
        request: dict[str, Any] = {"ruleId": rule} if rule is not None else {"group": dict(group or {})}
        if group_id is not None:
            request["groupId"] = group_id
        if wait_seconds:
            request["waitSeconds"] = min(max(int(wait_seconds), 0), MAX_WAIT_SECONDS)
        body = json.dumps(request, separators=(",", ":")).encode()
        try:
            return SensorResult.of(self._retrying.post_json(self.url, body, lambda: self._request_headers(body)))
        except HttpRejectedError as exc:
            raise SensorRejectedError(exc.status, exc.message) from exc
        except HttpUnavailableError as exc:
            raise SensorUnavailableError(str(exc)) from exc

    def wait_for(
        self,
        rule: str | None = None,
        *,
        timeout: float,
        group: Mapping[str, Any] | None = None,
        group_id: str | None = None,
    ) -> SensorResult:
        """Long-poll until the condition holds and answer the READY result, or raise :class:`SensorTimeoutError`
        once ``timeout`` seconds have passed (it may overrun by under a second: waits are whole seconds). The API
        being unavailable is waited out until then (:class:`SensorUnavailableError` if it still is); a refusal
        (:class:`SensorRejectedError`) raises at once."""
        if timeout < 0:
            raise ValueError("timeout must not be negative")
        deadline = self._clock() + timeout
        while True:
            remaining = deadline - self._clock()
            wait = min(MAX_WAIT_SECONDS, max(math.ceil(remaining), 0))
            try:
                result = self.evaluate(rule, group=group, group_id=group_id, wait_seconds=wait)
            except SensorUnavailableError:
                if self._clock() >= deadline:
                    raise
                continue  # an outage within the wait is waited out (each evaluate already retried with backoff)
            if result.ready:
                return result
            if self._clock() >= deadline or wait == 0:
                raise SensorTimeoutError(timeout, result)

    def _request_headers(self, body: bytes) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if self._headers is not None:
            headers.update(self._headers(body))
        return headers
