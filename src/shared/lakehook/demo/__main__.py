"""``make demo``: start the local stack and drive a short push scenario through its HTTP API.

Every step prints what a user would see and checks what must hold; the exit status is 0 only
if every expectation held.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from lakehook.domain.signing import sign
from lakehook.local.runtime import LocalStack

ADMIN = "demo-admin"
ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"


@dataclass
class Demo:
    url: str
    failures: list[str] = field(default_factory=list)
    checks: int = 0
    session: requests.Session = field(default_factory=requests.Session)
    secret: str = ""

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}

    def expect(self, what: str, ok: bool, detail: Any = "") -> None:
        self.checks += 1
        print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f"  ({detail})" if detail != "" and not ok else ""))
        if not ok:
            self.failures.append(what)

    def push(
        self, *events: dict[str, Any], producer: str = "flink-cdc", secret: str | None = None, at: int | None = None
    ) -> requests.Response:
        body = json.dumps({"events": list(events)}).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Lakehook-Producer": producer,
            "X-Lakehook-Signature": sign(secret or self.secret, body, at or int(time.time())),
        }
        return self.session.post(f"{self.url}/asset-events", data=body, headers=headers, timeout=30)

    def state(self, asset: str) -> dict[str, Any]:
        answer = self.session.get(
            f"{self.url}/assets/state", params={"assetKey": asset}, headers=self.admin, timeout=30
        )
        return answer.json()  # type: ignore[no-any-return]


def snapshot(asset: str, sid: int, schema: int = 1) -> dict[str, Any]:
    return {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": asset,
        "snapshotId": sid,
        "schemaId": schema,
        "commitKind": "APPEND",
        "commitTime": 1_725_963_330_000 + sid,
    }


def scenario(demo: Demo) -> None:
    print("1. register a producer (the Flink CDC job) and the two ODS tables")
    answer = demo.session.put(
        f"{demo.url}/producers/flink-cdc",
        headers=demo.admin,
        timeout=30,
        json={"assetKeyPrefixes": ["paimon://lake/ods_db/"]},
    )
    demo.expect(
        "producer created, its signing secret shown once",
        answer.status_code == 201 and "secret" in answer.json(),
        answer.text,
    )
    demo.secret = answer.json().get("secret", "")
    for asset in (ORDERS, PAYMENTS):
        reply = demo.session.put(
            f"{demo.url}/assets", headers=demo.admin, timeout=30, json={"assetKey": asset, "format": "paimon"}
        )
        demo.expect(f"asset registered: {asset}", reply.status_code in (200, 201), reply.text)

    print("2. the writer pushes snapshot 1001 with its quality check")
    reply = demo.push(
        snapshot(ORDERS, 1001, schema=5), {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 1001}
    )
    statuses = [r["status"] for r in reply.json()["results"]]
    demo.expect("both events ACCEPTED", statuses == ["ACCEPTED", "ACCEPTED"], statuses)

    print("3. the same push is delivered twice (a retry after a timeout)")
    reply = demo.push(snapshot(ORDERS, 1001, schema=5))
    demo.expect("the copy is a DUPLICATE and changes nothing", reply.json()["results"][0]["status"] == "DUPLICATE")

    print("4. snapshot 1003 arrives before 1002 (reordered delivery)")
    demo.push(snapshot(ORDERS, 1003, schema=5))
    late = demo.push(snapshot(ORDERS, 1002, schema=5)).json()["results"][0]
    demo.expect("the late 1002 is recorded as STALE", late["status"] == "STALE", late)
    state = demo.state(ORDERS)
    demo.expect("state stays at 1003: it never rolls back", state.get("latestSnapshotId") == 1003, state)

    print("5. bad input gets a clear 4xx and loses nothing already accepted")
    bad = demo.push({"eventType": "SNAPSHOT_COMMITED", "assetKey": ORDERS, "snapshotId": 1004}, snapshot(PAYMENTS, 1))
    results = bad.json()["results"]
    demo.expect(
        "a misspelt event type is REJECTED naming the field",
        results[0]["status"] == "REJECTED" and "eventType" in (results[0]["reason"] or ""),
        results[0],
    )
    demo.expect("its valid neighbour is ACCEPTED", results[1]["status"] == "ACCEPTED", results[1])
    outside = demo.push(snapshot("iceberg://glue/finance/ledger", 7))
    demo.expect("an asset outside the producer's prefixes is a 403", outside.status_code == 403, outside.text)
    stale = demo.push(snapshot(PAYMENTS, 2), at=int(time.time()) - 3600)
    demo.expect("a signature an hour old is a 401", stale.status_code == 401, stale.text)
    forged = demo.push(snapshot(PAYMENTS, 2), secret="not-the-secret")
    demo.expect("a forged signature is a 401", forged.status_code == 401, forged.text)

    print("6. the state and the evidence behind it")
    state = demo.state(ORDERS)
    print(
        f"   {ORDERS}: snapshot {state.get('latestSnapshotId')}, schema {state.get('latestSchemaId')} "
        f"({state.get('schemaStatus')}), quality {state.get('qualityStatus')} on the newest snapshot, "
        f"newest passed check on {state.get('qualityPassedSnapshotId')}, version {state.get('version')}"
    )
    events = demo.session.get(
        f"{demo.url}/assets/events", params={"assetKey": ORDERS}, headers=demo.admin, timeout=30
    ).json()["items"]
    demo.expect(
        "four distinct events recorded for the orders table (1001, its check, 1003, 1002)",
        len(events) == 4,
        [e["eventType"] for e in events],
    )


def main() -> int:
    started = time.perf_counter()
    print("lakehook demo: starting the local stack (moto on 127.0.0.1 + the functions of template.yaml)")
    quiet = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"}  # keep the story readable
    with LocalStack(port=0, admin_token=ADMIN, extra_env=quiet) as stack:
        print(f"   API {stack.api_url}\n")
        demo = Demo(stack.api_url)
        try:
            scenario(demo)
        finally:
            demo.session.close()
    took = time.perf_counter() - started
    print(f"\n{demo.checks - len(demo.failures)}/{demo.checks} expectations held in {took:.1f} s")
    if demo.failures:
        print("failed: " + "; ".join(demo.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
