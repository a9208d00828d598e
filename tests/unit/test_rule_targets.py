"""A rule's target is validated against its type's full model when the rule is written, naming the field;
what was accepted always reads back as the same typed target; what was stored before still loads."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.domain.targets import TARGET_CONFIGS, UnusableTarget
from lakehook.domain.url_policy import UrlPolicy
from lakehook.settings import Settings
from lakehook.usecases.rules import parse_rule
from tests import wiring
from tests.fakes.memory import InMemorySecretStore
from tests.hypothesis_profiles import examples

ORDERS = "paimon://lake/ods_db/ods_order_latest"
DEPLOYED = UrlPolicy()
LOCAL = UrlPolicy(local_mode=True)

WEBHOOK = {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "lakehook/targets/dwd"}
VALID: dict[str, dict[str, Any]] = {
    "webhook": WEBHOOK,
    "stepfunctions": {
        "type": "stepfunctions",
        "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:lakehook-dwd",
    },
    "lambda": {"type": "lambda", "functionName": "lakehook-dwd"},
    "eventbridge": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    "airflow": {
        "type": "airflow",
        "baseUrl": "https://airflow.example.com",
        "dagId": "dwd_trade",
        "credentialsRef": "lakehook/targets/airflow",
    },
    "dolphinscheduler": {
        "type": "dolphinscheduler",
        "baseUrl": "https://ds.example.com/dolphinscheduler",
        "projectCode": 12,
        "processDefinitionCode": 345,
        "tokenRef": "lakehook/targets/ds",
    },
}


def rule_body(target: Any) -> dict[str, Any]:
    return {"groups": [{"groupId": "g", "members": [{"assetKey": ORDERS}]}], "target": target}


def refused(target: Any, policy: UrlPolicy = DEPLOYED) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse_rule("dwd", rule_body(target), policy)
    return caught.value


@pytest.mark.parametrize(
    ("target", "field", "words"),
    [
        ({"type": "webhok"}, "target.type", "must be one of"),
        ({"type": "Webhook", "url": "https://x.example.com", "secretRef": "s"}, "target.type", "must be one of"),
        ({}, "target.type", "must be one of"),
        ("webhook", "target", "object"),
        ({"type": "webhook", "secretRef": "s"}, "target.url", "Field required"),
        ({"type": "webhook", "url": "https://x.example.com"}, "target.secretRef", "Field required"),
        ({**WEBHOOK, "url": "file:///etc/passwd"}, "target.url", "https"),
        ({**WEBHOOK, "url": "gopher://scheduler.example.com:70/_x"}, "target.url", "https"),
        ({**WEBHOOK, "url": "https://169.254.169.254/latest/meta-data/"}, "target.url", "metadata"),
        ({**WEBHOOK, "url": "http://2130706433/"}, "target.url", "four decimal parts"),
        ({**WEBHOOK, "url": "https://good@169.254.169.254/"}, "target.url", "credentials"),
        ({**WEBHOOK, "url": "http://127.0.0.1:8080/hook"}, "target.url", "local mode"),
        ({**WEBHOOK, "conditon": "x"}, "target.conditon", "Extra inputs"),
        ({**WEBHOOK, "secretRef": "has space"}, "target.secretRef", "pattern"),
        ({**VALID["airflow"], "baseUrl": "https://metadata.google.internal/"}, "target.baseUrl", "metadata"),
        ({**VALID["dolphinscheduler"], "baseUrl": "https://10.1.1.1/ds"}, "target.baseUrl", "TargetAllowedNetworks"),
        ({"type": "lambda"}, "target.functionName", "Field required"),
    ],
)
def test_a_bad_target_is_a_400_naming_the_field(target: Any, field: str, words: str) -> None:
    error = refused(target)
    assert error.field == field, str(error)
    assert words in str(error)
    assert "target.webhook." not in str(error)  # the union's tag never leaks into a field name


def test_every_type_is_accepted_and_the_json_shape_is_kept() -> None:
    for kind, target in VALID.items():
        rule = parse_rule("dwd", rule_body(target))
        assert rule.target.type == kind
        written = json_form(rule)["target"]
        assert {k: written[k] for k in target} == {k: v for k, v in target.items()}


def test_the_policy_passed_in_decides_local_and_allow_listed_urls() -> None:
    local = {**WEBHOOK, "url": "http://127.0.0.1:8080/hook"}
    assert json_form(parse_rule("dwd", rule_body(local), LOCAL))["target"]["url"] == local["url"]
    private = {**WEBHOOK, "url": "https://10.20.0.5/hook"}
    assert refused(private).field == "target.url"
    assert parse_rule("dwd", rule_body(private), UrlPolicy.of(False, ["10.20.0.0/16"]))


def test_a_rule_stored_before_targets_were_validated_still_loads() -> None:
    # GIVEN rules as the store kept them before write-time validation
    for target in ({"type": "webhok"}, {"type": "webhook"}, {"type": "webhook", "url": "file:///etc/passwd"}):
        text = json.dumps({"ruleId": "old", **rule_body(target)})
        # WHEN read back THEN the rule loads, shows its target as written, and says what is wrong with it
        rule = Rule.from_stored(text)
        assert isinstance(rule.target, UnusableTarget) and rule.target.problem.startswith("target.")
        assert json_form(rule)["target"] == target
    # but a write never accepts one
    with pytest.raises(Exception, match="target"):
        Rule.model_validate({"ruleId": "old", **rule_body({"type": "webhok"})})


def test_the_openapi_schema_of_a_rule_has_the_targets_as_a_discriminated_union() -> None:
    schema = Rule.model_json_schema(by_alias=True)
    target = schema["properties"]["target"]
    assert target["discriminator"]["propertyName"] == "type"
    assert set(target["discriminator"]["mapping"]) == set(TARGET_CONFIGS)
    assert "UnusableTarget" not in json.dumps(schema)
    assert "url" in schema["$defs"]["WebhookTarget"]["required"]


def test_put_checks_that_the_secrets_the_target_names_exist() -> None:
    secrets = InMemorySecretStore()
    # the rule route's use case as the container builds it, on fakes (the default secret prefix is ``lakehook/``)
    put_rule = wiring.in_memory(Settings(), secret_store=secrets).put_rule
    for kind, field in (("webhook", "secretRef"), ("airflow", "credentialsRef"), ("dolphinscheduler", "tokenRef")):
        with pytest.raises(ValidationError) as caught:
            put_rule.put("dwd", rule_body(VALID[kind]))
        assert caught.value.field == f"target.{field}" and "does not exist" in str(caught.value)
        secrets.put_secret(VALID[kind][field], "x")
        assert put_rule.put("dwd", rule_body(VALID[kind]))[0].rule.target.type == kind
    # on a deployed stack the secret must also be one the dispatcher may read
    fenced = wiring.in_memory(Settings(secret_prefix="lakehook/prod/"), secret_store=secrets).put_rule
    with pytest.raises(ValidationError, match="looked up as 'lakehook/prod/lakehook/targets/dwd'") as caught:
        fenced.put("dwd", rule_body(WEBHOOK))
    assert caught.value.field == "target.secretRef"
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:lakehook/targets/dwd-AbCdEf"
    with pytest.raises(ValidationError, match="outside lakehook/prod/") as caught:
        fenced.put("dwd", rule_body({**WEBHOOK, "secretRef": arn}))
    assert caught.value.field == "target.secretRef"


# --- generated targets ---------------------------------------------------------------------------------

FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(
        [
            "https://scheduler.example.com/x",
            "http://127.0.0.1:9/x",
            "https://169.254.169.254/",
            "https://10.0.0.1/",
            "lakehook/targets/x",
            "arn:aws:states:us-east-1:123456789012:stateMachine:lakehook-x",
            "lakehook-x",
            "END",
        ]
    ),
)


@st.composite
def target_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A valid target of some type with fields dropped, replaced and added at random."""
    kind = draw(st.sampled_from(sorted(VALID)))
    target = copy.deepcopy(VALID[kind])
    model = TARGET_CONFIGS[kind]
    for name in draw(st.lists(st.sampled_from(sorted(target)), unique=True, max_size=2)):
        del target[name]
    aliases = [f.alias or n for n, f in model.model_fields.items()]
    for name in draw(st.lists(st.sampled_from(aliases), unique=True, max_size=3)):
        target[name] = draw(FIELD_VALUES)
    if draw(st.booleans()):
        target[draw(st.text(min_size=1, max_size=12))] = draw(FIELD_VALUES)
    return target


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=target_dicts(), local=st.booleans())
def test_whatever_a_put_accepts_reads_back_as_the_same_typed_target(target: dict[str, Any], local: bool) -> None:
    policy = LOCAL if local else DEPLOYED
    try:
        rule = parse_rule("dwd", rule_body(target), policy)
    except ValidationError as exc:
        # THEN a refusal always names a target field
        assert exc.field is not None and exc.field.startswith("target"), exc
        return
    stored = Rule.from_stored(rule.to_json())
    assert not isinstance(stored.target, UnusableTarget), stored.target
    assert type(stored.target) is TARGET_CONFIGS[target["type"]]
    assert stored == rule and stored.to_json() == rule.to_json()
    # and it is valid against its own model, under the policy it was written with
    assert parse_rule("dwd", json.loads(rule.to_json()), policy) == rule


@settings(max_examples=examples(200), deadline=None)
@given(target=st.one_of(target_dicts(), st.dictionaries(st.text(max_size=8), FIELD_VALUES, max_size=4)))
def test_any_stored_target_loads(target: dict[str, Any]) -> None:
    # Whatever a store holds (written by any earlier version), reading the rule never fails on its target.
    rule = Rule.from_stored(json.dumps({"ruleId": "r", **rule_body(target)}))
    if isinstance(rule.target, UnusableTarget):
        assert json_form(rule)["target"] == {k: v for k, v in target.items() if v is not None}
        assert rule.target.problem.startswith("target")
    else:
        assert type(rule.target) is TARGET_CONFIGS[target["type"]]
