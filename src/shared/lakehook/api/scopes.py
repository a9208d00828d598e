"""What a management caller's grant allows of the request being resolved (``domain.access``).

The resolver checks the route and what the request names before any body is parsed: the role against the
route's action (a 403 naming the role, the scope and the route), then each rule and asset the path or query
names against the scope: ``ruleId``, a trigger's rule (``triggerKey``: the trigger is read, an unknown key is
the route's 404) and ``assetKey``. What a body names (a sensor's ad-hoc group, a backtest's rule) the route
checks with ``check_rule`` and ``check_every_asset``. Lists of rules and assets are filtered to the scope page by
page (``visible_rules``, ``visible_assets``): a page may hold fewer items than its limit, and nextToken goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from lakehook.api.auth import current_principal
from lakehook.container import current
from lakehook.domain.access import ADMIN, Grant

T = TypeVar("T")


def authorize_request(
    grant: Grant, method: str, path: str, params: Mapping[str, str], query: Mapping[str, str] | None
) -> None:
    """AuthorizationError unless the grant may call the route on what its path and query name."""
    grant.check_route(method, path)
    if grant.scope.everything:
        return
    asked = f"{method.upper()} {path}"
    named = {**(query or {}), **params}
    if "ruleId" in named:
        grant.check_rule(named["ruleId"], asked)
    if "triggerKey" in params:
        trigger = current().trigger_store.get(params["triggerKey"])
        if trigger is not None:  # an unknown key: the route answers its 404
            grant.check_rule(trigger.rule_id, asked)
    if "assetKey" in named:
        grant.check_asset(named["assetKey"], asked)


def caller_grant() -> Grant:
    """The grant of the request being resolved: a producer or a run acts for itself, with no management grant."""
    return current_principal().grant or ADMIN


def check_rule(rule_id: str, asked: str) -> None:
    caller_grant().check_rule(rule_id, asked)


def check_every_asset(asked: str) -> None:
    caller_grant().check_every_asset(asked)


def _visible(items: Iterable[T], allows: Callable[[T], bool]) -> list[T]:
    return [item for item in items if allows(item)]


def visible_rules(items: Iterable[T], rule_id: Callable[[T], str]) -> list[T]:
    scope = caller_grant().scope
    return _visible(items, lambda item: scope.allows_rule(rule_id(item)))


def visible_assets(items: Iterable[T], asset_key: Callable[[T], str]) -> list[T]:
    scope = caller_grant().scope
    return _visible(items, lambda item: scope.allows_asset(asset_key(item)))
