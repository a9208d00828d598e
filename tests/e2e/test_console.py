"""The web console in a real browser (headless Chromium driven by Playwright) on a local stack that has run
the GMV demo's story: the graph, the DWD rule blocked by a failed quality check, a new trigger arriving in
the timeline without a reload, and retry, replay and evaluate-now clicked on the page; 64-bit Iceberg
snapshot ids shown and pinned digit for digit.

Chromium comes from the distribution (``make setup`` installs it); Playwright's own browser download is not
used. Screenshots go to test-output/console/ (gitignored).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import pyarrow as pa
import pytest
import requests

from lakehook.cli_commands.api import ApiClient
from lakehook.console.server import ConsoleServer
from lakehook.demo.api import Api
from lakehook.demo.consumers import TARGET_SECRET, Consumers
from lakehook.demo.gmv import CALENDAR, DWD_RULE, DWS_RULE, ORDERS, PAYMENTS, RULES, TABLES, layers
from lakehook.demo.lake import REGION, Lake
from lakehook.demo.story import STEPS, Story, order, payment
from lakehook.demo.view import PlainView
from lakehook.local.runtime import LocalStack
from tests import waiting

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "console"
ADMIN = "console-admin"
CHROMIUM = os.environ.get("LAKEHOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
WAIT_MS = 45_000  # how long the page may take to show what the stack did (it polls every 2 s)

if CHROMIUM is None:
    pytest.skip(
        "no Chromium on PATH: `make setup` installs Debian's chromium package (or set LAKEHOOK_CHROMIUM)",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402  (only with a browser)


@dataclass
class Demo:
    stack: LocalStack
    api: Api
    story: Story
    consumers: Consumers

    def triggers(self, rule_id: str) -> list[dict[str, Any]]:
        return self.api.triggers(rule_id)


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    quiet = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "ERROR"}
    with LocalStack(port=0, admin_token=ADMIN, extra_env=quiet, poll_every=1.0) as stack:
        lake = Lake(stack.endpoint_url)
        consumers = Consumers(lake, stack.api_url, layers(), fail_once=DWS_RULE)
        consumers.start()
        api = Api(stack.api_url, ADMIN, say=lambda line: None)
        story = Story(api, lake, consumers, PlainView(STEPS), stack.endpoint_url)
        try:
            story.run()
            assert not api.failures, [e.what for e in api.failures]
            yield Demo(stack, api, story, consumers)
        finally:
            consumers.stop()
            api.session.close()


@pytest.fixture(scope="module")
def console(demo: Demo) -> Iterator[str]:
    with ConsoleServer(lambda: ApiClient(url=demo.stack.api_url, admin_token=ADMIN)) as server:
        yield server.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"the page threw: {errors}"


def shot(page: Page, name: str, full_page: bool = True) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def asset_url(console: str, key: str) -> str:
    return f"{console}#/asset/{quote(key, safe='')}"


def wait_for(check: Any, seconds: float = 45.0) -> Any:
    return waiting.wait_for(check, seconds, every=0.5)


def test_the_graph_shows_the_demos_six_tables_and_three_rules(page: Page, console: str) -> None:
    page.goto(console)
    assets = page.locator("svg#graph [data-asset]")
    expect(assets).to_have_count(6, timeout=WAIT_MS)  # the first load: every environment is cold
    assert sorted(assets.evaluate_all("nodes => nodes.map(n => n.dataset.asset)")) == sorted(TABLES)
    rules = page.locator("svg#graph [data-rule]")
    expect(rules).to_have_count(3)
    assert sorted(rules.evaluate_all("nodes => nodes.map(n => n.dataset.rule)")) == sorted(RULES)
    # The story ends with orders 4 failing its check: the node is red, the DWD rule blocked by it.
    expect(page.locator(f'[data-asset="{ORDERS}"]')).to_have_attribute("data-status", "QUALITY_FAILED")
    expect(page.locator(f'[data-rule="{DWD_RULE}"]')).to_have_attribute("data-status", "BLOCKED_BY_QUALITY")
    # Edges: both ODS members into the DWD rule, and the rule on to its declared outlet.
    expect(page.locator(f'[data-edge-rule="{DWD_RULE}"]')).to_have_count(3)
    # Left to right: ODS before the DWD rule before DWD, and so on down the chain.
    xs = [page.locator(f'[data-asset="{key}"]').bounding_box()["x"] for key in TABLES]  # type: ignore[index]
    assert xs[0] == xs[1] < xs[2] < xs[3] < xs[4]
    # The Delta calendar feeds the DWS rule beside DWD: left of DWS.
    assert xs[list(TABLES).index(CALENDAR)] < xs[3]
    shot(page, "graph")


def test_the_dwd_rule_page_shows_blocked_by_quality_with_the_snapshot_that_failed(page: Page, console: str) -> None:
    page.goto(f"{console}#/rule/{DWD_RULE}")
    member = page.locator(f'[data-member="{ORDERS}"]')
    expect(member).to_have_attribute("data-status", "BLOCKED_BY_QUALITY")
    expect(member.locator('[data-key="qualityFailedSnapshotId"]')).to_have_text("4")
    expect(member).to_contain_text("snapshot 4 has not passed its quality check")
    expect(page.locator(f'[data-member="{PAYMENTS}"]')).to_have_attribute("data-status", "WAITING_FOR_UPDATE")
    shot(page, "rule-dwd")

    page.locator(f'[data-member="{ORDERS}"] a').first.click()  # on to the asset's page
    expect(page.locator('[data-key="qualityFailedSnapshotId"]')).to_have_text("4")
    expect(page.locator('#snapshots tr[data-snapshot="4"]')).to_contain_text("FAILED")
    # snapshot 3's push was lost: polling found it (POLL, or COMPENSATION when the poller's backfill was first)
    expect(page.locator('#snapshots tr[data-snapshot="3"]')).to_contain_text(re.compile("POLL|COMPENSATION"))
    shot(page, "asset-orders")


def test_a_rule_in_its_quiet_period_shows_when_the_period_ends(page: Page, console: str, demo: Demo) -> None:
    rule_id = "console_quiet_probe"
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": PAYMENTS, "condition": {"snapshotRequired": True}}]}],
        "policy": {"quietPeriodSeconds": 3600},  # payments changed minutes ago: quiet for about an hour
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert demo.api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        until = demo.api.explain(rule_id)["groups"][0]["until"]
        page.goto(f"{console}#/rule/{rule_id}")
        group = page.locator('[data-group="g"]')
        expect(group.locator(".group-head [data-status]").first).to_have_attribute("data-status", "QUIET_PERIOD")
        expect(group.locator("[data-until]")).to_have_attribute("data-until", until)
        expect(group.locator("[data-until]")).to_contain_text(until[:19].replace("T", " "))
        shot(page, "rule-quiet-period")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=demo.api.admin, timeout=30)


def test_a_scheduled_rule_shows_its_ticks_and_what_the_next_tick_waits_for(
    page: Page, console: str, demo: Demo
) -> None:
    rule_id = "console_schedule_probe"
    unseen = "paimon://lake/ods_db/not_committed_yet"
    rule = {
        "groups": [
            {
                "groupId": "morning",
                "members": [{"assetKey": unseen}],
                "schedule": {"cron": "0 6 * * *", "timezone": "Europe/Berlin"},
            }
        ],
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert demo.api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        schedule = demo.api.explain(rule_id)["groups"][0]["schedule"]
        page.goto(f"{console}#/rule/{rule_id}")
        shown = page.locator('[data-group="morning"] [data-schedule="0 6 * * *"]')
        expect(shown).to_contain_text("Europe/Berlin")
        expect(shown.locator('[data-tick="next"]')).to_have_attribute("data-utc", schedule["nextTick"]["utc"])
        expect(shown.locator('[data-tick="next"] [data-local]')).to_have_text(schedule["nextTick"]["local"])
        expect(shown.locator('[data-tick="last"]')).to_contain_text("not run for it yet")
        waits = shown.locator(f'[data-waits="{unseen}"]')
        expect(waits).to_have_attribute("data-status", schedule["waitsFor"][0]["status"])
        expect(waits).to_contain_text(schedule["waitsFor"][0]["reason"])
        shot(page, "rule-schedule")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=demo.api.admin, timeout=30)


def test_a_partitioned_rule_shows_each_partition_and_what_it_waits_for(page: Page, console: str, demo: Demo) -> None:
    rule_id = "console_partition_probe"
    orders, refunds = "paimon://lake/ods_db/console_part_orders", "paimon://lake/ods_db/console_part_refunds"
    rule = {
        "groups": [
            {
                "groupId": "daily",
                "partitionBy": ["dt"],
                "members": [{"assetKey": orders, "partition": {}}, {"assetKey": refunds, "partition": {}}],
            }
        ],
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert demo.api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        days = ["dt=2026-12-01", "dt=2026-12-02"]
        commit = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": orders, "snapshotId": 1, "partitions": days}
        assert demo.api.push_statuses(commit) == ["ACCEPTED"]
        waiting.wait_until(  # the resolver runs async
            lambda: demo.api.explain(rule_id),
            lambda: demo.api.explain(rule_id)["groups"][0].get("pendingPartitions") == 2,
            WAIT_MS / 1000,
            every=0.5,
        )
        page.goto(f"{console}#/rule/{rule_id}")
        shown = page.locator('[data-group="daily"] [data-partitions]')
        expect(shown).to_have_attribute("data-partitions", "2")
        line = shown.locator('[data-partition="dt=2026-12-01"]')
        expect(line).to_have_attribute("data-status", "WAITING_FOR_PARTITION")
        expect(line).to_contain_text(f"dt=2026-12-01: waiting for {refunds}")
        shot(page, "rule-partitions")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=demo.api.admin, timeout=30)


def test_a_partitions_run_shows_its_partition_on_its_card_and_on_the_rule_page(
    page: Page, console: str, demo: Demo
) -> None:
    rule_id = "console_partition_run_probe"
    orders, day = "paimon://lake/ods_db/console_run_orders", "dt=2026-12-03"
    rule = {
        "groups": [{"groupId": "daily", "partitionBy": ["dt"], "members": [{"assetKey": orders, "partition": {}}]}],
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert demo.api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        commit = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": orders, "snapshotId": 1, "partitionKey": day}
        assert demo.api.push_statuses(commit) == ["ACCEPTED"]
        ran = wait_for(lambda: demo.triggers(rule_id))  # the resolver runs the day once the commit touched it
        assert [t["partition"] for t in ran] == [day], ran
        key = ran[0]["triggerKey"]

        page.goto(f"{console}#/triggers/{rule_id}")
        card = page.locator(f'[data-trigger="{key}"]')
        expect(card.locator('[data-key="partition"]')).to_have_text(day)
        shot(page, "timeline-partition")

        page.goto(f"{console}#/rule/{rule_id}")
        expect(page.locator('#newest-trigger [data-key="partition"]')).to_have_text(day)
        expect(page.locator("#newest-trigger")).to_contain_text(key)
        expect(page.locator('[data-group="daily"] [data-last-trigger] [data-key="partition"]')).to_have_text(day)
        shot(page, "rule-partition-run")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=demo.api.admin, timeout=30)


def test_a_new_trigger_appears_in_the_timeline_without_a_reload(page: Page, console: str, demo: Demo) -> None:
    page.goto(f"{console}#/triggers/{DWD_RULE}")
    timeline = page.locator("#timeline [data-trigger]")
    before = len(demo.triggers(DWD_RULE))
    expect(timeline).to_have_count(before)
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads

    # Orders 5 passes its check and payments advances: DWD is ready again and fires.
    story, api = demo.story, demo.api
    fixed = story.commit(ORDERS, [order(9, "2025-06-03")])
    check = {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": fixed.snapshot_id}
    assert api.push_statuses(fixed.event(ORDERS), check)[1:] == ["ACCEPTED"]
    paid = story.commit(PAYMENTS, [payment(8), payment(9)])
    assert api.push_statuses(paid.event(PAYMENTS)) == ["ACCEPTED"]

    expect(timeline).to_have_count(before + 1, timeout=WAIT_MS)
    newest = timeline.first
    expect(newest).to_have_class(re.compile(r"\bnew\b"))
    expect(newest).to_contain_text("ods_order_latest")
    assert page.evaluate("window.__sameDocument") is True
    expect(newest).to_have_attribute("data-status", "SUCCEEDED", timeout=WAIT_MS)  # the run reported back
    expect(newest.locator('[data-key="runStatus"]')).to_have_text("SUCCEEDED", timeout=WAIT_MS)  # its own report
    shot(page, "timeline-new-trigger")


def test_retry_from_the_page_dispatches_a_failed_trigger_again(page: Page, console: str, demo: Demo) -> None:
    # A rule whose job does not exist: the target answers 404, so its trigger FAILS for good (FINAL).
    rule_id = "console_retry_probe"
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": PAYMENTS, "condition": {"snapshotRequired": True}}]}],
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert demo.api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        failed = wait_for(lambda: [t for t in demo.triggers(rule_id) if t["status"] == "FAILED"])
        assert failed, demo.triggers(rule_id)
        key = failed[0]["triggerKey"]
        page.goto(f"{console}#/triggers/{rule_id}")
        entry = page.locator(f'[data-trigger="{key}"]')
        expect(entry).to_have_attribute("data-status", "FAILED")
        expect(entry.locator('[data-key="failureCode"]')).to_contain_text("FINAL")
        expect(entry.locator('[data-key="retries"]')).to_have_text("0")

        entry.get_by_role("button", name="Retry").click()
        dialog = page.locator("dialog#confirm")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text(key)
        shot(page, "retry-confirm", full_page=False)
        dialog.get_by_role("button", name="Retry").click()
        expect(page.locator(".toast").first).to_contain_text("retrying")

        expect(entry.locator('[data-key="retries"]')).to_have_text("1", timeout=WAIT_MS)
        assert demo.api.get(f"/triggers/{key}")["retries"] == 1
        expect(entry).to_have_attribute("data-status", "FAILED", timeout=WAIT_MS)  # the job still does not exist
        shot(page, "retry-done")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=demo.api.admin, timeout=30)


def test_evaluate_now_from_the_page_claims_a_manual_run(page: Page, console: str, demo: Demo) -> None:
    before = {t["triggerKey"] for t in demo.triggers(DWD_RULE)}
    page.goto(f"{console}#/rule/{DWD_RULE}")
    page.locator("#evaluate").click()
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    dialog.locator("#force").check()
    shot(page, "evaluate-confirm", full_page=False)
    dialog.get_by_role("button", name="Evaluate").click()
    toast = page.locator(".toast").first
    expect(toast).to_contain_text("claimed")

    new = wait_for(lambda: [t for t in demo.triggers(DWD_RULE) if t["triggerKey"] not in before], 10)
    assert len(new) == 1, new
    assert new[0]["triggerKey"] in (toast.text_content() or "")
    page.goto(f"{console}#/triggers/{DWD_RULE}")
    expect(page.locator(f'[data-trigger="{new[0]["triggerKey"]}"]')).to_be_visible()
    shot(page, "evaluate-claimed")


def test_replay_shows_its_preflight_checklist_before_it_claims(page: Page, console: str, demo: Demo) -> None:
    original = sorted(demo.triggers(DWS_RULE), key=lambda t: t["createdAt"])[0]
    page.goto(f"{console}#/triggers/{DWS_RULE}")
    page.locator(f'[data-trigger="{original["triggerKey"]}"]').get_by_role("button", name="Replay…").click()
    dialog = page.locator("dialog#confirm")
    # One schema check per input: the DWD fact table and the Delta calendar.
    schema_checks = dialog.locator('[data-check="SCHEMA_COMPATIBLE"]')
    # The pre-flight reads the pinned tables, on a cold ReplayApiFunction: seconds on a loaded machine.
    expect(schema_checks).to_have_count(2, timeout=30_000)
    for table in ("dwd_trade_event_fact", "dim_calendar"):
        expect(schema_checks.filter(has_text=table)).to_contain_text("PASSED")
    expect(dialog.get_by_role("button", name="Replay")).to_be_enabled()
    shot(page, "replay-preflight", full_page=False)
    dialog.get_by_role("button", name="Replay").click()
    expect(page.locator(".toast").first).to_contain_text("replay claimed")
    replays = wait_for(lambda: [t for t in demo.triggers(DWS_RULE) if t.get("replayOf") == original["triggerKey"]])
    assert len(replays) == 1


def test_the_coverage_bar_shows_the_exact_gaps(page: Page, console: str, demo: Demo) -> None:
    # Orders reports [00:00, 06:00) and [12:00, 24:00) of 1 June covered: the gap is exactly 06:00 to 12:00.
    covered = [("2025-06-01T00:00:00Z", "2025-06-01T06:00:00Z"), ("2025-06-01T12:00:00Z", "2025-06-02T00:00:00Z")]
    events = [
        {"eventType": "INTERVAL_COVERED", "assetKey": ORDERS, "interval": {"start": a, "end": b}} for a, b in covered
    ]
    assert demo.api.push_statuses(*events) == ["ACCEPTED", "ACCEPTED"]
    query = f"asset={quote(ORDERS, safe='')}&start=2025-06-01T00:00&end=2025-06-02T00:00"
    page.goto(f"{console}#/coverage?{query}")
    report = page.locator("#coverage")
    expect(report).to_have_attribute("data-gaps", "1")
    expect(report).to_have_attribute("data-ratio", "0.75")  # 18 of 24 hours
    expect(report.locator("#progress")).to_have_text("75.00% covered: 18.0 h of 24.0 h")
    expect(report.locator("#gaps tbody tr")).to_have_count(1)
    expect(report.locator("#gaps tbody tr")).to_contain_text("2025-06-01 06:00:00 UTC")
    expect(report.locator("#gaps tbody tr")).to_contain_text("2025-06-01 12:00:00 UTC")
    shot(page, "coverage")


LONGS = [2**53 - 1, 2**53, 2**53 + 1, 6512342785923487231, 20241203141516123, 2**63 - 1, -(2**63)]


def test_the_page_parses_and_writes_back_64_bit_integers_exactly(browser: Browser) -> None:
    # No stack needed: the console's own parser, in the page, on integers a double cannot hold.
    draw = random.Random(27)
    longs = LONGS + [draw.randrange(2**53, 2**63) for _ in range(300)]
    document = {
        "items": [{"snapshotId": n, "parentSnapshotId": n - 1, "n": [n, 1]} for n in longs],
        "safe": [0, 1, -1, 2**53 - 1, 1.5, 1e300, -0.25],
        "digits": "9223372036854775807",  # a string stays a string
    }
    text = json.dumps(document, separators=(",", ":"))
    with ConsoleServer(lambda: ApiClient(url="http://127.0.0.1:9", admin_token=ADMIN)) as server:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{server.url}favicon.svg")  # the console's origin, without the app polling
            seen = page.evaluate(
                """async (text) => {
                    const exact = await import("/exact.js");
                    const parsed = exact.parse(text);
                    const plain = JSON.parse(text).items;
                    return {
                        supported: exact.supported,
                        ids: parsed.items.map((i) => [i.snapshotId, i.parentSnapshotId, i.n[0], typeof i.n[1]]),
                        safe: parsed.safe.map((v) => typeof v),
                        digits: [typeof parsed.digits, exact.isLong(parsed, "digits")],
                        back: exact.stringify(parsed),
                        rounded: plain.filter((item, k) => `${item.snapshotId}` !== parsed.items[k].snapshotId).length,
                    };
                }""",
                text,
            )
        finally:
            context.close()
    assert seen["supported"] is True
    for n, (snapshot_id, parent, first, kind) in zip(longs, seen["ids"], strict=True):
        expected = str(n) if not -(2**53) < n < 2**53 else n
        assert snapshot_id == expected
        assert parent == (str(n - 1) if not -(2**53) < n - 1 < 2**53 else n - 1)
        assert first == expected and kind == "number"
    assert seen["safe"] == ["number"] * 7
    assert seen["digits"] == ["string", False]
    assert json.loads(seen["back"]) == document  # written back as the numbers the API emitted, digit for digit
    assert seen["rounded"] > 250  # what a plain JSON.parse shows for most of them: a neighbouring id


def test_64_bit_iceberg_snapshot_ids_are_shown_and_pinned_exactly(page: Page, console: str, demo: Demo) -> None:
    # GIVEN a real Iceberg table (pyiceberg draws snapshot ids at random over 63 bits) whose snapshot id a
    # JavaScript number cannot hold exactly
    table, key, rule_id = "probe_db.big_ids", "iceberg://glue/probe_db/big_ids", "console_big_ids"
    lake, story, api = demo.story.lake, demo.story, demo.api
    lake.create_iceberg_table(table, pa.schema([("n", pa.int64())]))
    for n in range(10):
        committed = lake.iceberg_overwrite(table, pa.table({"n": [n]}))
        if int(float(committed.snapshot_id)) != committed.snapshot_id:
            break
    sid = committed.snapshot_id
    digits = str(sid)
    assert int(float(sid)) != sid, digits
    registered = api.put("/assets", {"assetKey": key, "format": "iceberg", "source": story.source("iceberg", table)})
    assert registered.status_code in (200, 201), registered.text
    pushed = requests.post(
        f"{demo.stack.api_url}/asset-events", headers=api.admin, json=committed.event(key), timeout=30
    )
    assert pushed.status_code == 200, pushed.text
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": key, "condition": {"snapshotRequired": True}}]}],
        "target": {"type": "webhook", "url": f"{demo.consumers.url}/hooks/nowhere", "secretRef": TARGET_SECRET},
    }
    assert api.put(f"/rules/{rule_id}", rule).status_code == 201
    try:
        # THEN the asset's page shows the exact digits, in its state and in its snapshot log
        page.goto(asset_url(console, key))
        expect(page.locator('[data-key="latestSnapshotId"]')).to_have_text(digits, timeout=WAIT_MS)
        expect(page.locator(f'#snapshots tr[data-snapshot="{digits}"]')).to_contain_text(digits)
        shot(page, "asset-64-bit-id")

        # the rule's explanation shows them as the member's current snapshot
        page.goto(f"{console}#/rule/{rule_id}")
        member = page.locator(f'[data-member="{key}"]')
        expect(member.locator('.cmp > div:first-child [data-key="snapshotId"]')).to_have_text(digits, timeout=WAIT_MS)

        # the trigger the push started pinned them, and its timeline entry shows them
        first = wait_for(lambda: [t for t in demo.triggers(rule_id) if t.get("manifestUri")])
        assert first and first[0]["inputs"][0]["snapshotId"] == sid, demo.triggers(rule_id)
        original = first[0]["triggerKey"]
        page.goto(f"{console}#/triggers/{rule_id}")
        entry = page.locator(f'[data-trigger="{original}"]')
        expect(entry.locator(".facts")).to_contain_text(f"big_ids @ {digits}", timeout=WAIT_MS)

        # WHEN a forced evaluation is clicked on the rule's page, the manual run pins the exact id
        before = {t["triggerKey"] for t in demo.triggers(rule_id)}
        page.goto(f"{console}#/rule/{rule_id}")
        page.locator("#evaluate").click()
        dialog = page.locator("dialog#confirm")
        dialog.locator("#force").check()
        dialog.get_by_role("button", name="Evaluate").click()
        expect(page.locator(".toast").first).to_contain_text("claimed")
        manual = wait_for(lambda: [t for t in demo.triggers(rule_id) if t["triggerKey"] not in before], 10)
        assert len(manual) == 1 and manual[0]["inputs"][0]["snapshotId"] == sid, manual

        # and a replay clicked on the timeline passes its pre-flight (the table still has snapshot <digits>)
        # and pins the exact id again
        page.goto(f"{console}#/triggers/{rule_id}")
        page.locator(f'[data-trigger="{original}"]').get_by_role("button", name="Replay…").click()
        retained = dialog.locator('[data-check="SNAPSHOT_RETAINED"]')
        expect(retained).to_contain_text("PASSED", timeout=30_000)
        dialog.get_by_role("button", name="Replay").click()
        expect(page.locator(".toast").first).to_contain_text("replay claimed")
        replays = wait_for(lambda: [t for t in demo.triggers(rule_id) if t.get("replayOf") == original])
        assert len(replays) == 1 and replays[0]["inputs"][0]["snapshotId"] == sid, replays
        expect(page.locator(f'[data-trigger="{replays[0]["triggerKey"]}"] .facts')).to_contain_text(digits)

        # the run manifests the dispatcher wrote (the replay re-uses its original's) pin the exact id too
        s3 = boto3.client("s3", endpoint_url=demo.stack.endpoint_url, region_name=REGION)

        def dispatched(key: str) -> dict[str, Any] | None:
            return next((t for t in demo.triggers(rule_id) if t["triggerKey"] == key and t.get("manifestUri")), None)

        for trigger in (first[0], wait_for(lambda: dispatched(manual[0]["triggerKey"]))):
            assert trigger, demo.triggers(rule_id)
            bucket, _, name = trigger["manifestUri"].removeprefix("s3://").partition("/")
            manifest = json.loads(s3.get_object(Bucket=bucket, Key=name)["Body"].read())
            assert [i["snapshotId"] for i in manifest["inputs"]] == [sid], manifest
        shot(page, "timeline-64-bit-id")
    finally:
        requests.delete(f"{demo.stack.api_url}/rules/{rule_id}", headers=api.admin, timeout=30)


def test_the_console_refuses_a_push_and_a_cross_site_change_against_the_live_stack(
    page: Page, console: str, demo: Demo
) -> None:
    # The page's own origin, but a call no page makes: the console refuses it and the stack never sees it.
    page.goto(console)
    expect(page.locator("#live")).to_contain_text("live", timeout=WAIT_MS)
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 999, "commitTime": 1}
    status = page.evaluate(
        """async (event) => {
            const config = await fetch("/console.json").then((r) => r.json());
            const answer = await fetch("/api/asset-events", {method: "POST", body: JSON.stringify(event),
              headers: {"Content-Type": "application/json", "X-Lakehook-Console": config.token}});
            return [answer.status, (await answer.json()).message];
        }""",
        event,
    )
    assert status[0] == 403 and "does not forward POST /asset-events" in status[1]
    assert all(e.get("snapshotId") != 999 for e in demo.api.events(ORDERS))


def test_lakehook_console_serves_the_stack_until_ctrl_c(demo: Demo) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "shared")}
    argv = ["console", "--port", "0", "--url", demo.stack.api_url, "--admin-token", ADMIN]
    served = subprocess.Popen(
        [sys.executable, "-m", "lakehook.cli", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = (served.stdout or io.StringIO()).readline()
        found = re.search(r"lakehook console: (http://127\.0\.0\.1:\d+/)\s+\(API (\S+), admin token\)", first)
        assert found and found.group(2) == demo.stack.api_url, first
        rules = requests.get(f"{found.group(1)}api/rules", timeout=30).json()["items"]
        assert set(RULES) <= {r["ruleId"] for r in rules}
    finally:
        served.send_signal(signal.SIGINT)
        assert served.wait(timeout=30) == 0, served.stderr.read() if served.stderr else ""


def test_an_overdue_asset_and_its_rule_are_coloured_overdue_on_the_graph(page: Page, console: str, demo: Demo) -> None:
    # Runs last: it adds an asset (assets are never deleted) the tests above do not expect.
    late, rule_id = "vendor://feeds/late_feed", "late_report"
    api, admin = demo.stack.api_url, demo.api.admin
    registered = requests.put(
        f"{api}/assets", headers=admin, json={"assetKey": late, "format": "custom", "maxAgeSeconds": 3600}, timeout=30
    )
    assert registered.status_code == 201, registered.text
    two_hours_ago = int(time.time() * 1000) - 2 * 3_600_000
    event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": late, "snapshotId": 1, "commitTime": two_hours_ago}
    assert requests.post(f"{api}/asset-events", headers=admin, json=event, timeout=30).status_code == 200
    rule = {
        "groups": [{"groupId": "g", "members": [{"assetKey": late, "condition": {"qualityStatus": "PASSED"}}]}],
        "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
    }
    assert requests.put(f"{api}/rules/{rule_id}", headers=admin, json=rule, timeout=30).status_code == 201
    try:
        page.goto(console)
        node = page.locator(f'svg#graph [data-asset="{late}"]')
        expect(node).to_have_attribute("data-status", "OVERDUE")
        expect(node).to_have_class(re.compile(r"\boverdue\b"))
        expect(page.locator(f'svg#graph [data-rule="{rule_id}"]')).to_have_attribute("data-status", "OVERDUE")
        expect(page.locator("#attention")).to_contain_text("no new snapshot for 3600 s")
        shot(page, "graph-overdue")
    finally:
        requests.delete(f"{api}/rules/{rule_id}", headers=admin, timeout=30)
