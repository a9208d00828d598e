"""What the console forwards to the API: exactly the method and path pairs its pages use, nothing else.

The console holds the stack's admin token (or the caller's AWS credentials), so the proxy is a gate: a request
for a route the pages do not call (a push to ``/asset-events``, producers and their secrets, rule writes,
watermarks, runs) is refused here, before any credential is attached. ``tests/integration/test_console_server.py``
checks this list against the paths the page's scripts call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One path parameter: the characters lakehook's rule ids and trigger keys use (letters, digits, _ . -), never a
# dot segment, which the HTTP client would resolve into another route (/rules/../asset-events).
_PARAMETER = re.compile(r"[A-Za-z0-9_.-]{1,200}")


@dataclass(frozen=True)
class Route:
    method: str
    template: str  # /rules/{ruleId}/explain

    def matches(self, path: str) -> bool:
        wanted, given = self.template.split("/"), path.split("/")
        if len(wanted) != len(given):
            return False
        return all(_part_matches(w, g) for w, g in zip(wanted, given, strict=True))


def _part_matches(wanted: str, given: str) -> bool:
    if wanted.startswith("{"):
        return bool(_PARAMETER.fullmatch(given)) and given not in (".", "..")
    return wanted == given


READS = ("/assets", "/assets/state", "/assets/events", "/assets/coverage", "/rules", "/rules/{ruleId}", "/me")
ROUTES: tuple[Route, ...] = (
    *(Route("GET", template) for template in READS),
    Route("GET", "/rules/{ruleId}/explain"),
    Route("GET", "/triggers"),
    # The only changes the console makes: evaluate a rule now (optionally forced), retry and replay a trigger.
    Route("POST", "/rules/{ruleId}/evaluate"),
    # A POST that changes nothing: the rule tried on the stored history (throw-away stores, nothing dispatched).
    Route("POST", "/rules/{ruleId}/backtest"),
    Route("POST", "/triggers/{triggerKey}/retry"),
    Route("POST", "/triggers/{triggerKey}/replay"),
)


@dataclass(frozen=True)
class Refusal:
    status: int  # 403: a route the console never forwards; 405: a route it forwards, with another method
    message: str
    allow: tuple[str, ...] = ()


def refusal(method: str, path: str, routes: tuple[Route, ...] = ROUTES) -> Refusal | None:
    """None when the console forwards ``method path`` (the path without its query); else why not."""
    found = [route for route in routes if route.matches(path)]
    if any(route.method == method for route in found):
        return None
    if found:
        allow = tuple(sorted({route.method for route in found}))
        return Refusal(
            405, f"the console forwards only {' and '.join(allow)} for {found[0].template}, not {method}", allow
        )
    return Refusal(
        403,
        f"the console does not forward {method} {path}: it forwards only the calls its pages make "
        "(reads, backtest, and evaluate, retry and replay); use the CLI or the API for anything else",
    )
