"""``lakehook whoami``, ``lakehook tokens`` and ``lakehook role-bindings``: roles (docs/cli.md#roles).

Each sends the configured credentials as every command does; a 403 prints the API's message, which names the
role, the scope and what was asked.
"""

from __future__ import annotations

import argparse
from typing import Any

from lakehook.cli_commands.api import ApiClient, path_part
from lakehook.cli_commands.manage import confirm, list_pages
from lakehook.cli_commands.output import emit


def _scope(data: dict[str, Any]) -> str:
    scope = data.get("scope") or {}
    rules = ", ".join(scope.get("rules") or []) or "all"
    assets = ", ".join(scope.get("assets") or []) or "all"
    return f"rules [{rules}], assets [{assets}]"


def _grant_body(args: argparse.Namespace) -> dict[str, Any]:
    return {"role": args.role, "rules": args.rules or [], "assets": args.assets or [], "description": args.description}


def whoami(api: ApiClient, args: argparse.Namespace) -> int:
    def text(d: dict[str, Any]) -> list[str]:
        return [
            f"role {d.get('role')} ({d.get('source')})",
            f"scope: {_scope(d)}",
            f"may: {', '.join(d.get('allowedActions') or [])}",
        ]

    emit(args.output, api.get("/me"), text)
    return 0


def tokens_create(api: ApiClient, args: argparse.Namespace) -> int:
    data = api.request("POST", "/tokens", body=_grant_body(args))[1]
    emit(
        args.output,
        data,
        lambda d: [
            f"token {d.get('tokenId')}: role {d.get('role')}, scope {_scope(d)}",
            f"  {d.get('token')}",
            f"shown once: only its hash is stored; revoke it with `lakehook tokens revoke {d.get('tokenId')}`",
        ],
    )
    return 0


def tokens_list(api: ApiClient, args: argparse.Namespace) -> int:
    def row(t: dict[str, Any]) -> tuple[Any, ...]:
        return t.get("tokenId"), t.get("role"), _scope(t), t.get("description") or "", t.get("createdAt")

    return list_pages(api, args, "/tokens", ("TOKEN", "ROLE", "SCOPE", "DESCRIPTION", "CREATED"), row, "no tokens")


def tokens_revoke(api: ApiClient, args: argparse.Namespace) -> int:
    if not confirm(args, f"revoke token {args.token_id} (its holder is refused at once)?"):
        return 1
    api.request("DELETE", f"/tokens/{path_part(args.token_id)}")
    emit(args.output, {"tokenId": args.token_id, "revoked": True}, lambda d: [f"revoked token {args.token_id}"])
    return 0


def bindings_put(api: ApiClient, args: argparse.Namespace) -> int:
    body = {"principalArn": args.principal, **_grant_body(args)}
    data = api.request("PUT", "/role-bindings", body=body)[1]
    emit(args.output, data, lambda d: [f"{d.get('principalArn')}: role {d.get('role')}, scope {_scope(d)}"])
    return 0


def bindings_list(api: ApiClient, args: argparse.Namespace) -> int:
    def row(b: dict[str, Any]) -> tuple[Any, ...]:
        return b.get("principalArn"), b.get("role"), _scope(b), b.get("description") or ""

    return list_pages(api, args, "/role-bindings", ("PRINCIPAL", "ROLE", "SCOPE", "DESCRIPTION"), row, "no bindings")


def bindings_delete(api: ApiClient, args: argparse.Namespace) -> int:
    if not confirm(args, f"remove the role binding of {args.principal}?"):
        return 1
    api.request("DELETE", "/role-bindings", query={"principalArn": args.principal})
    emit(args.output, {"principalArn": args.principal, "deleted": True}, lambda d: [f"removed {args.principal}"])
    return 0


def add_grant_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--role", required=True, choices=("ADMIN", "OPERATOR", "READ_ONLY"))
    sub.add_argument("--rules", nargs="*", default=None, metavar="PREFIX", help="rule-id prefixes (none: every rule)")
    sub.add_argument(
        "--assets", nargs="*", default=None, metavar="PREFIX", help="asset-key prefixes (none: every asset)"
    )
    sub.add_argument("--description", default=None)
