"""The API's route table (``lakehook.api.app.ROUTE_MODULES``): a route module is included on the first request
to one of its routes, and the app then routes and documents as if every module had been included first."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

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


# --- one use case per route -------------------------------------------------------------------------------

ROUTES_DIR = Path(importlib.import_module("lakehook.api.routes").__file__ or "").parent
NOT_A_USE_CASE = {"settings"}  # the stack's settings: configuration, not a part that does something


def _parts_used(module: ast.Module, function: ast.FunctionDef, seen: set[str] | None = None) -> set[str]:
    """The container parts a route function reaches (``current().<part>``, or a local bound to ``current()``),
    through the module's own helpers it calls."""
    seen = seen if seen is not None else {function.name}
    helpers = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    containers = {
        t.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and _is_current(node.value)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    parts: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and (
            _is_current(node.value) or (isinstance(node.value, ast.Name) and node.value.id in containers)
        ):
            parts.add(node.attr)
        called = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        if called in helpers and called not in seen:
            seen.add(called)
            parts |= _parts_used(module, helpers[called], seen)
    return parts - NOT_A_USE_CASE


def _is_current(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "current"


def _route_functions(module: ast.Module) -> list[ast.FunctionDef]:
    def is_route(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "router"

    return [n for n in module.body if isinstance(n, ast.FunctionDef) and any(map(is_route, n.decorator_list))]


def test_each_route_calls_one_use_case() -> None:
    read = 0
    for path in sorted(ROUTES_DIR.glob("*.py")):
        module = ast.parse(path.read_text())
        for function in _route_functions(module):
            read += 1
            parts = _parts_used(module, function)
            assert len(parts) == 1, f"{path.name}:{function.name} calls {sorted(parts)}: one use case per route"
    assert read >= 25


def test_the_use_case_count_sees_helpers_and_locals() -> None:
    source = (
        "def helper():\n    return current().b.go()\n"
        "@router.get('/x')\ndef route():\n    c = current()\n    c.a.run()\n    helper()\n    current().settings\n"
    )
    module = ast.parse(source)
    assert _parts_used(module, _route_functions(module)[0]) == {"a", "b"}


def test_each_rule_route_reaches_a_use_case_of_its_own_and_the_reads_share_one() -> None:
    module = ast.parse((ROUTES_DIR / "rules.py").read_text())
    reached = {f.name: _parts_used(module, f) for f in _route_functions(module)}
    assert reached == {
        "put_rule": {"put_rule"},  # with ?dryRun=true too: the same checks, writing nothing
        "list_rules": {"read_rules"},
        "get_rule": {"read_rules"},
        "delete_rule": {"delete_rule"},
        "explain_rule": {"explain_rule"},
        "evaluate_rule": {"evaluate_rule"},
        "backtest_rule": {"backtest_rule"},  # the rule checked by put_rule's checks, inside its own use case
    }
