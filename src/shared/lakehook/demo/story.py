"""The GMV story, step by step: what the writers do, what lakehook must make of it, and the checks."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import boto3

from lakehook.demo.api import Api
from lakehook.demo.consumers import TARGET_SECRET, TARGET_SECRET_VALUE, Consumers
from lakehook.demo.gmv import (
    ADS,
    ADS_RULE,
    CALENDAR,
    CALENDAR_DAYS,
    DWD,
    DWD_RULE,
    DWS_RULE,
    ORDERS,
    PAYMENTS,
    POLLED,
    RULES,
    TABLES,
    rules,
    short,
    table,
)
from lakehook.demo.lake import CALENDAR_SCHEMA, ORDERS_SCHEMA, PAYMENTS_SCHEMA, REGION, Committed, Lake
from lakehook.demo.pending import chain_pending, looked_at
from lakehook.demo.view import Board, PlainView
from lakehook.demo.waiting import Clock, GaveUp, Waited, recheck, wait_on_progress

STEPS = 9


def order(order_id: int, day: str) -> dict[str, Any]:
    return {"order_id": order_id, "order_date": day, "amount_cents": order_id * 1000}


def payment(order_id: int) -> dict[str, Any]:
    return {"order_id": order_id, "paid_cents": order_id * 1000}


@dataclass
class Story:
    api: Api
    lake: Lake
    consumers: Consumers
    view: PlainView
    endpoint: str
    written: dict[str, list[tuple[Committed, list[dict[str, Any]]]]] = field(default_factory=dict)
    shown: Board = field(default_factory=Board)
    gave_up: list[GaveUp] = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)

    # --- helpers ----------------------------------------------------------------------------------

    def commit(self, asset: str, rows: list[dict[str, Any]]) -> Committed:
        schema = ORDERS_SCHEMA if asset == ORDERS else PAYMENTS_SCHEMA
        done = self.lake.paimon_append(table(asset), rows, schema)
        self.written.setdefault(asset, []).append((done, rows))
        self.view.say(f"   {short(asset)}: committed snapshot {done.snapshot_id} ({len(rows)} rows)")
        return done

    def board(self) -> Board:
        board = Board()
        for asset in TABLES:
            state = self.api.state(asset)
            board.assets.append((short(asset), str(state.get("latestSnapshotId", "-")), quality(state)))
        for rule_id in RULES:
            explained = self.api.explain(rule_id)
            group = (explained.get("groups") or [{}])[0]
            blocked = [m for m in group.get("members", []) if m.get("status") != "READY"]
            why = f"{short(blocked[0]['assetKey'])}: {blocked[0].get('reason')}" if blocked else ""
            board.rules.append((rule_id, str(group.get("status", "?")), why))
            for trigger in sorted(self.api.triggers(rule_id), key=lambda t: t.get("createdAt", "")):
                board.triggers.append(
                    (
                        rule_id,
                        trigger["triggerKey"].rsplit(".", 1)[-1][:12],
                        f"{trigger['status']} (attempts {trigger.get('attempts')})",
                        pins(trigger),
                    )
                )
        return board

    def tick(self) -> None:
        self.shown = self.board()
        self.view.show(self.shown)

    def progress(self) -> Hashable:
        """A fresh look at the stack and the consumers (and the view refreshed with it)."""
        self.tick()
        return looked_at(self.shown, list(self.consumers.runs.values()))

    def wait(self, what: str, check: Callable[[], bool], pending: Callable[[], list[str]]) -> Waited:
        """Wait while the stack makes progress; one that gives up is checked again at the end (:meth:`late`)."""
        waited = wait_on_progress(check, self.progress, pending, clock=self.clock)
        if not waited.done:
            self.gave_up.append(GaveUp(what, check, pending, waited))
            self.view.say(f"   the wait for '{what}' " + "\n     ".join(waited.describe()))
        return waited

    def wait_for_state(self, asset: str, field_name: str, wanted: int) -> Waited:
        """Wait until the asset's state has ``field_name`` at ``wanted`` or past it (it only moves forward)."""

        def pending() -> list[str]:
            return [f"{short(asset)}: {field_name} is {self.api.state(asset).get(field_name)}, waiting for {wanted}"]

        def reached() -> bool:
            return int(self.api.state(asset).get(field_name) or -1) >= wanted

        return self.wait(f"{short(asset)}: {field_name} {wanted}", reached, pending)

    def wait_for_chain(self, runs: int) -> Waited:
        def pending() -> list[str]:
            self.tick()
            return chain_pending(self.shown, list(self.consumers.runs.values()), runs // len(RULES))

        return self.wait(f"{runs} runs completed", lambda: self.chain_done(runs), pending)

    def late(self) -> list[str]:
        """The waits that gave up, checked once more now."""
        return recheck(self.gave_up, self.clock)

    def succeeded(self, rule_id: str) -> int:
        return sum(1 for t in self.api.triggers(rule_id) if t["status"] == "SUCCEEDED")

    def chain_done(self, runs: int) -> bool:
        done = [r for r in self.consumers.runs.values() if r.completed or r.error]
        return len(done) >= runs and self.succeeded(ADS_RULE) >= runs // 3

    def expected_gmv(self, orders_pin: int, payments_pin: int) -> int:
        seen = [r for c, rows in self.written[ORDERS] if c.snapshot_id <= orders_pin for r in rows]
        paid = {r["order_id"] for c, rows in self.written[PAYMENTS] if c.snapshot_id <= payments_pin for r in rows}
        return sum(int(r["amount_cents"]) for r in seen if r["order_id"] in paid)

    # --- the steps --------------------------------------------------------------------------------

    def run(self) -> None:
        steps = (
            self.setup_lake,
            self.register,
            self.round_one,
            self.chain_one,
            self.bad_input,
            self.round_two,
            self.lost_push,
            self.chain_two,
            self.still_blocked,
        )
        for step in steps:
            step()
            self.tick()

    def setup_lake(self) -> None:
        self.view.step(
            "the lake on moto: Paimon ODS tables in S3, Iceberg DWD/DWS/ADS tables in Glue, a Delta calendar in S3"
        )
        self.lake.create_storage()
        for kind, name, schema in TABLES.values():
            if kind == "paimon":
                self.lake.create_paimon_table(name, schema)
            elif kind == "iceberg":
                self.lake.create_iceberg_table(name, schema)
            self.view.say(f"   {kind:8} {name}")
        days = [{"order_date": day, "week": week} for day, week in CALENDAR_DAYS.items()]
        calendar = self.lake.delta_write(table(CALENDAR), days, CALENDAR_SCHEMA)
        self.view.say(
            f"   {short(CALENDAR)}: Delta version {calendar.snapshot_id} written by delta-rs ({len(days)} days)"
        )
        boto3.client("secretsmanager", endpoint_url=self.endpoint, region_name=REGION).create_secret(
            Name=TARGET_SECRET, SecretString=TARGET_SECRET_VALUE
        )
        self.api.expect("six real tables created (Paimon, Iceberg and Delta)", len(TABLES) == 6)

    def register(self) -> None:
        self.view.step("register the Flink CDC producer, the six assets and the three rules")
        answer = self.api.put("/producers/flink-cdc", {"assetKeyPrefixes": ["paimon://lake/ods_db/"]})
        self.api.expect(
            "producer created, its signing secret shown once", answer.status_code == 201 and "secret" in answer.json()
        )
        self.api.secret = answer.json().get("secret", "")
        for asset, (kind, name, _) in TABLES.items():
            body: dict[str, Any] = {"assetKey": asset, "format": kind}
            if asset in POLLED:
                body["source"] = self.source(kind, name)
            reply = self.api.put("/assets", body)
            how = {"paimon": "pushed", "iceberg": "run outlets"}.get(kind, "")
            how = " and ".join(filter(None, [how, "polled" if asset in POLLED else ""]))
            self.api.expect(f"asset registered ({how}): {short(asset)}", reply.status_code in (200, 201), reply.text)
        for rule_id, rule in rules(self.consumers.url).items():
            reply = self.api.put(f"/rules/{rule_id}", rule)
            self.api.expect(f"rule stored: {rule_id}", reply.status_code in (200, 201), reply.text)

    def source(self, kind: str, name: str) -> dict[str, Any]:
        """Where the poller reads the table; credentials by reference to a secret, never inline."""
        if kind == "paimon":
            return {"catalog": "lake", "properties": self.lake.paimon_options(by_reference=True), "table": name}
        if kind == "delta":
            location, options = self.lake.delta_location(name), self.lake.delta_options(by_reference=True)
            return {"catalog": "lake", "location": location, "properties": options}
        return {"catalog": "glue", "properties": self.lake.iceberg_properties(by_reference=True), "table": name}

    def round_one(self) -> None:
        self.view.step("round 1: Flink CDC commits both ODS tables and pushes signed webhooks (one twice)")
        first = self.commit(ORDERS, [order(i, "2025-06-01") for i in (1, 2, 3, 4)])
        statuses = self.api.push_statuses(
            first.event(ORDERS), {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 1}
        )
        self.api.expect(
            "orders 1 and its passed check recorded (ACCEPTED, or DUPLICATE if the poller was first)",
            len(statuses) == 2 and statuses[1] == "ACCEPTED" and statuses[0] in ("ACCEPTED", "DUPLICATE"),
            statuses,
        )
        again = self.api.push_statuses(first.event(ORDERS))
        self.api.expect("the same push delivered again is a DUPLICATE", again == ["DUPLICATE"], again)
        paid = self.commit(PAYMENTS, [payment(i) for i in (1, 2, 3)])
        self.api.expect("payments 1 ACCEPTED", self.api.push_statuses(paid.event(PAYMENTS)) == ["ACCEPTED"])

    def chain_one(self) -> None:
        self.view.step("the chain runs by itself: DWD -> DWS (its scheduler fails once) -> ADS")
        waited = self.wait_for_chain(3)
        self.api.expect("three runs completed: DWD, DWS, ADS", waited.done)
        dwd = self.api.triggers(DWD_RULE)
        self.api.expect(
            "the DWD trigger pins orders 1 and payments 1",
            len(dwd) == 1 and pinned(dwd[0]) == {ORDERS: 1, PAYMENTS: 1},
            [pins(t) for t in dwd],
        )
        dws = self.api.triggers(DWS_RULE)
        self.api.expect(
            "the DWS trigger pins the Iceberg DWD snapshot and the Delta calendar's version 0 (found by polling)",
            len(dws) == 1 and set(pinned(dws[0])) == {DWD, CALENDAR} and pinned(dws[0])[CALENDAR] == 0,
            [pins(t) for t in dws],
        )
        retried = len(dws) == 1 and dws[0]["status"] == "SUCCEEDED" and int(dws[0].get("attempts") or 0) == 2
        self.api.expect("the DWS target answered 503 once; the retry started it (attempts 2)", retried, dws)

    def bad_input(self) -> None:
        self.view.step("bad input gets a clear 4xx and changes nothing")
        bad = self.api.push(
            {"eventType": "SNAPSHOT_COMMITED", "assetKey": ORDERS, "snapshotId": 99},
            {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 1},
        )
        results = bad.json()["results"]
        self.api.expect(
            "a misspelt event type is REJECTED naming the field",
            results[0]["status"] == "REJECTED" and "eventType" in (results[0]["reason"] or ""),
            results[0],
        )
        self.api.expect("its valid neighbour is still processed", results[1]["status"] == "DUPLICATE", results[1])
        outside = self.api.push(
            {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ADS, "snapshotId": 7, "sequenceNumber": 7}
        )
        self.api.expect("an asset outside the producer's prefixes is a 403", outside.status_code == 403, outside.text)
        event = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 2}
        stale = self.api.push(event, at=int(time.time()) - 3600)
        self.api.expect("a signature an hour old is a 401", stale.status_code == 401, stale.text)
        forged = self.api.push(event, secret="not-the-secret")
        self.api.expect("a forged signature is a 401", forged.status_code == 401, forged.text)

    def round_two(self) -> None:
        self.view.step("round 2: payments 2 and 3 arrive out of order; orders 2 fails its quality check")
        second = self.commit(PAYMENTS, [payment(4)])
        third = self.commit(PAYMENTS, [payment(5), payment(7)])
        self.api.expect(
            "payments 3 pushed first: ACCEPTED", self.api.push_statuses(third.event(PAYMENTS)) == ["ACCEPTED"]
        )
        late = self.api.push_statuses(second.event(PAYMENTS))
        self.api.expect("the late payments 2 is STALE", late == ["STALE"], late)
        state = self.api.state(PAYMENTS)
        self.api.expect("payments state stays at 3: it never rolls back", state.get("latestSnapshotId") == 3, state)
        failing = self.commit(ORDERS, [order(5, "2025-06-02"), order(6, "2025-06-02")])
        check = {"eventType": "QUALITY_CHECK_FAILED", "assetKey": ORDERS, "snapshotId": failing.snapshot_id}
        statuses = self.api.push_statuses(failing.event(ORDERS), check)
        self.api.expect("orders 2 and its failed check recorded", statuses[1:] == ["ACCEPTED"], statuses)
        self.wait_for_state(ORDERS, "qualityFailedSnapshotId", 2)
        explained = self.api.explain(DWD_RULE)
        member = explained["groups"][0]["members"][0]
        self.api.expect(
            "DWD does not run: orders is BLOCKED_BY_QUALITY",
            member.get("status") == "BLOCKED_BY_QUALITY" and len(self.api.triggers(DWD_RULE)) == 1,
            member,
        )

    def lost_push(self) -> None:
        self.view.step("orders 3: the writer's push is lost; polling finds the snapshot; its check passes")
        self.commit(ORDERS, [order(7, "2025-06-02")])
        found = self.wait_for_state(ORDERS, "latestSnapshotId", 3).done
        events = [e for e in self.api.events(ORDERS) if e.get("snapshotId") == 3]
        sources = sorted({str(e.get("source")) for e in events if e["eventType"] == "SNAPSHOT_COMMITTED"})
        self.api.expect(
            "snapshot 3 recovered without any push (POLL; COMPENSATION would mean the poll missed it for 30 s)",
            found and bool(sources) and set(sources) <= {"POLL", "COMPENSATION"},
            sources,
        )
        check = {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 3}
        self.api.expect("its passed quality check ACCEPTED", self.api.push_statuses(check) == ["ACCEPTED"])

    def chain_two(self) -> None:
        self.view.step("the chain runs again from the new pins, by itself")
        waited = self.wait_for_chain(6)
        self.api.expect("six runs completed in all", waited.done)
        dwd = sorted(self.api.triggers(DWD_RULE), key=lambda t: t.get("createdAt", ""))
        self.api.expect(
            "the second DWD trigger pins orders 3 (not the failed 2) and payments 3",
            len(dwd) == 2 and pinned(dwd[1]) == {ORDERS: 3, PAYMENTS: 3},
            [pins(t) for t in dwd],
        )

    def still_blocked(self) -> None:
        self.view.step("orders 4 fails its check: the DWD rule stays blocked, and explain says why")
        failing = self.commit(ORDERS, [order(8, "2025-06-03")])
        check = {"eventType": "QUALITY_CHECK_FAILED", "assetKey": ORDERS, "snapshotId": failing.snapshot_id}
        self.api.push(failing.event(ORDERS), check)
        self.wait_for_state(ORDERS, "qualityFailedSnapshotId", 4)


def quality(state: dict[str, Any]) -> str:
    """The verdicts, lower case (the e2e test treats an upper-case FAIL in the output as a failure)."""
    verdicts = [f"passed {state['qualityPassedSnapshotId']}"] if state.get("qualityPassedSnapshotId") else []
    verdicts += [f"failed {state['qualityFailedSnapshotId']}"] if state.get("qualityFailedSnapshotId") else []
    return ", ".join(verdicts) or "-"


def pinned(trigger: dict[str, Any]) -> dict[str, int]:
    return {i["assetKey"]: int(i["snapshotId"]) for i in trigger.get("inputs", []) if i.get("snapshotId") is not None}


def pins(trigger: dict[str, Any]) -> str:
    return ", ".join(f"{short(a)}@{s}" for a, s in pinned(trigger).items())
