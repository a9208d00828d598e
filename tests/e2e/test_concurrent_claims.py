"""Concurrent deliveries race on the local stack: claims conflict (TransactionConflict) and still run once.

Lambda delivers stream records at least once, from several shards at a time, and a redelivered batch may
overlap one still running. Here the resolver's mapping is disabled and each new snapshot's stream records
are delivered from several threads at once: the claim transactions on one trigger key meet each other's
items, the local DynamoDB cancels them with TransactionConflict (lakehook.local.moto_locks), the resolver
lets the batch retry (``DynamoTriggerStore.claim``), and the retries find the claim made: no trigger is
claimed or dispatched twice.

The overlap is made, not hoped for: the first claim transaction holds its items until another delivery's
claim has met them (a wait on that progress, not on time), so the verdict does not depend on how the
machine schedules threads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
import requests

from lakehook.local import moto_locks
from lakehook.local.runtime import LocalStack
from tests.racing import first_transaction_waits_for_a_rival
from tests.support import signed_headers
from tests.waiting import wait_until

WATCHED = "paimon://lake/claims/watched"
ROUNDS = 3
DELIVERERS = 6


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server names it so
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.bodies.append(json.loads(body or b"{}"))
                answer = json.dumps({"runId": f"r{len(receiver.bodies)}"}).encode()
                self.send_response(202)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                return

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    running = _Receiver()
    yield running
    running.shutdown()
    running.server_close()


def _deliver_until_handled(stack: LocalStack, batch: list[dict[str, Any]]) -> int:
    """Invoke the resolver with the batch, then with what it reports failed, until nothing fails; tries made."""
    [resolver] = [f for f in stack.functions if f.spec.name == "ResolverFunction"]
    pending, tries = batch, 0
    while pending:
        tries += 1
        assert tries < 50, "the resolver never got through the batch"
        try:
            answer = resolver.invoke({"Records": pending})
        except Exception:  # a raised batch is retried whole, as Lambda would
            continue
        failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures") or []}
        if not failed:
            return tries
        first = min(i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failed)
        pending = pending[first:]
    return tries


def _claims_a_trigger(keys: list[str | None]) -> bool:
    return any(key is not None and "TRIGGER#" in key for key in keys)


def _held(stack: LocalStack, seen: set[str], at_least: int) -> list[dict[str, Any]]:
    """The resolver's records not yet delivered and not in ``seen``, once the mapping holds ``at_least``."""

    def fresh() -> list[dict[str, Any]] | None:
        held = [
            r for r in stack.enable_stream("ResolverFunction", False) if r["dynamodb"]["SequenceNumber"] not in seen
        ]
        return held if len(held) >= at_least else None

    return wait_until("the resolver's records never reached its mapping", fresh, 30, every=0.05)


def test_overlapping_deliveries_conflict_and_still_claim_and_dispatch_once(
    stack: LocalStack,
    admin: dict[str, str],
    http: requests.Session,
    receiver: _Receiver,
) -> None:
    # GIVEN a rule on every snapshot of a watched asset, to a webhook; the resolver's mapping disabled
    boto3.client("secretsmanager", endpoint_url=stack.endpoint_url, region_name=stack.region).create_secret(
        Name="lakehook/lakehook-local/targets/claims", SecretString="claims-signing-key"
    )
    answer = http.put(f"{stack.api_url}/producers/claims", headers=admin, json={"assetKeyPrefixes": [WATCHED]})
    assert answer.status_code == 201, answer.text
    secret = answer.json()["secret"]
    rule = {
        "description": "every snapshot of the watched asset",
        "groups": [{"groupId": "g", "members": [{"assetKey": WATCHED, "condition": {"snapshotRequired": True}}]}],
        "policy": {"mode": "ANY_UPDATED"},
        "target": {
            "type": "webhook",
            "url": f"http://127.0.0.1:{receiver.server_address[1]}/hooks/claims",
            "secretRef": "lakehook/lakehook-local/targets/claims",
        },
    }
    assert http.put(f"{stack.api_url}/rules/claims", headers=admin, json=rule).status_code in (200, 201)
    assert stack.wait_idle(60)
    stack.enable_stream("ResolverFunction", False)
    conflicts_before = moto_locks.conflicts
    errors: list[BaseException] = []
    seen: set[str] = set()

    def deliver(batch: list[dict[str, Any]]) -> None:
        try:
            _deliver_until_handled(stack, batch)
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        # WHEN each new snapshot's records reach the resolver from several deliveries at once (as shards and
        # overlapping redeliveries do on AWS), the first claim holding its items until a rival's claim meets them
        for sid in range(1, ROUNDS + 1):
            event = {
                "eventType": "SNAPSHOT_COMMITTED",
                "assetKey": WATCHED,
                "snapshotId": sid,
                "commitTime": 1_764_547_200_000,
            }
            body = json.dumps({"events": [event]}).encode()
            reply = http.post(
                f"{stack.api_url}/asset-events", data=body, headers=signed_headers("claims", secret, body)
            )
            assert reply.status_code == 200, reply.text
            batch = _held(stack, seen, at_least=2)  # the event and the state change
            seen |= {r["dynamodb"]["SequenceNumber"] for r in batch}
            with first_transaction_waits_for_a_rival(_claims_a_trigger):
                threads = [threading.Thread(target=deliver, args=(batch,)) for _ in range(DELIVERERS)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(timeout=120)
    finally:
        stack.enable_stream("ResolverFunction", True)  # and the mapping delivers every record once more
    assert errors == []
    assert stack.wait_idle(60)

    # THEN claims did conflict, and still each snapshot was claimed and dispatched exactly once
    rounds = sid
    assert moto_locks.conflicts - conflicts_before >= rounds, "a round's claims never met: no TransactionConflict"
    paths = [b["completionPath"] for b in receiver.bodies]
    assert len(paths) == len(set(paths)) == rounds
    assert _trigger_statuses(stack, admin, http) == ["SUCCEEDED"] * rounds


def _trigger_statuses(stack: LocalStack, admin: dict[str, str], http: requests.Session) -> list[str]:
    triggers = http.get(f"{stack.api_url}/triggers", headers=admin, params={"ruleId": "claims", "limit": "100"})
    assert triggers.status_code == 200, triggers.text
    return [t["status"] for t in triggers.json()["items"]]
