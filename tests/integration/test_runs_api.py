"""POST /runs/{triggerKey}/complete and PUT/GET /aliases/{name} through the API resolver, on moto.

Claims are created with the resolver's DynamoDBTriggerStore; the ledger, the alias store, the rule store and
the asset store are the DynamoDB adapters on the same table. The completion key is a Secrets Manager secret
on moto, as the template creates it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.api.app import LakehookResolver, build_app
from lakehook.container import Container
from lakehook.domain.completion import COMPLETION_TOKEN_HEADER, completion_token
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus
from lakehook.settings import Settings
from tests.conftest import ADMIN_TOKEN, BUCKET, TABLE
from tests.support import FakeLambdaContext, api_event, signed_headers

DWD = "paimon://lake/dwd_db/dwd_trade_event_fact"
DWS = "paimon://lake/dws_db/dws_trade_daily"
T0 = 1_750_000_000_000
KEY_SECRET = "lakehook-internal/test/completion-token-key"
KEY_VALUE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01"


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
        raw_bytes: bytes | None = None,
        query: dict[str, str] | None = None,
    ) -> Answer:
        all_headers = {"Content-Type": "application/json", **(self.admin if admin else {}), **(headers or {})}
        event = api_event(method, path, body, headers=all_headers, raw=raw, query=query)
        if raw_bytes is not None:
            event.update(body=base64.b64encode(raw_bytes).decode(), isBase64Encoded=True)
        answer = self.app.resolve(event, FakeLambdaContext())
        status = int(answer["statusCode"])
        assert status < 500, answer["body"]
        return Answer(status, json.loads(answer["body"]) if answer["body"] else None)


@pytest.fixture
def settings() -> Settings:
    return Settings(
        table_name=TABLE,
        bucket_name=BUCKET,
        admin_token=ADMIN_TOKEN,
        region="us-east-1",
        completion_key_secret=KEY_SECRET,
    )


@pytest.fixture(autouse=True)
def completion_key(aws: None) -> None:
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name=KEY_SECRET, SecretString=KEY_VALUE)


def token_for(trigger_key: str) -> dict[str, str]:
    return {COMPLETION_TOKEN_HEADER: completion_token(KEY_VALUE, trigger_key)}


def declare(container: Container, outlets: list[str]) -> None:
    """Store rule ``dwd`` (the claims' rule) declaring these outlets."""
    rule = Rule.model_validate(
        {
            "ruleId": "dwd",
            "groups": [{"groupId": "g", "members": [{"assetKey": "paimon://lake/ods_db/ods_order_latest"}]}],
            "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/dwd", "secretRef": "t/dwd"},
            "outlets": outlets,
        }
    )
    container.rule_store.put_rule(rule, T0)


@pytest.fixture
def api(container: Container) -> Iterator[Api]:
    app = build_app()
    yield Api(app)


def make_claim(table: Any, key: str = "dwd.g.000000000000000000000001") -> str:
    pins = (PinnedInput(asset_key="paimon://lake/ods_db/ods_order_latest", snapshot_id=int(key[-6:], 16) + 1000),)
    trigger = Trigger(
        trigger_key=key,
        rule_id="dwd",
        group_id="g",
        inputs=pins,
        created_at=T0,
        updated_at=T0,
    )
    assert DynamoDBTriggerStore(table).put_replay(trigger)  # a claim item, as the resolver writes it
    return trigger.trigger_key


@pytest.fixture
def claim(container: Container, table: Any) -> str:
    return make_claim(table)


def register(api: Api, producer_id: str, prefixes: list[str]) -> str:
    answer = api.call("PUT", f"/producers/{producer_id}", {"assetKeyPrefixes": prefixes})
    assert answer.status == 201, answer.body
    return str(answer.body["secret"])


def completion(outlets: list[dict[str, Any]], status: str = "SUCCEEDED") -> str:
    return json.dumps({"status": status, "outlets": outlets})


def test_a_run_completes_with_its_token_and_registers_its_declared_outlets(
    api: Api, claim: str, container: Container
) -> None:
    declare(container, ["paimon://lake/dwd_db/"])
    text = completion([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001}])
    answer = api.call("POST", f"/runs/{claim}/complete", raw=text, admin=False, headers=token_for(claim))
    assert answer.status == 200, answer.body
    assert answer.body["triggerKey"] == claim and answer.body["status"] == "SUCCEEDED"
    assert answer.body["repeated"] is False
    assert [r["status"] for r in answer.body["results"]] == ["ACCEPTED"]
    entry = container.trigger_ledger.get(claim)
    assert entry is not None and entry.run_status == "SUCCEEDED" and entry.status is TriggerStatus.TRIGGERING
    assert container.asset_store.get_state(DWD).latest_snapshot_id == 2001  # type: ignore[union-attr]
    # The trigger shows what the run reported, alone and in the rule's list.
    shown = api.call("GET", f"/triggers/{claim}").body
    assert shown["runStatus"] == "SUCCEEDED" and shown["completedAt"] == answer.body["completedAt"]
    assert shown["outlets"] == [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001}]
    [listed] = api.call("GET", "/triggers", query={"ruleId": "dwd"}).body["items"]
    assert {k: listed[k] for k in ("runStatus", "completedAt", "outlets")} == {
        k: shown[k] for k in ("runStatus", "completedAt", "outlets")
    }


UNREADABLE_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("not json", {"raw": "{"}),
    ("deeply nested", {"raw": "[" * 100_000 + "]" * 100_000}),
    ("huge integer", {"raw": '{"status": "SUCCEEDED", "outlets": [{"snapshotId": ' + "9" * 50_000 + "}]}"}),
    ("not utf-8", {"raw_bytes": b'{"status": "\xff\xfe"}'}),
    ("empty", {"raw": ""}),
    ("a valid completion", {"raw": completion([])}),
]


@pytest.mark.parametrize(("name", "body"), UNREADABLE_BODIES, ids=[n for n, _ in UNREADABLE_BODIES])
def test_without_credentials_any_body_is_a_401_before_it_is_read(
    api: Api, claim: str, container: Container, name: str, body: dict[str, Any]
) -> None:
    answer = api.call("POST", f"/runs/{claim}/complete", admin=False, **body)
    assert answer.status == 401, (name, answer.body)
    assert COMPLETION_TOKEN_HEADER in answer.body["message"]
    assert container.trigger_ledger.get(claim).run_status is None  # type: ignore[union-attr]


def test_a_producer_signature_alone_does_not_complete_a_run(api: Api, claim: str, container: Container) -> None:
    declare(container, ["paimon://lake/dwd_db/"])
    secret = register(api, "dwd-job", ["paimon://lake/dwd_db/"])
    outlet = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 1}
    text = completion([outlet])
    signed = api.call(
        "POST",
        f"/runs/{claim}/complete",
        raw=text,
        admin=False,
        headers=signed_headers("dwd-job", secret, text.encode()),
    )
    assert signed.status == 401
    assert container.trigger_ledger.get(claim).run_status is None  # type: ignore[union-attr]
    # The same producer still pushes events as usual.
    push = json.dumps(outlet)
    pushed = api.call(
        "POST", "/asset-events", raw=push, admin=False, headers=signed_headers("dwd-job", secret, push.encode())
    )
    assert pushed.status == 200 and pushed.body["results"][0]["status"] == "ACCEPTED"


def test_a_token_completes_its_own_trigger_only(api: Api, table: Any, container: Container) -> None:
    a = make_claim(table, "dwd.g.000000000000000000000001")
    b = make_claim(table, "dwd.g.000000000000000000000002")
    text = completion([])
    assert api.call("POST", f"/runs/{b}/complete", raw=text, admin=False, headers=token_for(a)).status == 401
    wrong_key = {COMPLETION_TOKEN_HEADER: completion_token("x" * 64, b)}
    assert api.call("POST", f"/runs/{b}/complete", raw=text, admin=False, headers=wrong_key).status == 401
    empty = {COMPLETION_TOKEN_HEADER: ""}
    assert api.call("POST", f"/runs/{b}/complete", raw=text, admin=False, headers=empty).status == 401
    assert container.trigger_ledger.get(b).run_status is None  # type: ignore[union-attr]
    assert api.call("POST", f"/runs/{b}/complete", raw=text, admin=False, headers=token_for(b)).status == 200


def test_an_outlet_outside_the_declared_outlets_is_a_403_and_nothing_is_ingested(
    api: Api, claim: str, container: Container
) -> None:
    declare(container, [DWD])
    outlets = [
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 5},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWS, "snapshotId": 1},
    ]
    answer = api.call("POST", f"/runs/{claim}/complete", raw=completion(outlets), admin=False, headers=token_for(claim))
    assert answer.status == 403 and answer.body["message"].startswith(f"outlet {DWS} is outside")
    assert container.asset_store.get_state(DWD) is None and container.asset_store.get_state(DWS) is None
    assert container.trigger_ledger.get(claim).run_status is None  # type: ignore[union-attr]
    # Management credentials are not confined to the rule's outlets.
    assert api.call("POST", f"/runs/{claim}/complete", raw=completion(outlets)).status == 200
    assert container.asset_store.get_state(DWS) is not None


def test_the_first_terminal_status_wins(api: Api, claim: str, container: Container, table: Any) -> None:
    declare(container, ["paimon://lake/dwd_db/"])
    text = completion([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": DWD, "snapshotId": 2001}])
    first = api.call("POST", f"/runs/{claim}/complete", raw=text, admin=False, headers=token_for(claim))
    item = table.get_item(Key={"PK": f"TRIGGER#{claim}", "SK": "CLAIM"})["Item"]
    again = api.call("POST", f"/runs/{claim}/complete", raw=text, admin=False, headers=token_for(claim))
    assert first.status == again.status == 200
    assert again.body["status"] == "SUCCEEDED" and again.body["completedAt"] == first.body["completedAt"]
    assert first.body["repeated"] is False and again.body["repeated"] is True
    assert [r["status"] for r in again.body["results"]] == ["DUPLICATE"]
    assert table.get_item(Key={"PK": f"TRIGGER#{claim}", "SK": "CLAIM"})["Item"] == item  # one state change
    state = container.asset_store.get_state(DWD)
    assert state is not None and state.version == 1
    for body in (completion([], status="FAILED"), completion([])):
        refused = api.call("POST", f"/runs/{claim}/complete", raw=body, admin=False, headers=token_for(claim))
        assert refused.status == 409 and "already completed with status SUCCEEDED" in refused.body["message"]
    assert api.call("POST", f"/runs/{claim}/complete", raw=completion([], status="FAILED")).status == 409
    assert container.trigger_ledger.get(claim).run_status == "SUCCEEDED"  # type: ignore[union-attr]


def test_a_bad_completion_is_a_400_and_unknown_triggers_a_404(api: Api, claim: str) -> None:
    missing = api.call("POST", "/runs/nope.g.0/complete", raw=completion([]))
    assert missing.status == 404
    unknown_with_token = api.call(
        "POST", "/runs/nope.g.0/complete", raw=completion([]), admin=False, headers=token_for("nope.g.0")
    )
    assert unknown_with_token.status == 404
    bad = api.call("POST", f"/runs/{claim}/complete", raw=json.dumps({"status": "MAYBE"}))
    assert bad.status == 400 and "status" in bad.body["message"]
    bad_outlet = api.call("POST", f"/runs/{claim}/complete", raw=completion([{"eventType": "NOPE", "assetKey": DWD}]))
    assert bad_outlet.status == 400 and bad_outlet.body["field"] == "outlets[0]"


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
        assert container.asset_store.get_state(key).latest_snapshot_id == 9  # type: ignore[union-attr]


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
