"""Loop: requests and cost of run confirmation and source health, counted through the real code on moto.

Three parts, each on a fresh moto server with lakehook's table (`bench.timed_moto`), counted per operation with the
DynamoDB request units each request consumes (`bench.cost_counts`). (1) The poll worker's handler (the SQS message
the planner sends) polls a real Paimon table that is the outlet of a rule with `confirm` (`bench.poll`'s table):
a plain new commit, then a commit carrying a started run's `lakehook.trigger-key` (`lakehook.client.commit_properties`),
which the poll records CONFIRMED; the difference is what confirmation costs per confirmed run. (2) The freshness
tick's NOT_ADVANCED pass (`SweepNotAdvanced`, as the deferral sweep wires it) over N started claims of a confirm
rule (dispatched for real to an EventBridge bus on moto), once when all N are past their window (it marks at most
100 a tick) and once when none is due (every claim already marked: the standing cost of each tick). DynamoDB bills a
Query by the items it reads before the filter, while moto's answer holds only those that pass it, so "billed read
units" is the rule's claims of the lookback read unfiltered (the same Query without the filter; each item sized as
its JSON, a little over DynamoDB's count of names and values), eventually consistent, the rules' Query left out.
(3) `GET /assets/state` of that polled table and `GET /rules/<id>/explain` of a rule reading it, through the ingest
API's handler: the requests they make, source health included (health is derived from the poll status
the poller already writes: no request of its own per poll). Prices from `bench/prices.py`; Lambda duration left out.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any

import boto3
from boto3.dynamodb.conditions import Key
from tests.support import FakeLambdaContext, api_event, load_handler

from bench.cost_counts import DynamoDBUnits, Invocation, Meter, summary
from bench.prices import price
from bench.timed_moto import ADMIN, fresh_lakehook, quiet_stdout
from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.client import commit_properties
from lakehook.container import Container
from lakehook.domain.confirmation import ConfirmationState
from lakehook.domain.rules import Rule
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import PinnedInput, Trigger
from lakehook.usecases.confirmation import SweepNotAdvanced
from lakehook.usecases.dispatch import DispatchStatus

CLAIMS = tuple(int(n) for n in os.environ.get("LAKEHOOK_BENCH_LOOP_CLAIMS", "10,100,1000").split(","))
WITHIN_SECONDS = 600
INPUT = "paimon://lake/ods/orders"
BUS = "lakehook-runs"
TICKS_PER_MONTH = 12 * 24 * 30  # the 5-minute freshness schedule


def _meter(server: Any) -> Meter:
    dynamodb = DynamoDBUnits()
    dynamodb.install(server)
    return Meter(server, dynamodb)


def confirm_rule(wired: Container, rule_id: str, outlet: str) -> None:
    """A rule with ``outlet`` among its outlets and ``confirm``, its target an EventBridge bus on the server."""
    boto3.client(
        "events", endpoint_url=wired.settings.endpoint_url, region_name=wired.settings.region
    ).create_event_bus(Name=BUS)
    rule = {
        "ruleId": rule_id,
        "groups": [{"groupId": "g", "members": [{"assetKey": INPUT}]}],
        "target": {"type": "eventbridge", "eventBusName": BUS},
        "outlets": [outlet],
        "confirm": {"withinSeconds": WITHIN_SECONDS},
    }
    wired.rule_store.put_rule(Rule.model_validate(rule), now_ms())


def started(wired: Container, rule_id: str, snapshot: int) -> str:
    """A claim of ``rule_id`` dispatched by the real dispatcher (its run started, ``confirmBy`` stamped)."""
    at = now_ms()
    trigger = Trigger(
        trigger_key=f"{rule_id}.g.{snapshot:024x}",
        rule_id=rule_id,
        group_id="g",
        inputs=(PinnedInput(asset_key=INPUT, snapshot_id=snapshot),),
        created_at=at,
        updated_at=at,
    )
    assert DynamoDBTriggerStore(wired.table).put_replay(trigger)
    assert wired.dispatcher(trigger.trigger_key).status is DispatchStatus.SUCCEEDED
    return trigger.trigger_key


def _state(wired: Container, key: str) -> ConfirmationState | None:
    entry = wired.trigger_ledger.get(key)
    assert entry is not None
    return entry.trigger.confirmation.state if entry.trigger.confirmation is not None else None


# --- (1) the outlet's poll and (3) state and explain ------------------------------------------------------


def _api(handler: Any, meter: Meter, path: str, query: dict[str, str] | None = None) -> tuple[Invocation, Any]:
    event = api_event("GET", path, headers={"Authorization": f"Bearer {ADMIN}"}, query=query)
    with meter.invocation() as measured:
        answer = handler(event, FakeLambdaContext())
    assert answer["statusCode"] == 200, answer
    return measured, json.loads(answer["body"])


def outlet_cases(meter: Meter, wired: Container, found: dict[str, Any]) -> Any:
    """``bench.poll``'s cases hook: a plain commit's poll, a keyed commit's poll, then state and explain."""

    def cases(bench: Any, _fmt: str, _history: int, asset: Any, add_one: Any, _add_many: Any) -> list[Any]:
        confirm_rule(wired, "dwd", asset.asset_key)
        bench.poll(asset)  # its offset on the newest snapshot, its clients built
        add_one()
        with meter.invocation() as plain:
            bench.poll(asset)
        key = started(wired, "dwd", 1)
        add_one(commit_properties(key))
        with meter.invocation() as keyed:
            bench.poll(asset)
        assert _state(wired, key) is ConfirmationState.CONFIRMED, "the keyed commit confirmed its run"
        found["plain"], found["keyed"] = summary([plain]), summary([keyed])
        reader = {"ruleId": "ads", "groups": [{"groupId": "g", "members": [{"assetKey": asset.asset_key}]}]}
        wired.rule_store.put_rule(
            Rule.model_validate({**reader, "target": {"type": "eventbridge", "eventBusName": BUS}}), now_ms()
        )
        api = load_handler("ingest_api")
        _api(api, meter, "/assets/state", {"assetKey": asset.asset_key})  # its clients built
        measured, body = _api(api, meter, "/assets/state", {"assetKey": asset.asset_key})
        found["state"], found["state body"] = summary([measured]), body
        measured, body = _api(api, meter, "/rules/ads/explain")
        found["explain"], found["explain body"] = summary([measured]), body
        return []

    return cases


def outlet_and_health() -> dict[str, Any]:
    from bench.poll import WorkerBench, _format

    found: dict[str, Any] = {}
    with fresh_lakehook() as (server, wired), quiet_stdout(), tempfile.TemporaryDirectory() as workdir:
        meter = _meter(server)
        _format(WorkerBench(server, wired), "paimon", 2, workdir, outlet_cases(meter, wired, found))
    return found


# --- (2) the NOT_ADVANCED pass ------------------------------------------------------------------------------


def billed_read_units(wired: Container, rule_id: str, since: int) -> float:
    """What DynamoDB bills the sweep's Query of ``rule_id``: every claim of the lookback it reads, before the filter."""
    size, kwargs = (
        0,
        {
            "IndexName": keys.GSI1,
            "KeyConditionExpression": Key("GSI1PK").eq(keys.triggers_index_pk(rule_id))
            & Key("GSI1SK").gte(keys.triggers_index_sk(since, 0, "")),
        },
    )
    client = wired.table.meta.client
    while True:
        answer = client.query(TableName=wired.table.name, **kwargs)
        size += len(json.dumps(answer.get("Items", []), default=str))
        if "LastEvaluatedKey" not in answer:
            return 0.5 * max(1, math.ceil(size / 4096))
        kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def sweep(claims: int) -> list[dict[str, Any]]:
    """The NOT_ADVANCED pass over ``claims`` started claims: all due, then none due (all marked)."""
    with fresh_lakehook() as (server, wired), quiet_stdout():
        confirm_rule(wired, "dwd", "paimon://lake/dwd/orders")
        began = now_ms()
        for n in range(1, claims + 1):
            started(wired, "dwd", n)
        meter = _meter(server)
        later = now_ms() + (WITHIN_SECONDS + 1) * 1000
        tick = SweepNotAdvanced(wired.trigger_ledger, wired.rule_store, clock=lambda: later)
        rows, marked = [], 0
        with meter.invocation() as due:
            marked = len(tick())
        rows.append(_sweep_row(claims, f"all due (a tick marks {marked})", summary([due])))
        while tick():  # the following ticks mark the rest
            pass
        with meter.invocation() as idle:
            assert tick() == []
        rows.append(_sweep_row(claims, "none due (all marked)", summary([idle])))
        rows[-1]["billed read units"] = billed_read_units(wired, "dwd", began - 1)
    return rows


def _sweep_row(claims: int, case: str, measured: dict[str, Any]) -> dict[str, Any]:
    return {
        "part": "NOT_ADVANCED pass (one freshness tick)",
        "claims": claims,
        "case": case,
        "requests": _ops(measured),
        "read units": measured["read_units"],
        "write units": measured["write_units"],
    }


# --- rows and prices -------------------------------------------------------------------------------------


def _ops(measured: dict[str, Any]) -> str:
    return ", ".join(f"{op} {n:g}" for op, n in measured["requests"].items()) or "none"


def _dollars(read: float, write: float, s3_get: float = 0.0, api: int = 0) -> float:
    ddb = read * price("dynamodb_read_unit") + write * price("dynamodb_write_unit")
    return ddb + s3_get * price("s3_get") + api * (price("api_gateway_request") + price("lambda_request"))


def _difference(keyed: dict[str, Any], plain: dict[str, Any]) -> dict[str, float]:
    ops = set(keyed["requests"]) | set(plain["requests"])
    more = {op: keyed["requests"].get(op, 0) - plain["requests"].get(op, 0) for op in sorted(ops)}
    return {op: n for op, n in more.items() if n}


def confirmation_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    plain, keyed = found["plain"], found["keyed"]
    more = _difference(keyed, plain)
    read, write = keyed["read_units"] - plain["read_units"], keyed["write_units"] - plain["write_units"]
    s3 = sum(n for op, n in more.items() if op.startswith("s3 GET") or op.startswith("s3 HEAD"))
    return [
        {
            "part": "outlet poll, plain new commit",
            "requests": _ops(plain),
            "read units": plain["read_units"],
            "write units": plain["write_units"],
        },
        {
            "part": "outlet poll, commit carrying the trigger key",
            "requests": _ops(keyed),
            "read units": keyed["read_units"],
            "write units": keyed["write_units"],
        },
        {
            "part": "confirmation: the keyed poll beyond the plain one",
            "requests": ", ".join(f"{op} {n:+g}" for op, n in more.items()),
            "read units": read,
            "write units": write,
            "priced": f"${_dollars(read, write, s3) * 1e6:,.2f} per million confirmed runs",
        },
    ]


def api_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, part in (
        ("state", "GET /assets/state (polled table, health included)"),
        ("explain", "GET /rules/<id>/explain (polled member, health included)"),
    ):
        measured = found[name]
        reads, writes = measured["read_units"], measured["write_units"]
        out.append(
            {
                "part": part,
                "requests": _ops(measured),
                "read units": measured["read_units"],
                "write units": measured["write_units"],
                "priced": f"${_dollars(reads, writes, api=1) * 1e6:,.2f} per million calls",
            }
        )
    return out


def run() -> list[dict[str, Any]]:
    found = outlet_and_health()
    assert "health" in json.dumps(found["state body"]).lower(), found["state body"]
    rows = confirmation_rows(found) + api_rows(found)
    for claims in CLAIMS:
        for row in sweep(claims):
            billed = row.get("billed read units")
            if billed is not None:
                row["priced"] = f"${_dollars(billed, 0) * TICKS_PER_MONTH:,.4f} per month (8,640 ticks, billed units)"
            rows.append(row)
    return rows
