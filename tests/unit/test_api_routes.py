"""The API's route table (``lakehook.api.app.ROUTE_MODULES``): a route module is included on the first request
to one of its routes, and the app then routes and documents as if every module had been included first."""

from __future__ import annotations

import importlib
import re

import pytest

from lakehook.api.app import ROUTE_MODULES, build_app


def _registered(module: str) -> list[tuple[str, str]]:
    router = importlib.import_module(f"lakehook.api.routes.{module}").router
    return [(method, key[0]) for key in router._routes for method in key[1]]


def _concrete(path: str) -> str:
    return re.sub(r"<[^>]+>", "x1", path)


def _order(app: object) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in app._static_routes + app._dynamic_routes]  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", sorted(ROUTE_MODULES))
def test_the_table_lists_exactly_the_routes_each_module_registers(module: str) -> None:
    assert list(ROUTE_MODULES[module]) == _registered(module)


def test_a_request_includes_only_the_module_of_its_route() -> None:
    for module, routes in ROUTE_MODULES.items():
        for method, path in routes:
            app = build_app()
            app._include_routes_for(method, _concrete(path))
            assert set(ROUTE_MODULES) - set(app._pending) == {module}, (method, path)
            assert (method, path) in _order(app)


def test_a_request_to_no_route_includes_nothing() -> None:
    app = build_app()
    for method, path in [("GET", "/nowhere"), ("PATCH", "/rules/x1"), ("GET", "/rules/x1/y/z")]:
        app._include_routes_for(method, path)
    assert set(app._pending) == set(ROUTE_MODULES)
    assert _order(app) == [("GET", "/openapi.json")]


def test_the_routes_keep_the_tables_order_whatever_order_the_modules_come_in() -> None:
    in_order = build_app()
    in_order.include_every_route()
    reversed_order = build_app(include=reversed(list(ROUTE_MODULES)))
    one_by_one = build_app()
    for module in ["rules", "events", "triggers", "aliases", "rules"]:
        one_by_one.include_routes([module])
    one_by_one.include_every_route()
    expected = _order(in_order)
    assert _order(reversed_order) == expected and _order(one_by_one) == expected
    static = [(m, p) for routes in ROUTE_MODULES.values() for m, p in routes if "<" not in p]
    dynamic = [(m, p) for routes in ROUTE_MODULES.values() for m, p in routes if "<" in p]
    assert expected == [*static, ("GET", "/openapi.json"), *dynamic]  # as Powertools orders them when included first
