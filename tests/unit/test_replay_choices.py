"""A replay's choices (``startFrom``, ``variables``): the request model, and the use case that stores them on the
replay's claim under the same key a plain replay gets, with the request's fingerprint covering them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.answers.triggers import TriggerAnswer
from lakehook.domain.dispatch import Invocation, RunManifest
from lakehook.domain.errors import ValidationError
from lakehook.domain.json_form import json_form
from lakehook.domain.replay_choices import (
    MAX_START_FROM,
    MAX_VARIABLE_NAME,
    MAX_VARIABLES,
    MAX_VARIABLES_BYTES,
    TASK_CODE,
    ReplayChoices,
    parse_replay_choices,
)
from lakehook.domain.requests import IdempotencyKeyReusedError
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.usecases.replay import ReplayTrigger
from lakehook.usecases.spool import PreflightReplay, VerifySpoolManifest
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore
from tests.fakes.memory_coverage import InMemoryObjectStore, InMemorySnapshotExistence
from tests.fakes.memory_rules import InMemoryRuleStore, InMemoryTriggerStore
from tests.replay_choices import ANY_JSON, NAMES, SCALARS, UNKNOWN_FIELDS

VARIABLES = st.dictionaries(NAMES, SCALARS, max_size=8)
START_FROM = st.text(min_size=1, max_size=60).filter(lambda s: s.strip() and all(ord(c) >= 32 for c in s))


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if draw(st.booleans()):
        body["startFrom"] = draw(START_FROM)
    if draw(st.booleans()):
        body["variables"] = draw(VARIABLES)
    return body


@given(bodies())
def test_valid_choices_are_taken_as_sent(body: dict[str, Any]) -> None:
    choices = parse_replay_choices(body)
    assert json_form(choices) == body
    assert choices.empty == (body == {})


@given(bodies(), st.dictionaries(UNKNOWN_FIELDS, ANY_JSON, min_size=1))
def test_any_unknown_field_is_a_400_naming_it(body: dict[str, Any], unknown: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_replay_choices({**body, **unknown})
    first = sorted(unknown)[0]
    assert refused.value.field == first and repr(first) in str(refused.value)


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"startFrom": ""}, "startFrom", "at least 1"),
        ({"startFrom": "   "}, "startFrom", "not blank"),
        ({"startFrom": "load\n"}, "startFrom", "control characters"),
        ({"startFrom": "x" * (MAX_START_FROM + 1)}, "startFrom", f"at most {MAX_START_FROM}"),
        ({"startFrom": 3}, "startFrom", "string"),
        ({"variables": []}, "variables", "dictionary"),
        ({"variables": {"a": [1]}}, "variables", "variables.a: must be a JSON scalar"),
        ({"variables": {"a": {"b": 1}}}, "variables", "variables.a: must be a JSON scalar"),
        ({"variables": {"": 1}}, "variables", f"1..{MAX_VARIABLE_NAME}"),
        ({"variables": {"x" * (MAX_VARIABLE_NAME + 1): 1}}, "variables", f"1..{MAX_VARIABLE_NAME}"),
        ({"variables": {"has space": 1}}, "variables", "must match"),
        ({"variables": {"lakehook_trigger_key": "x"}}, "variables", "lakehook_"),
        ({"variables": {f"v{i}": i for i in range(MAX_VARIABLES + 1)}}, "variables", f"at most {MAX_VARIABLES}"),
        ({"variables": {"big": "x" * MAX_VARIABLES_BYTES}}, "variables", f"at most {MAX_VARIABLES_BYTES}"),
        ({"variables": {"n": float("nan")}}, "variables", "JSON"),
        (["startFrom"], "body", "JSON object"),
    ],
)
def test_a_choice_out_of_bounds_is_a_400_naming_it(body: Any, field: str, says: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_replay_choices(body)
    assert refused.value.field == field and says in str(refused.value), str(refused.value)


def test_the_limits_hold_at_their_edges() -> None:
    names = {f"v{i}": i for i in range(MAX_VARIABLES)}
    assert parse_replay_choices({"variables": names}).variables == names
    padding = MAX_VARIABLES_BYTES - len(json.dumps({"big": ""}, separators=(",", ":")))
    assert parse_replay_choices({"variables": {"big": "x" * padding}}).variables is not None
    assert parse_replay_choices({"startFrom": "x" * MAX_START_FROM}).start_from is not None
    assert parse_replay_choices(None) == ReplayChoices()


# --- the use case: stored on the claim, under a plain replay's key -------------------------------------------

ASSET = "custom://erp/orders"
T0 = 1_750_000_000_000


class Scene:
    def __init__(self, target: dict[str, Any] | None = None) -> None:
        self.triggers = InMemoryTriggerStore()
        self.rules = InMemoryRuleStore()
        target = target or {"type": "webhook", "url": "https://hooks.example.com/x", "secretRef": "lakehook/t/x"}
        rule = {"ruleId": "r", "groups": [{"groupId": "g", "members": [{"assetKey": ASSET}]}], "target": target}
        self.rules.put_rule(Rule.model_validate(rule), T0)
        pins = (PinnedInput(asset_key=ASSET, snapshot_id=1001),)
        self.original = Trigger(
            trigger_key=trigger_key("r", "g", pins, None, 0),
            rule_id="r",
            group_id="g",
            status=TriggerStatus.SUCCEEDED,
            inputs=pins,
            created_at=T0,
            updated_at=T0,
            manifest_uri="s3://m/manifests/r.g.json",
        )
        assert self.triggers.put_replay(self.original)
        preflight = PreflightReplay(
            VerifySpoolManifest(InMemoryObjectStore()),
            InMemoryAssetRegistry(),
            InMemoryAssetStore(),
            InMemorySnapshotExistence(),
        )
        self.use_case = ReplayTrigger(self.triggers, preflight, clock=lambda: T0 + 1, rules=self.rules)

    def claimed(self) -> list[Trigger]:
        return [t for t in self.triggers.triggers.values() if t.replay_of == self.original.trigger_key]


def test_the_choices_are_stored_on_the_replays_claim_under_the_key_a_plain_replay_gets() -> None:
    scene = Scene()
    choices = parse_replay_choices({"startFrom": "load", "variables": {"full_refresh": True}})
    replay = scene.use_case.replay(scene.original.trigger_key, choices=choices).replay
    assert replay is not None
    assert replay.trigger_key == trigger_key("r", "g", scene.original.inputs, None, 1)
    [stored] = scene.claimed()
    assert (stored.start_from, stored.variables) == ("load", {"full_refresh": True})
    shown = TriggerAnswer.from_domain(replay).dump()
    assert shown["startFrom"] == "load" and shown["variables"] == {"full_refresh": True}
    # every attempt's invocation carries the stored choices: the payload (and so its identity) is the same
    manifest = RunManifest.for_trigger(scene.original)
    first, third = (Invocation.of(stored, manifest, "s3://m/x.json", n) for n in (1, 3))
    assert first.payload()["variables"] == {"full_refresh": True} and first.identity() == third.identity()
    # a replay of that replay chooses afresh: nothing is inherited
    plain = scene.use_case.replay(stored.trigger_key).replay
    assert plain is not None and (plain.start_from, plain.variables) == (None, None)
    assert (
        "startFrom" not in TriggerAnswer.from_domain(plain).dump()
        and "variables" not in Invocation.of(plain, manifest, "u", 1).payload()
    )


def test_under_an_idempotency_key_the_choices_are_part_of_the_request() -> None:
    scene = Scene()
    choices = parse_replay_choices({"variables": {"day": "2026-12-01"}})
    first = scene.use_case.answer(scene.original.trigger_key, idempotency_key="k-1", choices=choices)
    again = scene.use_case.answer(scene.original.trigger_key, idempotency_key="k-1", choices=choices)
    assert first.status == 201 and again.replayed and again.body == first.body
    with pytest.raises(IdempotencyKeyReusedError):
        scene.use_case.answer(scene.original.trigger_key, idempotency_key="k-1")
    assert len(scene.claimed()) == 1


DOLPHIN = {
    "type": "dolphinscheduler",
    "baseUrl": "https://ds.example.com/dolphinscheduler",
    "projectCode": 12,
    "processDefinitionCode": 345,
    "tokenRef": "lakehook/t/ds",
}


@given(st.text(min_size=1, max_size=20).filter(lambda s: TASK_CODE.fullmatch(s) is None))
def test_dolphinscheduler_starts_only_at_a_task_code_anything_else_is_a_400(start: str) -> None:
    scene = Scene(DOLPHIN)
    try:
        choices = parse_replay_choices({"startFrom": start})
    except ValidationError:
        return  # refused by the model already (blank, control characters)
    with pytest.raises(ValidationError) as refused:
        scene.use_case.replay(scene.original.trigger_key, choices=choices)
    assert refused.value.field == "startFrom" and "task code" in str(refused.value)
    assert scene.claimed() == []


def test_dolphinscheduler_takes_a_task_code() -> None:
    scene = Scene(DOLPHIN)
    replay = scene.use_case.replay(scene.original.trigger_key, choices=ReplayChoices(start_from="4242")).replay
    assert replay is not None and replay.start_from == "4242"
