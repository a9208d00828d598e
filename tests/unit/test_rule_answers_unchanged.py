"""The rule routes' answers keep their bytes, key order included: a stored rule (``PUT``, ``GET /rules/{ruleId}``,
``GET /rules``) and a dry run's (``PUT ...?dryRun=true``), for every shape of ``tests/rule_answer_cases.py``: every
target type, partitioned, scheduled and windowed groups, a require tree, a member named by alias, every policy knob,
a last error with and without its group, a stored target that no longer loads. The expected text
(``tests/fixtures/rule_answers.json``) was captured from the dict builders the answers were built by before they
became a typed model (``usecases.rules.stored_to_api``, and the dry run's dict in ``api.routes.rules``): this
module, with those builders, passed against it at commit 4cb7d19."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook import container
from lakehook.api.app import build_app
from lakehook.api.rule_answers import RuleAnswer
from lakehook.container import Container
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.targets import validate_target
from lakehook.domain.time import MAX_ISO_MS, ms_to_iso
from lakehook.domain.triggers import Trigger
from lakehook.ports.rules import RuleError, StoredRule
from lakehook.settings import Settings
from lakehook.usecases.rule_writes import PutRule
from tests import wiring
from tests.fakes.memory_rules import InMemoryRuleStore
from tests.rule_answer_cases import BODIES, LOCAL, T0, TARGETS, A, planned_runs, rules, stored_rules
from tests.support import FakeLambdaContext, api_event

EXPECTED: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "rule_answers.json").read_text(encoding="utf-8")
)
TOKEN = "answers-admin"
STORED = stored_rules()
DRY_RUNS = planned_runs()


def text(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"))  # as the routes write it (api.http.json_response)


def stored_answer(stored: StoredRule) -> str:
    return text(RuleAnswer.from_domain(stored).dump())


def dry_run_answer(rule: Rule, runs: list[Trigger]) -> str:
    return text(RuleAnswer.dry_run_of(rule, runs).dump())


@pytest.mark.parametrize("name", sorted(STORED))
def test_a_stored_rule_is_answered_as_it_always_was(name: str) -> None:
    assert stored_answer(STORED[name]) == EXPECTED["stored"][name]


@pytest.mark.parametrize("name", sorted(DRY_RUNS))
def test_a_dry_run_is_answered_as_it_always_was(name: str) -> None:
    assert dry_run_answer(*DRY_RUNS[name]) == EXPECTED["dryRun"][name]


class Stack:
    """The API on fakes, its rule writes at a fixed instant (local mode: any URL a target names)."""

    def __init__(self) -> None:
        self.container: Container = wiring.in_memory(Settings(admin_token=TOKEN))
        c = self.container
        c.overrides["put_rule"] = PutRule(
            c.rule_store, lambda: T0, resolver=c.resolver, secrets=c.secret_store, url_policy=LOCAL
        )
        container.use(c)
        self.app = build_app()

    def call(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        answer = self.app.resolve(api_event(method, path, body, headers=headers, query=query), FakeLambdaContext())
        return int(answer["statusCode"]), str(answer["body"])


@pytest.fixture
def stack() -> Any:
    made = Stack()
    yield made
    container.use(None)


def test_the_rule_routes_answer_what_they_always_did(stack: Stack) -> None:
    rules = stack.container.rule_store
    assert isinstance(rules, InMemoryRuleStore)
    for stored in STORED.values():  # each exactly as a store holds it: revision, times, last error
        rules.rules[stored.rule.rule_id] = stored

    for name, stored in STORED.items():
        assert stack.call("GET", f"/rules/{stored.rule.rule_id}") == (200, EXPECTED["stored"][name]), name
    assert stack.call("GET", "/rules", query={"limit": "500"}) == (200, EXPECTED["routes"]["list"])
    assert stack.call("GET", "/rules", query={"limit": "3"}) == (200, EXPECTED["routes"]["listPage"])

    assert stack.call("PUT", "/rules/written", BODIES["confirmed"]) == (201, EXPECTED["routes"]["created"])
    assert stack.call("PUT", "/rules/written", BODIES["partitioned"]) == (200, EXPECTED["routes"]["replaced"])

    dry = {"dryRun": "true"}
    assert stack.call("PUT", "/rules/dry", BODIES["minimal"], dry) == (200, EXPECTED["routes"]["dryRunNothing"])
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": A, "snapshotId": 7, "commitTime": T0}
    assert stack.call("POST", "/asset-events", {"events": [event]})[0] == 200
    assert stack.call("PUT", "/rules/dry", BODIES["minimal"], dry) == (200, EXPECTED["routes"]["dryRunStarts"])
    assert stack.call("GET", "/rules/dry")[0] == 404  # nothing written


# --- any stored rule: the rule's JSON form, then its revision, times and last error, in that order -----------------

RULES = rules()


@st.composite
def stored(draw: st.DrawFn) -> StoredRule:
    rule = RULES[draw(st.sampled_from(sorted(RULES)))]
    target = TARGETS[draw(st.sampled_from(sorted(TARGETS)))]
    rule = rule.model_copy(update={"target": validate_target(target), "description": draw(st.none() | st.text())})
    instants = st.integers(0, MAX_ISO_MS)
    error = draw(st.none() | st.builds(RuleError, st.text(), instants, st.none() | st.text(min_size=1, max_size=8)))
    return StoredRule(rule, draw(st.integers(1, 2**53)), draw(instants), draw(instants), error)


@given(stored())
def test_any_stored_rule_is_its_json_form_then_revision_times_and_last_error(rule: StoredRule) -> None:
    expected: dict[str, Any] = {
        **json_form(rule.rule),
        "revision": rule.revision,
        "createdAt": ms_to_iso(rule.created_at),
        "updatedAt": ms_to_iso(rule.updated_at),
    }
    if rule.last_error is not None:
        error = rule.last_error
        expected["lastError"] = {"message": error.message, "at": ms_to_iso(error.at), "groupId": error.group_id}
    answer = RuleAnswer.from_domain(rule)
    assert text(answer.dump()) == text(expected)  # key order included
    # and the documented class takes the body it answers
    assert RuleAnswer.model_validate(answer.dump()).dump() == answer.dump()
