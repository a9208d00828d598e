"""The rest of the CLI against a local stack: every resource command, watch, secret put, apply --prune and a
failure half-way through apply, errors as JSON, and a reader that goes away (``| head``)."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from lakehook.cli_commands import apply
from lakehook.cli_commands.api import ApiClient
from lakehook.cli_commands.output import captured
from lakehook.client import PushClient
from lakehook.local.runtime import LocalStack
from tests.e2e.cli_support import ADMIN, EXAMPLE, ROOT, Ran, cli_stack, run_cli, wait_for

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
RULE = "dwd_trade_event_fact"
OUTLET = "paimon://lake/dwd_db/dwd_trade_event_fact"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with cli_stack() as running:
        yield running


@pytest.fixture(scope="module")
def secret(stack: LocalStack) -> str:
    applied = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE)])
    assert applied.code == 0, applied.err
    return str(next(c["secret"] for c in applied.json()["changes"] if c["kind"] == "producer"))


def js(*argv: str) -> Ran:
    return run_cli(["--output", "json", *argv])


def rule_file(path: Path, *rule_ids: str) -> Path:
    rules = [
        {
            "ruleId": rule_id,
            "groups": [{"groupId": "g", "members": [{"assetKey": f"custom://prune/{rule_id}"}]}],
            "target": {"type": "eventbridge", "eventBusName": "default"},
        }
        for rule_id in rule_ids
    ]
    path.write_text(yaml.safe_dump({"rules": rules}))
    return path


def test_rules_assets_producers_aliases(stack: LocalStack, secret: str) -> None:
    listed = run_cli(["rules", "list"])
    assert listed.code == 0 and RULE in listed.out and "eventbridge" in listed.out
    assert js("rules", "get", RULE).json()["outlets"] == ["paimon://lake/dwd_db/"]
    assert {a["assetKey"] for a in js("assets", "list").json()["items"]} >= {ORDERS, PAYMENTS}

    writer = PushClient(stack.api_url, "ods-writer", secret)
    writer.send({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 5})
    events = run_cli(["assets", "events", ORDERS])
    assert events.code == 0 and "SNAPSHOT_COMMITTED" in events.out and "PUSH" in events.out

    shown = run_cli(["producers", "get", "ods-writer"])
    assert shown.code == 0 and "paimon://lake/ods_db/" in shown.out and secret not in shown.out
    assert run_cli(["aliases", "get", "ods_trade"]).out.strip() == f"alias ods_trade -> {ORDERS}, {PAYMENTS}"

    # rotation: confirmation needed in a script; with --yes the new secret is shown once and the old one stops
    assert run_cli(["producers", "rotate", "ods-writer"]).code == 1
    rotated = js("producers", "rotate", "ods-writer", "--yes").json()
    assert rotated["secret"] and rotated["secret"] != secret
    assert rotated["apiKey"] == f"ods-writer:{rotated['secret']}"  # what an OpenLineage transport sends
    assert rotated["description"] == "the job that commits the ODS tables"  # a rotation changes the secret only
    stale = run_cli(["push", "--producer", "ods-writer", "--secret", secret, "--type", "TAG_CREATED"])
    assert stale.code == 1
    fresh = PushClient(stack.api_url, "ods-writer", rotated["secret"])
    assert fresh.send({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 6})[0].recorded


def test_watermarks_with_compare_and_set(stack: LocalStack) -> None:
    where = ("--namespace", "cdc", "--asset", ORDERS)
    first = js("watermarks", "put", *where, "--key", "offset", "--value", '{"binlog": 17}', "--expected-version", "0")
    assert first.code == 0 and first.json()["version"] == 1
    conflict = run_cli(["watermarks", "put", *where, "--key", "offset", "--value", "18", "--expected-version", "0"])
    assert conflict.code == 1 and "409" in conflict.err
    listed = run_cli(["watermarks", "get", *where])
    assert listed.code == 0 and '{"binlog": 17}' in listed.out
    assert js("watermarks", "get", *where, "--key", "offset").json()["value"] == {"binlog": 17}
    assert run_cli(["watermarks", "put", *where, "--key", "offset", "--value", "not json"]).code == 1
    assert run_cli(["watermarks", "delete", *where, "--key", "offset"]).code == 0
    assert run_cli(["watermarks", "get", *where, "--key", "offset"]).code == 1


def test_evaluate_complete_and_watch(stack: LocalStack, secret: str) -> None:
    rotated = js("producers", "rotate", "ods-writer", "--yes").json()["secret"]
    writer = PushClient(stack.api_url, "ods-writer", rotated)

    # GIVEN a watch that has taken its baseline
    watched = io.StringIO()
    done: dict[str, int] = {}

    def follow() -> None:
        with captured(watched, io.StringIO()):
            from lakehook.cli import main

            done["code"] = main(["watch", "--rule", RULE, "--count", "1", "--interval", "0.2", "--timeout", "60"])

    watcher = threading.Thread(target=follow)
    watcher.start()
    assert wait_for(lambda: "watching rule" in watched.getvalue())

    # WHEN both inputs advance
    writer.send(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 101},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 201},
    )
    watcher.join(90)

    # THEN the watch showed the new trigger and its end, and stopped by itself
    assert done == {"code": 0}, watched.getvalue()
    key = wait_for(
        lambda: next(
            (t["triggerKey"] for t in js("triggers", "--rule", RULE).json()["items"] if t["status"] == "SUCCEEDED"),
            None,
        )
    )
    assert key in watched.getvalue() and "SUCCEEDED" in watched.getvalue()
    assert f"{ORDERS}@101" in watched.getvalue()

    # evaluate now claims nothing new (the same versions are the same key); --force is a manual run
    again = js("evaluate", RULE)
    assert again.code == 0 and again.json()["claimed"] == []
    forced = run_cli(["evaluate", RULE, "--force"])
    assert forced.code == 0 and "claimed 1 trigger(s) (a manual run)" in forced.out

    # complete with management credentials: the outlet enters ingest; the same again is repeated, another is 409
    completed = run_cli(["complete", key, "--status", "succeeded", "--outlet", f"{OUTLET}=9"])
    assert completed.code == 0 and f"run of {key}: SUCCEEDED" in completed.out and "ACCEPTED" in completed.out
    assert js("state", OUTLET).json()["latestSnapshotId"] == 9
    assert "already recorded" in run_cli(["complete", key, "--status", "SUCCEEDED", "--outlet", f"{OUTLET}=9"]).out
    assert run_cli(["complete", key, "--status", "FAILED"]).code == 1
    assert js("trigger", key).json()["runStatus"] == "SUCCEEDED"
    assert run_cli(["complete", key, "--status", "SUCCEEDED", "--outlet", "nonsense"]).code == 2


def test_secret_put_on_the_local_stack(stack: LocalStack, tmp_path: Path) -> None:
    made = js("secret", "put", "hooks/dwd", "--generate")
    assert made.code == 0, made.out
    ref = made.json()["secretRef"]
    assert ref == "lakehook/lakehook-local/hooks/dwd" and made.json()["created"] and len(made.json()["value"]) == 64
    value_file = tmp_path / "value"
    value_file.write_text("a-new-signing-key\n")
    updated = run_cli(["secret", "put", ref, "--value-file", str(value_file)])
    assert updated.code == 0 and f"updated secret {ref}" in updated.out

    # the rule that names it is accepted; one naming a secret never put is refused before anything is written
    config = tmp_path / "hook.yaml"
    target = {"type": "webhook", "url": "http://127.0.0.1:9/hook", "secretRef": ref}
    rule = {"ruleId": "hooked", "groups": [{"groupId": "g", "members": [{"assetKey": "custom://a/b"}]}]}
    config.write_text(yaml.safe_dump({"rules": [{**rule, "target": target}]}))
    assert run_cli(["apply", "-f", str(config), "--dry-run"]).code == 0
    config.write_text(yaml.safe_dump({"rules": [{**rule, "target": {**target, "secretRef": "hooks/none"}}]}))
    refused = run_cli(["apply", "-f", str(config)])
    assert refused.code == 1 and "target.secretRef" in refused.err

    assert run_cli(["secret", "put", "x", "--value", "v", "--generate"]).code == 1  # one way only
    deployed = run_cli(["--url", "https://abc.execute-api.eu-west-1.amazonaws.com/prod", "secret", "put", "x"])
    assert deployed.code == 1 and "--value" in deployed.err


def test_apply_prune_shows_then_deletes_only_with_consent(stack: LocalStack, tmp_path: Path) -> None:
    both = rule_file(tmp_path / "both.yaml", "keep_me", "prune_me")
    assert run_cli(["apply", "-f", str(both)]).code == 0
    one = rule_file(tmp_path / "one.yaml", "keep_me")

    dry = js("apply", "-f", str(one), "--prune", "--dry-run")
    deletes = [c["id"] for c in dry.json()["changes"] if c["action"] == "delete"]
    assert "prune_me" in deletes and "keep_me" not in deletes and RULE in deletes
    assert dry.json()["summary"]["delete"] == len(deletes)

    refused = run_cli(["apply", "-f", str(one), "--prune"])  # stdin is not a terminal: no silent deletion
    assert refused.code == 1 and "--yes" in refused.err and "--prune deletes rule prune_me" in refused.err
    assert run_cli(["rules", "get", "prune_me"]).code == 0

    pruned = run_cli(["apply", "-f", str(one), "--prune", "--yes"])
    assert pruned.code == 0, pruned.err
    assert run_cli(["rules", "get", "prune_me"]).code == 1 and run_cli(["rules", "get", "keep_me"]).code == 0
    assert run_cli(["rules", "delete", "keep_me"]).code == 1  # asks; not a terminal
    assert run_cli(["rules", "delete", "keep_me", "--yes"]).code == 0
    assert run_cli(["apply", "-f", str(EXAMPLE)]).code == 0  # the example's rule back, for the other tests


class _CutOff(requests.adapters.HTTPAdapter):
    """The network fails for one request (the rule's real PUT) after the dry runs went through."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if request.method == "PUT" and "/rules/" in str(request.url) and "dryRun" not in str(request.url):
            raise requests.ConnectionError("connection reset by peer")
        return super().send(request, *args, **kwargs)


def test_a_failure_half_way_still_prints_the_new_producer_secret(stack: LocalStack, tmp_path: Path) -> None:
    config = tmp_path / "halfway.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "producers": [{"producerId": "halfway-writer", "assetKeyPrefixes": ["custom://halfway/"]}],
                "rules": [
                    {
                        "ruleId": "halfway",
                        "groups": [{"groupId": "g", "members": [{"assetKey": "custom://halfway/a"}]}],
                        "target": {"type": "eventbridge", "eventBusName": "default"},
                    }
                ],
            }
        )
    )
    session = requests.Session()
    session.mount("http://", _CutOff())
    api = ApiClient(url=stack.api_url, admin_token=ADMIN, session=session)
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(file=str(config), dry_run=False, prune=False, yes=False, output="json")
    with captured(out, err):
        code = apply.apply(api, args)
    result = json.loads(out.getvalue())
    assert code == 2 and "rule halfway" in result["error"]["message"]
    producer, rule = result["changes"]
    assert producer["applied"] is True and len(producer["secret"]) >= 32
    assert rule["applied"] is False
    pushed = PushClient(stack.api_url, "halfway-writer", producer["secret"]).send(
        {"eventType": "TAG_CREATED", "assetKey": "custom://halfway/a", "tag": "t"}
    )
    assert pushed[0].recorded


def test_errors_as_json_on_stdout(stack: LocalStack) -> None:
    missing = js("explain", "no_such_rule")
    assert missing.code == 1 and missing.err.startswith("lakehook: error: 404")
    assert missing.json()["error"]["status"] == 404 and missing.json()["error"]["exitCode"] == 1
    assert "does not exist" in missing.json()["error"]["message"]
    usage = js("triggers", "--status", "DONE")
    assert usage.code == 2 and "--status" in usage.json()["error"]["message"]
    down = run_cli(["--url", "http://127.0.0.1:9", "--output", "json", "rules", "list"])
    assert down.code == 2 and down.json()["error"]["exitCode"] == 2


def test_no_traceback_when_the_reader_goes_away(stack: LocalStack) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src" / "shared"), str(ROOT)])}
    process = subprocess.Popen(
        [sys.executable, "-m", "lakehook.cli", "apply", "-f", "-", "--dry-run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stdin is not None
    process.stdout.close()  # like `| head` that has read enough: every write now fails with EPIPE
    _, stderr = process.communicate(EXAMPLE.read_bytes(), timeout=60)
    assert b"Traceback" not in stderr and b"Broken pipe" not in stderr, stderr.decode()
    assert process.returncode == 141
