"""The ``lakehook`` CLI against a local stack: apply, push, state, explain, triggers, replay, errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from lakehook.local.runtime import LocalStack
from tests.e2e.cli_support import EXAMPLE, Ran, cli_stack, run_cli, wait_for

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
RULE = "dwd_trade_event_fact"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with cli_stack() as running:
        yield running


def push(secret: str, asset: str, snapshot: int) -> Ran:
    return run_cli(
        [
            *("--output", "json", "push", "--producer", "ods-writer", "--secret", secret),
            *("--type", "SNAPSHOT_COMMITTED", "--asset", asset, "--snapshot-id", str(snapshot)),
        ]
    )


def test_apply_push_state_explain_triggers(stack: LocalStack, tmp_path: Path) -> None:
    # GIVEN an empty stack, a dry run lists everything as to create and creates nothing
    dry = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE), "--dry-run"])
    assert dry.code == 0, dry.err
    assert dry.json()["summary"] == {"create": 5, "update": 0, "unchanged": 0}
    assert run_cli(["explain", RULE]).code == 1

    # WHEN applied, the producer's secret is shown once; applying again changes nothing
    applied = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE)])
    assert applied.code == 0, applied.err
    (producer,) = [c for c in applied.json()["changes"] if c["kind"] == "producer"]
    secret = producer["secret"]
    again = run_cli(["apply", "-f", str(EXAMPLE)])
    assert again.code == 0 and "applied: 0 to create, 0 to update, 5 unchanged" in again.out
    assert "secret" not in again.out

    # a changed field is an update, named
    config = yaml.safe_load(EXAMPLE.read_text())
    config["rules"][0]["policy"]["minIntervalSeconds"] = 60
    changed = tmp_path / "lakehook.yaml"
    changed.write_text(yaml.safe_dump(config))
    update = run_cli(["apply", "-f", str(changed), "--dry-run"])
    assert f"update     rule {RULE}  (policy.minIntervalSeconds)" in update.out
    assert "dry run: 0 to create, 1 to update, 4 unchanged" in update.out

    # THEN pushes are signed and accepted once; the same event again is a duplicate with the same id
    first = push(secret, ORDERS, 1)
    assert first.code == 0 and first.json()["status"] == "ACCEPTED", first.err
    duplicate = push(secret, ORDERS, 1)
    assert duplicate.json() == {**first.json(), "status": "DUPLICATE", "reason": duplicate.json()["reason"]}
    state = run_cli(["--output", "json", "state", ORDERS]).json()
    assert state["latestSnapshotId"] == 1 and state["registered"] is True

    explained = run_cli(["explain", RULE])
    assert explained.code == 0 and f"rule {RULE}: NOT READY" in explained.out and PAYMENTS in explained.out

    assert push(secret, PAYMENTS, 7).json()["status"] == "ACCEPTED"
    succeeded = ["--output", "json", "triggers", "--rule", RULE, "--status", "succeeded"]
    (trigger,) = wait_for(lambda: run_cli(succeeded).json()["items"])
    assert {(i["assetKey"], i["snapshotId"]) for i in trigger["inputs"]} == {(ORDERS, 1), (PAYMENTS, 7)}
    listed = run_cli(["triggers"])
    assert trigger["triggerKey"] in listed.out and "SUCCEEDED" in listed.out
    assert trigger["triggerKey"] in run_cli(["explain", RULE]).out  # the last trigger

    if "/triggers/{triggerKey}/replay" in requests.get(f"{stack.api_url}/openapi.json", timeout=10).json()["paths"]:
        checked = run_cli(["replay", trigger["triggerKey"], "--dry-run"])
        assert checked.code == 0 and "would go ahead (dry run" in checked.out, checked.err
        replayed = run_cli(["--output", "json", "replay", trigger["triggerKey"]])
        assert replayed.code == 0, replayed.err
        assert replayed.json()["replay"]["triggerKey"] != trigger["triggerKey"]
        assert run_cli(["replay", "no_such.trigger.key", "--dry-run"]).code == 1

    shown = run_cli(["trigger", trigger["triggerKey"]])
    assert shown.code == 0 and "SUCCEEDED: run" in shown.out, shown.err
    refused = run_cli(["retry", trigger["triggerKey"]])  # only a FAILED trigger is retried
    assert refused.code == 1 and "refused" in refused.out and "SUCCEEDED" in refused.out
    assert run_cli(["retry", "no_such.trigger.key"]).code == 1


def test_errors_have_messages_and_exit_codes(stack: LocalStack, tmp_path: Path) -> None:
    missing = run_cli(["explain", "no_such_rule"])
    assert missing.code == 1 and "404: rule 'no_such_rule' does not exist" in missing.err

    wrong_token = run_cli(["--admin-token", "nope", "state", ORDERS])
    assert wrong_token.code == 1 and "401" in wrong_token.err and "Bearer" in wrong_token.err

    bad_secret = push("not-the-secret", ORDERS, 2)
    assert bad_secret.code == 1 and "401" in bad_secret.err

    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("rules:\n  - ruleId: r1\n    groups: []\n    target: {type: webhook}\n")
    refused = run_cli(["apply", "-f", str(bad_config)])
    assert refused.code == 1 and refused.err.startswith("lakehook: error: rule r1: 400")

    assert run_cli(["apply", "-f", str(tmp_path / "absent.yaml")]).code == 1

    down = run_cli(["--url", "http://127.0.0.1:9", "triggers", "--rule", "r"])
    assert down.code == 2 and "lakehook local up" in down.err
    down_push = run_cli(
        [
            *("--url", "http://127.0.0.1:9", "push", "--producer", "p", "--secret", "s"),
            *("--type", "TAG_CREATED", "--asset", "custom://a/b", "--tag", "t", "--attempts", "1"),
        ]
    )
    assert down_push.code == 2 and "lakehook local up" in down_push.err

    gap = run_cli(["coverage", "s3://spool/orders", "--start", "2025-06-01T10:00:00Z", "--end", "2025-06-01T11:00:00Z"])
    assert gap.code == 3 and "missing [2025-06-01T10:00:00Z, 2025-06-01T11:00:00Z)" in gap.out
    assert "progress 0.00% (0 of 3600000 ms covered)" in gap.out


def test_apply_dry_runs_every_object_first_and_writes_nothing_if_one_is_refused(
    stack: LocalStack, tmp_path: Path
) -> None:
    # GIVEN a file with three typos among valid objects
    config = yaml.safe_load(EXAMPLE.read_text())
    config["producers"][0]["producerId"] = "typo-writer"
    config["assets"][1]["format"] = "parquet"
    config["rules"][0]["ruleId"] = "typo_rule"
    config["rules"][0]["groups"][0]["members"][0]["conditon"] = {"snapshotRequired": True}
    config["rules"].append({**config["rules"][0], "ruleId": "typo_mode", "policy": {"mode": "ALL_UPDATE"}})
    config["rules"][1]["groups"] = [{"groupId": "g", "members": [{"assetKey": ORDERS}]}]
    config["aliases"][0]["name"] = "typo_alias"
    typos = tmp_path / "typos.yaml"
    typos.write_text(yaml.safe_dump(config))

    # WHEN dry-run THEN the server refuses each typo, naming it
    dry = run_cli(["apply", "-f", str(typos), "--dry-run"])
    assert dry.code == 1 and "3 objects refused, nothing applied" in dry.err, dry.err
    assert "conditon" in dry.err and "policy.mode" in dry.err and "format" in dry.err

    # AND a real apply runs the same dry runs first: the valid producer and alias are not written either
    real = run_cli(["apply", "-f", str(typos)])
    assert real.code == 1 and "nothing applied" in real.err
    assert run_cli(["explain", "typo_mode"]).code == 1
    assert (
        requests.get(
            f"{stack.api_url}/producers/typo-writer",
            headers={"Authorization": f"Bearer {stack.admin_token}"},
            timeout=10,
        ).status_code
        == 404
    )
    assert (
        requests.get(
            f"{stack.api_url}/aliases/typo_alias", headers={"Authorization": f"Bearer {stack.admin_token}"}, timeout=10
        ).status_code
        == 404
    )


def test_explain_of_a_scheduled_rule_says_its_ticks_and_what_the_next_tick_waits_for(
    stack: LocalStack, tmp_path: Path
) -> None:
    # GIVEN a rule on a schedule in Berlin whose member has never been seen
    unseen = "paimon://lake/ods_db/not_committed_yet"
    config = {
        "rules": [
            {
                "ruleId": "berlin_morning",
                "groups": [
                    {
                        "groupId": "morning",
                        "members": [{"assetKey": unseen}],
                        "schedule": {"cron": "0 6 * * *", "timezone": "Europe/Berlin"},
                    }
                ],
                "target": {"type": "eventbridge", "eventBusName": "default"},
            }
        ]
    }
    path = tmp_path / "scheduled.yaml"
    path.write_text(yaml.safe_dump(config))
    assert run_cli(["apply", "-f", str(path)]).code == 0

    # WHEN explained, as JSON and as text
    answer = run_cli(["--output", "json", "explain", "berlin_morning"])
    assert answer.code == 0, answer.err
    schedule = answer.json()["groups"][0]["schedule"]
    text = run_cli(["explain", "berlin_morning"]).out

    # THEN the text says the cron, its zone, both ticks in UTC and in Berlin, and the member the tick waits for
    assert schedule["waitsFor"][0]["assetKey"] == unseen and schedule["ranForLastTick"] is False
    assert "schedule: 0 6 * * * (Europe/Berlin)" in text
    last, following = schedule["lastTick"], schedule["nextTick"]
    assert f"last tick: {last['utc']} ({last['local']}), not run for it yet" in text
    assert f"next tick: {following['utc']} ({following['local']})" in text
    assert following["local"][11:19] == "06:00:00" and last["local"][11:19] == "06:00:00"
    waits = schedule["waitsFor"][0]
    assert f"the tick at {last['utc']} waits for:" in text
    assert f"{unseen} {waits['status']}: {waits['reason']}" in text


def test_triggers_and_trigger_show_which_partition_ran(stack: LocalStack, tmp_path: Path) -> None:
    # GIVEN a rule that runs once per day partition of its table, and a writer allowed to push that table
    orders = "paimon://lake/cli_part_db/orders"
    config = {
        "producers": [{"producerId": "part-writer", "assetKeyPrefixes": ["paimon://lake/cli_part_db/"]}],
        "rules": [
            {
                "ruleId": "daily_orders",
                "groups": [
                    {"groupId": "daily", "partitionBy": ["dt"], "members": [{"assetKey": orders, "partition": {}}]}
                ],
                "target": {"type": "eventbridge", "eventBusName": "default"},
            }
        ],
    }
    path = tmp_path / "partitioned.yaml"
    path.write_text(yaml.safe_dump(config))
    applied = run_cli(["--output", "json", "apply", "-f", str(path)])
    assert applied.code == 0, applied.err
    (producer,) = [c for c in applied.json()["changes"] if c["kind"] == "producer"]

    # WHEN two commits each touch one day
    days = {1: "dt=2026-12-01", 2: "dt=2026-12-02"}
    for snapshot, day in days.items():
        pushed = run_cli(
            [
                *("--output", "json", "push", "--producer", "part-writer", "--secret", producer["secret"]),
                *("--type", "SNAPSHOT_COMMITTED", "--asset", orders, "--snapshot-id", str(snapshot)),
                *("--partition-key", day),
            ]
        )
        assert pushed.json().get("status") == "ACCEPTED", pushed.out + pushed.err
    listing = ["--output", "json", "triggers", "--rule", "daily_orders"]

    def both() -> list[dict[str, Any]] | None:
        found: list[dict[str, Any]] = run_cli(listing).json()["items"]
        return found if len(found) == 2 else None

    items = wait_for(both)
    assert items, run_cli(listing).out

    # THEN each day ran once, and the JSON, the table and the single view each say which day
    ran = {t["partition"]: t["triggerKey"] for t in items}
    assert set(ran) == set(days.values()), items
    table = run_cli(["triggers", "--rule", "daily_orders"]).out.splitlines()
    assert " PARTITION " in table[0], table[0]
    column = table[0].index(" PARTITION ") + 1  # the table is aligned: a cell starts where its heading does

    def cell(line: str) -> str:
        return line[column:].split()[0]

    for day, key in ran.items():
        (line,) = [row for row in table if key in row]
        assert cell(line) == day, line
    for day, key in ran.items():
        shown = run_cli(["trigger", key])
        assert shown.code == 0 and f"  partition: {day}" in shown.out.splitlines(), shown.out
        assert run_cli(["--output", "json", "trigger", key]).json()["partition"] == day
    # a run of no partition says so in the table (a dash), and its view has no partition line
    plain = run_cli(["--output", "json", "triggers", "--rule", RULE]).json()["items"]
    if plain:  # the first test's rule has run
        key = plain[0]["triggerKey"]
        assert "partition:" not in run_cli(["trigger", key]).out
        rows = run_cli(["triggers", "--rule", RULE]).out.splitlines()
        column = rows[0].index(" PARTITION ") + 1
        (line,) = [row for row in rows if key in row]
        assert line[column:].split()[0] == "-", line
