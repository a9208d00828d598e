"""The ingest API's Lambda handler, driven with API Gateway proxy events against in-process moto.

Every call goes through ``functions/ingest_api/app.py``'s ``lambda_handler`` exactly as API Gateway
(or the local runtime) would invoke it; the helper fails any answer of 500 or more, so each test
also proves that its bad input never crashes the function.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from openapi_spec_validator import validate as validate_openapi

from lakehook import container as container_module
from lakehook.container import Container
from lakehook.domain.events import AssetEvent
from lakehook.domain.signing import IAM_PREFIX
from lakehook.settings import Settings
from lakehook.usecases.producers import NOT_VERIFIED
from tests.support import TEMPLATE, FakeLambdaContext, RequestCounter, api_event, load_handler, signed_headers

ORDERS = "paimon://lake/ods_db/ods_order_latest"
PAYMENTS = "paimon://lake/ods_db/ods_payment_latest"
SPOOL = "s3://spool/orders"
PREFIXES = ["paimon://lake/ods_db/", "s3://spool/"]

# The push of DESIGN.md's contract example.
CONTRACT_PUSH = {
    "events": [
        {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": ORDERS,
            "snapshotId": 1001,
            "schemaId": 5,
            "commitKind": "APPEND",
            "commitTime": 1725963330123,
        },
        {"eventType": "QUALITY_CHECK_PASSED", "assetKey": ORDERS, "snapshotId": 1001},
        {
            "eventType": "INTERVAL_COVERED",
            "assetKey": SPOOL,
            "interval": {"start": "2025-06-01T10:05:00Z", "end": "2025-06-01T10:10:00Z"},
        },
    ]
}


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


class Api:
    """Calls the handler; admin calls carry the bearer token, pushes are signed by a producer."""

    def __init__(self, admin_token: str) -> None:
        self.handler = load_handler("ingest_api")
        self.admin = {"Authorization": f"Bearer {admin_token}"}
        self.secrets: dict[str, str] = {}

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
        raw: str | None = None,
        admin: bool = True,
    ) -> Answer:
        all_headers = {**(self.admin if admin else {}), **(headers or {})}
        event = api_event(method, path, body, headers=all_headers, query=query, raw=raw)
        answer = self.handler(event, FakeLambdaContext())
        status = int(answer["statusCode"])
        text = answer["body"]
        assert status < 500, f"{method} {path} answered {status}: {text}"
        parsed = json.loads(text) if text else None
        multi = {k: v[-1] for k, v in (answer.get("multiValueHeaders") or {}).items() if v}
        return Answer(status, parsed, {**multi, **(answer.get("headers") or {})})

    def register(self, producer_id: str = "orders-writer", prefixes: list[str] | None = None) -> str:
        answer = self.call("PUT", f"/producers/{producer_id}", {"assetKeyPrefixes": prefixes or PREFIXES})
        assert answer.status == 201, answer.body
        self.secrets[producer_id] = answer.body["secret"]
        return str(answer.body["secret"])

    def push(
        self,
        body: Any = None,
        *,
        raw: str | None = None,
        producer: str = "orders-writer",
        secret: str | None = None,
        at: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        text = raw if raw is not None else json.dumps(body)
        signed = signed_headers(producer, secret or self.secrets[producer], text.encode(), at=at)
        return self.call("POST", "/asset-events", raw=text, headers={**signed, **(headers or {})}, admin=False)

    def state(self, asset_key: str) -> Answer:
        return self.call("GET", "/assets/state", query={"assetKey": asset_key})

    def events(self, asset_key: str, **query: str) -> list[dict[str, Any]]:
        answer = self.call("GET", "/assets/events", query={"assetKey": asset_key, **query})
        assert answer.status == 200, answer.body
        return list(answer.body["items"])


def nothing_recorded(api: Api, *asset_keys: str) -> bool:
    return all(api.state(key).status == 404 and api.events(key) == [] for key in asset_keys)


# --- the contract example -----------------------------------------------------------------------


def test_contract_example_is_accepted_with_the_documented_answer(api: Api, producer: str) -> None:
    answer = api.push(CONTRACT_PUSH)
    assert answer.status == 200
    ids = [AssetEvent.model_validate(e).event_id for e in CONTRACT_PUSH["events"]]
    assert answer.body == {"results": [{"eventId": i, "status": "ACCEPTED", "reason": None} for i in ids]}
    assert answer.headers.get("Content-Type") == "application/json"

    state = api.state(ORDERS).body
    assert state["latestSnapshotId"] == 1001 and state["latestSchemaId"] == 5
    assert state["latestCommitTime"] == 1725963330123 and state["latestCommitKind"] == "APPEND"
    assert (state["qualityStatus"], state["schemaStatus"], state["registered"]) == ("PASSED", "COMPATIBLE", False)
    (spool_event,) = api.events(SPOOL)
    assert spool_event["interval"] == {"start": "2025-06-01T10:05:00Z", "end": "2025-06-01T10:10:00Z"}
    assert (spool_event["source"], spool_event["producerId"], spool_event["eventId"]) == (
        "PUSH",
        "orders-writer",
        ids[2],
    )

    again = api.push(CONTRACT_PUSH)
    assert [r["status"] for r in again.body["results"]] == ["DUPLICATE"] * 3
    assert api.state(ORDERS).body["version"] == state["version"]


def test_a_single_event_body_is_one_push(api: Api, producer: str) -> None:
    answer = api.push({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": "2025-06-01T10:00:00Z"})
    assert answer.status == 200 and answer.body["results"][0]["status"] == "ACCEPTED"
    assert api.state(ORDERS).body["latestWatermark"] == 1748772000000


def test_a_late_snapshot_is_stale_and_kept_as_evidence(api: Api, producer: str) -> None:
    api.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 10})
    answer = api.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 9})
    (result,) = answer.body["results"]
    assert result["status"] == "STALE" and "newer" in result["reason"]
    assert api.state(ORDERS).body["latestSnapshotId"] == 10
    assert [e["snapshotId"] for e in api.events(ORDERS)] == [9, 10]  # newest first, both kept


# --- bad bodies ---------------------------------------------------------------------------------


def test_malformed_json_is_a_400_naming_the_body(api: Api, producer: str) -> None:
    for raw in ('{"events": [', "{bad", "nul", '{"a": 1}}', "\x00"):
        answer = api.push(raw=raw)
        assert answer.status == 400, raw
        assert answer.body["field"] == "body" and "not valid JSON" in answer.body["message"]
    assert nothing_recorded(api, ORDERS)


def test_an_empty_body_is_a_400(api: Api, producer: str) -> None:
    answer = api.push(raw="")
    assert answer.status == 400 and "empty" in answer.body["message"]


def test_a_body_over_one_mebibyte_is_a_413(api: Api, producer: str) -> None:
    filler = "x" * (1024 * 1024)
    answer = api.push(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1, "payload": {"filler": filler}}
    )
    assert answer.status == 413
    assert answer.body["error"] == "PAYLOAD_TOO_LARGE" and "1048576" in answer.body["message"]
    assert nothing_recorded(api, ORDERS)
    registration = api.call("PUT", "/assets", {"assetKey": ORDERS, "format": "paimon", "description": filler})
    assert registration.status == 413


def test_a_body_of_exactly_the_limit_is_not_refused_for_its_size(api: Api, producer: str) -> None:
    head = json.dumps({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1, "payload": {"f": ""}})
    raw = head.replace('"f": ""', '"f": "' + "x" * (1024 * 1024 - len(head)) + '"')
    assert len(raw.encode()) == 1024 * 1024
    (result,) = api.push(raw=raw).body["results"]
    assert result["status"] == "REJECTED" and "payload" in result["reason"]  # the event's own 16 KiB cap


def test_more_than_one_hundred_events_is_a_400(api: Api, producer: str) -> None:
    events = [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": i} for i in range(101)]
    answer = api.push({"events": events})
    assert answer.status == 400
    assert answer.body["field"] == "events" and "at most 100" in answer.body["message"]
    assert nothing_recorded(api, ORDERS)

    accepted = api.push({"events": events[:100]})
    assert accepted.status == 200 and {r["status"] for r in accepted.body["results"]} <= {"ACCEPTED", "STALE"}
    assert api.state(ORDERS).body["latestSnapshotId"] == 99


MALFORMED_ENVELOPES: list[tuple[Any, str]] = [
    ({"events": "x"}, "events"),
    ({"events": []}, "events"),
    ({"events": None}, "events"),
    ({"events": {"eventType": "SNAPSHOT_COMMITTED"}}, "events"),
    ({"events": [{"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1}], "extra": 1}, "events"),
    ([], "body"),
    ([{"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1}], "body"),
    ("x", "body"),
    (42, "body"),
    (None, "body"),
]


def test_a_malformed_envelope_is_a_400(api: Api, producer: str) -> None:
    for body, field in MALFORMED_ENVELOPES:
        answer = api.push(body)
        assert answer.status == 400, (body, answer.body)
        assert answer.body["field"] == field, body
        assert answer.body["message"]
    assert nothing_recorded(api, ORDERS)


def test_bad_events_are_rejected_by_name_and_the_others_are_durable(api: Api, producer: str) -> None:
    good = [
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 7, "schemaId": 1},
        {"eventType": "WATERMARK_ADVANCED", "assetKey": PAYMENTS, "watermark": 1748772000000},
    ]
    bad = [
        ({"eventType": "SNAPSHOT_DELETED", "assetKey": ORDERS, "snapshotId": 8}, "eventType"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": "paimon://lake/ods_db", "snapshotId": 8}, "assetKey"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS}, "snapshotId"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 8, "snapshotID": 8}, "snapshotID"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 2**63}, "snapshotId"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": True}, "snapshotId"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": "8"}, "snapshotId"),
        ({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 8.0}, "snapshotId"),
        ({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": "9" * 45}, "watermark"),
        ({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": 2**63 - 1}, "watermark"),
        ({"eventType": "INTERVAL_COVERED", "assetKey": SPOOL, "interval": {"start": 0, "end": 10**17}}, "interval"),
        ({"assetKey": ORDERS, "snapshotId": 8}, "eventType"),
        ("SNAPSHOT_COMMITTED", "event"),
        (None, "event"),
    ]
    events: list[Any] = [good[0], *(b for b, _ in bad), good[1]]
    answer = api.push({"events": events})
    assert answer.status == 200
    results = answer.body["results"]
    assert len(results) == len(events)
    assert [r["status"] for r in results] == ["ACCEPTED"] + ["REJECTED"] * len(bad) + ["ACCEPTED"]
    for result, (_, field) in zip(results[1:-1], bad, strict=True):
        assert result["eventId"] is None
        assert field in result["reason"], (field, result["reason"])

    # what was accepted is durable and visible
    assert api.state(ORDERS).body["latestSnapshotId"] == 7
    assert api.state(PAYMENTS).body["latestWatermark"] == 1748772000000
    assert [e["eventId"] for e in api.events(ORDERS)] == [results[0]["eventId"]]
    assert api.events(SPOOL) == []


# --- authentication and authorization of pushes -------------------------------------------------


EVENT = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1}


BAD_SIGNATURES: list[tuple[dict[str, str], str]] = [
    ({}, "missing X-Lakehook-Producer"),
    ({"X-Lakehook-Producer": "orders-writer"}, "missing X-Lakehook-Signature"),
    ({"X-Lakehook-Producer": "orders-writer", "X-Lakehook-Signature": "garbage"}, "t=<unix seconds>"),
    ({"X-Lakehook-Producer": "orders-writer", "X-Lakehook-Signature": "t=abc,v1=00"}, "not unix seconds"),
    ({"X-Lakehook-Producer": "orders-writer", "X-Lakehook-Signature": "t=²,v1=00"}, "not unix seconds"),
    ({"X-Lakehook-Producer": "orders-writer", "X-Lakehook-Signature": "t={now},v1=é"}, NOT_VERIFIED),
    ({"X-Lakehook-Producer": "orders-writer", "X-Lakehook-Signature": "t={now},v1=" + "0" * 64}, NOT_VERIFIED),
    ({"X-Lakehook-Producer": "nobody", "X-Lakehook-Signature": "t={now},v1=00"}, NOT_VERIFIED),
    ({"X-Lakehook-Producer": "x" * 3000, "X-Lakehook-Signature": "t={now},v1=00"}, "not a valid producer id"),
    ({"Authorization": "Bearer wrong-token"}, "missing X-Lakehook-Producer"),
]


def test_bad_or_missing_signatures_are_a_401(api: Api, producer: str) -> None:
    for headers, words in BAD_SIGNATURES:
        now = str(int(time.time()))
        filled = {k: v.replace("{now}", now) for k, v in headers.items()}
        answer = api.call("POST", "/asset-events", EVENT, headers=filled, admin=False)
        assert answer.status == 401, (headers, answer.body)
        assert answer.body["error"] == "UNAUTHENTICATED" and words in answer.body["message"], answer.body
    assert nothing_recorded(api, ORDERS)


def test_an_unknown_producer_and_a_wrong_signature_answer_the_same_text(api: Api, producer: str) -> None:
    # GIVEN the same signed body, once under a registered producer with a wrong secret, once under nobody
    body = json.dumps(EVENT).encode()
    wrong = api.call(
        "POST", "/asset-events", raw=body.decode(), headers=signed_headers("orders-writer", "0" * 64, body), admin=False
    )
    unknown = api.call(
        "POST", "/asset-events", raw=body.decode(), headers=signed_headers("nobody", producer, body), admin=False
    )
    # THEN a caller cannot tell which producer ids exist
    assert wrong.status == unknown.status == 401
    assert wrong.body == unknown.body == {"error": "UNAUTHENTICATED", "message": NOT_VERIFIED}


def test_header_names_are_case_insensitive(api: Api, producer: str) -> None:
    # HTTP/2 clients send every header name in lower case.
    body = json.dumps(EVENT)
    headers = {k.lower(): v for k, v in signed_headers("orders-writer", producer, body.encode()).items()}
    answer = api.call("POST", "/asset-events", raw=body, headers=headers, admin=False)
    assert answer.status == 200 and answer.body["results"][0]["status"] == "ACCEPTED"
    assert api.call("GET", "/assets", headers={"authorization": api.admin["Authorization"]}, admin=False).status == 200


def test_a_timestamp_outside_five_minutes_is_a_401(api: Api, producer: str) -> None:
    for skew in (-301, 301, -3600):
        answer = api.push(EVENT, at=int(time.time()) + skew)
        assert answer.status == 401 and "tolerance" in answer.body["message"], skew
    assert nothing_recorded(api, ORDERS)
    assert api.push(EVENT, at=int(time.time()) - 240).status == 200  # inside the window


def test_a_signature_of_another_body_or_by_another_secret_is_a_401(api: Api, producer: str) -> None:
    signed = signed_headers("orders-writer", producer, json.dumps({**EVENT, "snapshotId": 2}).encode())
    answer = api.call("POST", "/asset-events", raw=json.dumps(EVENT), headers=signed, admin=False)
    assert answer.status == 401 and answer.body["message"] == NOT_VERIFIED
    assert api.push(EVENT, secret="0" * 64).status == 401
    assert nothing_recorded(api, ORDERS)


def test_an_asset_outside_the_prefixes_is_a_403_and_nothing_is_recorded(api: Api, producer: str) -> None:
    outside = "iceberg://glue/dwd_db/fact"
    answer = api.push(
        {
            "events": [
                EVENT,
                {"eventType": "SNAPSHOT_COMMITTED", "assetKey": outside, "snapshotId": 1, "sequenceNumber": 1},
            ]
        }
    )
    assert answer.status == 403
    assert answer.body["error"] == "FORBIDDEN" and outside in answer.body["message"]
    assert nothing_recorded(api, ORDERS, outside)


def test_the_admin_token_may_push_for_any_asset(api: Api) -> None:
    answer = api.call("POST", "/asset-events", {**EVENT, "assetKey": "iceberg://glue/dwd_db/fact", "sequenceNumber": 3})
    assert answer.status == 200 and answer.body["results"][0]["status"] == "ACCEPTED"


# --- management routes ----------------------------------------------------------------------------


MANAGEMENT = [
    ("PUT", "/producers/p1", {"assetKeyPrefixes": ["s3://x/"]}, None),
    ("GET", "/producers/p1", None, None),
    ("PUT", "/assets", {"assetKey": ORDERS, "format": "paimon"}, None),
    ("GET", "/assets", None, None),
    ("GET", "/assets/state", None, {"assetKey": ORDERS}),
    ("GET", "/assets/events", None, {"assetKey": ORDERS}),
    ("GET", "/watermarks", None, {"namespace": "ns", "assetKey": ORDERS, "key": "k"}),
    ("PUT", "/watermarks", {"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": 1}, None),
    ("DELETE", "/watermarks", None, {"namespace": "ns", "assetKey": ORDERS, "key": "k"}),
]


@pytest.mark.parametrize(("method", "path", "body", "query"), MANAGEMENT)
def test_management_routes_need_the_admin_token(
    api: Api, method: str, path: str, body: Any, query: dict[str, str] | None
) -> None:
    for authorization in (None, "Bearer wrong", "test-admin-token", "Basic dGVzdA==", "Bearer ", "bearer  wrong"):
        headers = {"Authorization": authorization} if authorization is not None else {}
        answer = api.call(method, path, body, query=query, headers=headers, admin=False)
        assert answer.status == 401, (authorization, answer.body)
        assert "Authorization: Bearer <admin token>" in answer.body["message"]
    assert api.call("GET", "/assets").body["items"] == []
    assert api.call("GET", "/producers/p1").status == 404
    assert api.call("GET", "/watermarks", query={"namespace": "ns", "assetKey": ORDERS}).body["items"] == []


def test_management_routes_on_aws_need_an_iam_identity(container: Container, settings: Settings) -> None:
    iam = Container(settings.model_copy(update={"admin_token": None}))
    iam.overrides["table"] = container.table
    container_module.use(iam)
    event = api_event("GET", "/assets")
    denied = load_handler("ingest_api")(event, FakeLambdaContext())
    assert denied["statusCode"] == 401 and "IAM" in json.loads(denied["body"])["message"]
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:user/ops"
    assert load_handler("ingest_api")(event, FakeLambdaContext())["statusCode"] == 200


def test_unknown_routes_are_a_404_naming_them(api: Api) -> None:
    for method, path in (("GET", "/nope"), ("POST", "/assets"), ("GET", "/asset-events"), ("DELETE", "/producers")):
        answer = api.call(method, path)
        assert answer.status == 404, (method, path)
        assert answer.body["error"] == "NOT_FOUND" and f"{method} {path}" in answer.body["message"]


# --- producers ------------------------------------------------------------------------------------


def test_producer_secret_is_answered_once(api: Api, secrets_client: Any) -> None:
    created = api.call("PUT", "/producers/orders-writer", {"assetKeyPrefixes": PREFIXES, "description": "orders"})
    assert created.status == 201
    secret = created.body["secret"]
    assert len(secret) == 64 and created.body["assetKeyPrefixes"] == PREFIXES
    stored = secrets_client.get_secret_value(SecretId=created.body["secretRef"])["SecretString"]
    assert stored == secret  # kept in Secrets Manager, not in the table

    updated = api.call("PUT", "/producers/orders-writer", {"assetKeyPrefixes": ["s3://spool/"]})
    assert updated.status == 200 and "secret" not in updated.body
    assert updated.body["createdAt"] == created.body["createdAt"]
    read = api.call("GET", "/producers/orders-writer")
    assert read.status == 200 and "secret" not in read.body and read.body["assetKeyPrefixes"] == ["s3://spool/"]
    assert secret not in json.dumps(read.body)

    # the unchanged secret still signs, and the narrowed prefixes apply
    api.secrets["orders-writer"] = secret
    assert api.push({**EVENT, "assetKey": "s3://spool/orders"}).status == 200
    assert api.push(EVENT).status == 403


def test_rotating_the_secret_retires_the_old_one_at_once(api: Api) -> None:
    # GIVEN a producer whose secret the (default, 30 s) cache holds after a push
    old = api.register()
    assert api.push(EVENT, secret=old).status == 200

    rotated = api.call(
        "PUT", "/producers/orders-writer", {"assetKeyPrefixes": PREFIXES}, query={"rotateSecret": "true"}
    )
    assert rotated.status == 200
    new = rotated.body["secret"]
    assert new != old
    # THEN the very next request signed with the old secret is refused, despite the cache
    refused = api.push({**EVENT, "snapshotId": 2}, secret=old)
    assert refused.status == 401 and refused.body["message"] == NOT_VERIFIED
    assert api.push({**EVENT, "snapshotId": 2}, secret=new).status == 200


BAD_PRODUCER_REQUESTS: list[tuple[str, str, Any, dict[str, str] | None, str]] = [
    ("PUT", "/producers/bad%20id", {"assetKeyPrefixes": PREFIXES}, None, "producerId"),
    ("PUT", "/producers/" + "a" * 129, {"assetKeyPrefixes": PREFIXES}, None, "producerId"),
    ("GET", "/producers/" + "a" * 3000, None, None, "producerId"),
    ("PUT", "/producers/p", {"assetKeyPrefixes": ["ods_db"]}, None, "assetKeyPrefixes"),
    ("PUT", "/producers/p", {"assetKeyPrefixes": []}, None, "assetKeyPrefixes"),
    ("PUT", "/producers/p", {"prefixes": ["s3://x/"]}, None, "assetKeyPrefixes"),
    ("PUT", "/producers/p", {"assetKeyPrefixes": PREFIXES}, {"rotateSecret": "maybe"}, "rotateSecret"),
]


def test_bad_producer_requests_are_a_400_naming_the_field(api: Api) -> None:
    for method, path, body, query, field in BAD_PRODUCER_REQUESTS:
        answer = api.call(method, path, body, query=query)
        assert answer.status == 400, (path, body, answer.body)
        assert answer.body["field"] == field or field in answer.body["message"], answer.body
    assert api.call("GET", "/producers/p").status == 404


def test_malformed_json_on_a_management_route_is_a_400_naming_the_body(api: Api) -> None:
    answer = api.call("PUT", "/producers/p", raw="{bad")
    assert answer.status == 400
    assert answer.body["field"] == "body" and answer.body["message"].startswith("request body is not valid JSON")


# --- assets ---------------------------------------------------------------------------------------


def test_register_an_asset_then_replace_it(api: Api) -> None:
    body = {
        "assetKey": "iceberg://glue/ods_db/ods_order",
        "format": "iceberg",
        "source": {
            "catalog": "glue",
            "table": "ods_db.ods_order",
            "properties": {"type": "glue", "s3.secret-access-key": "secretsmanager:lakehook/s3"},
        },
    }
    missing = api.call("PUT", "/assets", body)  # the secret it names must exist, as a rule's target secrets
    assert missing.status == 400 and missing.body["field"] == "source.properties", missing.body
    assert "secret 'lakehook/s3' does not exist" in missing.body["message"]
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="lakehook/s3", SecretString="k")
    created = api.call("PUT", "/assets", body)
    assert (created.status, created.body) == (201, body)
    replaced = api.call("PUT", "/assets", {**body, "description": "orders"})
    assert replaced.status == 200 and replaced.body["description"] == "orders"
    (listed,) = api.call("GET", "/assets").body["items"]
    assert listed["description"] == "orders"
    state = api.state("iceberg://glue/ods_db/ods_order")
    assert state.status == 200 and state.body == {
        "assetKey": "iceberg://glue/ods_db/ods_order",
        "version": 0,
        "registered": True,
        "pollStatus": None,  # registered with a source, never polled yet
        "notices": {"state": "NONE", "pollIntervalSeconds": 60, "summary": "notices: NONE"},  # polled every minute
    }


def test_a_credential_in_clear_is_a_400_naming_the_property(api: Api) -> None:
    body = {
        "assetKey": "iceberg://glue/ods_db/t",
        "format": "iceberg",
        "source": {"catalog": "glue", "table": "ods_db.t", "properties": {"s3.secret-access-key": "hunter2"}},
    }
    answer = api.call("PUT", "/assets", body)
    assert answer.status == 400
    assert "'s3.secret-access-key'" in answer.body["message"] and answer.body["field"] == "source.properties"
    assert "hunter2" not in json.dumps(answer.body)
    assert api.call("GET", "/assets").body["items"] == []


@pytest.mark.parametrize(
    ("name", "endpoint"),
    [
        ("s3.endpoint", "https://169.254.169.254"),
        ("uri", "https://[::ffff:a9fe:a9fe]/catalog"),
        ("glue.endpoint", "https://[fe80::1%25eth0]"),
        ("s3.endpoint", "169.254.169.254:80"),
    ],
)
def test_a_source_endpoint_the_url_policy_refuses_is_a_400_naming_the_property(
    api: Api, name: str, endpoint: str
) -> None:
    body = {
        "assetKey": "iceberg://rest/ods_db/t",
        "format": "iceberg",
        "source": {"catalog": "rest", "table": "ods_db.t", "properties": {"type": "rest", name: endpoint}},
    }
    for query in ({"dryRun": "true"}, None):
        answer = api.call("PUT", "/assets", body, query=query)
        assert answer.status == 400, answer.body
        assert answer.body["field"] == f"source.properties.{name}"
        assert answer.body["message"].startswith(f"source.properties.{name}: ")
    assert api.call("GET", "/assets").body["items"] == []
    # the local stack's own moto endpoint (plain http on loopback) is fine here
    local = {**body, "source": {**body["source"], "properties": {"type": "rest", name: "http://127.0.0.1:5000"}}}
    assert api.call("PUT", "/assets", local).status == 201


def test_bad_registrations_are_a_400(api: Api) -> None:
    for body, words in (
        ({"assetKey": ORDERS, "format": "iceberg"}, "iceberg://"),
        ({"assetKey": "bad", "format": "custom"}, "assetKey"),
        ({"assetKey": ORDERS}, "format"),
        ({"assetKey": ORDERS, "format": "paimon", "owner": "me"}, "owner"),
    ):
        answer = api.call("PUT", "/assets", body)
        assert answer.status == 400 and words in answer.body["message"], (body, answer.body)
    assert api.call("GET", "/assets").body["items"] == []


def test_a_poll_interval_is_checked_when_the_table_is_registered_and_shown_with_its_state(api: Api) -> None:
    body = {"assetKey": ORDERS, "format": "paimon", "source": {"catalog": "lake", "table": "ods_db.ods_order"}}
    for bad in (30, 90, 86_460, "600"):
        for query in ({"dryRun": "true"}, None):
            answer = api.call("PUT", "/assets", {**body, "pollIntervalSeconds": bad}, query=query)
            assert answer.status == 400 and answer.body["field"] == "pollIntervalSeconds", answer.body
            assert "whole number of minutes" in answer.body["message"]
    assert api.call("GET", "/assets").body["items"] == []
    assert api.call("PUT", "/assets", {**body, "pollIntervalSeconds": 600}).status == 201
    assert api.state(ORDERS).body["notices"] == {
        "state": "NONE",
        "pollIntervalSeconds": 600,
        "summary": "notices: NONE",
    }


def test_assets_are_listed_in_pages(api: Api) -> None:
    keys = [f"paimon://lake/db/t{i}" for i in range(7)]
    for key in reversed(keys):
        assert api.call("PUT", "/assets", {"assetKey": key, "format": "paimon"}).status == 201
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        query = {"limit": "3", **({"nextToken": token} if token else {})}
        page = api.call("GET", "/assets", query=query).body
        seen += [a["assetKey"] for a in page["items"]]
        pages += 1
        token = page["nextToken"]
        if token is None:
            break
    assert seen == keys and pages >= 3


def test_state_of_an_unknown_asset_is_a_404(api: Api) -> None:
    answer = api.state(ORDERS)
    assert answer.status == 404 and ORDERS in answer.body["message"]


def test_events_are_listed_newest_first_in_pages(api: Api, producer: str) -> None:
    for sid in range(5):
        api.push({"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": sid})
        time.sleep(0.002)  # distinct receive times
    first = api.call("GET", "/assets/events", query={"assetKey": ORDERS, "limit": "2"}).body
    assert [e["snapshotId"] for e in first["items"]] == [4, 3]
    rest = api.call(
        "GET", "/assets/events", query={"assetKey": ORDERS, "limit": "10", "nextToken": first["nextToken"]}
    ).body
    assert [e["snapshotId"] for e in rest["items"]] == [2, 1, 0]
    assert rest["nextToken"] is None
    assert all(e["receivedAt"].endswith("Z") and e["source"] == "PUSH" for e in first["items"] + rest["items"])


BAD_QUERIES: list[tuple[str, dict[str, str], str]] = [
    ("/assets/state", {}, "assetKey"),
    ("/assets/state", {"assetKey": ""}, "assetKey"),
    ("/assets/state", {"assetKey": "not-a-key"}, "assetKey"),
    ("/assets/events", {}, "assetKey"),
    ("/assets/events", {"assetKey": ORDERS, "limit": "0"}, "limit"),
    ("/assets/events", {"assetKey": ORDERS, "limit": "501"}, "limit"),
    ("/assets/events", {"assetKey": ORDERS, "limit": "ten"}, "limit"),
    ("/assets/events", {"assetKey": ORDERS, "nextToken": "garbage!!"}, "nextToken"),
    ("/assets/events", {"assetKey": ORDERS, "nextToken": "e30"}, "nextToken"),  # '{}' in base64
    ("/assets/events", {"assetKey": ORDERS, "since": "2026-12-01T00:00:00Z"}, "since"),  # not a parameter of it
    ("/assets/events", {"assetKey": ORDERS, "start": "yesterday"}, "start"),
    ("/assets/events", {"assetKey": ORDERS, "end": "2026-13-01T00:00:00Z"}, "end"),
    ("/assets/events", {"assetKey": ORDERS, "start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"}, "end"),
    ("/assets/events", {"assetKey": ORDERS, "fromVersion": "-1"}, "fromVersion"),
    ("/assets/events", {"assetKey": ORDERS, "toVersion": "ten"}, "toVersion"),
    ("/assets/events", {"assetKey": ORDERS, "fromVersion": "5", "toVersion": "4"}, "toVersion"),
    ("/assets/events", {"assetKey": ORDERS, "fromVersion": "1", "start": "2026-12-01T00:00:00Z"}, "fromVersion"),
    ("/assets", {"limit": "-1"}, "limit"),
    ("/assets", {"nextToken": "%%%"}, "nextToken"),
    ("/watermarks", {"namespace": "ns"}, "assetKey"),
    ("/watermarks", {"namespace": "bad ns", "assetKey": ORDERS}, "namespace"),
]


def test_bad_query_parameters_are_a_400_naming_them(api: Api) -> None:
    for path, query, field in BAD_QUERIES:
        answer = api.call("GET", path, query=query or None)
        assert answer.status == 400, (path, query, answer.body)
        assert answer.body["field"] == field, (path, query, answer.body)


def _token(key: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def test_a_token_of_another_listing_is_a_400(api: Api, producer: str) -> None:
    # Real DynamoDB answers a start key of the wrong shape with a ValidationException: a 500 if it got there.
    # (moto accepts it and silently answers an empty page.)
    api.push(EVENT)
    for key in (
        {"PK": "ASSET#x", "SK": "META", "GSI1PK": "ASSETS", "GSI1SK": "x"},  # a token of GET /assets
        {"PK": "ASSET#x", "SK": "STATE"},  # not an index key at all
        {"PK": "a", "SK": "b", "GSI1PK": f"EVENTS#{PAYMENTS}", "GSI1SK": "1"},  # another asset's listing
    ):
        answer = api.call("GET", "/assets/events", query={"assetKey": ORDERS, "nextToken": _token(key)})
        assert answer.status == 400 and answer.body["field"] == "nextToken", key
    events_token = {"PK": "a", "SK": "b", "GSI1PK": f"EVENTS#{ORDERS}", "GSI1SK": "1"}
    assert api.call("GET", "/assets", query={"nextToken": _token(events_token)}).status == 400


def test_a_token_of_another_listing_is_a_400_for_triggers_and_rules(api: Api) -> None:
    # these two listings took any token as a start key (moto fails on it, DynamoDB answers a ValidationException)
    other_rule = {"PK": "TRIGGER#dws.g.x", "SK": "CLAIM", "GSI1PK": "TRIGGERS#dws", "GSI1SK": "1"}
    for key in ({"PK": "ASSET#x", "SK": "STATE"}, other_rule, {"PK": "a", "SK": "b", "GSI1PK": "RULES", "GSI1SK": "a"}):
        answer = api.call("GET", "/triggers", query={"ruleId": "dwd", "nextToken": _token(key)})
        assert answer.status == 400 and answer.body["field"] == "nextToken", key
    for key in ({"PK": "ASSET#x", "SK": "STATE"}, other_rule):
        answer = api.call("GET", "/rules", query={"nextToken": _token(key)})
        assert answer.status == 400 and answer.body["field"] == "nextToken", key


# --- watermarks -----------------------------------------------------------------------------------


def test_watermarks_put_get_compare_and_set_delete(api: Api) -> None:
    where = {"namespace": "poller", "assetKey": ORDERS, "key": "last_snapshot"}
    assert api.call("GET", "/watermarks", query=where).status == 404

    created = api.call("PUT", "/watermarks", {**where, "value": {"snapshotId": 10}, "expectedVersion": 0})
    assert created.status == 200 and (created.body["value"], created.body["version"]) == ({"snapshotId": 10}, 1)
    again = api.call("PUT", "/watermarks", {**where, "value": {"snapshotId": 11}, "expectedVersion": 0})
    assert again.status == 409 and again.body["error"] == "CONFLICT"

    moved = api.call("PUT", "/watermarks", {**where, "value": {"snapshotId": 12}, "expectedVersion": 1})
    assert moved.status == 200 and moved.body["version"] == 2
    stale = api.call("PUT", "/watermarks", {**where, "value": {"snapshotId": 99}, "expectedVersion": 1})
    assert stale.status == 409
    read = api.call("GET", "/watermarks", query=where)
    assert read.status == 200 and read.body["value"] == {"snapshotId": 12} and read.body["version"] == 2

    blind = api.call("PUT", "/watermarks", {**where, "key": "other", "value": "2025-06-01"})
    assert blind.status == 200 and blind.body["version"] == 1
    listed = api.call("GET", "/watermarks", query={"namespace": "poller", "assetKey": ORDERS}).body["items"]
    assert sorted(r["key"] for r in listed) == ["last_snapshot", "other"]

    assert api.call("DELETE", "/watermarks", query={**where, "expectedVersion": "1"}).status == 409
    assert api.call("DELETE", "/watermarks", query={**where, "expectedVersion": "2"}).body == {"deleted": True}
    assert api.call("DELETE", "/watermarks", query=where).status == 404
    assert api.call("GET", "/watermarks", query=where).status == 404


def test_bad_watermark_writes_are_a_400(api: Api) -> None:
    for body, field in (
        ({"namespace": "ns", "assetKey": ORDERS, "key": "k"}, "value"),
        ({"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": "x" * 70_000}, "value"),  # DynamoDB: a 500
        ({"namespace": "ns", "assetKey": ORDERS, "key": "bad key", "value": 1}, "key"),
        ({"namespace": "ns", "assetKey": "bad", "key": "k", "value": 1}, "assetKey"),
        ({"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": 1, "expectedVersion": -1}, "expectedVersion"),
    ):
        answer = api.call("PUT", "/watermarks", body)
        assert answer.status == 400, (body, answer.body)
        assert answer.body["field"] == field, answer.body
    assert api.call("GET", "/watermarks", query={"namespace": "ns", "assetKey": ORDERS}).body["items"] == []


def test_a_non_json_number_in_a_watermark_is_a_400(api: Api) -> None:
    raw = json.dumps({"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": float("nan")})
    assert "NaN" in raw  # Python's json writes it; Python's parser would read it back
    answer = api.call("PUT", "/watermarks", raw=raw)
    assert answer.status == 400 and answer.body["field"] == "body" and "NaN" in answer.body["message"]


# --- OpenAPI --------------------------------------------------------------------------------------


def test_openapi_is_valid_and_lists_every_route_of_the_template(api: Api) -> None:
    answer = api.call("GET", "/openapi.json", admin=False)
    assert answer.status == 200
    document = answer.body
    validate_openapi(document)  # raises on an unresolvable $ref or a malformed operation
    (function,) = [f for f in TEMPLATE.functions() if f.code_uri.name == "ingest_api"]
    documented = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    # An IAM variant (IAM_PREFIX) is its route, documented once.
    routes = {(r.method.upper(), r.path.removeprefix(IAM_PREFIX)) for r in function.routes if r.path != "/openapi.json"}
    assert routes <= documented, routes - documented

    push = document["paths"]["/asset-events"]["post"]
    body_schema = push["requestBody"]["content"]["application/json"]["schema"]
    event_ref = body_schema["oneOf"][0]["$ref"]
    event_schema = document["components"]["schemas"][event_ref.rsplit("/", 1)[1]]
    assert {"eventType", "assetKey", "snapshotId", "interval"} <= set(event_schema["properties"])
    assert body_schema["oneOf"][1]["properties"]["events"]["maxItems"] == 100
    answer_ref = push["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    result = document["components"]["schemas"][answer_ref.rsplit("/", 1)[1]]["properties"]["results"]
    assert set(document["components"]["schemas"]["EventResult"]["properties"]) == {"eventId", "status", "reason"}
    assert result["items"]["$ref"] == "#/components/schemas/EventResult"
    assert all("422" not in op["responses"] for ops in document["paths"].values() for op in ops.values())


# --- the request budget through the handler -------------------------------------------------------


def _stream_records(ddb_client: Any) -> int:
    """How many records the table's stream holds: a write that changed nothing adds none."""
    # botocore sends DescribeStream to an account endpoint (<account>.streams-ddb…) that moto 5.2 does not
    # intercept in-process; the regional endpoint reaches the same backend.
    streams = boto3.client(
        "dynamodbstreams", region_name="us-east-1", endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com"
    )
    arn = ddb_client.describe_table(TableName="lakehook-test")["Table"]["LatestStreamArn"]
    total = 0
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        total += len(streams.get_records(ShardIterator=iterator, Limit=1000)["Records"])
    return total


def test_request_budget_of_a_push_with_a_warm_producer_cache(
    api: Api, producer: str, counter: RequestCounter, secrets_client: Any, ddb_client: Any
) -> None:
    secrets = RequestCounter().attach(secrets_client)
    api.push(EVENT)  # cold: reads the producer and its secret once
    assert secrets.calls == {"GetSecretValue": 1}

    novel = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 2}
    records = _stream_records(ddb_client)
    with counter.measure() as calls, secrets.measure() as secret_calls:
        answer = api.push(novel)
    assert answer.body["results"][0]["status"] == "ACCEPTED"
    # no read (the producer's registration is kept for LAKEHOOK_PRODUCER_REGISTRATION_SECONDS), two writes at once:
    # the event item, recorded settled, and the state item (on main: the producer's read and three writes)
    assert calls == {"TransactWriteItems": 1}, calls
    assert sum(secret_calls.values()) == 0
    assert _stream_records(ddb_client) == records + 2  # the event item and the state item: no settled note

    version = api.state(ORDERS).body["version"]
    records = _stream_records(ddb_client)
    with counter.measure() as calls, secrets.measure() as secret_calls:
        answer = api.push(novel)
    assert answer.body["results"][0]["status"] == "DUPLICATE"
    # the refused record, which hands back the settled note: nothing more is asked
    assert calls == {"TransactWriteItems": 1} and sum(secret_calls.values()) == 0, (calls, secret_calls)
    assert _stream_records(ddb_client) == records  # wrote nothing: no stream record for the resolver
    assert api.state(ORDERS).body["version"] == version


def test_a_push_names_its_partitions_and_the_state_shows_them(api: Api, producer: str) -> None:
    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 3, "commitKind": "APPEND"}
    pushed = api.push({**body, "partitions": ["region=us", "dt=2026-12-01/region=eu"]})
    assert pushed.body["results"][0]["status"] == "ACCEPTED", pushed.body
    state = api.state(ORDERS).body
    assert state["latestPartitions"] == {
        "keys": ["dt=2026-12-01/region=eu", "region=us"],
        "count": 2,
        "truncated": False,
        "snapshotId": 3,
        "order": 3,
    }
    (event,) = api.events(ORDERS)
    assert event["partitions"]["keys"] == state["latestPartitions"]["keys"]
    bad = api.push({**body, "snapshotId": 4, "partitions": ["dt=2026-12-02", "no-equals-sign"]})
    assert bad.body["results"][0]["status"] == "REJECTED" and "partitions" in bad.body["results"][0]["reason"]
    assert api.state(ORDERS).body["latestSnapshotId"] == 3  # nothing of the rejected event was recorded
