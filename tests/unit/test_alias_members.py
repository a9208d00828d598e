"""A rule member may name an alias (DESIGN.md: "each member an asset key or alias"), through the rule use cases
on the in-memory fakes: resolved when the rule is written into the alias's assets, evaluated on their state,
explained with both names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.api.rule_answers import RuleAnswer
from lakehook.domain.aliases import Alias
from lakehook.domain.errors import ValidationError
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_writes import PutRule
from tests.fakes.memory_dispatch import InMemoryAliasStore
from tests.unit.test_resolve_usecase import A, B, World

C = "paimon://lake/ods/c"


class Aliased(World):
    """The resolver world, the rule use cases and an alias store on the same fakes."""

    def __init__(self) -> None:
        super().__init__()
        self.aliases = InMemoryAliasStore()
        self.put_rule = PutRule(self.rules, lambda: self.now, resolver=self.resolve, aliases=self.aliases)
        self.explainer = ExplainRule(
            self.rules, self.triggers, self.reader, clock=lambda: self.now, resolver=self.resolve
        )

    def alias(self, name: str, *keys: str) -> None:
        self.aliases.put_alias(Alias(name=name, asset_keys=keys, created_at=self.now, updated_at=self.now))

    def put(self, rule_id: str, *members: dict[str, Any]) -> dict[str, Any]:
        body = {
            "groups": [{"groupId": "g", "members": list(members)}],
            "policy": {"mode": "ALL_UPDATED"},
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        }
        stored, _ = self.put_rule.put(rule_id, body)
        return RuleAnswer.from_domain(stored).dump()


def test_a_member_naming_an_alias_waits_for_the_aliass_asset_and_explain_shows_both_names() -> None:
    world = Aliased()
    world.alias("orders", A)

    stored = world.put("dwd", {"alias": "orders", "condition": {"minSnapshotId": 5}})

    assert stored["groups"][0]["members"] == [
        {"assetKey": A, "alias": "orders", "condition": {"snapshotRequired": True, "minSnapshotId": 5}}
    ]
    world.snap(A, 3)
    world.deliver()
    assert world.claimed("dwd") == []  # the target's state decides: 3 is below the member's minSnapshotId
    (member,) = world.explainer.explain("dwd")["groups"][0]["members"]
    assert (member["assetKey"], member["alias"], member["status"]) == (A, "orders", "BLOCKED_BY_SNAPSHOT")
    world.snap(A, 5)
    world.deliver()
    assert world.claimed("dwd") == [[5]]


def test_an_alias_of_several_assets_is_one_member_per_asset_all_of_them_needed() -> None:
    world = Aliased()
    world.alias("trade", A, B)

    stored = world.put("dws", {"alias": "trade"}, {"assetKey": C})

    assert [(m["assetKey"], m.get("alias")) for m in stored["groups"][0]["members"]] == [
        (A, "trade"),
        (B, "trade"),
        (C, None),
    ]
    world.snap(A, 1)
    world.snap(C, 9)
    world.deliver()
    assert world.claimed("dws") == []
    world.snap(B, 2)
    world.deliver()
    assert world.claimed("dws") == [[1, 2, 9]]


def test_the_rule_as_read_puts_back_unchanged() -> None:
    world = Aliased()
    world.alias("trade", A, B)
    stored = world.put("dws", {"alias": "trade"})
    again = world.put("dws", *stored["groups"][0]["members"])
    assert again["groups"] == stored["groups"]


@pytest.mark.parametrize(
    ("member", "words"),
    [
        ({"alias": "missing"}, "alias 'missing' does not exist"),
        ({"alias": "trade", "assetKey": C}, f"{C!r} is not an asset of alias 'trade'"),
        ({"alias": 7}, "an alias name is"),
    ],
)
def test_a_member_naming_an_alias_badly_is_a_400_naming_it_and_nothing_is_stored(
    member: dict[str, Any], words: str
) -> None:
    world = Aliased()
    world.alias("trade", A, B)
    with pytest.raises(ValidationError) as refused:
        world.put("dws", {"assetKey": C}, member)
    assert refused.value.field == "groups.0.members.1.alias" and words in str(refused.value)
    assert world.rules.get_rule("dws") is None


def test_an_alias_naming_an_asset_the_group_already_has_is_refused_naming_the_alias() -> None:
    world = Aliased()
    world.alias("trade", A, B)
    with pytest.raises(ValidationError, match="appears twice in the group \\(through alias 'trade'\\)"):
        world.put("dws", {"assetKey": A}, {"alias": "trade"})


@given(name=st.text(max_size=200))
def test_any_alias_name_that_is_not_an_alias_is_a_400_naming_the_member(name: str) -> None:
    world = Aliased()
    world.alias("trade", A)
    if name == "trade":
        return
    with pytest.raises(ValidationError) as refused:
        world.put("dws", {"alias": name})
    assert refused.value.field == "groups.0.members.0.alias"
