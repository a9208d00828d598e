"""``lakehook apply --dry-run`` lists the runs applying each rule would start (the API's ``wouldStart``): the CLI
in-process against the API on the in-memory fakes, over HTTP. A new partitioned rule with ``startFrom: LATEST``
lists a run per ready past partition, and applying it starts exactly those (docs/partitions.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from lakehook import container
from lakehook.cli import main
from lakehook.cli_commands.output import captured
from tests.api_server import api_on_fakes

TOKEN = "apply-dry-run"
ORDERS, PAYMENTS = "paimon://lake/ods/orders", "paimon://lake/ods/payments"
DAYS = ["dt=2026-11-01", "dt=2026-11-02", "dt=2026-11-03"]
CONFIG = {
    "rules": {
        "daily_report": {
            "groups": [
                {
                    "groupId": "g",
                    "partitionBy": ["dt"],
                    "members": [{"assetKey": ORDERS, "partition": {}}, {"assetKey": PAYMENTS, "partition": {}}],
                }
            ],
            "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
        }
    }
}


def cli(url: str, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAKEHOOK_ADMIN_TOKEN", TOKEN)
        patch.setattr("sys.stdout", out)
        patch.setattr("sys.stderr", err)
        with captured(out, err):
            code = main(["--url", url, *argv])
    assert code == 0, err.getvalue()
    return code, out.getvalue()


def push(url: str, event: dict[str, Any]) -> None:
    answer = requests.post(f"{url}/asset-events", json=event, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert answer.status_code == 200, answer.text


def test_apply_dry_run_lists_the_partition_runs_applying_the_rule_starts(tmp_path: Path) -> None:
    config = tmp_path / "lakehook.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with api_on_fakes(TOKEN) as server:
        url = server.base_url
        # GIVEN orders and payments committed data for three past days before the rule exists
        push(url, {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 7, "partitions": DAYS})
        push(url, {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1, "partitions": DAYS})

        # WHEN the rule is applied with --dry-run, THEN each run it would start is listed, and nothing is written
        _, text = cli(url, "apply", "-f", str(config), "--dry-run")
        assert "create     rule daily_report" in text
        assert "would start 3 runs now:" in text
        for day in DAYS:
            assert f"group g partition {day}: {ORDERS} @ 1, {PAYMENTS} @ 7" in text
        _, listed = cli(url, "--output", "json", "apply", "-f", str(config), "--dry-run")
        (change,) = json.loads(listed)["changes"]
        planned = sorted(run["triggerKey"] for run in change["wouldStart"])
        assert container.current().rule_store.get_rule("daily_report") is None

        # and applying it starts exactly those runs
        cli(url, "apply", "-f", str(config))
        claimed = container.current().trigger_store.list_for_rule("daily_report", limit=50).items
        assert sorted(t.trigger_key for t in claimed) == planned
        assert sorted(t.partition or "" for t in claimed) == DAYS

        # a second dry run: the rule ran every day, so it would start nothing
        _, again = cli(url, "apply", "-f", str(config), "--dry-run")
        assert "unchanged  rule daily_report" in again and "would start no run now" in again


def test_the_polled_assets_example_registers_one_table_of_each_format() -> None:
    # docs/examples/polled-assets.yaml, which the tutorial's next step points at: every source form passes the
    # server's checks (key form, source per format, URL policy), and all six formats are there
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "polled-assets.yaml"
    with api_on_fakes(TOKEN) as server:
        _, listed = cli(server.base_url, "--output", "json", "apply", "-f", str(example), "--dry-run")
    changes = json.loads(listed)["changes"]
    assert [c["action"] for c in changes] == ["create"] * 6
    formats = [yaml.safe_load(example.read_text())["assets"][i]["format"] for i in range(6)]
    assert sorted(set(formats)) == ["delta", "hudi", "iceberg", "paimon"]
