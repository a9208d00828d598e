"""Where a rule starts (startFrom), POST /rules/{id}/evaluate, and explain telling the resolver's own verdict,
through the rule use cases on the in-memory fakes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import TriggerStatus
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_writes import PutRule
from tests.rule_cases import evaluate_rule
from tests.unit.test_resolve_usecase import A, B, World


class Rules(World):
    """The resolver world plus the rule routes' use cases on the same fakes."""

    def __init__(self) -> None:
        super().__init__()

        def clock() -> int:
            return self.now

        self.put_rule = PutRule(self.rules, clock, resolver=self.resolve)
        self.explainer = ExplainRule(self.rules, self.triggers, self.reader, clock=clock, resolver=self.resolve)
        self.evaluator = evaluate_rule(self.rules, self.triggers, self.reader, clock, resolver=self.resolve)

    def put(self, rule_id: str, *members: str, enabled: bool = True, **policy: Any) -> None:
        body = {
            "groups": [{"groupId": "g", "members": [{"assetKey": m} for m in members]}],
            "policy": {"mode": "ALL_UPDATED", **policy},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
            "enabled": enabled,
        }
        self.put_rule.put(rule_id, body)

    def runs(self, rule_id: str) -> list[list[int | None]]:
        """Pinned snapshots of the rule's claims that start a run (no SKIPPED starting points), oldest first."""
        order = [self.triggers.triggers[k] for k in self.triggers.claim_order]
        return [
            [p.snapshot_id for p in t.inputs]
            for t in order
            if t.rule_id == rule_id and t.status is not TriggerStatus.SKIPPED
        ]


def test_a_rule_put_after_its_inputs_are_satisfied_fires_at_once_by_default() -> None:
    world = Rules()
    world.snap(A, 1)
    world.snap(B, 7)
    world.deliver()  # no rule yet: nothing to claim

    world.put("late", A, B)

    assert world.runs("late") == [[1, 7]]
    explained = world.explainer.explain("late")
    assert explained["startFrom"] == "LATEST"
    assert explained["ready"] is False  # it ran: now it waits for newer versions
    assert explained["lastTrigger"]["inputs"][0]["snapshotId"] == 1
    world.put("late", A, B)  # a second put (same versions) claims nothing again
    assert world.runs("late") == [[1, 7]]


def test_next_change_waits_for_a_newer_version_and_explain_says_why() -> None:
    world = Rules()
    world.snap(A, 1)
    world.snap(B, 7)
    world.deliver()

    world.put("fresh", A, B, startFrom="NEXT_CHANGE")

    assert world.runs("fresh") == []
    explained = world.explainer.explain("fresh")
    assert explained["ready"] is False
    group = explained["groups"][0]
    assert group["status"] == "WAITING_FOR_UPDATE"
    assert "startFrom is NEXT_CHANGE" in group["reason"]
    assert explained["lastTrigger"]["status"] == "SKIPPED"

    world.snap(A, 2)
    world.snap(B, 8)
    world.deliver()
    assert world.runs("fresh") == [[2, 8]]


def test_next_change_on_a_rule_whose_inputs_are_not_there_yet_fires_on_the_first_version() -> None:
    world = Rules()
    world.put("early", A, startFrom="NEXT_CHANGE")
    world.snap(A, 1)
    world.deliver()
    assert world.runs("early") == [[1]]


def test_re_enabling_a_rule_fires_what_arrived_meanwhile_with_latest_and_not_with_next_change() -> None:
    world = Rules()
    world.put("latest", A)
    world.put("next", A, startFrom="NEXT_CHANGE")
    world.snap(A, 1)
    world.deliver()
    assert world.runs("latest") == [[1]] and world.runs("next") == [[1]]

    world.put("latest", A, enabled=False)
    world.put("next", A, enabled=False, startFrom="NEXT_CHANGE")
    world.snap(A, 2)
    world.deliver()  # disabled: the resolver leaves them alone
    assert world.runs("latest") == [[1]] and world.runs("next") == [[1]]

    world.put("latest", A)
    world.put("next", A, startFrom="NEXT_CHANGE")

    assert world.runs("latest") == [[1], [2]]
    assert world.runs("next") == [[1]]
    assert world.explainer.explain("next")["groups"][0]["status"] == "WAITING_FOR_UPDATE"
    world.snap(A, 3)
    world.deliver()
    assert world.runs("next") == [[1], [3]]


def test_evaluate_claims_a_stranded_rule_once_with_the_key_the_resolver_would_use() -> None:
    world = Rules()
    world.snap(A, 1)
    world.deliver()
    # stored behind the use case's back, as a rule was before this existed: never evaluated
    world.rules.put_rule(
        Rule.model_validate(
            {
                "ruleId": "r",
                "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
                "groups": [{"groupId": "g", "members": [{"assetKey": A}]}],
            }
        ),
        world.now,
    )
    assert world.explainer.explain("r")["ready"] is True

    first = world.evaluator.evaluate("r")
    again = world.evaluator.evaluate("r")

    assert first["claimed"] == [first["triggerKey"]] and first["triggerKey"] is not None
    assert first["triggerKey"] == world.triggers.claim_order[-1]
    assert first["ready"] is False and first["lastTrigger"]["triggerKey"] == first["triggerKey"]
    assert again["claimed"] == [] and again["triggerKey"] is None
    assert world.runs("r") == [[1]]


def test_a_forced_run_pins_the_current_versions_under_a_manual_key_refused_while_in_flight() -> None:
    world = Rules()
    world.put("r", A)
    world.snap(A, 1)
    world.deliver()
    assert world.runs("r") == [[1]]

    forced = world.evaluator.evaluate("r", {"force": True})

    key = forced["triggerKey"]
    assert key.startswith("r.g.manual-1.") and forced["manual"] is True
    assert [p.snapshot_id for p in world.triggers.triggers[key].inputs] == [1]
    with pytest.raises(ConflictError, match="in flight"):
        world.evaluator.evaluate("r", {"force": True})
    world.triggers.triggers[key] = world.triggers.triggers[key].model_copy(update={"status": TriggerStatus.SUCCEEDED})
    assert world.evaluator.evaluate("r", {"force": True})["triggerKey"].startswith("r.g.manual-2.")
    # the rule's own cursor did not move: a new version still runs once
    world.snap(A, 2)
    world.deliver()
    assert [t for t in world.runs("r") if t == [2]] == [[2]]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"force": "yes"}, "force"), ({"forse": True}, "forse"), ([], "body"), ({"groupId": "nope"}, "groupId")],
)
def test_evaluate_names_what_is_wrong_in_its_body(body: Any, field: str) -> None:
    world = Rules()
    world.put("r", A)
    with pytest.raises(ValidationError) as caught:
        world.evaluator.evaluate("r", body)
    assert caught.value.field == field


def test_forced_runs_racing_under_one_idempotency_key_start_one_run_and_all_get_its_answer() -> None:
    from tests.racing import race

    world = Rules()
    world.put("r", A)
    world.snap(A, 1)
    world.deliver()
    before = set(world.triggers.triggers)
    # every request reads "no answer recorded yet" before any of them claims: they race on the claim itself
    barrier = threading.Barrier(8, timeout=10)
    read = world.triggers.get_request

    def everyone_reads_first(key: str, now_ms: int) -> Any:
        found = read(key, now_ms)
        barrier.wait()
        return found

    world.triggers.get_request = everyone_reads_first  # type: ignore[method-assign]
    answers = race(8, lambda i: world.evaluator.answer_evaluate("r", {"force": True}, "one-click"))
    world.triggers.get_request = read  # type: ignore[method-assign]

    manual = set(world.triggers.triggers) - before
    assert len(manual) == 1
    assert {a.body["triggerKey"] for a in answers} == manual
    assert sorted(a.replayed for a in answers) == [False] + [True] * 7
    with pytest.raises(ConflictError, match="different request") as reused:
        world.evaluator.answer_evaluate("r", {"force": True, "groupId": "g"}, "one-click")
    assert type(reused.value).__name__ == "IdempotencyKeyReusedError"
    with pytest.raises(ValidationError) as malformed:
        world.evaluator.answer_evaluate("r", {"force": True}, "two words")
    assert malformed.value.field == "Idempotency-Key"
