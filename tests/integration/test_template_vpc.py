"""Private targets are reachable: with ``TargetAllowedNetworks`` set, the functions that call targets and asset
source endpoints run in the VPC the stack is given (template.yaml, ``ReachPrivateNetworks``); without it none
is in a VPC. Read from the template as deployed (after the SAM transform)."""

from __future__ import annotations

import re
from typing import Any

from tests.sam_template import deployed
from tests.support import TEMPLATE

# The functions that open connections to targets (webhook, Airflow, DolphinScheduler) or asset sources' endpoints
# (catalog uri, s3.endpoint): the URL policy's TargetAllowedNetworks is about them.
REACHING = {"DispatcherFunction", "TriggerRedriveFunction", "PollWorkerFunction", "ReplayApiFunction"}
VPC_POLICY = "service-role/AWSLambdaVPCAccessExecutionRole"


def functions() -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in deployed()["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }


def test_the_functions_that_reach_private_networks_run_in_the_given_vpc_when_it_is_set() -> None:
    in_vpc = {name for name, properties in functions().items() if "VpcConfig" in properties}
    assert in_vpc == REACHING
    for name in REACHING:
        condition, config, otherwise = functions()[name]["VpcConfig"]["Fn::If"]
        assert condition == "ReachPrivateNetworks" and otherwise == {"Ref": "AWS::NoValue"}, name
        assert config == {
            "SubnetIds": {"Fn::Split": [",", {"Ref": "TargetSubnetIds"}]},
            "SecurityGroupIds": {"Fn::Split": [",", {"Ref": "TargetSecurityGroupIds"}]},
        }, name
        role = deployed()["Resources"][f"{name}Role"]["Properties"]
        assert any(str(arn).endswith(VPC_POLICY) for arn in role["ManagedPolicyArns"]), name


def test_only_those_functions_may_manage_network_interfaces() -> None:
    for name in set(functions()) - REACHING:
        role = deployed()["Resources"].get(f"{name}Role")
        if role is not None:
            assert not any(str(arn).endswith(VPC_POLICY) for arn in role["Properties"]["ManagedPolicyArns"]), name


def test_the_vpc_condition_is_the_allowed_networks_and_the_stack_refuses_them_without_subnets() -> None:
    document = TEMPLATE.document
    networks = {"Fn::Not": [{"Fn::Equals": [{"Ref": "TargetAllowedNetworks"}, ""]}]}
    condition = document["Conditions"]["ReachPrivateNetworks"]["Fn::And"]
    assert condition[0] == networks
    rule = document["Rules"]["PrivateNetworksNeedAVpc"]
    assert rule["RuleCondition"] == networks
    required = {a["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for a in rule["Assertions"]}
    assert required == {"TargetSubnetIds", "TargetSecurityGroupIds"}
    # so with the networks set, the condition's other two terms hold: the functions are in the VPC
    assert {c["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for c in condition[1:]} == required


def test_the_lists_must_be_subnet_and_security_group_ids() -> None:
    parameters = TEMPLATE.document["Parameters"]
    subnets, groups = (
        parameters["TargetSubnetIds"]["AllowedPattern"],
        parameters["TargetSecurityGroupIds"]["AllowedPattern"],
    )
    assert re.fullmatch(subnets, "subnet-0123456789abcdef0,subnet-89abcdef") and re.fullmatch(subnets, "")
    assert not re.fullmatch(subnets, "sg-0123456789abcdef0") and not re.fullmatch(subnets, "subnet-1, subnet-2")
    assert re.fullmatch(groups, "sg-0123456789abcdef0") and not re.fullmatch(groups, "subnet-0123456789abcdef0")
