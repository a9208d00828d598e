"""Roles on AWS in template.yaml: the managed policies let IAM enforce the route level (READ_ONLY: GET methods
only; OPERATOR: GET methods and exactly the routes ``domain.access`` calls operational, at the path API Gateway
checks for an IAM caller), and the UnboundIamIdentity parameter reaches the setting the API functions read."""

from __future__ import annotations

import re
from typing import Any

from lakehook.api.auth import iam_variant_routes
from lakehook.domain.access import OPERATIONAL_ROUTES, UnboundIdentity
from lakehook.domain.signing import IAM_PREFIX
from lakehook.local.template import Template
from lakehook.settings import Settings
from tests.support import ROOT

DOCUMENT = Template.load(ROOT / "template.yaml").document
RESOURCES = DOCUMENT["Resources"]
PREFIX = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${LakehookApi}/${Stage}/"


def _invoked(policy: str) -> set[str]:
    """``METHOD path`` of each resource the policy lets its holder invoke."""
    found = set()
    for statement in RESOURCES[policy]["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for resource in resources:
            text = resource["Fn::Sub"] if isinstance(resource, dict) else resource
            assert text.startswith(PREFIX), text
            method, _, path = text.removeprefix(PREFIX).partition("/")
            found.add(f"{method} /{path}")
    return found


def _as_iam_resource(method: str, path: str) -> str:
    """The route as an execute-api resource an IAM caller invokes (its IAM variant where it has one)."""
    iam_path = IAM_PREFIX + path if (method, path) in iam_variant_routes() else path
    return f"{method} {re.sub(r'{[^}]+}', '*', iam_path)}"


def test_the_read_only_policy_invokes_get_methods_only() -> None:
    assert _invoked("ReadOnlyInvokePolicy") == {"GET /*"}


def test_the_operator_policy_invokes_get_methods_and_the_operational_routes_only() -> None:
    expected = {"GET /*"} | {_as_iam_resource(m, p) for m, p in OPERATIONAL_ROUTES}
    assert _invoked("OperatorInvokePolicy") == expected


def test_the_unbound_identity_parameter_reaches_the_setting() -> None:
    parameter: dict[str, Any] = DOCUMENT["Parameters"]["UnboundIamIdentity"]
    assert parameter["Default"] == UnboundIdentity.AUTO
    assert set(parameter["AllowedValues"]) == {u.value for u in UnboundIdentity}
    variables = DOCUMENT["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["LAKEHOOK_UNBOUND_IAM_IDENTITY"] == {"Ref": "UnboundIamIdentity"}
    for value in parameter["AllowedValues"]:
        assert Settings(unbound_iam_identity=value).unbound_iam_identity == value
