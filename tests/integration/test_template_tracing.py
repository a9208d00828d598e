"""Tracing as deployed (after the SAM transform, for each ``Tracing`` value): off, no function has a
TracingConfig and no role carries the X-Ray write policy; on, every function traces in that mode and may send
its segments. docs/deploy.md#tracing states what each choice costs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sam_template import deployed

XRAY_POLICY = "AWSXrayWriteOnlyAccess"


def functions_with_policies(*parameters: str) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Each function's properties and the names of the managed policies of its role."""
    resources = deployed(*parameters)["Resources"]
    found = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        role = resources[properties["Role"]["Fn::GetAtt"][0]]["Properties"]
        found[name] = (properties, [str(arn).rsplit("/", 1)[-1] for arn in role.get("ManagedPolicyArns", [])])
    return found


def test_by_default_no_function_traces_nor_may_send_traces() -> None:
    found = functions_with_policies()
    assert len(found) >= 9
    for name, (properties, policies) in found.items():
        assert "TracingConfig" not in properties, name
        assert XRAY_POLICY not in policies, name


@pytest.mark.parametrize("mode", ["PassThrough", "Active"])
def test_with_tracing_on_every_function_traces_in_that_mode_and_may_send_traces(mode: str) -> None:
    found = functions_with_policies(f"Tracing={mode}")
    for name, (properties, policies) in found.items():
        assert properties["TracingConfig"] == {"Mode": {"Ref": "Tracing"}}, name
        assert XRAY_POLICY in policies, name


def test_the_apis_sampling_rule_exists_only_when_the_api_traces() -> None:
    resources = deployed("ApiTraceRate=0.01")["Resources"]
    stage = next(r for r in resources.values() if r["Type"] == "AWS::ApiGateway::Stage")
    assert stage["Properties"]["TracingEnabled"] == {"Fn::If": ["TraceApi", True, False]}
    assert resources["ApiTraceSampling"]["Condition"] == "TraceApi"
