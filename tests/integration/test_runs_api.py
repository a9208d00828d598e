"""POST /runs/{triggerKey}/complete and PUT/GET /aliases/{name} through the API resolver, on moto.

The routers are not registered in ``api/app.py`` yet; the test includes them in the built resolver the
way app.py would. Claims are created with the resolver's DynamoDBTriggerStore; the ledger, the alias
store and the asset store are the DynamoDB adapters on the same table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.api.app import LakehookResolver, build_app
from lakehook.container import Container
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus
from lakehook.wiring_dispatch import trigger_ledger
from tests.conftest import ADMIN_TOKEN
from tests.support import FakeLambdaContext, api_event, signed_headers

DWD = "paimon://lake/dwd_db/dwd_trade_event_fact"
DWS = "paimon://lake/dws_db/dws_trade_daily"
T0 = 1_750_000_000_000


@dataclass
class Answer:
    status: int
    body: Any


class Api:
    def __init__(self, app: LakehookResolver) -> None:
        self.app = app
        self.admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: str | None = None,
        admin: bool = True,
    ) -> Answer:
        all_headers = {"Content-Type": "application/json", **(self.admin if admin else {}), **(headers or {})}
        answer = self.app.resolve(api_event(method, path, body, headers=all_headers, raw=raw), FakeLambdaContext())
        status = int(answer["statusCode"])
        assert status < 500, answer["body"]
        return Answer(status, json.loads(answer["body"]) if answer["body"] else None)


@pytest.fixture
def api(container: Container) -> Iterator[Api]:
    app = build_app()
    yield Api(app)


@pytest.fixture
def claim(container: Container, table: Any) -> str:
    pins = (PinnedInput(asset_key="paimon://lake/ods_db/ods_order_latest", snapshot_id=1001),)
    trigger = Trigger(
        trigger_key="dwd.g.000000000000000000000001",
        rule_id="dwd",
        group_id="g",
        inputs=pins,
        created_at=T0,
        updated_at=T0,
    )
    assert (
        DynamoDBTriggerStore(table)
        .claim(trigger, GroupCursor.initial("dwd", "g").after(trigger, {}), None)
        .outcome.value
        == "CLAIMED"
    )
    return trigger.trigger_key


def register(api: Api, producer_id: str, prefixes: list[str]) -> str:
    answer = api.call("PUT", f"/producers/{producer_id}", {"assetKeyPrefixes": prefixes})
    assert answer.status == 201, answer.body
    return str(answer.body["secret"])


def completion(outlets: list[dict[str, Any]], status: str = "SUCCEEDED") -> str:
    return json.dumps({"status": status, "outlets": outlets})


def test_a_signed_completion_registers_its_outlets(api: Api, claim: str, container: Container) -> None:
    secret = register(api, "dwd-job", ["paimon://lake/dwd_db/"])
    text = completion([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001}])
    answer = api.call(
        "POST",
        f"/runs/{claim}/complete",
        raw=text,
        admin=False,
        headers=signed_headers("dwd-job", secret, text.encode()),
    )
    assert answer.status == 200, answer.body
    assert answer.body["triggerKey"] == claim and answer.body["status"] == "SUCCEEDED"
    assert [r["status"] for r in answer.body["results"]] == ["ACCEPTED"]
    entry = trigger_ledger(container).get(claim)
    assert entry is not None and entry.run_status == "SUCCEEDED" and entry.status is TriggerStatus.TRIGGERING
    assert container.asset_store.get_state(DWD).to_api()["latestSnapshotId"] == 2001  # type: ignore[union-attr]


def test_completions_are_authenticated_and_confined_to_the_prefixes(api: Api, claim: str) -> None:
    secret = register(api, "dwd-job", ["paimon://lake/dwd_db/"])
    text = completion([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWS, "snapshotId": 1}])
    outside = api.call(
        "POST",
        f"/runs/{claim}/complete",
        raw=text,
        admin=False,
        headers=signed_headers("dwd-job", secret, text.encode()),
    )
    assert outside.status == 403
    unsigned = api.call("POST", f"/runs/{claim}/complete", raw=text, admin=False)
    assert unsigned.status == 401
    forged = api.call(
        "POST",
        f"/runs/{claim}/complete",
        raw=text,
        admin=False,
        headers=signed_headers("dwd-job", "not-the-secret", text.encode()),
    )
    assert forged.status == 401
    missing = api.call("POST", "/runs/nope.g.0/complete", raw=completion([]))
    assert missing.status == 404
    bad = api.call("POST", f"/runs/{claim}/complete", raw=json.dumps({"status": "MAYBE"}))
    assert bad.status == 400 and "status" in bad.body["message"]


def test_aliases_are_managed_and_outlets_through_them_reach_each_asset(
    api: Api, claim: str, container: Container
) -> None:
    created = api.call("PUT", "/aliases/trade_facts", {"assetKeys": [DWD, DWS]})
    assert created.status == 201 and created.body["assetKeys"] == [DWD, DWS]
    replaced = api.call("PUT", "/aliases/trade_facts", {"assetKeys": [DWD, DWS], "description": "facts"})
    assert replaced.status == 200 and replaced.body["createdAt"] == created.body["createdAt"]
    assert api.call("GET", "/aliases/trade_facts").body["description"] == "facts"
    assert api.call("GET", "/aliases/nope").status == 404
    assert api.call("PUT", "/aliases/bad$name", {"assetKeys": [DWD]}).status == 400
    assert api.call("PUT", "/aliases/x", {"assetKeys": ["not a key"]}).status == 400
    assert api.call("GET", "/aliases/trade_facts", admin=False).status == 401

    text = completion([{"eventType": "SNAPSHOT_COMMITTED", "alias": "trade_facts", "snapshotId": 9}])
    answer = api.call("POST", f"/runs/{claim}/complete", raw=text)
    assert [r["status"] for r in answer.body["results"]] == ["ACCEPTED", "ACCEPTED"]
    for key in (DWD, DWS):
        assert container.asset_store.get_state(key).to_api()["latestSnapshotId"] == 9  # type: ignore[union-attr]


def test_a_push_through_an_alias_reaches_each_concrete_asset(api: Api, container: Container) -> None:
    assert api.call("PUT", "/aliases/facts", {"assetKeys": [DWD, DWS]}).status == 201
    events = [
        {"eventType": "WATERMARK_ADVANCED", "alias": "facts", "watermark": 1_725_960_000_000},
        {"eventType": "WATERMARK_ADVANCED", "alias": "missing", "watermark": 1},
    ]
    answer = api.call("POST", "/asset-events", {"events": events})
    assert answer.status == 200, answer.body
    statuses = [r["status"] for r in answer.body["results"]]
    assert statuses == ["ACCEPTED", "ACCEPTED", "REJECTED"]
    assert "does not exist" in answer.body["results"][2]["reason"]
    for asset in (DWD, DWS):
        state = container.asset_store.get_state(asset)
        assert state is not None and state.latest_watermark == 1_725_960_000_000
