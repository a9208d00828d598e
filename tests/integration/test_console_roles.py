"""The console shows what the caller's role may do (GET /me), in a real Chromium (Playwright) against the API on
the fakes over HTTP: a READ_ONLY token sees the triggers but no Replay, Retry or Evaluate button and no backtest
form; an OPERATOR token (and the admin token) sees them. The header names the role and its scope."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from playwright.sync_api import Page, expect

from lakehook import container
from lakehook.cli_commands.api import ApiClient
from lakehook.console.server import ConsoleServer
from lakehook.settings import Settings
from tests import wiring
from tests.api_server import ApiServer
from tests.e2e.test_console import browser, page  # noqa: F401  (fixtures; the module skips without Chromium)

ADMIN = "console-roles"
ORDERS = "paimon://lake/ods/orders"
WAIT_MS = 20_000


@pytest.fixture
def api_url() -> Iterator[str]:
    container.use(wiring.in_memory(Settings(admin_token=ADMIN)))
    try:
        with ApiServer() as server:
            url = server.base_url
            admin = {"Authorization": f"Bearer {ADMIN}"}
            event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1}
            assert requests.post(f"{url}/asset-events", json=event, headers=admin, timeout=30).status_code == 200
            members = [{"assetKey": ORDERS, "condition": {"snapshotRequired": True}}]
            rule = {
                "groups": [{"groupId": "g", "members": members}],
                "target": {"type": "eventbridge", "eventBusName": "b"},
            }
            assert requests.put(f"{url}/rules/etl.orders", json=rule, headers=admin, timeout=30).status_code == 201
            yield url
    finally:
        container.use(None)


def token(api_url: str, role: str, rules: list[str]) -> str:
    body = {"role": role, "rules": rules}
    answer = requests.post(f"{api_url}/tokens", json=body, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


def test_a_read_only_token_sees_no_replay_button(page: Page, api_url: str) -> None:  # noqa: F811
    with ConsoleServer(lambda: ApiClient(url=api_url, admin_token=token(api_url, "READ_ONLY", ["etl."]))) as server:
        page.goto(f"{server.url}#/triggers/etl.orders")
        expect(page.locator("[data-trigger]").first).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#target")).to_contain_text("READ_ONLY (etl.)")
        expect(page.locator('[data-action="replay"]')).to_have_count(1)  # rendered, and hidden for the role
        expect(page.locator('[data-action="replay"]')).to_be_hidden()
        expect(page.locator('[data-action="evaluate"]')).to_be_hidden()
        page.goto(f"{server.url}#/rule/etl.orders")
        expect(page.locator("#evaluate")).to_be_hidden(timeout=WAIT_MS)
        expect(page.locator('form[data-submit="backtest"]')).to_be_hidden()


def test_an_operator_token_sees_the_replay_button(page: Page, api_url: str) -> None:  # noqa: F811
    with ConsoleServer(lambda: ApiClient(url=api_url, admin_token=token(api_url, "OPERATOR", ["etl."]))) as server:
        page.goto(f"{server.url}#/triggers/etl.orders")
        expect(page.locator('[data-action="replay"]').first).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#target")).to_contain_text("OPERATOR (etl.)")
        expect(page.locator('[data-action="evaluate"]')).to_be_visible()
