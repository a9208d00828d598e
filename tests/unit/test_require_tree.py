"""Nested conditions (issue 38): a group's ``require`` tree over its members (allOf, anyOf, atLeast n of), checked
when the rule is written, evaluated from the members' verdicts, shown by explain at every node, and claimed with
exactly the members that hold."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from lakehook import container
from lakehook.answers.explain import GroupExplanation, RequireNode
from lakehook.api.app import build_app
from lakehook.cli_commands.commands import require_lines
from lakehook.container import Container
from lakehook.domain.evaluation import Status, evaluate_group
from lakehook.domain.rules import Rule
from lakehook.domain.state import AssetState
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger
from lakehook.settings import Settings
from tests import wiring
from tests.support import FakeLambdaContext, api_event

TOKEN = "require-admin"
NAMES = ("a", "b", "c", "d", "e")
KEYS = {n: f"paimon://lake/ods/{n}" for n in NAMES}
TARGET = {"type": "eventbridge", "eventBusName": "lakehook-runs"}
NOW = 1_750_000_000_000
TREE = {"anyOf": [{"allOf": ["a", "b"]}, {"atLeast": 2, "of": ["c", "d", "e"]}]}


def members(names: tuple[str, ...] = NAMES) -> list[dict[str, Any]]:
    return [{"assetKey": KEYS[n], "name": n} for n in names]


def rule_body(require: Any, mode: str = "ALL_UPDATED", names: tuple[str, ...] = NAMES, **group: Any) -> dict[str, Any]:
    return {
        "ruleId": "r",
        "target": TARGET,
        "policy": {"mode": mode},
        "groups": [{"groupId": "g", "members": members(names), "require": require, **group}],
    }


def rule(require: Any, mode: str = "ALL_UPDATED", names: tuple[str, ...] = NAMES) -> Rule:
    return Rule.model_validate(rule_body(require, mode, names))


def states(snapshots: dict[str, int]) -> dict[str, AssetState]:
    """A state per member that has a snapshot; the others have none yet (registered: they do not hold)."""
    return {KEYS[n]: AssetState(asset_key=KEYS[n], version=1, latest_snapshot_id=s) for n, s in snapshots.items()}


def cursor_of(pins: dict[str, int]) -> GroupCursor:
    inputs = tuple(PinnedInput(asset_key=KEYS[n], snapshot_id=s, state_version=1) for n, s in pins.items())
    trigger = Trigger(trigger_key="k", rule_id="r", group_id="g", inputs=inputs, created_at=NOW, updated_at=NOW)
    return GroupCursor.initial("r", "g").after(trigger, {})


def evaluate(r: Rule, snapshots: dict[str, int], cursor: GroupCursor | None = None) -> Any:
    registered = dict.fromkeys(KEYS.values(), True)
    return evaluate_group(r, r.groups[0], states(snapshots), cursor, NOW, registered=registered)


def brute(term: Any, holding: set[str]) -> bool:
    """The tree's value by plain boolean evaluation, independent of the domain's code."""
    if isinstance(term, str):
        return term in holding
    if "allOf" in term:
        return all(brute(t, holding) for t in term["allOf"])
    if "anyOf" in term:
        return any(brute(t, holding) for t in term["anyOf"])
    return sum(brute(t, holding) for t in term["of"]) >= term["atLeast"]


# --- written: a 400 naming what is wrong --------------------------------------------------------------


@pytest.mark.parametrize(
    ("require", "extra", "says"),
    [
        ({"anyOf": ["a", "z"]}, {}, "require names 'z', which is no member"),
        ({"anyOf": ["a", "b", "c", "d"]}, {}, "members.4 (paimon://lake/ods/e) is not named in require"),
        ({"atLeast": 4, "of": ["a", "b", "c"]}, {}, "atLeast is 4 but of names 3 terms"),
        ({"atLeast": 0, "of": ["a", "b", "c", "d", "e"]}, {}, "greater than or equal to 1"),
        ({"allOf": []}, {}, "at least 1 item"),
        ({"noneOf": ["a"]}, {}, "noneOf"),
        ({"allOf": [{"anyOf": [{"allOf": [{"anyOf": [{"allOf": list(NAMES)}]}]}]}]}, {}, "5 operators deep"),
        ({"allOf": list(NAMES)}, {"schedule": {"cron": "0 * * * *"}}, "a schedule"),
    ],
)
def test_a_tree_that_cannot_hold_as_written_is_refused_naming_why(require: Any, extra: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Rule.model_validate(rule_body(require, **extra))


def test_modes_the_tree_cannot_define_are_refused() -> None:
    with pytest.raises(ValueError, match="EACH_VERSION runs every member's next version"):
        rule({"allOf": list(NAMES)}, mode="EACH_VERSION")
    body = rule_body({"allOf": list(NAMES)})
    body["policy"]["backfill"] = "SKIP"
    with pytest.raises(ValueError, match="backfill SKIP absorbs every member's versions"):
        Rule.model_validate(body)


def test_a_name_names_one_member() -> None:
    body = rule_body({"allOf": ["a", "b"]}, names=("a", "b"))
    body["groups"][0]["members"][1]["name"] = "a"
    with pytest.raises(ValueError, match="member name 'a' names more than one member"):
        Rule.model_validate(body)


def test_the_tree_may_name_members_by_asset_key_and_depth_four_is_allowed() -> None:
    deep = {"allOf": [{"anyOf": [{"allOf": [{"atLeast": 1, "of": [KEYS["a"], "b", "c", "d", "e"]}]}]}]}
    r = rule(deep)
    assert Rule.model_validate_json(r.to_json()) == r  # it reads back as written


# --- evaluated -----------------------------------------------------------------------------------------


def test_a_or_of_ands_fires_on_either_branch_and_pins_exactly_the_members_that_hold() -> None:
    r = rule(TREE)
    only_a = evaluate(r, {"a": 1, "c": 3})
    assert only_a.status is Status.BLOCKED_BY_SNAPSHOT and not only_a.pins
    assert only_a.require is not None and not only_a.require.holds
    assert only_a.reason.startswith("require: anyOf [allOf [a (holds), b (does not hold)]")
    two_of_three = evaluate(r, {"a": 1, "c": 3, "e": 5})
    assert two_of_three.ready
    assert [(p.asset_key, p.snapshot_id) for p in two_of_three.pins] == [(KEYS["a"], 1), (KEYS["c"], 3), (KEYS["e"], 5)]
    tree = GroupExplanation.from_domain(two_of_three).dump()["require"]
    assert (tree["op"], tree["holds"], tree["holding"]) == ("anyOf", True, 1)
    assert [(t["op"], t["holds"], t["holding"], t["needed"]) for t in tree["terms"]] == [
        ("allOf", False, 1, 2),
        ("atLeast", True, 2, 2),
    ]
    assert [(t["ref"], t["holds"]) for t in tree["terms"][1]["terms"]] == [("c", True), ("d", False), ("e", True)]


def test_all_updated_after_a_claim_waits_until_the_tree_holds_over_members_that_advanced() -> None:
    r = rule(TREE)
    last = cursor_of({"a": 1, "b": 1, "c": 1})
    only_a = evaluate(r, {"a": 2, "b": 1, "c": 1}, last)
    assert only_a.status is Status.WAITING_FOR_UPDATE and not only_a.pins
    assert [m.status for m in only_a.members[:3]] == [
        Status.READY,
        Status.WAITING_FOR_UPDATE,
        Status.WAITING_FOR_UPDATE,
    ]
    assert only_a.require is not None and not only_a.require.holds
    d_arrives = evaluate(r, {"a": 2, "b": 1, "c": 1, "d": 1}, last)  # c (held, not new) and d (new): one new of 2
    assert d_arrives.status is Status.WAITING_FOR_UPDATE
    both = evaluate(r, {"a": 2, "b": 2, "c": 1}, last)
    assert both.ready and [p.snapshot_id for p in both.pins] == [2, 2, 1]  # c holds: pinned as it is


def test_any_updated_fires_on_one_new_member_once_the_tree_holds() -> None:
    r = rule(TREE, mode="ANY_UPDATED")
    last = cursor_of({"a": 1, "b": 1})
    assert evaluate(r, {"a": 1, "b": 1}, last).status is Status.WAITING_FOR_UPDATE
    assert evaluate(r, {"a": 1, "b": 1, "c": 4}, last).ready  # c holds and is new; the tree holds through a and b
    assert evaluate(r, {"a": 1, "c": 4}, last).status is Status.BLOCKED_BY_SNAPSHOT  # the tree does not hold


def test_all_of_every_member_is_the_group_without_a_tree() -> None:
    """The flat group's meaning is the tree allOf(every member): same verdicts and pins, with or without a cursor."""
    flat = Rule.model_validate({**rule_body(None), "groups": [{"groupId": "g", "members": members()}]})
    tree = rule({"allOf": list(NAMES)})
    for snapshots, last in itertools.product(
        ({n: 1 for n in NAMES}, {n: 2 for n in NAMES}, {"a": 2, "b": 2}, {**{n: 1 for n in NAMES}, "c": 2}),
        (None, cursor_of({n: 1 for n in NAMES})),
    ):
        left, right = evaluate(flat, snapshots, last), evaluate(tree, snapshots, last)
        assert (left.status, left.pins) == (right.status, right.pins), (snapshots, last)


terms = st.recursive(
    st.sampled_from(NAMES),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: {"allOf": ts}),
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: {"anyOf": ts}),
        st.lists(inner, min_size=1, max_size=3).flatmap(
            lambda ts: st.integers(1, len(ts)).map(lambda n: {"atLeast": n, "of": ts})
        ),
    ),
    max_leaves=8,
)


def _depth(term: Any) -> int:
    if isinstance(term, str):
        return 0
    return 1 + max(_depth(t) for t in next(v for k, v in term.items() if k != "atLeast"))


@given(
    term=terms.filter(lambda t: not isinstance(t, str) and _depth(t) <= 3),
    snapshots=st.dictionaries(st.sampled_from(NAMES), st.integers(1, 3)),
    cursor=st.none() | st.dictionaries(st.sampled_from(NAMES), st.integers(1, 3)),
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
)
def test_the_verdict_is_the_boolean_value_of_the_tree_and_the_claim_pins_the_members_that_hold(
    term: Any, snapshots: dict[str, int], cursor: dict[str, int] | None, mode: str
) -> None:
    used = {n for n in NAMES if f'"{n}"' in json.dumps(term)}
    require = {"allOf": [term, {"anyOf": sorted(set(NAMES) - used)}]} if used != set(NAMES) else term  # name all
    r = rule(require, mode)
    last = cursor_of(cursor) if cursor is not None else None
    verdict = evaluate(r, snapshots, last)
    holding = set(snapshots)
    if last is None:
        expected = brute(require, holding)
    elif mode == "ALL_UPDATED":
        newer = {n for n in holding if n not in cursor or snapshots[n] > cursor[n]}
        expected = brute(require, newer)
    else:
        newer = {n for n in holding if n not in cursor or snapshots[n] > cursor[n]}
        older = {n for n in holding if n in cursor and snapshots[n] < cursor[n]}
        expected = brute(require, holding) and bool(newer) and not older
    event(f"ready={expected} cursor={cursor is not None}")
    assert verdict.ready is expected, (require, snapshots, cursor, verdict.reason)
    assert verdict.require is not None
    if verdict.ready:
        assert {(p.asset_key, p.snapshot_id) for p in verdict.pins} == {(KEYS[n], snapshots[n]) for n in holding}
        assert verdict.require.holds and brute(require, holding)
    else:
        assert not verdict.pins


# --- through the API: 400 at write, explain's tree, the resolver's claim ---------------------------------


@pytest.fixture
def box() -> Iterator[Container]:
    built = wiring.in_memory(Settings(admin_token=TOKEN))
    container.use(built)
    yield built
    container.use(None)


def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    answer = build_app().resolve(api_event(method, path, body, headers=headers), FakeLambdaContext())
    return int(answer["statusCode"]), json.loads(answer["body"]) if answer["body"] else None


def push(name: str, snapshot_id: int) -> None:
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": KEYS[name], "snapshotId": snapshot_id, "commitTime": NOW}
    status, body = call("POST", "/asset-events", {"events": [event]})
    assert status == 200 and body["results"][0]["status"] == "ACCEPTED", body


def test_a_wrong_tree_is_a_400_naming_the_field_and_nothing_is_stored(box: Container) -> None:
    body = rule_body({"anyOf": [{"allOf": ["a", "b"]}, {"atLeast": 4, "of": ["c", "d", "e"]}]})
    status, answer = call("PUT", "/rules/r", {k: v for k, v in body.items() if k != "ruleId"})
    assert status == 400, answer
    assert "groups.0.require" in answer["field"] and "atLeast is 4 but of names 3 terms" in answer["message"]
    body = rule_body({"anyOf": [{"allOf": ["a", "b"]}, {"atLeast": 2, "of": ["c", "d", "e"], "most": 3}]})
    status, answer = call("PUT", "/rules/r", {k: v for k, v in body.items() if k != "ruleId"})
    assert status == 400 and "most" in answer["field"] + answer["message"], answer
    assert call("GET", "/rules/r")[0] == 404


def test_explain_shows_the_tree_and_the_resolver_claims_what_explain_shows(box: Container) -> None:
    body = rule_body(TREE)
    assert call("PUT", "/rules/r", {k: v for k, v in body.items() if k != "ruleId"})[0] == 201
    push("a", 1)
    push("c", 1)
    status, explained = call("GET", "/rules/r/explain")
    group = explained["groups"][0]
    assert status == 200 and explained["ready"] is False and group["require"]["holds"] is False, explained
    assert [t["holds"] for t in group["require"]["terms"]] == [False, False]
    assert call("GET", "/rules/r")[1]["groups"][0]["require"] == TREE
    push("d", 4)
    status, explained = call("GET", "/rules/r/explain")
    group = explained["groups"][0]
    assert explained["ready"] is True and group["require"]["terms"][1]["holding"] == 2, explained
    shown = sorted((p["assetKey"], p["snapshotId"]) for p in group["pins"])
    box.resolver.evaluate(box.rule_store.get_rule("r").rule)
    claimed = box.trigger_store.list_for_rule("r", limit=10).items
    assert [sorted((p.asset_key, p.snapshot_id) for p in t.inputs) for t in claimed] == [shown]
    assert shown == [(KEYS["a"], 1), (KEYS["c"], 1), (KEYS["d"], 4)]
    group = call("GET", "/rules/r/explain")[1]["groups"][0]
    assert group["status"] == "WAITING_FOR_UPDATE" and group["require"]["holds"] is False


def test_a_forced_run_of_a_tree_group_pins_the_members_that_have_a_version(box: Container) -> None:
    """A member of a tree that never had a version pins nothing in a manual run either (without a tree it is a 409)."""
    body = rule_body(TREE)
    assert call("PUT", "/rules/r", {k: v for k, v in body.items() if k != "ruleId"})[0] == 201
    status, answer = call("POST", "/rules/r/evaluate", {"force": True})
    assert status == 409 and "no member of group g has a version" in answer["message"], answer
    push("a", 3)
    push("d", 2)
    status, answer = call("POST", "/rules/r/evaluate", {"force": True})
    assert status in (200, 201) and answer["manual"] is True, answer
    (manual,) = box.trigger_store.list_for_rule("r", limit=10).items
    assert sorted((p.asset_key, p.snapshot_id) for p in manual.inputs) == [(KEYS["a"], 3), (KEYS["d"], 2)]


def test_a_sensor_evaluates_an_ad_hoc_tree(box: Container) -> None:
    group = {"members": members(("a", "b", "c")), "require": {"atLeast": 2, "of": ["a", "b", "c"]}}
    push("a", 1)
    status, answer = call("POST", "/sensors/evaluate", {"group": group})
    assert (status, answer["ready"]) == (200, False), answer
    push("c", 5)
    status, answer = call("POST", "/sensors/evaluate", {"group": group})
    assert (status, answer["ready"]) == (200, True), answer
    assert sorted((p["assetKey"], p["snapshotId"]) for p in answer["pins"]) == [(KEYS["a"], 1), (KEYS["c"], 5)]
    assert answer["explanation"]["groups"][0]["require"]["holding"] == 2


def test_the_cli_prints_the_tree_one_node_a_line() -> None:
    verdict = evaluate(rule(TREE), {"a": 1, "c": 3, "e": 5})
    assert verdict.require is not None
    assert list(require_lines(RequireNode.from_domain(verdict.require).dump())) == [
        "    require: anyOf (1 of 2 hold): holds",
        "      allOf (1 of 2 hold): does not hold",
        "        a holds",
        "        b does not hold",
        "      atLeast 2 of (2 of 3 hold): holds",
        "        c holds",
        "        d does not hold",
        "        e holds",
    ]


def test_a_group_held_back_by_its_policy_names_the_member_that_did_not_advance() -> None:
    """Not the unrelated member of a branch the tree does not need: c, which has not advanced, holds the group."""
    r = rule({"anyOf": ["c", {"allOf": ["a", "b", "d", "e"]}]}, mode="ANY_UPDATED")
    verdict = evaluate(r, {"c": 2}, cursor_of({"c": 2}))
    assert verdict.status is Status.WAITING_FOR_UPDATE, verdict.reason
    assert verdict.reason.endswith(f"{KEYS['c']}: version 2 already triggered; waiting for a newer one")
