"""Management routes are authorized in one place: the route's authenticator (``api.auth``), which the resolver
runs before any body is parsed. The route table, the OpenAPI document and the route modules must agree:
every route documented as management-only gets the ``admin`` authenticator, and no route checks again."""

from __future__ import annotations

import ast
from pathlib import Path

from lakehook.api import auth
from lakehook.api.app import build_app
from lakehook.api.contract import MANAGEMENT

ROUTES = Path(auth.__file__).resolve().parent / "routes"
# What a route would call to check credentials itself: the authenticators' own parts.
CREDENTIAL_CHECKS = {"is_admin", "admin", "require_admin", "verify", "authenticate", "authenticate_api_key"}


def _app_routes() -> list[tuple[str, str, object]]:
    app = build_app()
    app.include_every_route()
    return [(r.method, r.openapi_path, r.security) for r in app._static_routes + app._dynamic_routes]


def test_every_management_route_and_only_those_get_the_admin_authenticator() -> None:
    routes = _app_routes()
    management = [(m, p) for m, p, security in routes if security == MANAGEMENT]
    assert len(management) >= 20  # the table was read
    for method, path, security in routes:
        is_admin_route = auth.authenticator_for(method, path) is auth.admin
        assert is_admin_route == (security == MANAGEMENT), f"{method} {path}: security {security}"


def test_a_route_not_in_the_authenticator_table_needs_management_credentials() -> None:
    assert auth.authenticator_for("GET", "/a-route-added-later") is auth.admin


def _route_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    def is_route(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "router"

    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(map(is_route, n.decorator_list))]


def test_no_route_checks_credentials_again() -> None:
    checked = 0
    for module in sorted(ROUTES.glob("*.py")):
        for function in _route_functions(ast.parse(module.read_text())):
            checked += 1
            called = {
                node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                for node in ast.walk(function)
                if isinstance(node, ast.Call)
            }
            assert not called & CREDENTIAL_CHECKS, f"{module.name}:{function.name} checks credentials itself"
    assert checked >= 25  # every route function was read
