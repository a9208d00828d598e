"""Admission of every request, through the ingest API's handler on in-process moto: authenticate first,
parse within the limits, never a 5xx, never half a batch.

The routes are enumerated from the built app itself, so a route added later is covered without
editing this file.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.api.app import build_app
from lakehook.api.auth import admin, authenticator_for, public
from lakehook.domain.limits import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS, MAX_PAYLOAD_DEPTH
from lakehook.domain.time import MAX_ISO_MS
from tests.hypothesis_profiles import examples
from tests.integration.test_api import ORDERS, PAYMENTS, PREFIXES, Api, nothing_recorded
from tests.support import FakeLambdaContext, api_event, signed_headers


def routes() -> list[tuple[str, str]]:
    """(method, a concrete path) for every route the app serves, path parameters filled in."""
    app = build_app()
    app.include_every_route()  # a route module's routes are otherwise included on their first request
    found = []
    for route in app._static_routes + app._dynamic_routes:
        path = re.sub(r"<[^>]+>", "x1", route.path)
        found.append((route.method, path, route.openapi_path))
    return sorted((m, p) for m, p, _ in found)


def protected_routes() -> list[tuple[str, str]]:
    app = build_app()
    app.include_every_route()
    return sorted(
        (route.method, re.sub(r"<[^>]+>", "x1", route.path))
        for route in app._static_routes + app._dynamic_routes
        if authenticator_for(route.method, route.openapi_path) is not public
    )


def test_the_route_list_is_the_whole_api() -> None:
    listed = routes()
    assert ("POST", "/asset-events") in listed and ("PUT", "/rules/x1") in listed
    assert ("POST", "/runs/x1/complete") in listed and ("GET", "/openapi.json") in listed
    assert len(listed) >= 20
    assert protected_routes() == [r for r in listed if r != ("GET", "/openapi.json")]


def raw_event(
    method: str, path: str, body: bytes | None, headers: dict[str, str], query: dict[str, str] | None = None
) -> dict[str, Any]:
    """The proxy event for raw bytes: text when they are UTF-8, base64 otherwise (as API Gateway does)."""
    event = api_event(method, path, headers=headers, query=query)
    if body is None:
        return event
    try:
        event["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        event["body"] = base64.b64encode(body).decode()
        event["isBase64Encoded"] = True
    return event


def send(api: Api, method: str, path: str, body: bytes | None, headers: dict[str, str], **kw: Any) -> tuple[int, Any]:
    answer = api.handler(raw_event(method, path, body, headers, **kw), FakeLambdaContext())
    status = int(answer["statusCode"])
    assert status < 500, (method, path, body[:200] if body else body, answer["body"][:500])
    return status, json.loads(answer["body"]) if answer["body"] else None


MALFORMED: dict[str, bytes | None] = {
    "deep nesting": b"[" * 5000 + b"]" * 5000,
    "unclosed nesting": b'{"a":' * 100_000,
    "huge integer": b'{"snapshotId": ' + b"9" * 5000 + b"}",
    "not utf-8": b'{"assetKey": "\xff\xfe"}',
    "invalid json": b"{bad",
    "empty": b"",
    "no body": None,
    "empty object": b"{}",
    "duplicate keys": b'{"a": 1, "a": 2}',
    "nan": b'{"value": NaN}',
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_an_unauthenticated_request_is_a_401_on_every_route_whatever_its_body(api: Api, kind: str) -> None:
    for method, path in protected_routes():
        for headers in ({}, {"Content-Type": "application/json"}, {"Authorization": "Bearer wrong"}):
            status, body = send(api, method, path, MALFORMED[kind], headers)
            assert status == 401, (method, path, kind, headers, body)
            assert body["error"] == "UNAUTHENTICATED"


def admin_routes() -> list[tuple[str, str]]:
    """(method, concrete path) of every route only management credentials open, from the app's route table."""
    app = build_app()
    app.include_every_route()
    return sorted(
        (route.method, re.sub(r"<[^>]+>", "x1", route.path))
        for route in app._static_routes + app._dynamic_routes
        if authenticator_for(route.method, route.openapi_path) is admin
    )


def test_every_admin_route_refuses_a_caller_that_is_not_admin(api: Api, producer: str) -> None:
    # GIVEN callers who are authenticated, but not as management: a producer signing its request, a producer's
    # bearer apiKey (lineageBearer), and the admin token sent the way only a producer's apiKey is
    opted = api.call("PUT", "/producers/bearer-writer", {"assetKeyPrefixes": PREFIXES, "lineageBearer": True})
    assert opted.status == 201, opted.body
    routes = admin_routes()
    assert len(routes) >= 20 and ("PUT", "/rules/x1") in routes and ("POST", "/asset-events") not in routes
    body = b"{}"
    callers = {
        "producer signature": signed_headers("orders-writer", producer, body),
        "producer apiKey": {"Authorization": f"Bearer {opted.body['apiKey']}"},
        "admin token as a producer key": {"Authorization": f"Bearer orders-writer:{api.admin['Authorization'][7:]}"},
    }
    for method, path in routes:
        for caller, headers in callers.items():
            status, answer = send(api, method, path, body, {**headers, "Content-Type": "application/json"})
            # THEN each is refused before its body is read, with the one message of the one check
            assert status == 401, (method, path, caller, answer)
            assert answer["message"] == "management routes need 'Authorization: Bearer <admin token>'", answer
        # and the same request with management credentials gets past admission
        status, answer = send(api, method, path, body, {**api.admin, "Content-Type": "application/json"})
        assert status != 401, (method, path, answer)


def test_a_bad_signature_is_a_401_whatever_the_body(api: Api, producer: str) -> None:
    for kind, data in MALFORMED.items():
        signed = signed_headers("orders-writer", "0" * 64, data or b"")
        for path in ("/asset-events", "/runs/x1/complete"):
            status, _ = send(api, "POST", path, data, signed)
            assert status == 401, (kind, path)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), f"deeper than {MAX_JSON_DEPTH} levels"),
        (b'{"value": ' + b"1" * (MAX_NUMBER_DIGITS + 1) + b"}", f"the limit is {MAX_NUMBER_DIGITS} digits"),
        (b'{"value": "\xff"}', "not UTF-8"),
        (b'{"namespace": "ns", "namespace": "ns"}', "'namespace' twice"),
        (b'{"value": Infinity}', "Infinity"),
        (b"{bad", "not valid JSON"),
    ],
)
def test_with_credentials_each_limit_is_a_400_naming_it_on_every_body_route(api: Api, data: bytes, words: str) -> None:
    for method, path in protected_routes():
        if method not in ("PUT", "POST"):
            continue
        status, body = send(api, method, path, data, {**api.admin, "Content-Type": "application/json"})
        assert status == 400, (method, path, body)
        assert words in body["message"] and body["field"] == "body", (method, path, body)


def test_a_signed_push_over_the_limits_is_a_400_naming_them(api: Api, producer: str) -> None:
    for data, words in (
        (b'{"events": ' + b"[" * 40 + b"]" * 40 + b"}", "deeper than"),
        (b'{"eventType": "SNAPSHOT_COMMITTED", "snapshotId": ' + b"7" * 50 + b"}", "digits"),
        (b'{"eventType": "SNAPSHOT_COMMITTED", "eventType": "TAG_CREATED"}', "'eventType' twice"),
        (b'{"assetKey": "\\ud800"}', "unpaired surrogate"),
    ):
        status, body = send(api, "POST", "/asset-events", data, signed_headers("orders-writer", producer, data))
        assert status == 400 and words in body["message"], body
    assert nothing_recorded(api, ORDERS)


# --- batches: rejected whole, or answered per event -------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_a_batch_too_deep_to_parse_is_refused_whole_before_anything_is_written(api: Api, producer: str) -> None:
    # GIVEN a good event, then one whose payload nests a few hundred levels (this was a 502 after the first
    # event was written, and every retry 502ed again)
    events = [
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 1, "payload": nested(300)},
    ]
    answer = api.push({"events": events})
    assert answer.status == 400 and "deeper than" in answer.body["message"]
    assert nothing_recorded(api, ORDERS, PAYMENTS)


def test_a_bad_event_in_a_batch_is_rejected_by_name_and_the_others_are_written(api: Api, producer: str) -> None:
    events = [
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 1, "payload": nested(17)},
        {"eventType": "WATERMARK_ADVANCED", "assetKey": PAYMENTS, "watermark": 2**63 - 1},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": "2"},
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": PAYMENTS, "snapshotId": 3, "payload": nested(16)},
    ]
    answer = api.push({"events": events})
    assert answer.status == 200
    statuses = [(r["status"], r["reason"]) for r in answer.body["results"]]
    assert statuses[0] == ("ACCEPTED", None) and statuses[4] == ("ACCEPTED", None)
    assert statuses[1][0] == "REJECTED" and f"payload: payload nests 17 levels; the limit is {MAX_PAYLOAD_DEPTH}" in (
        statuses[1][1] or ""
    )
    assert statuses[2][0] == "REJECTED" and "watermark" in (statuses[2][1] or "")
    assert statuses[3][0] == "REJECTED" and "snapshotId" in (statuses[3][1] or "")
    assert [e["snapshotId"] for e in api.events(PAYMENTS)] == [3]


def test_the_latest_instant_is_accepted_and_every_answer_can_show_it(api: Api, producer: str) -> None:
    # A watermark of 2**63-1 used to be accepted and then break explain, listings and the resolver.
    answer = api.push({"eventType": "WATERMARK_ADVANCED", "assetKey": ORDERS, "watermark": MAX_ISO_MS})
    assert answer.body["results"][0]["status"] == "ACCEPTED"
    state = api.state(ORDERS)
    assert state.status == 200 and state.body["latestWatermark"] == MAX_ISO_MS
    assert api.events(ORDERS)[0]["watermark"] == MAX_ISO_MS


# --- other numeric inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1", 1.0, True, 2**63, -1])
def test_a_watermark_store_version_is_a_64_bit_integer(api: Api, version: Any) -> None:
    body = {"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": 1, "expectedVersion": version}
    answer = api.call("PUT", "/watermarks", body)
    assert answer.status == 400 and answer.body["field"] == "expectedVersion", answer.body


def test_a_watermark_store_value_is_opaque_json_within_the_limits(api: Api) -> None:
    body = {"namespace": "ns", "assetKey": ORDERS, "key": "k", "value": {"offset": 2**63 - 1, "at": 1.5}}
    assert api.call("PUT", "/watermarks", body).status == 200
    got = api.call("GET", "/watermarks", query={"namespace": "ns", "assetKey": ORDERS, "key": "k"})
    assert got.body["value"] == {"offset": 2**63 - 1, "at": 1.5}
    delete = {"namespace": "ns", "assetKey": ORDERS, "key": "k", "expectedVersion": str(2**63)}
    assert api.call("DELETE", "/watermarks", query=delete).status == 400


@pytest.mark.parametrize(
    ("start", "end"),
    [("253402300800000", "253402300800001"), ("-1", "5"), ("9" * 5000, "1"), ("0001-01-01T00:00:00Z", "1")],
)
def test_coverage_bounds_outside_the_instant_range_are_a_400(api: Api, start: str, end: str) -> None:
    answer = api.call("GET", "/assets/coverage", query={"assetKey": ORDERS, "start": start, "end": end})
    assert answer.status == 400 and answer.body["field"] in ("start", "end"), answer.body


# --- generated requests ----------------------------------------------------------------------------

FIELD_NAMES = ["eventType", "assetKey", "snapshotId", "watermark", "events", "payload", "value", "namespace", "key"]
JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["SNAPSHOT_COMMITTED", ORDERS, "paimon://lake/ods_db/x", "2025-06-01T00:00:00Z", "6"])
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=25,
)
BODIES = st.one_of(
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300),
    st.text(alphabet='[]{}"\\,:0123456789.eE-+ntrufals \ud7ff\x00', max_size=200).map(
        lambda t: t.encode("utf-8", "surrogatepass")
    ),
    st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n),
)
QUERIES = st.none() | st.dictionaries(
    st.sampled_from(["assetKey", "limit", "start", "end", "namespace", "key", "ruleId", "nextToken", "dryRun"]),
    st.text(max_size=12) | st.sampled_from([ORDERS, "9" * 50, "2025-06-01T00:00:00Z", "-1"]),
    max_size=4,
)


@pytest.fixture
def moto_api(api: Api, producer: str) -> Iterator[tuple[Api, str]]:
    yield api, producer


@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    route=st.sampled_from(routes()),
    body=st.none() | BODIES,
    query=QUERIES,
    credentials=st.sampled_from(["none", "wrong", "admin", "producer"]),
)
def test_generated_requests_never_5xx_and_never_2xx_without_credentials(
    moto_api: tuple[Api, str],
    route: tuple[str, str],
    body: bytes | None,
    query: dict[str, str] | None,
    credentials: str,
) -> None:
    api, secret = moto_api
    method, path = route
    headers: dict[str, str] = {"Content-Type": "application/json"}
    if credentials == "admin":
        headers.update(api.admin)
    elif credentials == "wrong":
        headers.update({"Authorization": "Bearer nope", **signed_headers("orders-writer", "0" * 64, body or b"")})
    elif credentials == "producer":
        headers.update(signed_headers("orders-writer", secret, body or b""))
    status, answer = send(api, method, path, body, headers, query=query)  # asserts < 500
    if route == ("GET", "/openapi.json"):
        return
    # a producer's signature authenticates pushes, lineage and its watcher's watermarks (confined to its namespaces:
    # a 403 outside them) only; runs complete with their trigger's token
    signed_routes = (
        ("POST", "/asset-events"),
        ("POST", "/api/v1/lineage"),
        ("GET", "/watermarks"),
        ("PUT", "/watermarks"),
    )
    authenticated = credentials == "admin" or (credentials == "producer" and route in signed_routes)
    if not authenticated:
        assert status == 401, (route, credentials, answer)
