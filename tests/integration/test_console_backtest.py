"""The rule page's Backtest panel (issue 34) in a real Chromium (Playwright), against the lakehook API on the in-memory
fakes over HTTP (the fixtures of test_console_rough_edges.py): a rule with history lists the runs it would have
started (the keys and pins the API answers; that they are the live resolver's claims is
tests/unit/test_backtest.py's property), their pins, what it waits for now and how far
back the history went, saying it is loading while the request is out; a bad range shows the API's 400 message,
never an empty list.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import requests
from playwright.sync_api import Page, Route, expect

from tests.e2e.test_console import browser, page, shot  # noqa: F401  (fixtures; the module skips without Chromium)
from tests.integration.test_console_rough_edges import (  # noqa: F401  (fixtures)
    ORDERS,
    WAIT_MS,
    Stack,
    console,
    stack,
)


def test_a_rule_with_history_shows_the_runs_it_would_have_started(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    stack.rule("orders_report", ORDERS)
    for snapshot_id in (11, 12):
        stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": snapshot_id})
    answer = requests.post(f"{stack.url}/rules/orders_report/backtest", json={}, headers=stack.admin, timeout=30)
    assert answer.status_code == 200, answer.text
    runs = {run["triggerKey"]: run for run in answer.json()["runs"]}
    assert runs  # two commits of the member after from: the rule would have run

    held: list[Route] = []
    page.route(
        "**/api/rules/orders_report/backtest", lambda route: held.append(route)
    )  # held until the page said it is loading
    page.goto(f"{console}#/rule/orders_report")
    panel = page.locator("#backtest")
    expect(panel).to_have_attribute("data-state", "idle", timeout=WAIT_MS)
    page.locator("#backtest-run").click()
    expect(page.locator("#backtest-loading")).to_contain_text("backtesting", timeout=WAIT_MS)
    expect(page.locator("#backtest-run")).to_be_disabled()
    expect(page.locator("#backtest-answer")).to_have_count(0)
    typed = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M")
    page.locator("#backtest-to").fill(typed)  # typing while it runs loses neither the text nor the answer
    page.wait_for_function("() => true")  # let the held request be dispatched to the handler
    assert len(held) == 1
    request = held[0].request
    assert request.method == "POST" and request.post_data_json == {}  # empty from and to: the API's defaults
    held[0].continue_()

    expect(panel).to_have_attribute("data-state", "done", timeout=WAIT_MS)
    expect(page.locator("#backtest-loading")).to_have_count(0)
    expect(page.locator("#backtest-to")).to_have_value(typed)
    rows = page.locator("#backtest-runs [data-run]")
    expect(rows).to_have_count(len(runs))
    assert rows.evaluate_all("rows => rows.map((r) => r.dataset.run)") == list(runs)  # in the API's order
    for key, run in runs.items():
        (pin,) = run["inputs"]
        expect(page.locator(f'[data-run="{key}"]')).to_contain_text(f"orders @ {pin['snapshotId']}")
    expect(page.locator("#backtest-summary")).to_contain_text(f"{len(runs)} run")
    history = page.locator("#backtest-history")
    expect(history).to_contain_text("events are kept 30 days")
    expect(history).to_contain_text("2 events read, 0 of them before from")
    expect(page.locator('#backtest-waiting [data-group="g"]')).to_be_visible()
    expect(page.locator(f'#backtest-waiting [data-member="{ORDERS}"]')).to_be_visible()
    shot(page, "rule-backtest")


def test_a_bad_range_shows_the_apis_400_message_not_an_empty_list(page: Page, console: str, stack: Stack) -> None:  # noqa: F811
    stack.rule("orders_report", ORDERS)
    stack.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 11})
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    start, end = now - timedelta(hours=1), now - timedelta(hours=2)  # from after to
    page.goto(f"{console}#/rule/orders_report")
    expect(page.locator("#backtest")).to_have_attribute("data-state", "idle", timeout=WAIT_MS)
    page.locator("#backtest-from").fill(start.strftime("%Y-%m-%dT%H:%M"))
    page.locator("#backtest-to").fill(end.strftime("%Y-%m-%dT%H:%M"))
    page.locator("#backtest-run").click()

    expect(page.locator("#backtest")).to_have_attribute("data-state", "error", timeout=WAIT_MS)
    iso = "%Y-%m-%dT%H:%M:%SZ"
    expect(page.locator("#backtest-error")).to_have_text(
        f"400: from ({start.strftime(iso)}) must be before to ({end.strftime(iso)})"
    )
    expect(page.locator("#backtest-answer")).to_have_count(0)
    expect(page.locator("#backtest-runs")).to_have_count(0)
    shot(page, "rule-backtest-error")
    # what was typed stays in the inputs, through the page's refreshes
    expect(page.locator("#backtest-from")).to_have_value(start.strftime("%Y-%m-%dT%H:%M"))
