"""Every alarm of template.yaml tells someone when it is given someone to tell (docs/operations.md#who-is-told):
``AlarmTopicArn`` (an existing SNS topic) or ``AlarmEmail`` (a topic the stack creates, the address subscribed)
becomes each alarm's AlarmActions and OKActions; neither leaves the alarms without actions, as before; both are
refused. The template's conditions are evaluated here for each choice, as CloudFormation would."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import TEMPLATE

ALARMS = TEMPLATE.of_type("AWS::CloudWatch::Alarm")
CONDITIONS: dict[str, Any] = TEMPLATE.document["Conditions"]
TOPIC = "arn:aws:sns:eu-west-1:123456789012:pager"
EMAIL = "oncall@example.com"
NO_VALUE = object()
INTRINSICS = {"Ref", "Condition", "Fn::Condition", "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Fn::If"}


def parameters(**given: str) -> dict[str, str]:
    return {**TEMPLATE.parameter_defaults(), **given}


def evaluate(value: Any, params: dict[str, str]) -> Any:
    """A condition or a property as CloudFormation resolves it for these parameters (the intrinsics the alarms and
    their conditions use; a resource's Ref is its logical id)."""
    if isinstance(value, list):
        return [evaluate(v, params) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or not (set(value) <= INTRINSICS):
        return {k: evaluate(v, params) for k, v in value.items()}
    ((name, arg),) = value.items()
    if name == "Ref":
        return NO_VALUE if arg == "AWS::NoValue" else params.get(arg, arg)
    if name in ("Condition", "Fn::Condition"):
        return evaluate(CONDITIONS[arg], params)
    if name == "Fn::Equals":
        return evaluate(arg[0], params) == evaluate(arg[1], params)
    if name == "Fn::Not":
        return not evaluate(arg[0], params)
    if name == "Fn::And":
        return all(evaluate(a, params) for a in arg)
    if name == "Fn::Or":
        return any(evaluate(a, params) for a in arg)
    condition, then, otherwise = arg  # Fn::If
    return evaluate(then if evaluate(CONDITIONS[condition], params) else otherwise, params)


def actions(alarm: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    properties = alarm["Properties"]
    found = {
        key: evaluate(properties.get(key, {"Ref": "AWS::NoValue"}), params) for key in ("AlarmActions", "OKActions")
    }
    return {key: None if value is NO_VALUE else value for key, value in found.items()}


def test_the_template_has_alarms_and_every_one_names_its_actions_under_the_condition() -> None:
    assert len(ALARMS) >= 15
    for name, alarm in ALARMS.items():
        for key in ("AlarmActions", "OKActions"):
            value = alarm["Properties"].get(key)
            assert isinstance(value, dict) and value.get("Fn::If", [None])[0] == "NotifyAlarms", (name, key)


@pytest.mark.parametrize(
    ("given", "told"),
    [
        ({}, None),
        ({"AlarmTopicArn": TOPIC}, [TOPIC]),
        ({"AlarmEmail": EMAIL}, ["AlarmTopic"]),  # the stack's own topic (its Ref)
    ],
    ids=["no-one", "an-existing-topic", "an-email-address"],
)
def test_every_alarm_tells_the_topic_it_is_given_when_it_fires_and_when_it_recovers(
    given: dict[str, str], told: list[str] | None
) -> None:
    params = parameters(**given)
    for name, alarm in ALARMS.items():
        assert actions(alarm, params) == {"AlarmActions": told, "OKActions": told}, name


@pytest.mark.parametrize(("email", "created"), [(EMAIL, True), ("", False)])
def test_the_stack_creates_a_topic_only_for_an_email_address_and_subscribes_it(email: str, created: bool) -> None:
    topic = TEMPLATE.resources["AlarmTopic"]
    assert topic["Type"] == "AWS::SNS::Topic"
    assert evaluate(CONDITIONS[topic["Condition"]], parameters(AlarmEmail=email)) is created
    assert evaluate(topic["Properties"]["Subscription"], parameters(AlarmEmail=email)) == [
        {"Protocol": "email", "Endpoint": email}
    ]


def test_a_topic_and_an_email_address_together_are_refused() -> None:
    rule = TEMPLATE.document["Rules"]["OneAlarmTopic"]
    both = parameters(AlarmTopicArn=TOPIC, AlarmEmail=EMAIL)
    assert evaluate(rule["RuleCondition"], both) is True
    assert not all(evaluate(a["Assert"], both) for a in rule["Assertions"])
    for alone in (parameters(AlarmTopicArn=TOPIC), parameters(AlarmEmail=EMAIL), parameters()):
        assert not evaluate(rule["RuleCondition"], alone) or all(
            evaluate(a["Assert"], alone) for a in rule["Assertions"]
        )
