"""``lakehook tokens``, ``lakehook whoami`` and ``lakehook role-bindings`` against the API on fakes, over HTTP: a token
is printed once, works as the configured token, and its 403 prints the API's message (role, scope, what was asked)."""

from __future__ import annotations

import io
import json

import pytest

from lakehook.cli import main
from lakehook.cli_commands.output import captured
from tests.api_server import api_on_fakes

TOKEN = "cli-roles-admin"


def cli(url: str, token: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAKEHOOK_ADMIN_TOKEN", token)
        patch.setattr("sys.stdout", out)
        patch.setattr("sys.stderr", err)
        with captured(out, err):
            code = main(["--url", url, *argv])
    return code, out.getvalue(), err.getvalue()


def test_a_scoped_token_made_by_the_cli_reads_its_scope_and_is_refused_beyond_it() -> None:
    with api_on_fakes(TOKEN) as server:
        url = server.base_url
        code, out, _ = cli(url, TOKEN, "--output", "json", "tokens", "create", "--role", "READ_ONLY", "--rules", "etl.")
        created = json.loads(out)
        assert code == 0 and created["token"].startswith("lht_")

        code, out, _ = cli(url, created["token"], "whoami")
        assert code == 0 and "role READ_ONLY" in out and "rules [etl.], assets [all]" in out

        code, _, err = cli(url, created["token"], "evaluate", "etl.daily")
        assert code != 0
        assert "403: role READ_ONLY (scope: rules [etl.], assets [all]" in err

        code, out, _ = cli(url, TOKEN, "tokens", "list")
        assert created["tokenId"] in out and created["token"] not in out
        assert cli(url, TOKEN, "tokens", "revoke", created["tokenId"], "--yes")[0] == 0
        code, _, err = cli(url, created["token"], "whoami")
        assert code != 0 and "401" in err


def test_role_bindings_are_put_listed_and_deleted() -> None:
    with api_on_fakes(TOKEN) as server:
        url = server.base_url
        admin = "arn:aws:iam::123456789012:role/platform"
        ops = "arn:aws:iam::123456789012:role/ops"
        assert cli(url, TOKEN, "role-bindings", "put", admin, "--role", "ADMIN")[0] == 0
        assert cli(url, TOKEN, "role-bindings", "put", ops, "--role", "OPERATOR", "--assets", "iceberg://lake/")[0] == 0

        code, out, _ = cli(url, TOKEN, "role-bindings", "list")
        assert code == 0 and ops in out and "assets [iceberg://lake/]" in out
        assert cli(url, TOKEN, "role-bindings", "delete", ops, "--yes")[0] == 0
        assert ops not in cli(url, TOKEN, "role-bindings", "list")[1]
