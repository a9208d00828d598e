"""Request keys (domain/requests.py): an Idempotency-Key's fingerprint of what the request asks, which a stored
``REQUEST#<key>`` item keeps for 7 days, so it must read the same across versions and key orders."""

from __future__ import annotations

import hashlib

import pytest

from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.requests import (
    IDEMPOTENCY_KEY_HEADER,
    REPLAYED_HEADER,
    IdempotencyKeyReusedError,
    RecordedRequest,
    RequestAnswer,
    RequestKey,
)


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


@pytest.mark.parametrize("key", ["x" * 128, "a_b.c:d-E9", "3f2b8c1e-7d4a-4e0b-9c55-0a1b2c3d4e5f", "1"])
def test_a_key_of_the_allowed_characters_up_to_128_is_taken(key: str) -> None:
    taken = RequestKey.of(key, "replay", {})
    assert taken is not None and taken.key == key


def recorded(now: int = 1_800_000_000_999) -> tuple[RequestKey, RecordedRequest]:
    key = RequestKey.of("k-1", "replay", {"ruleId": "r"})
    assert key is not None
    return key, RecordedRequest.of(key, 202, {"triggerKey": "r.g.abc"}, "r.g.abc", now)


def test_the_first_answer_is_recorded_with_the_keys_fingerprint_and_kept_7_days_from_its_second() -> None:
    key, first = recorded()
    assert (first.key, first.fingerprint, first.status, first.body, first.trigger_key, first.created_at) == (
        "k-1",
        key.fingerprint,
        202,
        {"triggerKey": "r.g.abc"},
        "r.g.abc",
        1_800_000_000_999,
    )
    assert first.expires_at == 1_800_000_000 + 7 * 86_400  # epoch seconds, the table's TTL


def test_the_same_request_again_gets_the_first_answer_replayed_and_another_request_a_409() -> None:
    _, first = recorded()
    again = RequestKey.of("k-1", "replay", {"ruleId": "r"})
    assert again is not None and first.answer_to(again) is first
    answer = RequestAnswer.replay_of(first.answer_to(again))
    assert (answer.status, answer.body, answer.replayed) == (202, {"triggerKey": "r.g.abc"}, True)
    assert answer.headers() == {REPLAYED_HEADER: "true"} == {"Idempotent-Replayed": "true"}
    assert RequestAnswer(201, {}).headers() is None  # a first answer says nothing
    other = RequestKey.of("k-1", "replay", {"ruleId": "s"})
    assert other is not None
    with pytest.raises(IdempotencyKeyReusedError) as refused:
        first.answer_to(other)
    assert isinstance(refused.value, ConflictError)
    assert str(refused.value) == (
        "Idempotency-Key 'k-1' was used for a different request (it claimed r.g.abc); send a new key for a new request"
    )
