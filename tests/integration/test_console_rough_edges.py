"""The console's rough edges (issue 36) in a real Chromium (Playwright), against the lakehook API on the in-memory
fakes over HTTP: a failed rule says why its run failed, the header counts it as failing, answers that did not load
are never shown as facts, an asset that never reported intervals shows no red gap, labels stay inside their boxes
and values inside their cards (element bounding boxes), and a polled source shows its location.

Chromium comes from the distribution, as for tests/e2e/test_console.py (whose browser and page fixtures these are).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

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
from tests.fakes.memory_dispatch import Fault, InMemoryTargetClient

ADMIN = "console-rough-edges"
ORDERS = "paimon://lake/ods/orders"
DELTA = "delta://lake/ods_db/clickstream_events_partitioned_by_day_and_hour"
LOCATION = "s3://analytics-landing-zone-eu-west-1-prod/warehouse/ods_db/clickstream_events_partitioned_by_day"
LONG_BUS = "lakehook-runs-of-the-analytics-platform-team-eu-west-1"
BIG_ID = 6512342785923487231
WAIT_MS = 20_000


class Stack:
    def __init__(self, url: str, target: InMemoryTargetClient) -> None:
        self.url, self.target = url, target
        self.admin = {"Authorization": f"Bearer {ADMIN}"}

    def put(self, path: str, body: dict[str, Any]) -> None:
        answer = requests.put(f"{self.url}{path}", json=body, headers=self.admin, timeout=30)
        assert answer.status_code in (200, 201), answer.text

    def push(self, event: dict[str, Any]) -> None:
        answer = requests.post(f"{self.url}/asset-events", json=event, headers=self.admin, timeout=30)
        assert answer.status_code == 200, answer.text

    def rule(self, rule_id: str, asset: str, bus: str = "lakehook-runs") -> None:
        members = [{"assetKey": asset, "condition": {"snapshotRequired": True}}]
        target = {"type": "eventbridge", "eventBusName": bus}
        body = {"groups": [{"groupId": "g", "members": members}], "target": target}
        self.put(f"/rules/{rule_id}", body)


@pytest.fixture
def stack() -> Iterator[Stack]:
    target = InMemoryTargetClient()
    fakes = wiring.in_memory(Settings(admin_token=ADMIN), target_clients={"eventbridge": target})
    container.use(fakes)
    try:
        with ApiServer() as server:
            yield Stack(server.base_url, target)
    finally:
        container.use(None)


@pytest.fixture
def console(stack: Stack) -> Iterator[str]:
    with ConsoleServer(lambda: ApiClient(url=stack.url, admin_token=ADMIN)) as server:
        yield server.url


def failed_rule(stack: Stack) -> str:
    """A rule whose run the target refused for good: its newest trigger FAILED (FINAL), the group waits for news."""
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1})
    stack.rule("orders_report", ORDERS)
    (trigger,) = container.current().trigger_store.list_for_rule("orders_report", limit=5).items
    stack.target.faults.append(Fault.HTTP_4XX)
    container.current().dispatcher(trigger.trigger_key)
    return trigger.trigger_key


def test_a_failed_rule_says_why_its_run_failed_and_counts_as_failing(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    key = failed_rule(stack)
    page.goto(console)
    row = page.locator('#attention [data-attention-rule="orders_report"]')
    expect(row).to_contain_text("run failed: HTTP 400: bad request (final: retry by hand)", timeout=WAIT_MS)
    expect(row.locator("[data-status]")).to_have_attribute("data-status", "FAILED")
    counts = page.locator("#counts")
    expect(counts).to_have_attribute("data-failing", "1")  # the failed rule; its asset is fine
    expect(counts).to_have_attribute("data-blocked", "0")
    expect(counts).to_contain_text("1 failing · 0 blocked")

    page.goto(f"{console}#/rule/orders_report")
    failure = page.locator("#last-failure")
    expect(failure).to_have_attribute("data-trigger", key, timeout=WAIT_MS)
    expect(failure).to_contain_text("run failed: HTTP 400: bad request")
    expect(page.locator('#newest-trigger [data-key="failureReason"]')).to_contain_text("HTTP 400: bad request")

    page.goto(f"{console}#/rules")
    expect(page.locator('[data-rule-row="orders_report"]')).to_contain_text("run failed: HTTP 400", timeout=WAIT_MS)


def test_answers_that_did_not_load_are_never_shown_as_facts(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1})
    stack.rule("orders_report", ORDERS)
    # every state and explain answer fails (a cold or overloaded API): the page must not guess them
    unavailable = {"status": 503, "content_type": "application/json", "body": '{"message": "Service Unavailable"}'}
    page.route("**/api/assets/state?*", lambda route: route.fulfill(**unavailable))
    page.route("**/api/rules/*/explain", lambda route: route.fulfill(**unavailable))
    page.goto(console)
    node = page.locator(f'svg#graph [data-asset="{ORDERS}"]')
    expect(node).to_have_attribute("data-status", "NOT_LOADED", timeout=WAIT_MS)
    expect(page.locator('svg#graph [data-rule="orders_report"]')).to_have_attribute("data-status", "NOT_LOADED")
    graph = page.locator("svg#graph")
    expect(graph).not_to_contain_text("not registered")
    expect(graph).not_to_contain_text("UNKNOWN")
    attention = page.locator("#attention")
    expect(attention).not_to_contain_text("nothing")
    expect(attention).to_contain_text("did not load")
    expect(page.locator("#counts")).to_contain_text("2 not loaded yet")
    page.goto(f"{console}#/rules")
    listed = page.locator('[data-rule-row="orders_report"]')
    expect(listed.locator("[data-status]")).to_have_attribute("data-status", "NOT_LOADED", timeout=WAIT_MS)
    expect(listed).to_contain_text("not loaded yet")
    page.goto(console)

    # once the answers arrive, the facts replace the placeholders without a reload (orders was pushed, never
    # registered: now that is known)
    page.unroute("**/api/assets/state?*")
    page.unroute("**/api/rules/*/explain")
    expect(node).to_have_attribute("data-status", "UNREGISTERED", timeout=WAIT_MS)
    expect(page.locator("#counts")).not_to_contain_text("not loaded")


def test_an_asset_that_never_reported_intervals_shows_no_gap(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1})
    page.goto(f"{console}#/coverage?asset={quote(ORDERS, safe='')}&start=2025-06-01T00:00&end=2025-06-08T00:00")
    report = page.locator("#coverage")
    expect(report).to_have_attribute("data-reported", "false", timeout=WAIT_MS)
    verdict = report.locator("#verdict")
    expect(verdict).to_have_text("NO INTERVAL REPORTED")
    expect(verdict).not_to_have_class("bad")
    expect(report).not_to_contain_text("GAP")
    expect(report.locator("#none-reported")).to_be_visible()


def test_graph_labels_stay_inside_their_boxes(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": BIG_ID})
    stack.rule("orders_report_for_the_finance_controlling_team", ORDERS, bus=LONG_BUS)
    page.goto(console)
    target = page.locator("svg#graph .node.target")
    expect(target).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator(f'svg#graph [data-asset="{ORDERS}"]')).not_to_have_attribute("data-status", "NOT_LOADED")
    for node in page.locator("svg#graph .node").all():
        box = node.locator("rect").first.bounding_box()
        assert box is not None
        for text in node.locator("text").all():
            inner = text.bounding_box()
            assert inner is not None
            assert box["x"] <= inner["x"] and inner["x"] + inner["width"] <= box["x"] + box["width"], (
                text.text_content(),
                box,
                inner,
            )


def test_values_stay_inside_the_asset_pages_cards_and_a_polled_source_shows_its_location(
    page: Page,  # noqa: F811
    console: str,
    stack: Stack,
) -> None:
    source = {"catalog": "lake", "location": LOCATION}
    stack.put("/assets", {"assetKey": DELTA, "format": "delta", "source": source})
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": DELTA, "snapshotId": BIG_ID})
    stack.rule("clickstream_sessions_for_the_finance_controlling_team_quarterly", DELTA)
    page.set_viewport_size({"width": 1000, "height": 900})  # three cards a row: about 300 px each
    page.goto(f"{console}#/asset/{quote(DELTA, safe='')}")
    expect(page.locator('[data-key="latestSnapshotId"]')).to_have_text(str(BIG_ID), timeout=WAIT_MS)
    outside = page.evaluate(
        """() => [...document.querySelectorAll(".grid > .card")].flatMap((card) => {
            const edge = card.getBoundingClientRect();
            return [...card.querySelectorAll("*")]
              .filter((el) => { const r = el.getBoundingClientRect(); return r.width && r.right > edge.right + 0.5; })
              .map((el) => `${el.tagName} ${el.textContent.slice(0, 40)}`);
        })"""
    )
    assert outside == []
    expect(page.locator('[data-key="source"]')).to_have_text(f"lake · {LOCATION}")
