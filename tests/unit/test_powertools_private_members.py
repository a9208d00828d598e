"""The private members of Powertools' REST resolver that ``lakehook.api.app.LakehookResolver`` relies on.

``LakehookResolver`` admits a request (authenticate, then size, media type and JSON limits) before Powertools
parses it, and includes route modules lazily. Both lean on members Powertools does not document:
``_resolve`` (the step after the event is stored, before routing), ``_static_routes`` / ``_dynamic_routes``
(the registered routes, in match order), ``_compile_regex`` (a path to the pattern Powertools matches),
``_remove_prefix``, ``_convert_matches_into_route_keys``, ``_response_builder_class`` and ``_serializer``, a
``Route``'s ``rule``, ``method``, ``func`` and ``openapi_path``, that ``current_event`` holds the request when
``_resolve`` runs, and that routes match in the order of the two lists (sorted in place). An upgrade of
``aws_lambda_powertools`` (pinned in constraints.txt) that renames or reshapes one of them fails here, by name,
instead of somewhere in admission.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder, Route

from lakehook.api.app import LakehookResolver, build_app

UPDATE = (
    ": update lakehook.api.app.LakehookResolver (its admission and lazy route inclusion) to what Powertools has now, "
    "and this test with it, or keep aws_lambda_powertools at the version constraints.txt pins"
)


def _event(method: str, path: str) -> dict[str, Any]:
    return {
        "httpMethod": method,
        "path": path,
        "resource": path,
        "headers": {},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "requestContext": {"httpMethod": method, "path": path, "stage": "v1", "requestId": "r", "identity": {}},
        "body": None,
        "isBase64Encoded": False,
    }


def test_the_resolver_still_has_every_private_member_the_admission_uses() -> None:
    for name in (
        "_resolve",
        "_compile_regex",
        "_remove_prefix",
        "_convert_matches_into_route_keys",
    ):
        assert hasattr(APIGatewayRestResolver, name), f"Powertools' resolver no longer has {name}{UPDATE}"
    app = APIGatewayRestResolver()
    for name in ("_static_routes", "_dynamic_routes", "_serializer", "_response_builder_class"):
        assert hasattr(app, name), f"a Powertools resolver instance no longer has {name}{UPDATE}"
    assert isinstance(app._static_routes, list) and isinstance(app._dynamic_routes, list), f"route lists{UPDATE}"
    builder = getattr(app._response_builder_class, "__origin__", app._response_builder_class)
    assert builder is ResponseBuilder, f"_response_builder_class is not ResponseBuilder{UPDATE}"
    assert {"response", "serializer", "route"} <= set(inspect.signature(ResponseBuilder).parameters), (
        f"ResponseBuilder(response, serializer, route) changed{UPDATE}"
    )
    assert inspect.signature(app._resolve).parameters == {}, f"_resolve takes arguments now{UPDATE}"


def test_compile_regex_and_route_keys_match_a_path_as_the_routes_do() -> None:
    app = APIGatewayRestResolver()
    rule = app._compile_regex("/rules/<ruleId>/explain")
    assert isinstance(rule, re.Pattern)
    match = rule.match("/rules/orders_daily/explain")
    assert match is not None
    assert app._convert_matches_into_route_keys(match) == {"ruleId": "orders_daily"}
    assert rule.match("/rules/orders_daily/explain/more") is None


def test_registered_routes_are_route_objects_with_the_fields_admission_reads() -> None:
    app = APIGatewayRestResolver()

    @app.get("/things/<thingId>")
    def thing(thingId: str) -> dict[str, str]:
        return {"thingId": thingId}

    routes = app._static_routes + app._dynamic_routes
    assert len(routes) == 1
    route = routes[0]
    assert isinstance(route, Route)
    assert route.method == "GET" and route.func is thing
    assert route.openapi_path == "/things/{thingId}"
    assert route.rule.match("/things/a1")


def test_a_refusal_built_in_resolve_is_what_the_caller_gets() -> None:
    """``LakehookResolver._resolve`` answers a refusal through ``_response_builder_class(response, serializer,
    route=None)`` before Powertools routes: the built response must be what ``resolve`` returns."""

    class Refusing(APIGatewayRestResolver):
        def _resolve(self) -> ResponseBuilder[Any]:
            refusal = Response(status_code=418, content_type="application/json", body='{"error":"TEAPOT"}')
            return self._response_builder_class(response=refusal, serializer=self._serializer, route=None)

    answer = Refusing().resolve(_event("GET", "/anything"), None)
    assert answer["statusCode"] == 418 and answer["body"] == '{"error":"TEAPOT"}'


def test_lakehooks_own_resolver_lists_its_routes_through_those_members() -> None:
    app = build_app()
    assert isinstance(app, LakehookResolver)
    app.include_every_route()
    paths = {(r.method, r.openapi_path) for r in app._static_routes + app._dynamic_routes}
    assert ("POST", "/asset-events") in paths
    assert ("GET", "/rules/{ruleId}/explain") in paths
    assert app._route_of("GET", "/rules/r1/explain") is not None
    assert app._remove_prefix("/rules/r1/explain") == "/rules/r1/explain"


def test_the_request_is_the_current_event_when_resolve_runs() -> None:
    """``LakehookResolver._resolve`` reads ``self.current_event`` (method and path) to include and admit: Powertools
    must have stored the request before it calls ``_resolve``."""
    seen: list[tuple[str, str]] = []

    class Reading(APIGatewayRestResolver):
        def _resolve(self) -> ResponseBuilder[Any]:
            seen.append((self.current_event.http_method, self.current_event.path))
            return super()._resolve()

    Reading().resolve(_event("POST", "/rules/r1/evaluate"), None)
    assert seen == [("POST", "/rules/r1/evaluate")]


def test_routes_are_matched_in_the_order_of_the_lists_sorted_in_place() -> None:
    """``include_every_route`` sorts ``_static_routes`` / ``_dynamic_routes`` in place into the route table's order;
    Powertools must match in list order, so the sort decides which of two matching routes answers."""
    app = APIGatewayRestResolver()

    @app.get("/<kind>/<thingId>")
    def any_thing(kind: str, thingId: str) -> dict[str, str]:
        return {"route": "any"}

    @app.get("/things/<thingId>")
    def a_thing(thingId: str) -> dict[str, str]:
        return {"route": "thing"}

    def answered() -> str:
        body = app.resolve(_event("GET", "/things/a1"), None)["body"]
        return str(json.loads(body)["route"])

    first = answered()
    app._dynamic_routes.sort(key=lambda route: route.func is any_thing)  # the other one first, in place
    assert {first, answered()} == {"any", "thing"} and answered() != first
