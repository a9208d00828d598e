"""``GET /producers`` and ``GET /aliases`` (and ``lakehook producers list`` / ``aliases list``) on a local stack.

The stack runs template.yaml; while it does not declare the two routes' ``Api`` events yet, a copy with
:data:`LIST_EVENTS` added (exactly what template.yaml needs, next to ``PutAsset``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from lakehook.local.runtime import LocalStack
from tests.e2e.cli_support import ADMIN, ROOT, run_cli

LIST_EVENTS = """\
        ListProducers:
          Type: Api
          Properties: {RestApiId: !Ref LakehookApi, Path: /producers, Method: GET}
        ListAliases:
          Type: Api
          Properties: {RestApiId: !Ref LakehookApi, Path: /aliases, Method: GET}
"""
ANCHOR = "        PutAsset:\n"


def with_list_routes(target: Path) -> Path:
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    if "Path: /producers, Method: GET" in text and "Path: /aliases, Method: GET" in text:
        return ROOT / "template.yaml"
    assert text.count(ANCHOR) == 1
    target.mkdir(parents=True, exist_ok=True)
    for folder in ("functions", "layers", "src"):
        (target / folder).symlink_to(ROOT / folder)
    path = target / "template.yaml"
    path.write_text(text.replace(ANCHOR, LIST_EVENTS + ANCHOR), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    template = with_list_routes(tmp_path_factory.mktemp("template"))
    # the variables undone before the stack restores the environment (tests/e2e/cli_support.py's cli_stack says why)
    with LocalStack(template=template, port=0, admin_token=ADMIN) as running, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAKEHOOK_URL", running.api_url)
        patch.setenv("LAKEHOOK_ADMIN_TOKEN", ADMIN)
        yield running


def test_producers_and_aliases_are_listed_in_order_without_secrets(stack: LocalStack, tmp_path: Path) -> None:
    config = {
        "producers": [
            {"producerId": name, "assetKeyPrefixes": [f"custom://{name}/"]} for name in ("c-writer", "a-writer", "b-w")
        ],
        "aliases": [
            {"name": "zeta", "assetKeys": ["custom://a/x"]},
            {"name": "alpha", "assetKeys": ["custom://a/y", "custom://b/z"]},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    applied = run_cli(["--output", "json", "apply", "-f", str(path)])
    assert applied.code == 0, applied.err
    secrets = [c["secret"] for c in applied.json()["changes"] if c.get("secret")]

    listed = run_cli(["--output", "json", "producers", "list"])
    assert [p["producerId"] for p in listed.json()["items"]] == ["a-writer", "b-w", "c-writer"]
    assert not any(s in listed.out for s in secrets) and "secret" not in listed.json()["items"][0]
    text = run_cli(["producers", "list"])
    assert text.code == 0 and "custom://a-writer/" in text.out
    aliases = run_cli(["aliases", "list"])
    assert aliases.code == 0 and aliases.out.index("alpha") < aliases.out.index("zeta")
    assert "custom://a/y, custom://b/z" in aliases.out

    # pages: one at a time, following nextToken; a token from elsewhere is a 400
    headers = {"Authorization": f"Bearer {ADMIN}"}
    seen, token = [], None
    while True:
        query = {"limit": "1", **({"nextToken": token} if token else {})}
        page = requests.get(f"{stack.api_url}/aliases", params=query, headers=headers, timeout=10).json()
        seen += [a["name"] for a in page["items"]]
        token = page.get("nextToken")
        if not token:
            break
    assert seen == ["alpha", "zeta"]
    bad = requests.get(f"{stack.api_url}/producers", params={"nextToken": "bm9wZQ"}, headers=headers, timeout=10)
    assert bad.status_code == 400
    assert requests.get(f"{stack.api_url}/producers", timeout=10).status_code == 401
