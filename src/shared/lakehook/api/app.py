"""Build the API resolver: routers, error mapping and the OpenAPI document."""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Iterable, Mapping
from re import Pattern
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder, Route
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode

from lakehook.api.auth import admit, authenticator_for
from lakehook.api.contract import security_schemes
from lakehook.api.http import check_body, json_response
from lakehook.container import current
from lakehook.domain.errors import (
    AuthenticationError,
    AuthorizationError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
    ValidationError,
)
from lakehook.domain.json_input import parse_json
from lakehook.domain.requests import IdempotencyKeyReusedError
from lakehook.domain.signing import IAM_PREFIX
from lakehook.observability import logger
from lakehook.version import __version__

# Every route of ``lakehook.api.routes``, by its module, in the order the app registers them: (method, path as
# the module's router writes it). The resolver matches a request against this table and includes a module's
# router (importing the module: its models, answers and use cases) on the first request one of its routes
# serves, so a cold start pays for the routes it is called for rather than for every route of the API
# (``tests/unit/test_api_routes.py`` holds the table to what the modules register).
ROUTE_MODULES: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("POST", "/asset-events"),),
    "lineage": (("POST", "/api/v1/lineage"),),
    "producers": (("PUT", "/producers/<producerId>"), ("GET", "/producers"), ("GET", "/producers/<producerId>")),
    "assets": (("PUT", "/assets"), ("GET", "/assets"), ("GET", "/assets/state"), ("GET", "/assets/events")),
    "watermarks": (("GET", "/watermarks"), ("PUT", "/watermarks"), ("DELETE", "/watermarks")),
    "coverage": (("GET", "/assets/coverage"),),
    "rules": (
        ("PUT", "/rules/<ruleId>"),
        ("GET", "/rules"),
        ("GET", "/rules/<ruleId>"),
        ("DELETE", "/rules/<ruleId>"),
        ("GET", "/rules/<ruleId>/explain"),
        ("POST", "/rules/<ruleId>/evaluate"),
        ("POST", "/rules/<ruleId>/backtest"),
    ),
    "triggers": (
        ("GET", "/triggers"),
        ("GET", "/triggers/<triggerKey>"),
        ("POST", "/triggers/<triggerKey>/retry"),
        ("POST", "/triggers/<triggerKey>/replay"),
    ),
    "runs": (("POST", "/runs/<triggerKey>/complete"),),
    "aliases": (("PUT", "/aliases/<name>"), ("GET", "/aliases"), ("GET", "/aliases/<name>")),
    "sensors": (("POST", "/sensors/evaluate"),),
    "access": (
        ("GET", "/me"),
        ("POST", "/tokens"),
        ("GET", "/tokens"),
        ("DELETE", "/tokens/<tokenId>"),
        ("PUT", "/role-bindings"),
        ("GET", "/role-bindings"),
        ("DELETE", "/role-bindings"),
    ),
}
_ROUTES_PACKAGE = "lakehook.api.routes"

ERROR_STATUS: dict[type[Exception], tuple[int, str]] = {
    ValidationError: (400, "BAD_REQUEST"),
    UnsupportedMediaTypeError: (415, "UNSUPPORTED_MEDIA_TYPE"),
    AuthenticationError: (401, "UNAUTHENTICATED"),
    AuthorizationError: (403, "FORBIDDEN"),
    NotFoundError: (404, "NOT_FOUND"),
    ConflictError: (409, "CONFLICT"),
    IdempotencyKeyReusedError: (409, "IDEMPOTENCY_KEY_REUSED"),
    PayloadTooLargeError: (413, "PAYLOAD_TOO_LARGE"),
}


def _error(status: int, code: str, message: str, field: str | None = None) -> Response[str]:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return json_response(body, status)


_RESOLVING = threading.RLock()

VERSION_HEADER = "X-Lakehook-Version"


def with_version_header(answer: dict[str, Any]) -> dict[str, Any]:
    """Every answer names the lakehook version that gave it (docs/upgrade.md: which version a stack runs)."""
    multi = answer.get("multiValueHeaders")
    if isinstance(multi, dict):
        multi[VERSION_HEADER] = [__version__]
    else:
        answer.setdefault("headers", {})[VERSION_HEADER] = __version__
    return answer


class LakehookResolver(APIGatewayRestResolver):
    """The REST resolver, admitting each request before Powertools parses or validates anything.

    Admission runs on the matched route, in this order: authenticate (``api.auth``: a 401 whatever the
    body), then the body's size (413), media type (415), encoding and JSON limits (400, see
    ``domain.json_input``). Bodies are parsed once, by the bounded parser, for the route and for
    Powertools' validation alike.
    """

    def __init__(self) -> None:
        # IAM_PREFIX: a route's IAM variant (a method with AWS_IAM authorization) is the route itself.
        super().__init__(enable_validation=True, json_body_deserializer=parse_json, strip_prefixes=[IAM_PREFIX])
        # The route modules not included yet, each with its routes' methods and compiled paths.
        self._pending: dict[str, list[tuple[str, Pattern[str]]]] = {
            module: [(method, self._compile_regex(path)) for method, path in routes]
            for module, routes in ROUTE_MODULES.items()
        }

    def include_routes(self, modules: Iterable[str]) -> None:
        """Include these route modules' routers now (a name of ``ROUTE_MODULES``; one already included is skipped).

        Powertools matches the routes in the order they were registered (static ones first): the lists are
        kept in ``ROUTE_MODULES`` order, the app's own routes after, whatever order the modules came in, so
        a request matches and the document lists the routes as they would with every module included first.
        """
        wanted = [m for m in modules if m in self._pending]
        for module in wanted:
            del self._pending[module]
            self.include_router(importlib.import_module(f"{_ROUTES_PACKAGE}.{module}").router)
        if wanted:
            order = {f"{_ROUTES_PACKAGE}.{m}": i for i, m in enumerate(ROUTE_MODULES)}
            for routes in (self._static_routes, self._dynamic_routes):
                routes.sort(key=lambda route: order.get(route.func.__module__, len(order)))

    def include_every_route(self) -> None:
        """Every route module's router (the OpenAPI document describes them all)."""
        self.include_routes(list(self._pending))

    def _include_routes_for(self, method: str, path: str) -> None:
        """The modules with a route for this request, before it is matched (none: Powertools answers the 404)."""
        self.include_routes(
            [
                module
                for module, routes in self._pending.items()
                if any(m == method and rule.match(path) for m, rule in routes)
            ]
        )

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        # Powertools keeps the request in class-wide state (``BaseRouter.current_event``, shared by every
        # resolver of the process) and in the app's ``context``: Lambda runs one request per instance at a
        # time. The local runtime runs one request per execution environment as Lambda does, but a program
        # that imports the handler may call it from several threads (tests do), where a request would
        # otherwise read another's event halfway through; so one request at a time per process.
        with _RESOLVING:
            answer = super().resolve(event, context)
        return with_version_header(answer)

    def _resolve(self) -> ResponseBuilder[Any]:
        event = self.current_event
        self._include_routes_for(event.http_method.upper(), self._remove_prefix(event.path))
        refusal = self._admit(event)
        if refusal is not None:
            return self._response_builder_class(response=refusal, serializer=self._serializer, route=None)
        return super()._resolve()

    def _admit(self, event: APIGatewayProxyEvent) -> Response[str] | None:
        matched = self._route_of(event.http_method.upper(), self._remove_prefix(event.path))
        if matched is None:
            return None  # Powertools answers the 404
        route, params = matched
        admit(None)
        try:
            caller = authenticator_for(route.method, route.openapi_path)(event, params)
            admit(caller)
            if caller.grant is not None:  # management credentials: what their role and scope allow
                from lakehook.api.scopes import authorize_request

                authorize_request(caller.grant, route.method, route.openapi_path, params, event.query_string_parameters)
            check_body(event)
        except tuple(ERROR_STATUS) as exc:
            status, code = next(ERROR_STATUS[t] for t in type(exc).__mro__ if t in ERROR_STATUS)
            logger.info("request refused", extra={"status": status, "reason": str(exc)})
            return _error(status, code, str(exc), getattr(exc, "field", None))
        return None

    def _route_of(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route Powertools will call, and its path parameters (matched as Powertools matches them)."""
        for route in self._static_routes + self._dynamic_routes:
            match = route.rule.match(path) if route.method == method else None
            if match:
                return route, self._convert_matches_into_route_keys(match)
        return None


def build_app(include: Iterable[str] = ()) -> LakehookResolver:
    """The resolver with every route; handlers call ``resolve`` on it.

    A route module's router is included on the first request to one of its routes (``ROUTE_MODULES``), or
    now for the modules named in ``include``: those whose routes are every request of the function (the
    replay API serves one route).
    """
    app = LakehookResolver()
    app.include_routes(include)

    for error_type, (status, code) in ERROR_STATUS.items():

        def handle(exc: Exception, status: int = status, code: str = code) -> Response[str]:
            logger.info("request refused", extra={"status": status, "reason": str(exc)})
            return _error(status, code, str(exc), getattr(exc, "field", None))

        app.exception_handler(error_type)(handle)

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[str]:
        problems = []
        fields = []
        for error in exc.errors():
            if error.get("type") == "json_invalid":  # Powertools locates it at ("body", <char offset>)
                return _error(400, "BAD_REQUEST", "request body is not valid JSON", "body")
            loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
            fields.append(".".join(loc))
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"{'.'.join(loc) or 'body'}: {message}")
        return _error(400, "BAD_REQUEST", "; ".join(problems), fields[0] if fields else None)

    @app.not_found
    def no_route(_: Exception) -> Response[str]:
        event = app.current_event
        return _error(404, "NOT_FOUND", f"no route {event.http_method} {event.path}")

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        return Response(status_code=200, content_type="application/json", body=openapi_document(app))

    return app


def openapi_document(app: APIGatewayRestResolver) -> str:
    """The generated OpenAPI document, plus the bodies of the routes that parse their body themselves."""
    from lakehook.domain.events import AssetEvent
    from lakehook.domain.replay_choices import ReplayChoices
    from lakehook.domain.rules import Rule
    from lakehook.usecases.completion import RunCompletion

    if isinstance(app, LakehookResolver):
        app.include_every_route()
    spec = json.loads(
        app.get_openapi_json_schema(title="lakehook", version=__version__, security_schemes=security_schemes())
    )
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})

    def component(model: type[BaseModel], mode: JsonSchemaMode = "validation") -> dict[str, str]:
        # Nested models go to components: a "#/$defs/..." ref inside a path would not resolve.
        schema = model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}", mode=mode)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    for operations in spec.get("paths", {}).values():
        for op in operations.values():
            responses = op.get("responses", {})
            responses.pop("422", None)  # Powertools' validation answer; ours is the 400 listed
            responses.get("204", {}).pop("content", None)  # no body (Powertools adds the return annotation's)
    paths = spec.get("paths", {})
    push = paths.get("/asset-events", {}).get("post")
    if push is not None:
        event = component(AssetEvent)
        envelope = {
            "type": "object",
            "additionalProperties": False,
            "required": ["events"],
            "properties": {
                "events": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": current().settings.max_events_per_push,
                    "items": event,
                }
            },
        }
        push["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"oneOf": [event, envelope]}}},
        }
    put_rule = paths.get("/rules/{ruleId}", {}).get("put")
    if put_rule is not None:
        rule = component(Rule)
        # The path names the rule; a ruleId in the body is optional and must equal it.
        schemas["Rule"]["required"] = [f for f in schemas["Rule"].get("required", []) if f != "ruleId"]
        put_rule["requestBody"] = {"required": True, "content": {"application/json": {"schema": rule}}}
    evaluate = paths.get("/rules/{ruleId}/evaluate", {}).get("post")
    if evaluate is not None:
        options = {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "force": {"type": "boolean", "description": "a manual run of the current versions"},
                "groupId": {"type": "string", "description": "only this group"},
                "partition": {
                    "type": "string",
                    "description": "with force, for a group with partitionBy (required there): the one partition "
                    "to run, a key of the group's fields in order (dt=2026-12-01)",
                },
            },
        }
        evaluate["requestBody"] = {"required": False, "content": {"application/json": {"schema": options}}}
    complete = paths.get("/runs/{triggerKey}/complete", {}).get("post")
    if complete is not None:
        complete["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": component(RunCompletion)}},
        }
    replay = paths.get("/triggers/{triggerKey}/replay", {}).get("post")
    if replay is not None:
        replay["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": component(ReplayChoices)}},
        }
    backtest = paths.get("/rules/{ruleId}/backtest", {}).get("post")
    if backtest is not None:
        # the Rule component as the PUT left it (its ruleId optional), or registered here
        schema = backtest_body({"$ref": "#/components/schemas/Rule"} if "Rule" in schemas else component(Rule))
        backtest["requestBody"] = {"required": False, "content": {"application/json": {"schema": schema}}}
    return json.dumps(spec)


def backtest_body(rule: dict[str, str]) -> dict[str, Any]:
    """What ``POST /rules/{ruleId}/backtest`` takes: the rule to try (absent: the stored one) and the range."""
    instant = {"oneOf": [{"type": "string", "format": "date-time"}, {"type": "integer"}]}
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "rule": {"allOf": [rule], "description": "the rule to try, as PUT takes it; absent: the stored rule"},
            "from": {**instant, "description": "the rule is applied here (default: the oldest event kept)"},
            "to": {**instant, "description": "the replay stops here (default: now)"},
        },
    }
