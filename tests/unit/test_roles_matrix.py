"""The authorization matrix, generated: roles x scopes x every route of the OpenAPI document x ids in and out of
the scope. What the issue asks of it, stated here without the implementation's tables: a READ_ONLY caller gets
no 2xx on a non-GET route; a caller never gets a 2xx on a rule, trigger or asset outside its scope; an ADMIN is
never refused; and a caller the role and scope allow is never refused (a 403 there would be the roles' doing)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.api.app import build_app, openapi_document
from tests.hypothesis_profiles import examples
from tests.unit.roles_stack import ETL_RULE, MART_RULE, ODS, RULE_ASSETS, SALES, RolesStack

# The routes that operate runs (the list: replay, retry, evaluate/backfill, complete, plus the backtest and
# the sensor, which write nothing); every other non-GET route is administration, as are the token and binding reads.
OPERATIONAL = {
    ("POST", "/rules/{ruleId}/evaluate"),
    ("POST", "/rules/{ruleId}/backtest"),
    ("POST", "/triggers/{triggerKey}/retry"),
    ("POST", "/triggers/{triggerKey}/replay"),
    ("POST", "/runs/{triggerKey}/complete"),
    ("POST", "/sensors/evaluate"),
}
ADMIN_ONLY_READS = {("GET", "/tokens"), ("GET", "/role-bindings")}
ASSET_FREE = {"/producers", "/producers/{producerId}", "/aliases", "/aliases/{name}"}  # need every asset in scope

RULE_SCOPES = [[], ["etl."], ["mart."], ["etl.", "mart."], ["etl.d"]]
ASSET_SCOPES = [[], ["iceberg://lake/sales"], ["paimon://"], ["iceberg://", "paimon://lake/ods/"]]
FIXED_QUERY = {
    "start": "2025-01-01T00:00:00Z",
    "end": "2025-01-02T00:00:00Z",
    "namespace": "poller",
    "key": "offset",
    "principalArn": "arn:aws:iam::123456789012:role/ops",
}


def _routes() -> list[tuple[str, str, list[str]]]:
    """(method, path, required query parameters) of every route the document lists."""
    spec = json.loads(openapi_document(build_app()))
    routes = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            required = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query" and p.get("required")]
            routes.append((method.upper(), path, required))
    return sorted(routes)


ROUTES = _routes()


@pytest.fixture
def stacks() -> Iterator[list[RolesStack]]:
    made: list[RolesStack] = []
    yield made
    for stack in made:
        stack.close()


def _expected_refusal(
    role: str, rules: list[str], assets: list[str], method: str, path: str, named: dict[str, str]
) -> bool:
    """Whether the issue's rules refuse this request: the role's routes, then the scope's rules and assets."""
    route = (method, path)
    action = "OPERATE" if route in OPERATIONAL else "ADMIN" if method != "GET" or route in ADMIN_ONLY_READS else "READ"
    allowed = {"ADMIN": {"READ", "OPERATE", "ADMIN"}, "OPERATOR": {"READ", "OPERATE"}, "READ_ONLY": {"READ"}}[role]
    if action not in allowed:
        return True
    if role == "ADMIN":
        return False
    if path in ASSET_FREE and assets:
        return True
    rule = named.get("rule")
    asset = named.get("asset")
    return (rule is not None and bool(rules) and not rule.startswith(tuple(rules))) or (
        asset is not None and bool(assets) and not asset.startswith(tuple(assets))
    )


def _request(
    stack: RolesStack, path: str, required: list[str], rule: str, asset: str
) -> tuple[str, dict[str, str], dict[str, str]]:
    """The concrete path and query, and the rule and asset they name (for the expectation)."""
    named: dict[str, str] = {}
    values = {
        "ruleId": rule,
        "triggerKey": stack.triggers[rule],
        "producerId": "p1",
        "name": "alias1",
        "tokenId": "0123456789abcdef",
    }
    for parameter in re.findall(r"{(\w+)}", path):
        if parameter in ("ruleId", "triggerKey"):
            named["rule"] = rule
        path = path.replace(f"{{{parameter}}}", values[parameter])
    query = {}
    for name in required:
        if name == "ruleId":
            query[name], named["rule"] = rule, rule
        elif name == "assetKey":
            query[name], named["asset"] = asset, asset
        else:
            query[name] = FIXED_QUERY[name]
    return path, query, named


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    role=st.sampled_from(["ADMIN", "OPERATOR", "READ_ONLY"]),
    rules=st.sampled_from(RULE_SCOPES),
    assets=st.sampled_from(ASSET_SCOPES),
    route=st.sampled_from(ROUTES),
    rule=st.sampled_from([ETL_RULE, MART_RULE]),
    asset=st.sampled_from([SALES, ODS]),
    body=st.sampled_from([None, {}, {"force": True}]),
)
def test_every_route_answers_as_the_role_and_scope_say(
    stacks: list[RolesStack],
    role: str,
    rules: list[str],
    assets: list[str],
    route: tuple[str, str, list[str]],
    rule: str,
    asset: str,
    body: Any,
) -> None:
    if role == "ADMIN":
        rules, assets = [], []  # an ADMIN has no scope (a scoped ADMIN is a 400: see test_roles)
    stack = RolesStack()
    stacks.append(stack)
    token = stack.token(role, rules, assets)
    method, template, required = route
    path, query, named = _request(stack, template, required, rule, asset)

    status, answer = stack.call(method, path, body, token=token, query=query or None)

    refused = _expected_refusal(role, rules, assets, method, template, named)
    if refused:
        assert status == 403, (role, rules, assets, method, path, query, status, answer)
        assert f"role {role}" in answer["message"] and "scope:" in answer["message"], answer
    else:
        assert status != 403 or "producer" in answer["message"], (role, method, path, query, status, answer)
    if role == "READ_ONLY" and method != "GET":
        assert not 200 <= status < 300
    out_of_scope = (named.get("rule") and rules and not named["rule"].startswith(tuple(rules))) or (
        named.get("asset") and assets and not named["asset"].startswith(tuple(assets))
    )
    if out_of_scope:
        assert not 200 <= status < 300, (role, rules, assets, method, path, status)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    rules=st.sampled_from(RULE_SCOPES),
    assets=st.sampled_from(ASSET_SCOPES),
    role=st.sampled_from(["OPERATOR", "READ_ONLY"]),
)
def test_lists_hold_only_what_the_scope_allows(
    stacks: list[RolesStack], rules: list[str], assets: list[str], role: str
) -> None:
    stack = RolesStack()
    stacks.append(stack)
    token = stack.token(role, rules, assets)

    listed_rules = {r["ruleId"] for r in stack.ok("GET", "/rules", token=token)["items"]}
    listed_assets = {a["assetKey"] for a in stack.ok("GET", "/assets", token=token)["items"]}

    assert listed_rules == {r for r in RULE_ASSETS if not rules or r.startswith(tuple(rules))}
    registered = {a["assetKey"] for a in stack.ok("GET", "/assets")["items"]}
    assert listed_assets == {a for a in registered if not assets or a.startswith(tuple(assets))}


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(route=st.sampled_from([r for r in ROUTES if r[0] == "GET" and r[1] not in ("/tokens", "/role-bindings", "/me")]))
def test_an_admin_token_made_by_post_tokens_answers_as_the_admin_token(
    stacks: list[RolesStack], route: tuple[str, str, list[str]]
) -> None:
    stack = RolesStack()
    stacks.append(stack)
    method, template, required = route
    path, query, _ = _request(stack, template, required, ETL_RULE, SALES)

    scoped = stack.call(method, path, token=stack.token("ADMIN"), query=query or None)
    admin = stack.call(method, path, query=query or None)
    assert _stable(scoped) == _stable(admin)


def _stable(answer: Any) -> Any:
    """The answer without the instant it was computed at (an explanation's evaluatedAt)."""
    if isinstance(answer, dict):
        return {k: _stable(v) for k, v in answer.items() if k != "evaluatedAt"}
    if isinstance(answer, list | tuple):
        return [_stable(v) for v in answer]
    return answer
