"""The demo's side of the HTTP API: admin calls, signed pushes, and the expectations it checks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from lakehook.domain.signing import sign


@dataclass(frozen=True)
class Expectation:
    what: str
    ok: bool
    detail: str = ""


@dataclass
class Api:
    """One session against the local stack; ``expect`` records every check for the summary."""

    url: str
    admin_token: str
    say: Callable[[str], None] = print
    secret: str = ""
    producer: str = "flink-cdc"
    expectations: list[Expectation] = field(default_factory=list)
    session: requests.Session = field(default_factory=requests.Session)

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}", "Content-Type": "application/json"}

    @property
    def failures(self) -> list[Expectation]:
        return [e for e in self.expectations if not e.ok]

    def expect(self, what: str, ok: bool, detail: Any = "") -> bool:
        """Record a check; a failed one says why in readable lines under it (whole, never cut mid-word)."""
        lines = [] if ok else readable(detail)
        self.expectations.append(Expectation(what, ok, "\n".join(lines)))
        self.say(f"  {'ok  ' if ok else 'FAIL'} {what}")
        for line in lines:
            self.say(f"         {line}")
        return ok

    # --- management -------------------------------------------------------------------------

    def put(self, path: str, body: dict[str, Any]) -> requests.Response:
        return self.session.put(f"{self.url}{path}", headers=self.admin, json=body, timeout=30)

    def get(self, path: str, **params: str) -> Any:
        answer = self.session.get(f"{self.url}{path}", headers=self.admin, params=params, timeout=30)
        return answer.json()

    def state(self, asset: str) -> dict[str, Any]:
        return self.get("/assets/state", assetKey=asset)  # type: ignore[no-any-return]

    def triggers(self, rule_id: str) -> list[dict[str, Any]]:
        return self.get("/triggers", ruleId=rule_id).get("items", [])  # type: ignore[no-any-return]

    def explain(self, rule_id: str) -> dict[str, Any]:
        return self.get(f"/rules/{rule_id}/explain")  # type: ignore[no-any-return]

    def events(self, asset: str) -> list[dict[str, Any]]:
        return self.get("/assets/events", assetKey=asset).get("items", [])  # type: ignore[no-any-return]

    # --- the writer's push --------------------------------------------------------------------

    def push(self, *events: dict[str, Any], secret: str | None = None, at: int | None = None) -> requests.Response:
        body = json.dumps({"events": list(events)}).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Lakehook-Producer": self.producer,
            "X-Lakehook-Signature": sign(secret or self.secret, body, at or int(time.time())),
        }
        return self.session.post(f"{self.url}/asset-events", data=body, headers=headers, timeout=30)

    def push_statuses(self, *events: dict[str, Any]) -> list[str]:
        answer = self.push(*events)
        return [r["status"] for r in answer.json().get("results", [])]


def readable(detail: Any) -> list[str]:
    """A failed check's detail as lines a user reads: text as it is, a mapping one ``key: value`` a line, a list
    one item a line; values in compact JSON."""
    if isinstance(detail, str):
        return detail.splitlines()
    if isinstance(detail, Mapping):
        return [f"{key}: {compact(value)}" for key, value in detail.items()]
    if isinstance(detail, list | tuple | set | frozenset):
        return [item if isinstance(item, str) else compact(item) for item in detail]
    return [compact(detail)]


def compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, separators=(", ", ": "))
