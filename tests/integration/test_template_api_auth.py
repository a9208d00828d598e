"""Every route the API serves is reachable with the credentials its authenticator takes, on AWS as deployed.

API Gateway passes the caller's IAM identity (``requestContext.identity.userArn``, ``caller``) to the function
only for a method with ``AWS_IAM`` authorization; with none, those fields are null. So a management route
needs ``AWS_IAM``; a route that also takes credentials of its own (a producer's signature, a run's completion
token) has no authorizer, and its IAM variant under ``IAM_PREFIX`` has ``AWS_IAM`` (``lakehook.api.auth``).
"""

from __future__ import annotations

import re
from typing import Any

from lakehook.api.app import ROUTE_MODULES
from lakehook.api.auth import authenticator_for, iam_variant_routes, public
from lakehook.domain.signing import IAM_PREFIX
from tests.sam_template import deployed
from tests.support import TEMPLATE


def served_routes() -> set[tuple[str, str]]:
    """(method, OpenAPI path) of every route of the app (the route modules' and the document's)."""
    routes = {(m, re.sub(r"<([^>]+)>", r"{\1}", p)) for rs in ROUTE_MODULES.values() for m, p in rs}
    return routes | {("GET", "/openapi.json")}


def template_routes() -> dict[tuple[str, str], str]:
    """(method, path) → the authorizer of each Api event of template.yaml ("AWS_IAM" or "NONE")."""
    found: dict[tuple[str, str], str] = {}
    for function in TEMPLATE.functions():
        for route in function.routes:
            assert (route.method, route.path) not in found, f"{route.method} {route.path} is declared twice"
            found[(route.method.upper(), route.path)] = route.auth
    return found


def expected_routes() -> dict[tuple[str, str], str]:
    expected: dict[tuple[str, str], str] = {}
    for method, path in served_routes():
        authenticator = authenticator_for(method, path)
        if authenticator is public:
            expected[(method, path)] = "NONE"
        elif (method, path) in iam_variant_routes():
            expected[(method, path)] = "NONE"  # the producer's or the run's own credentials
            expected[(method, IAM_PREFIX + path)] = "AWS_IAM"  # management credentials
        else:
            expected[(method, path)] = "AWS_IAM"
    return expected


def test_every_route_that_takes_management_credentials_has_an_iam_authorized_method() -> None:
    assert template_routes() == expected_routes()


def test_the_routes_with_an_iam_variant_are_pushes_lineage_run_completion_and_watchers_watermarks() -> None:
    assert sorted(iam_variant_routes()) == [
        ("GET", "/watermarks"),
        ("POST", "/api/v1/lineage"),
        ("POST", "/asset-events"),
        ("POST", "/runs/{triggerKey}/complete"),
        ("PUT", "/watermarks"),
    ]


def rest_api_methods() -> dict[tuple[str, str], dict[str, Any]]:
    (body,) = [
        r["Properties"]["Body"] for r in deployed()["Resources"].values() if r["Type"] == "AWS::ApiGateway::RestApi"
    ]
    return {(m.upper(), path): op for path, ops in body["paths"].items() for m, op in ops.items()}


def test_as_deployed_each_method_has_its_authorization_and_invokes_with_api_gateways_permission() -> None:
    methods = rest_api_methods()
    assert set(methods) == set(expected_routes())
    for route, authorization in expected_routes().items():
        assert methods[route]["security"] == [{authorization: []}], route
        # No caller-credentials integration (SAM's default for AWS_IAM, "arn:aws:iam::*:user/*"): a caller
        # needs execute-api:Invoke only, not lambda:InvokeFunction on the function as well.
        assert "credentials" not in methods[route]["x-amazon-apigateway-integration"], route
