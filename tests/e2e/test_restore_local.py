"""docs/restore.md on the local stack: a table restored to a point mid-traffic, reconciled, runs each due run once.

moto has no point-in-time restore, so the restore is what one yields: every item of the table as it was at the
restore point (a scan of the quiet table), put into the table of a new stack. The manifest bucket is not restored
(S3 kept every run manifest), and the producers' secrets are the first stack's. Then, as the runbook has it:

1. with the stack's stream functions held (a deployed stack is pointed at the table only after step 2),
   ``lakehook restore reconcile --since <restore point>`` writes back the claims made after the restore point;
2. the functions start on the table: the writers send again what the restored table lost (a poller re-reads its
   tables from the restored offsets the same way), and then a new version.

Every run is counted where the target delivers it (an EventBridge rule on the bus the rule's target puts to, into
an SQS queue): each trigger key is delivered once over both stacks, and every due run is delivered.
"""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from typing import Any

import pytest

from lakehook.domain.restore import RESTORED_REASON
from lakehook.domain.time import ms_to_iso, now_ms
from lakehook.local.runtime import LocalStack
from tests.e2e.cli_support import EXAMPLE, ROOT, cli_stack, run_cli
from tests.e2e.test_redeploy_local import ORDERS, PAYMENTS, kept, pushed, restore, runs, settled

pytestmark = pytest.mark.e2e

STREAM_FUNCTIONS = ("ResolverFunction", "DispatcherFunction")


def count_runs(stack: LocalStack) -> str:
    """An EventBridge rule on the example target's bus and source, into a queue: what the target receives."""
    sqs, events = stack._client("sqs"), stack._client("events")
    url = sqs.create_queue(QueueName="runs-delivered")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="runs-delivered", EventPattern=json.dumps({"source": ["lakehook.example"]}), State="ENABLED")
    events.put_targets(Rule="runs-delivered", Targets=[{"Id": "queue", "Arn": arn}])
    return str(url)


def delivered(stack: LocalStack, url: str) -> Counter[str]:
    """The trigger keys the target received, each as often as it was sent."""
    sqs, keys = stack._client("sqs"), Counter[str]()
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            keys[json.loads(message["Body"])["detail"]["triggerKey"]] += 1
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return keys


def documented_reconcile() -> list[str]:
    """The reconcile commands docs/restore.md shows, in order."""
    page = (ROOT / "docs" / "restore.md").read_text(encoding="utf-8")
    return [line.strip() for line in page.splitlines() if line.strip().startswith("lakehook restore reconcile")]


def reconcile(line: str) -> dict[str, Any]:
    """Run a documented command as a shell would expand it; its JSON answer."""
    ran = run_cli([*shlex.split(os.path.expandvars(line))[1:], "--output", "json"])
    assert ran.code == 0, f"`{line}` exited {ran.code}: {ran.err or ran.out}"
    answer: dict[str, Any] = ran.json()
    return answer


def keyed(found: list[dict[str, Any]]) -> dict[tuple[tuple[str, int], ...], dict[str, Any]]:
    return {tuple(sorted((i["assetKey"], i["snapshotId"]) for i in t["inputs"])): t for t in found}


def first_stack(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], int, str, Counter[str]]:
    """Traffic, the restore point and the table at it, more traffic: the snapshot (with what S3 and Secrets
    Manager kept), the restore point, a producer's secret and the runs delivered."""
    with cli_stack() as stack:
        queue = count_runs(stack)
        applied = run_cli(["--output", "json", "apply", "-f", str(EXAMPLE)])
        assert applied.code == 0, applied.err
        secret = next(c["secret"] for c in applied.json()["changes"] if c["kind"] == "producer")
        pushed(secret, ORDERS, 1)
        pushed(secret, PAYMENTS, 7)
        settled(stack)
        restore_point = now_ms()
        at_restore_point = kept(stack)["items"]
        for asset, snapshot in ((ORDERS, 2), (PAYMENTS, 8), (ORDERS, 3), (PAYMENTS, 9), (ORDERS, 4)):
            pushed(secret, asset, snapshot)
            settled(stack)
        ran = runs(settled(stack))
        assert [inputs for _, inputs in ran] == [((ORDERS, n), (PAYMENTS, n + 6)) for n in (1, 2, 3)]
        lost = kept(stack)
        return {**lost, "items": at_restore_point}, restore_point, secret, delivered(stack, queue)


def test_a_restored_table_reconciled_from_the_manifests_runs_each_due_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot, restore_point, secret, before = first_stack(monkeypatch)
    assert sorted(before.values()) == [1, 1, 1]

    with cli_stack() as stack:
        queue = count_runs(stack)
        for name in STREAM_FUNCTIONS:
            stack.enable_stream(name, False)
        restore(stack, snapshot)
        monkeypatch.setenv("RESTORED_TABLE", stack.table_name)
        monkeypatch.setenv("MANIFEST_BUCKET", stack.names["ManifestBucket"])
        monkeypatch.setenv("RESTORE_POINT", ms_to_iso(restore_point))
        dry, report = (reconcile(line) for line in documented_reconcile())  # docs/restore.md, step 4
        assert dry["dryRun"] and dry["restored"] == report["restored"] and dry["cursorsMoved"] == report["cursorsMoved"]
        lost = {k for k in before if k not in {i["triggerKey"] for i in report["restored"]}}
        assert len(report["restored"]) == 2 and len(lost) == 1  # the runs after the restore point, not the one before
        assert report["cursorsMoved"] == ["dwd_trade_event_fact/trade_event_group"] and report["refused"] == []
        for name in STREAM_FUNCTIONS:
            stack.enable_stream(name, True)
        settled(stack)

        # the writers send again what the restored table lost: nothing is due that had not run
        for asset, snapshot_id in ((ORDERS, 2), (PAYMENTS, 8), (ORDERS, 3), (PAYMENTS, 9), (ORDERS, 4)):
            pushed(secret, asset, snapshot_id)
            settled(stack)
        assert delivered(stack, queue) == Counter()
        pushed(secret, PAYMENTS, 10)  # the next due run
        found = keyed(settled(stack))
        after = delivered(stack, queue)

    assert sorted(found) == [((ORDERS, n), (PAYMENTS, n + 6)) for n in (1, 2, 3, 4)]
    assert all(t["status"] == "SUCCEEDED" for t in found.values())
    assert [found[(ORDERS, n), (PAYMENTS, n + 6)]["reason"] for n in (2, 3)] == [RESTORED_REASON] * 2
    # each trigger key delivered once over both stacks, and every due run delivered
    assert not set(before) & set(after)
    assert (before + after) == Counter({t["triggerKey"]: 1 for t in found.values()})
