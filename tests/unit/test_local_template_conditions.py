"""The local runtime's template reader decides template.yaml's conditions as CloudFormation would, for the
parameters given (their defaults otherwise): Fn::Equals, Fn::Not, Fn::And, Fn::Or and a named Condition, and
Fn::If picks its branch by them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.local.template import Template
from tests.support import TEMPLATE

TOPIC = "arn:aws:sns:eu-west-1:123456789012:pager"
EMAIL = "oncall@example.com"


def with_parameters(**given: str) -> Template:
    return Template(TEMPLATE.path, TEMPLATE.document, parameters=given)


@given(topic=st.sampled_from(["", TOPIC]), email=st.sampled_from(["", EMAIL]))
def test_or_and_and_over_named_conditions(topic: str, email: str) -> None:
    template = with_parameters(AlarmTopicArn=topic, AlarmEmail=email)
    assert template.condition("UseAlarmTopicArn") == bool(topic)
    assert template.condition("CreateAlarmTopic") == (bool(email) and not topic)
    assert template.condition("NotifyAlarms") == bool(topic or email)


@given(
    networks=st.sampled_from(["", "10.20.0.0/16"]),
    subnets=st.sampled_from(["", "subnet-0123456789abcdef0"]),
    groups=st.sampled_from(["", "sg-0123456789abcdef0"]),
)
def test_and_of_three_negations(networks: str, subnets: str, groups: str) -> None:
    template = with_parameters(TargetAllowedNetworks=networks, TargetSubnetIds=subnets, TargetSecurityGroupIds=groups)
    assert template.condition("ReachPrivateNetworks") == bool(networks and subnets and groups)


@given(reserved=st.integers(min_value=0, max_value=10000))
def test_if_picks_its_branch_by_the_condition(reserved: int) -> None:
    template = with_parameters(ApiReservedConcurrency=str(reserved))
    chosen = template.resolve({"Fn::If": ["ReserveApi", {"Ref": "ApiReservedConcurrency"}, {"Ref": "AWS::NoValue"}]})
    assert chosen == (str(reserved) if reserved else "AWS::NoValue")


def test_defaults_decide_when_no_parameter_is_given() -> None:
    assert TEMPLATE.condition("ReserveApi")  # ApiReservedConcurrency defaults to 100
    assert TEMPLATE.condition("SetApiGatewayAccount")
    assert not TEMPLATE.condition("UseCustomerKey")


def test_an_unknown_condition_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="NoSuchCondition"):
        TEMPLATE.condition("NoSuchCondition")
