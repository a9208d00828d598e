"""The OpenAPI document is the contract: schemathesis drives the local stack from its ``GET /openapi.json``.

Twice: with management credentials and without any. Every answer must conform to the document (its
status code is listed for the route, its content type and body match what that status documents), no
answer is a 5xx, and without credentials no route answers 2xx. Schemathesis' engine (what ``st run``
runs) goes through its phases in order: examples, coverage (positive and negative values at the
schema's boundaries), fuzzing (positive and negative data) and stateful (operations chained along the
links it infers, e.g. ``PUT /rules/{ruleId}`` then ``GET``, explain and ``DELETE`` of the same rule).
A fixed seed, no example database and bounded examples keep it deterministic and inside CI time.

(The engine, not ``@schema.parametrize()``: schemathesis' lazy pytest loader needs a pytest internal
that pytest 9 removed, and the engine runs the four phases with the feedback between them.)
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from schemathesis import Case, CheckContext, Response
from schemathesis.engine import Status, events, from_schema

from lakehook.local.runtime import LocalStack
from tests.e2e.conftest import ADMIN

pytestmark = pytest.mark.e2e

SEED = 20251201
FUZZ_EXAMPLES = 20  # per operation, positive and negative data together
STATEFUL_STEPS = 6
PUBLIC = {("GET", "/openapi.json")}  # the only answer anyone may have without credentials
# Operations left out of the coverage phase (fuzzing and stateful still send them positive and negative data).
# A backtest's body is {rule, from, to}, and its rule is checked by the same parse as PUT /rules/{ruleId}'s body:
# the coverage phase sent it 3,011 boundary values (of 8,665 requests), each answered 400 before any replay, nearly
# all the rule schema's, which PUT /rules/{ruleId}'s 2,989 already send through that parse.
NO_COVERAGE = [{"include-name": "POST /rules/{ruleId}/backtest"}]
CONFORMANCE = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)


@schemathesis.check
def nothing_answered_without_credentials(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Without credentials every route but the public ones refuses: never a 2xx. Enabled per run below."""
    if 200 <= response.status_code < 300 and (case.method.upper(), case.path) not in PUBLIC:
        raise AssertionError(f"{case.method.upper()} {case.path} answered {response.status_code} without credentials")
    return None


@dataclass
class Outcome:
    """What one schemathesis run did: requests per phase, failures with how to reproduce them."""

    requests: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        phases = ", ".join(f"{phase} {n}" for phase, n in self.requests.items())
        return f"{sum(self.requests.values())} requests in {self.seconds:.1f}s ({phases})"


def run_schemathesis(
    stack: LocalStack, headers: dict[str, str], checks: tuple[str, ...], coverage: bool = True
) -> Outcome:
    """Run the phases against the stack (``coverage=False``: all but the coverage phase) and collect what failed;
    nothing is asserted here."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "base-url": stack.api_url,
            "headers": headers,
            "request-timeout": 30,
            "generation": {
                "mode": "all",  # positive and negative data
                "max-examples": FUZZ_EXAMPLES,
                "database": "none",  # the same cases on every run and machine, whatever ran before
                # Without credentials, let schemathesis also send made-up ones; with them, only ours (made-up
                # producer headers next to the admin token would turn every push into a 401).
                "with-security-parameters": not headers,
            },
            "phases": {"stateful": {"max-steps": STATEFUL_STEPS}, "coverage": {"enabled": coverage}},
            "operations": [{**operation, "phases": {"coverage": {"enabled": False}}} for operation in NO_COVERAGE],
            "checks": {"enabled": False, **{name: {"enabled": True} for name in checks}},
        }
    )
    schema = schemathesis.openapi.from_url(f"{stack.api_url}/openapi.json", config=config)
    outcome = Outcome()
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            outcome.requests[event.phase.value] += len(event.recorder.interactions)
            outcome.failures += _failures(event.recorder)
        elif isinstance(event, events.NonFatalError):
            outcome.errors.append(f"{event.label}: {event.value!r}")
        elif isinstance(event, events.FatalError):
            outcome.errors.append(f"fatal: {event.exception!r}")
    outcome.seconds = time.monotonic() - started
    return outcome


def _failures(recorder: Any) -> list[str]:
    found = []
    for checks in recorder.checks.values():
        for check in checks:
            if check.status is Status.FAILURE and check.failure_info is not None:
                failure = check.failure_info.failure
                found.append(f"{recorder.label} {check.name}: {failure.title}\n  {check.failure_info.code_sample}")
    return sorted(set(found))


def _report(name: str, outcome: Outcome) -> str:
    shown = "\n".join([*outcome.errors, *outcome.failures[:40]])
    return f"{name}: {len(outcome.failures)} failures, {len(outcome.errors)} errors; {outcome.summary()}\n{shown}"


ORDERS = "paimon://lake/ods_db/ods_order_latest"
SEED_REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("PUT", "/producers/flink-cdc", {"assetKeyPrefixes": ["paimon://lake/ods_db/"]}),
    ("PUT", "/assets", {"assetKey": ORDERS, "format": "paimon"}),
    ("PUT", "/aliases/orders", {"assetKeys": [ORDERS]}),
    ("PUT", "/watermarks", {"namespace": "contract", "assetKey": ORDERS, "key": "offset", "value": 7}),
    ("POST", "/asset-events", {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1001}),
]


@pytest.fixture(scope="module")
def seeded(stack: LocalStack) -> LocalStack:
    """A few stored resources, so list and read routes answer 2xx bodies whose schema is checked too."""
    headers = {"Authorization": f"Bearer {ADMIN}"}
    for method, path, body in SEED_REQUESTS:
        answer = requests.request(method, f"{stack.api_url}{path}", json=body, headers=headers, timeout=30)
        assert answer.status_code in (200, 201), (path, answer.text)
    return stack


def test_every_answer_conforms_with_management_credentials(seeded: LocalStack) -> None:
    stack = seeded
    outcome = run_schemathesis(stack, {"Authorization": f"Bearer {ADMIN}"}, CONFORMANCE)
    print(f"\nschemathesis with management credentials: {outcome.summary()}")
    assert not outcome.failures and not outcome.errors, _report("with management credentials", outcome)
    assert {"examples", "coverage", "fuzzing", "stateful"} <= set(outcome.requests), outcome.summary()


def test_nothing_is_answered_without_credentials(seeded: LocalStack) -> None:
    """Every operation, with positive and negative data (fuzzing) and chained (stateful), sent without credentials
    and with made-up ones. Not the coverage phase: its 7,928 boundary values (of 8,772 requests) vary the parameters
    and bodies, which a route refuses without credentials before reading any of them (authenticate before parsing;
    the fuzzing phase's negative data asks that of every operation); the run with credentials has it."""
    stack = seeded
    outcome = run_schemathesis(stack, {}, (*CONFORMANCE, "nothing_answered_without_credentials"), coverage=False)
    print(f"\nschemathesis without credentials: {outcome.summary()}")
    assert not outcome.failures and not outcome.errors, _report("without credentials", outcome)
    assert {"fuzzing", "stateful"} <= set(outcome.requests), outcome.summary()
    assert "coverage" not in outcome.requests, outcome.summary()
