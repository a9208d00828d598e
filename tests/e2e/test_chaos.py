"""Chaos on the local stack: every version that satisfied a rule runs exactly once, EACH_VERSION in order.

The whole stack runs (moto, the template's functions, the stream, the schedules) with a webhook receiver that
answers 500, hangs past the target's timeout (before and after starting the run), refuses a run for good
(422), and goes down (connection refused) for a while. A seeded schedule pushes signed snapshots, quality
checks and watermarks for several assets, duplicated, reordered, with late copies of older events, in batches
from concurrent pushers; a real Paimon table, registered as an asset's source, gets snapshots whose pushes
leave gaps; one rule throws on evaluation (a member's stored state is corrupted). At the end the receiver
is healthy, every FAILED trigger is retried under its key, and an independent model (``chaos_model``) says
what must have run.

Time is scaled (documented on :data:`SCALED`): production re-drives every 5 minutes with backoffs from 30 s up
to 15 minutes; here every second, from 0.5 s up to 2 s, and "down for a minute" is down for
:data:`DOWN_SECONDS`. That is a harsher outage than a minute in production (which one re-drive outlasts): it
spans several re-drives, so some triggers spend their whole attempt budget and end FAILED.

Seed: ``LAKEHOOK_CHAOS_SEED`` (default :data:`SEED`); it also decides each delivery's fault, per idempotency
key and delivery number, so a re-run meets the same faults.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from lakehook.adapters.dynamodb import keys
from lakehook.client.push import snapshot_event_from_paimon
from lakehook.local.runtime import LocalStack
from tests.e2e.chaos_model import (
    ALL,
    ANY,
    EACH,
    Member,
    Phase,
    Pins,
    RuleSpec,
    Schedule,
    batches,
    chain_increases,
)
from tests.fakes.chaos_receiver import ChaosReceiver, FaultPlan
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.support import signed_headers

SEED = 20261201
PHASES = int(os.environ.get("LAKEHOOK_CHAOS_PHASES", "10"))
DOWN_PHASE = 4
DOWN_SECONDS = 5.0  # "down for a minute", scaled with the re-drive schedule below
TARGET_TIMEOUT_SECONDS = 1.0
# A stop for a stack that never drains or never settles, not a bound on how fast it does on a loaded 2-core machine
# (the verdicts below are the model's, not the clock's).
HANG_STOP = 300.0
PUSHERS = 3
ADMIN = "chaos-admin"
SECRET_NAME = "lakehook/lakehook-local/targets/chaos"  # under the local stack's prefix, as looked up
SECRET_VALUE = "chaos-signing-key"

# Production: 3 attempts per dispatch 0.5 s … 8 s apart, 10 in all, re-driven every 5 minutes after 30 s …
# 15 minutes. Scaled so an outage of a few seconds plays out like one of minutes: the outage outlasts a
# dispatch and a few re-drives, and a short attempt budget lets some triggers end FAILED (then retried).
SCALED = {
    "LAKEHOOK_DISPATCH_ATTEMPTS": "2",
    "LAKEHOOK_DISPATCH_TOTAL_ATTEMPTS": "5",
    "LAKEHOOK_DISPATCH_RETRY_BASE_SECONDS": "0.05",
    "LAKEHOOK_DISPATCH_RETRY_MAX_SECONDS": "0.2",
    "LAKEHOOK_DISPATCH_REDRIVE_BASE_SECONDS": "0.5",
    "LAKEHOOK_DISPATCH_REDRIVE_MAX_SECONDS": "2",
}
RATES = {
    "TriggerRedriveFunction": 1.0,  # every 5 minutes in the template
    "DeferralSweepFunction": 1.0,
    "PollPlannerFunction": 3600.0,  # no periodic polls: a gap is filled by the targeted poll, not by chance
}

PREFIX = "paimon://lake/chaos/"
ORDERS = f"{PREFIX}orders"
PAYMENTS = f"{PREFIX}payments"
SHOPS = f"{PREFIX}shops"
CDC = f"{PREFIX}cdc"
POISON = f"{PREFIX}poison"
COMMIT_TIME = 1_764_547_200_000  # 2025-12-01T00:00:00Z
WATERMARK_START = COMMIT_TIME
WATERMARK_FLOOR = COMMIT_TIME + 45 * 60_000
# The throwing rule's second member: its stored state is corrupted after its first snapshot (as a manual edit or
# an incompatible writer would leave it), so every evaluation of that rule fails, naming the item.

RULES = [
    RuleSpec("all_orders_payments", ALL, (Member(ORDERS), Member(PAYMENTS, "quality"))),
    RuleSpec("all_orders_shops", ALL, (Member(ORDERS), Member(SHOPS, "watermark", WATERMARK_FLOOR))),
    RuleSpec("any_orders_shops", ANY, (Member(ORDERS), Member(SHOPS))),
    RuleSpec("each_cdc", EACH, (Member(CDC),)),
]
# Sorts before the other rules of the orders asset, so the resolver evaluates it first in every batch.
THROWING = "a_throws_on_poison"
CORRUPTED = {"latestSnapshotId": "not a number"}


def rule_body(spec: RuleSpec, hooks: str) -> dict[str, Any]:
    return {
        "description": f"chaos: {spec.mode}",
        "groups": [
            {"groupId": "g", "members": [{"assetKey": m.asset, "condition": m.condition()} for m in spec.members]}
        ],
        "policy": {"mode": spec.mode},
        "target": target(hooks, spec.rule_id),
    }


def target(hooks: str, name: str) -> dict[str, Any]:
    return {
        "type": "webhook",
        "url": f"{hooks}/hooks/{name}",
        "secretRef": SECRET_NAME,
        "timeoutSeconds": TARGET_TIMEOUT_SECONDS,
    }


class Api:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.headers.update({"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"})
        self.producer_secret = ""

    def put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.http.put(f"{self.url}{path}", json=body, timeout=30)
        assert answer.status_code in (200, 201), f"PUT {path}: {answer.status_code} {answer.text}"
        return answer.json()  # type: ignore[no-any-return]

    def get(self, path: str, **params: str) -> Any:
        answer = self.http.get(f"{self.url}{path}", params=params, timeout=30)
        assert answer.status_code == 200, f"GET {path}: {answer.status_code} {answer.text}"
        return answer.json()

    def triggers(self, rule_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self.get("/triggers", ruleId=rule_id, limit="100", **({"nextToken": token} if token else {}))
            items += page["items"]
            token = page.get("nextToken")
            if not token:
                return items

    def push(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        body = json.dumps({"events": events}).encode()
        with requests.Session() as session:
            answer = session.post(
                f"{self.url}/asset-events",
                data=body,
                headers=signed_headers("chaos", self.producer_secret, body),
                timeout=60,
            )
        assert answer.status_code == 200, f"push: {answer.status_code} {answer.text}"
        results: list[dict[str, Any]] = answer.json()["results"]
        return results


@pytest.fixture
def chaos(tmp_path: Path) -> Iterator[tuple[LocalStack, ChaosReceiver, Any, dict[str, str]]]:
    seed = int(os.environ.get("LAKEHOOK_CHAOS_SEED", SEED))
    warehouse = {"warehouse": str(tmp_path / "warehouse")}
    table = create_paimon_table(warehouse, "chaos.cdc")
    receiver = ChaosReceiver(SECRET_VALUE, FaultPlan(seed), TARGET_TIMEOUT_SECONDS)
    with (
        receiver,
        LocalStack(port=0, admin_token=ADMIN, extra_env=SCALED, schedule_rates=RATES) as stack,
    ):
        yield stack, receiver, table, warehouse


def test_every_satisfied_version_runs_exactly_once_through_faults(
    chaos: tuple[LocalStack, ChaosReceiver, Any, dict[str, str]],
) -> None:
    stack, receiver, table, warehouse = chaos
    seed = receiver.plan.seed
    began = time.monotonic()
    rng = random.Random(seed)
    api = Api(stack.api_url)

    # GIVEN the target's signing secret, a producer, the CDC table as a polled asset, and the rules
    boto3.client("secretsmanager", endpoint_url=stack.endpoint_url, region_name=stack.region).create_secret(
        Name=SECRET_NAME, SecretString=SECRET_VALUE
    )
    api.producer_secret = api.put("/producers/chaos", {"assetKeyPrefixes": [PREFIX]})["secret"]
    source = {"catalog": "lake", "properties": warehouse, "table": "chaos.cdc"}
    api.put("/assets", {"assetKey": CDC, "format": "paimon", "source": source})
    for spec in RULES:
        api.put(f"/rules/{spec.rule_id}", rule_body(spec, receiver.base_url))
    throwing = {
        "description": "chaos: a rule whose evaluation throws",
        "groups": [
            {
                "groupId": "g",
                "members": [
                    {"assetKey": ORDERS},
                    {"assetKey": POISON},
                ],
            }
        ],
        "target": target(receiver.base_url, THROWING),
    }
    api.put(f"/rules/{THROWING}", throwing)
    # the poisoned asset gets a snapshot, then its stored state is corrupted: the throwing rule never runs
    api.push([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": POISON, "snapshotId": 1, "commitTime": COMMIT_TIME}])
    assert stack.wait_idle(30)
    boto3.resource("dynamodb", endpoint_url=stack.endpoint_url, region_name=stack.region).Table(
        stack.table_name
    ).update_item(
        Key=keys.state_key(POISON),
        UpdateExpression="SET " + ", ".join(f"{k} = :{k}" for k in CORRUPTED),
        ExpressionAttributeValues={f":{k}": v for k, v in CORRUPTED.items()},
    )

    # WHEN the seeded phases are pushed through faults, an outage and gaps
    schedule = Schedule(
        seed,
        RULES,
        snapshot_assets=[ORDERS, PAYMENTS, SHOPS],
        quality_assets=[PAYMENTS],
        watermark_assets=[SHOPS],
        commit_time=COMMIT_TIME,
        watermark_start=WATERMARK_START,
    )
    cdc_events: list[dict[str, Any]] = []
    log: list[str] = []
    for number in range(1, PHASES + 1):
        phase = schedule.phase(number)
        cdc_step(rng, table, phase, cdc_events)
        phase.down = number == DOWN_PHASE
        log.append(describe(phase))
        if phase.down:
            receiver.down(DOWN_SECONDS)
        push_concurrently(api, rng, phase.events)
        assert stack.wait_idle(HANG_STOP), f"phase {number}: the stream did not drain"
    receiver.up()

    settled = wait_quiet(stack, api, receiver, timeout=HANG_STOP)
    failed = [t for t in settled if t["status"] == "FAILED"]
    receiver.healthy = True
    retried = {
        t["triggerKey"]: api.http.post(f"{api.url}/triggers/{t['triggerKey']}/retry", timeout=30) for t in failed
    }
    final = wait_quiet(stack, api, receiver, timeout=HANG_STOP)
    elapsed = time.monotonic() - began

    # THEN, against the model
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for t in final:
        by_rule.setdefault(t["ruleId"], []).append(t)
    print("chaos report:", json.dumps(summary(seed, elapsed, receiver, failed, final, log), indent=1))
    check = Checks()

    for key, answer in retried.items():
        check("retry", answer.status_code == 202, f"retry {key}: {answer.status_code} {answer.text[:200]}")
    for t in final:
        check("succeeded", t["status"] == "SUCCEEDED", f"{t['triggerKey']} ended {t['status']}: {t.get('reason')}")
    succeeded = {t["triggerKey"] for t in final if t["status"] == "SUCCEEDED"}
    runs = receiver.runs_per_trigger()
    twice = {k: n for k, n in runs.items() if n > 1}
    check("one run per key", not twice, f"triggers run more than once: {twice}")
    ran = set(runs)
    check("run means succeeded", ran <= succeeded, f"runs without a SUCCEEDED trigger: {sorted(ran - succeeded)}")
    check("one run per key", succeeded <= ran, f"SUCCEEDED triggers without a run: {sorted(succeeded - ran)}")
    check("one run per key", set(receiver.runs) == ran, "a run came with an idempotency key unlike its trigger's")
    resent = receiver.resent_after_prompt_success()
    check("no resend", not resent, f"keys sent again after the receiver answered 2xx in time: {resent}")

    expected = schedule.expected
    for spec in RULES:
        got = [pins_of(t, spec) for t in by_rule.get(spec.rule_id, [])]
        check("no double claim", len(got) == len(set(got)), f"{spec.rule_id}: a combination claimed twice: {got}")
        if spec.mode == ALL:
            want = expected.exact[spec.rule_id]
            check("model", set(got) == want, f"{spec.rule_id}: ran {sorted(got)}, the model says {sorted(want)}")
        if spec.mode == ANY:
            required, allowed = expected.required[spec.rule_id], expected.allowed[spec.rule_id]
            check(
                "model",
                all(p in got for p in required) and set(got) <= allowed and chain_increases(sorted(got)),
                f"{spec.rule_id}: ran {sorted(got)}; the model requires {required} and allows {sorted(allowed)}",
            )
    snapshots = sorted({e["snapshotId"] for e in cdc_events})
    each = sorted(pins_of(t, RULES[3])[0] for t in by_rule.get("each_cdc", []))
    check("each version", each == snapshots, f"each_cdc: claimed {each}, the table has {snapshots}")
    arrived = [r.payload["inputs"][0]["snapshotId"] for r in receiver.runs_of("each_cdc")]
    check("version order", arrived == snapshots, f"each_cdc: runs arrived as {arrived}, the table has {snapshots}")

    thrown = sorted(tuple(p["snapshotId"] for p in t["inputs"]) for t in by_rule.get(THROWING, []))
    check("model", thrown == [], f"{THROWING}: ran {thrown}; its member's stored state does not parse")
    for rule_id in [*(s.rule_id for s in RULES), THROWING]:
        error = api.get(f"/rules/{rule_id}").get("lastError")
        if rule_id == THROWING:
            check("lastError", "stored state of" in str(error), f"{THROWING}: lastError {error}")
            explained = api.get(f"/rules/{rule_id}/explain").get("lastError")
            check("lastError", bool(explained), f"{THROWING}: explain shows no lastError")
        else:
            check("lastError", not error, f"{rule_id}: lastError {error}")
    kinds = {d.fault for d in receiver.deliveries}
    check("chaos", kinds >= set(receiver.plan.forced), f"faults met: {sorted(kinds)}")
    check("chaos", any(t["attempts"] > receiver.counts[t["triggerKey"]] for t in final), "no connection was refused")
    check.done()


# --- checking ------------------------------------------------------------------------------------------


class Checks:
    """Collects every failed check, so one run shows all that went wrong; ``done`` fails with them."""

    def __init__(self) -> None:
        self.failed: list[tuple[str, str]] = []

    def __call__(self, name: str, ok: bool, message: str) -> None:
        if not ok:
            self.failed.append((name, message))

    def done(self) -> None:
        assert not self.failed, "\n".join(f"{n}: {m}" for n, m in self.failed)


def summary(
    seed: int,
    elapsed: float,
    receiver: ChaosReceiver,
    failed: list[dict[str, Any]],
    final: list[dict[str, Any]],
    log: list[str],
) -> dict[str, Any]:
    faults: dict[str, int] = {}
    for d in receiver.deliveries:
        faults[d.fault.value] = faults.get(d.fault.value, 0) + 1
    # attempts that never reached the receiver: refused while it was down
    faults["refused connection"] = sum(max(0, t["attempts"] - receiver.counts[t["triggerKey"]]) for t in final)
    return {
        "seed": seed,
        "seconds": round(elapsed, 1),
        "deliveries": len(receiver.deliveries),
        "runs": len(receiver.runs),
        "answered 409 (already started)": sum(1 for d in receiver.deliveries if d.status == 409),
        "faults": faults,
        "failed, then retried": len(failed),
        "phases": log,
    }


# --- the schedule's steps ----------------------------------------------------------------------------


def cdc_step(rng: random.Random, table: Any, phase: Phase, sent: list[dict[str, Any]]) -> None:
    """Commit to the real CDC table and push what was committed, leaving gaps (never the newest snapshot,
    which tells the resolver a gap exists; the first phase pushes snapshot 1 alone, where EACH_VERSION starts)."""
    commits = 1 if phase.number == 1 else rng.randint(1, 3)
    made: list[dict[str, Any]] = []
    for _ in range(commits):
        paimon_commit(table, rows(rng.randint(1, 10_000)))
        made.append(snapshot_event_from_paimon(table, asset_key=CDC))
    skipped = {rng.randrange(len(made) - 1)} if len(made) > 1 else set()  # at least one gap when it can
    pushed = [e for i, e in enumerate(made[:-1]) if i not in skipped and rng.random() < 0.7] + made[-1:]
    copies = [dict(rng.choice(sent)) for _ in range(rng.randint(0, 2)) if sent]
    sent += made
    phase.cdc_commits = commits
    phase.cdc_pushed = [e["snapshotId"] for e in pushed]
    phase.events += pushed + [dict(rng.choice(pushed)) for _ in range(rng.randint(0, 1))] + copies
    rng.shuffle(phase.events)


def push_concurrently(api: Api, rng: random.Random, events: list[dict[str, Any]]) -> None:
    """Pushers take batches of 1 … 5 events from a shared list at once; every event is recorded or known."""
    work = batches(rng, events)
    lock = threading.Lock()
    statuses: list[str] = []

    def pusher() -> None:
        while True:
            with lock:
                if not work:
                    return
                batch = work.pop(0)
            results = api.push(batch)
            with lock:
                statuses.extend(r["status"] for r in results)

    threads = [threading.Thread(target=pusher) for _ in range(PUSHERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(statuses) <= {"ACCEPTED", "DUPLICATE", "STALE"}, statuses
    assert len(statuses) == len(events)


def wait_quiet(stack: LocalStack, api: Api, receiver: ChaosReceiver, timeout: float) -> list[dict[str, Any]]:
    """Every rule's triggers, once nothing moved for a while: the stream drained, no trigger waiting for a
    re-drive, and the triggers and the receiver's deliveries unchanged for 3 s with the stream drained throughout
    (a dispatch in flight changes its attempts within that time)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    since = time.monotonic()
    while True:
        drained = stack.wait_idle(10)
        triggers = [t for r in [*(s.rule_id for s in RULES), THROWING] for t in api.triggers(r)]
        view = (
            sorted((t["triggerKey"], t["status"], t["attempts"]) for t in triggers),
            len(receiver.deliveries),
        )
        waiting = [t for t in triggers if t["status"] == "FAILED" and t.get("failure") == "RETRYABLE"]
        if view != last or waiting or not drained:  # quiet only counts once the stream has drained
            last, since = view, time.monotonic()
        elif time.monotonic() - since >= 3.0:
            return triggers
        if time.monotonic() > deadline:
            states = sorted({(t["status"], t.get("failure")) for t in triggers}, key=str)
            raise AssertionError(f"not quiet after {timeout} s: {states}")
        time.sleep(0.3)


def pins_of(trigger: dict[str, Any], spec: RuleSpec) -> Pins:
    by_asset = {p["assetKey"]: p["snapshotId"] for p in trigger["inputs"]}
    return tuple(by_asset[m.asset] for m in spec.members)


def describe(phase: Phase) -> str:
    facts = " ".join(f"{f.asset.rsplit('/', 1)[-1]}:{f.kind}:{f.value}" for f in phase.facts)
    down = " (receiver down)" if phase.down else ""
    return f"{phase.number}: {facts} | cdc +{phase.cdc_commits} pushed {phase.cdc_pushed}{down}"
