"""Malformed bodies over real HTTP through the local stack's gateway: 401 first, then a 400, never a 5xx."""

from __future__ import annotations

import requests

from lakehook.local.runtime import LocalStack
from tests.support import signed_headers

BODIES = {
    "deep nesting": b"[" * 20_000 + b"]" * 20_000,
    "huge integer": b'{"snapshotId": ' + b"9" * 5000 + b"}",
    "not utf-8": b'{"assetKey": "\xff"}',
    "not json": b"{bad",
}
ROUTES = [
    ("POST", "/api/v1/lineage"),
    ("POST", "/asset-events"),
    ("POST", "/runs/some-key/complete"),
    ("PUT", "/producers/p"),
    ("PUT", "/assets"),
    ("PUT", "/aliases/a"),
    ("PUT", "/watermarks"),
    ("PUT", "/rules/r"),
]


def test_malformed_bodies_are_a_401_without_credentials_and_a_400_with_them(
    stack: LocalStack, admin: dict[str, str], http: requests.Session
) -> None:
    for method, path in ROUTES:
        for kind, body in BODIES.items():
            for content_type in ("application/json", "application/octet-stream"):
                anonymous = http.request(
                    method, stack.api_url + path, data=body, headers={"Content-Type": content_type}
                )
                assert anonymous.status_code == 401, (method, path, kind, anonymous.text)
            managed = http.request(method, stack.api_url + path, data=body, headers=admin)
            assert managed.status_code == 400, (method, path, kind, managed.text)
            assert managed.json()["field"] == "body"


def test_a_signed_push_with_a_malformed_body_is_a_400_naming_the_limit(
    stack: LocalStack, admin: dict[str, str], http: requests.Session
) -> None:
    answer = http.put(
        f"{stack.api_url}/producers/ingress-writer", headers=admin, json={"assetKeyPrefixes": ["paimon://lake/"]}
    )
    assert answer.status_code == 201, answer.text
    secret = answer.json()["secret"]
    for kind, body in BODIES.items():
        reply = http.post(
            f"{stack.api_url}/asset-events", data=body, headers=signed_headers("ingress-writer", secret, body)
        )
        assert reply.status_code == 400, (kind, reply.text)
