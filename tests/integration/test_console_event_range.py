"""The console's asset page filters its events by a range (GET /assets/events ``start``/``end`` or
``fromVersion``/``toVersion``), in a real Chromium against the API on the in-memory fakes; a bad range shows the API's
400, naming the parameter, instead of events."""

from __future__ import annotations

from urllib.parse import quote

from playwright.sync_api import Page, expect

from tests.e2e.test_console import browser, page  # noqa: F401  (fixtures; the module skips without Chromium)
from tests.integration.test_console_rough_edges import ORDERS, WAIT_MS, Stack, console, stack  # noqa: F401


def test_the_asset_page_lists_the_events_of_a_version_range_and_says_why_a_range_is_refused(
    page: Page,  # noqa: F811
    console: str,  # noqa: F811
    stack: Stack,  # noqa: F811
) -> None:
    for sid in range(1, 7):
        stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": sid})
    asset = f"{console}#/asset/{quote(ORDERS, safe='')}"
    page.goto(f"{asset}?fromVersion=2&toVersion=4")
    rows = page.locator("#events tbody tr")
    expect(rows).to_have_count(3, timeout=WAIT_MS)
    expect(page.locator("h2", has_text="Events in range")).to_be_visible()
    page.fill("#ev-from", "5")
    page.fill("#ev-to", "")
    page.click("#events-range button")
    expect(rows).to_have_count(2, timeout=WAIT_MS)  # snapshots 5 and 6
    assert "fromVersion=5" in page.evaluate("location.hash") and "toVersion" not in page.evaluate("location.hash")
    page.goto(f"{asset}?fromVersion=5&toVersion=4")
    expect(page.locator("#events-error")).to_contain_text("toVersion", timeout=WAIT_MS)
    expect(rows).to_have_count(0)
