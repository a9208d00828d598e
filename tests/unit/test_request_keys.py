"""Request keys (domain/requests.py): an Idempotency-Key's fingerprint of what the request asks, which a stored
``REQUEST#<key>`` item keeps for 7 days, so it must read the same across versions and key orders."""

from __future__ import annotations

import hashlib

import pytest

from lakehook.domain.errors import ValidationError
from lakehook.domain.requests import IDEMPOTENCY_KEY_HEADER, RequestKey


def test_no_key_is_no_request_key() -> None:
    assert RequestKey.of(None, "replay", {"a": 1}) is None


def test_the_fingerprint_is_the_sha256_of_the_canonical_json_of_the_operation_and_the_request() -> None:
    """Keys sorted, no spaces: the form stored fingerprints were made in (a change would refuse a repeated request
    recorded before it as another one, a 409)."""
    key = RequestKey.of("k-1", "replay", {"ruleId": "r", "body": {"z": 1, "a": [2, 3]}})
    canonical = b'{"body":{"a":[2,3],"z":1},"operation":"replay","ruleId":"r"}'
    assert key is not None and key.key == "k-1"
    assert key.fingerprint == hashlib.sha256(canonical).hexdigest()


def test_the_same_request_in_another_key_order_has_the_same_fingerprint_and_another_operation_another() -> None:
    one = RequestKey.of("k", "replay", {"b": 1, "a": {"y": 2, "x": 3}})
    two = RequestKey.of("k", "replay", {"a": {"x": 3, "y": 2}, "b": 1})
    other = RequestKey.of("k", "force", {"b": 1, "a": {"y": 2, "x": 3}})
    assert one is not None and two is not None and other is not None
    assert one.fingerprint == two.fingerprint != other.fingerprint


@pytest.mark.parametrize("key", ["", "a b", "é", "x" * 129, "k/1"])
def test_a_malformed_key_is_a_400_naming_the_header(key: str) -> None:
    with pytest.raises(ValidationError) as refused:
        RequestKey.of(key, "replay", {})
    assert refused.value.field == IDEMPOTENCY_KEY_HEADER
    assert str(refused.value) == "Idempotency-Key must be letters, digits, _ . : - (1 to 128), e.g. a UUID"
