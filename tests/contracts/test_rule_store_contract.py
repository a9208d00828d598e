"""The RuleStore contract (ports.rules), on the fake and on DynamoDB: a put moves the revision and keeps when the rule
was created, the reverse index follows the rule's members, listings are in id order and page, errors are kept per
group until that group evaluates fine or the rule is put again."""

from __future__ import annotations

import pytest

from lakehook.domain.errors import ValidationError
from lakehook.ports.rules import RuleError
from tests.contracts.builders import T0, rule, trigger
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

ORDERS, PAYMENTS, REFUNDS = "paimon://lake/ods/orders", "paimon://lake/ods/payments", "paimon://lake/ods/refunds"


def test_a_put_moves_the_revision_and_keeps_the_creation_time(backend: Backend) -> None:
    first = backend.rules.put_rule(rule("dwd", ORDERS), T0)
    second = backend.rules.put_rule(rule("dwd", ORDERS, PAYMENTS), T0 + 10)

    assert (first.revision, first.created_at, first.updated_at) == (1, T0, T0)
    assert (second.revision, second.created_at, second.updated_at) == (2, T0, T0 + 10)
    assert backend.rules.get_rule("dwd") == second
    assert backend.rules.get_rule("absent") is None
    assert backend.rules.get_rules(["dwd", "absent"]) == {"dwd": second.rule}


def test_the_reverse_index_follows_the_members(backend: Backend) -> None:
    backend.rules.put_rule(rule("dws", ORDERS), T0)
    backend.rules.put_rule(rule("dwd", ORDERS, PAYMENTS), T0)
    assert [r.rule_id for r in backend.rules.rules_for_asset(ORDERS)] == ["dwd", "dws"]

    backend.rules.put_rule(rule("dwd", PAYMENTS, REFUNDS), T0 + 1)  # ORDERS is no longer a member

    assert [r.rule_id for r in backend.rules.rules_for_asset(ORDERS)] == ["dws"]
    assert [r.rule_id for r in backend.rules.rules_for_asset(REFUNDS)] == ["dwd"]
    assert backend.rules.rules_for_asset(REFUNDS)[0] == rule("dwd", PAYMENTS, REFUNDS)
    assert backend.rules.delete_rule("dwd") is True
    assert backend.rules.delete_rule("dwd") is False
    assert backend.rules.rules_for_asset(PAYMENTS) == []
    assert backend.rules.get_rule("dwd") is None


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_rules_are_listed_in_id_order_in_pages(backend: Backend, limit: int) -> None:
    for rule_id in ("d", "b", "e", "a", "c"):
        backend.rules.put_rule(rule(rule_id), T0)

    listed: list[str] = []
    token: str | None = None
    for _ in range(10):
        page = backend.rules.list_rules(limit, token)
        assert len(page.items) <= limit and page.unreadable == {}
        listed += [s.rule.rule_id for s in page.items]
        token = page.next_token
        if token is None:
            break

    assert listed == ["a", "b", "c", "d", "e"]


def test_a_token_of_another_listing_is_a_validation_error(backend: Backend) -> None:
    for rule_id in ("a", "b"):
        backend.rules.put_rule(rule(rule_id), T0)
        for n in (1, 2):
            assert backend.triggers.put_replay(trigger(n, rule_id=rule_id, at=T0 + n, replay_of="x"))
    token = backend.triggers.list_for_rule("a", limit=1).next_token
    assert token is not None

    for foreign in (token, "not a token", "eyJhIjoiYiJ9"):
        with pytest.raises(ValidationError):
            backend.rules.list_rules(1, foreign)


def test_an_error_is_kept_until_its_group_evaluates_fine_or_the_rule_is_put(backend: Backend) -> None:
    backend.rules.put_rule(rule("dwd"), T0)
    error = RuleError("member 'x' does not parse", T0 + 5, "g")
    backend.rules.record_error("dwd", error)
    backend.rules.record_error("absent", error)  # deleted meanwhile: nothing

    backend.rules.clear_error("dwd", "other")  # another group evaluating fine clears nothing
    stored = backend.rules.get_rule("dwd")
    assert stored is not None and stored.last_error == error
    backend.rules.clear_error("dwd", "g")
    cleared = backend.rules.get_rule("dwd")
    assert cleared is not None and cleared.last_error is None

    backend.rules.record_error("dwd", RuleError("boom", T0 + 6))
    put = backend.rules.put_rule(rule("dwd"), T0 + 7)
    stored = backend.rules.get_rule("dwd")
    assert put.last_error is None and stored is not None and stored.last_error is None
    assert backend.rules.get_rule("absent") is None
