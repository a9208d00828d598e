"""docs/upgrade.md on the local stack: a new stack on the data an earlier one kept runs each rule exactly once.

The local stack starts its moto from an empty account every time, so it cannot be stopped and started on the
same data as a deployed stack is updated in place. The nearest it can show: the first stack runs a rule, the
second starts and is given everything the first kept (every item of its table, its secrets, its manifests, put
as they were: the stream hands each item to the resolver and the dispatcher as new), and then

- nothing the first stack had already run runs again, although every one of its items went through the
  resolver and the dispatcher once more;
- the next versions run once, on the second stack.

Both stacks run this code: what differs between two versions' items is the golden items test's
(tests/integration/test_golden_items.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from lakehook.local.runtime import LocalStack
from lakehook.version import __version__
from tests.e2e.cli_support import EXAMPLE, cli_stack, run_cli

pytestmark = pytest.mark.e2e

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
RULE = "dwd_trade_event_fact"


def pushed(secret: str, asset: str, snapshot: int) -> None:
    answer = run_cli(
        [
            *("--output", "json", "push", "--producer", "ods-writer", "--secret", secret),
            *("--type", "SNAPSHOT_COMMITTED", "--asset", asset, "--snapshot-id", str(snapshot)),
        ]
    )
    assert answer.code == 0 and answer.json()["status"] == "ACCEPTED", answer.err or answer.out


def triggers() -> list[dict[str, Any]]:
    listed = run_cli(["--output", "json", "triggers", "--rule", RULE, "--limit", "100"])
    assert listed.code == 0, listed.err
    return list(listed.json()["items"])


def runs(found: list[dict[str, Any]]) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """Each trigger as its status and the versions it ran with."""
    return sorted((t["status"], tuple(sorted((i["assetKey"], i["snapshotId"]) for i in t["inputs"]))) for t in found)


def settled(stack: LocalStack) -> list[dict[str, Any]]:
    """The triggers once everything the stream holds has been handled (the resolver's claims, the dispatches)."""
    for _ in range(5):  # a dispatch writes the claim again: its own record comes through the stream after it
        assert stack.wait_idle(60), "the stream was not drained in 60 s"
        found = triggers()
        if all(t["status"] != "TRIGGERING" for t in found) and stack.wait_idle(0.1):
            return found
    raise AssertionError(f"triggers still dispatching: {runs(triggers())}")


def kept(stack: LocalStack) -> dict[str, Any]:
    """What a deployed stack keeps across an update: its table's items, its secrets, its buckets' objects."""
    dynamodb, secrets, s3 = (stack._client(name) for name in ("dynamodb", "secretsmanager", "s3"))
    items = [i for page in dynamodb.get_paginator("scan").paginate(TableName=stack.table_name) for i in page["Items"]]
    values = {
        s["Name"]: secrets.get_secret_value(SecretId=s["ARN"])["SecretString"]
        for page in secrets.get_paginator("list_secrets").paginate()
        for s in page["SecretList"]
    }
    objects = {
        (bucket["Name"], o["Key"]): s3.get_object(Bucket=bucket["Name"], Key=o["Key"])["Body"].read()
        for bucket in s3.list_buckets()["Buckets"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"])
        for o in page.get("Contents", [])
    }
    return {"items": items, "secrets": values, "objects": objects}


def restore(stack: LocalStack, data: dict[str, Any]) -> None:
    """Put what the first stack kept into the second. A secret the second stack made itself at its start (the
    completion key) stays its own, as a stack's own resources do; the producers' secrets are the first one's."""
    dynamodb, secrets, s3 = (stack._client(name) for name in ("dynamodb", "secretsmanager", "s3"))
    own = {s["Name"] for page in secrets.get_paginator("list_secrets").paginate() for s in page["SecretList"]}
    for name, value in data["secrets"].items():
        if name not in own:
            secrets.create_secret(Name=name, SecretString=value)
    for (bucket, key), body in data["objects"].items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    for item in data["items"]:
        dynamodb.put_item(TableName=stack.table_name, Item=item)


def first_run(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    """The first stack, stopped before the second starts (moto's backends are the process's): the example applied
    and one run of the rule; what it kept, the producer's secret and the run."""
    with cli_stack() as stack:
        applied = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE)])
        assert applied.code == 0, applied.err
        secret = next(c["secret"] for c in applied.json()["changes"] if c["kind"] == "producer")
        pushed(secret, ORDERS, 1)
        pushed(secret, PAYMENTS, 7)
        ran = settled(stack)
        assert runs(ran) == [("SUCCEEDED", ((ORDERS, 1), (PAYMENTS, 7)))]
        return kept(stack), secret, ran


def test_a_stack_started_on_kept_data_runs_each_rule_exactly_once(monkeypatch: pytest.MonkeyPatch) -> None:
    data, secret, ran = first_run(monkeypatch)
    assert data["items"] and data["secrets"] and data["objects"]  # a table, a producer's secret, a run manifest
    before = {t["triggerKey"]: t for t in ran}

    with cli_stack() as stack:
        # the version a stack runs, as docs/upgrade.md has the operator check it after a deploy
        assert requests.get(f"{stack.api_url}/openapi.json", timeout=10).headers["X-Lakehook-Version"] == __version__
        restore(stack, data)
        again = settled(stack)
        # every kept item went through the resolver and the dispatcher again: nothing new ran, nothing re-ran
        assert runs(again) == [("SUCCEEDED", ((ORDERS, 1), (PAYMENTS, 7)))]
        (trigger,) = again
        assert trigger["attempts"] == before[trigger["triggerKey"]]["attempts"] == 1
        assert trigger["targetRunId"] == before[trigger["triggerKey"]]["targetRunId"]

        pushed(secret, ORDERS, 2)
        pushed(secret, PAYMENTS, 8)
        assert runs(settled(stack)) == [
            ("SUCCEEDED", ((ORDERS, 1), (PAYMENTS, 7))),
            ("SUCCEEDED", ((ORDERS, 2), (PAYMENTS, 8))),
        ]
