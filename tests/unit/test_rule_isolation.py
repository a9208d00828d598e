"""One rule's failure never blocks another: a rule error is recorded and retried by the sweep while the batch goes
on; an infrastructure error fails the batch, after leaving rechecks so a dropped batch strands nothing."""

from __future__ import annotations

import pytest

from lakehook.domain.triggers import GroupCursor, Trigger
from lakehook.ports.rules import AssetRecheck, ClaimResult
from lakehook.usecases.resolve import ResolveReport, emit_metrics
from lakehook.usecases.rule_explain import ExplainRule
from tests.fakes.memory_rules import InMemoryTriggerStore
from tests.unit.test_resolve_usecase import A, B, World, rule


class FaultyTriggers(InMemoryTriggerStore):
    """The in-memory trigger store, raising ``fault`` on claims of the rules named in ``failing``."""

    def __init__(self) -> None:
        super().__init__()
        self.failing: set[str] = set()
        self.fault: Exception = OverflowError("date value out of range")

    def claim(self, trigger: Trigger, cursor: GroupCursor, expected: GroupCursor | None) -> ClaimResult:
        if trigger.rule_id in self.failing:
            raise self.fault
        return super().claim(trigger, cursor, expected)


def world_with_two_rules() -> tuple[World, FaultyTriggers]:
    triggers = FaultyTriggers()
    world = World(rule("broken", {"assetKey": A}), rule("fine", {"assetKey": A}, {"assetKey": B}), triggers=triggers)
    world.snap(B, 7)
    world.deliver()
    return world, triggers


def test_a_rule_that_throws_is_recorded_and_the_rest_of_the_batch_claims() -> None:
    world, triggers = world_with_two_rules()
    triggers.failing = {"broken"}
    world.snap(A, 1)

    report = world.deliver()

    assert world.claimed("fine") == [[1, 7]]
    assert world.claimed("broken") == []
    assert [(f.rule_id, f.group_id) for f in report.failed] == [("broken", "g")]
    stored = world.rules.get_rule("broken")
    assert stored is not None and stored.last_error is not None
    assert stored.last_error.message == "OverflowError: date value out of range"
    assert stored.last_error.at == world.now and stored.last_error.group_id == "g"
    explainer = ExplainRule(world.rules, world.triggers, world.reader, clock=lambda: world.now, resolver=world.resolve)
    assert explainer.explain("broken")["lastError"]["message"] == "OverflowError: date value out of range"


def test_the_sweep_retries_a_failed_rule_until_it_works_and_then_clears_its_error() -> None:
    world, triggers = world_with_two_rules()
    triggers.failing = {"broken"}
    world.snap(A, 1)
    world.deliver()

    assert world.sweep(59_000).claimed == []  # not due yet
    again = world.sweep(1_000)
    assert [f.rule_id for f in again.failed] == ["broken"]  # still broken: recorded again, retried again
    triggers.failing = set()  # the fix is deployed
    fixed = world.sweep(60_000)

    assert [t.rule_id for t in fixed.claimed] == ["broken"]
    assert world.claimed("broken") == [[1]]
    stored = world.rules.get_rule("broken")
    assert stored is not None and stored.last_error is None


def test_an_infrastructure_error_fails_the_batch_and_leaves_rechecks_so_a_dropped_batch_strands_nothing() -> None:
    world, triggers = world_with_two_rules()
    triggers.failing = {"broken", "fine"}
    triggers.fault = ConnectionError("dynamodb endpoint unreachable")
    world.snap(A, 1)

    with pytest.raises(ConnectionError):
        world.deliver()  # Lambda retries the batch, and may finally give it up: here it is dropped

    assert world.deferrals.rechecks == {A: AssetRecheck(A, world.now + 60_000)}
    assert world.rules.get_rule("fine").last_error is None  # type: ignore[union-attr]
    triggers.failing = set()
    report = world.sweep(60_000)
    assert sorted(t.rule_id for t in report.claimed) == ["broken", "fine"]
    assert world.claimed("fine") == [[1, 7]]


def test_a_rule_the_store_refuses_to_list_isolates_its_asset_only() -> None:
    world, _ = world_with_two_rules()
    world.rules.put_rule(rule("other", {"assetKey": B}), world.now)
    original = world.rules.rules_for_asset

    def rules_for_asset(asset_key: str) -> list:  # type: ignore[type-arg]
        if asset_key == A:
            raise ValueError("stored rule body does not parse")
        return original(asset_key)

    world.rules.rules_for_asset = rules_for_asset  # type: ignore[method-assign]
    world.snap(A, 1)
    world.snap(B, 8)
    report = world.deliver()

    assert world.claimed("other") == [[8]]
    assert world.deferrals.rechecks[A].due_at == world.now + 60_000
    assert report.failed and "stored rule body does not parse" in report.failed[0].message


def test_the_error_metric_is_emitted(capsys: pytest.CaptureFixture[str]) -> None:
    world, triggers = world_with_two_rules()
    triggers.failing = {"broken"}
    world.snap(A, 1)
    report: ResolveReport = world.deliver()
    capsys.readouterr()
    emit_metrics(report)
    assert "lakehouse_rule_evaluation_error_total" in capsys.readouterr().out


def test_a_stored_rule_whose_cron_never_fires_is_reported_and_every_other_rule_still_checked() -> None:
    from lakehook.domain.rules import Rule
    from lakehook.usecases.freshness import CheckFreshness
    from tests.fakes.memory import InMemoryAssetRegistry

    def with_freshness(rule_id: str, freshness: str) -> Rule:
        body = rule(rule_id, {"assetKey": A}).to_json().replace('"groups"', f'"freshness":{freshness},"groups"')
        return Rule.from_stored(body)  # the stored-rule read path: no write-time checks

    world = World(with_freshness("early", '{"maxWaitSeconds":3600}'))
    world.rules.put_rule(with_freshness("never", '{"expectedBy":{"cron":"0 0 30 2 *"}}'), world.now)
    world.rules.put_rule(with_freshness("zlate", '{"maxWaitSeconds":60}'), world.now)
    world.now += 2 * 3_600_000
    report = CheckFreshness(world.rules, world.triggers, InMemoryAssetRegistry(), world.reader, lambda: world.now)()

    assert sorted(report.rules) == ["early", "zlate"]
    assert list(report.unchecked) == ["never"] and "never fires" in report.unchecked["never"]
    explainer = ExplainRule(world.rules, world.triggers, world.reader, clock=lambda: world.now, resolver=world.resolve)
    freshness = explainer.explain("never")["freshness"]
    assert freshness["status"] == "ERROR" and "0 0 30 2 *" in freshness["reason"]
    assert explainer.explain("early")["freshness"]["status"] == "OVERDUE"
