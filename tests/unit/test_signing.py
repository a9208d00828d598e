"""HMAC push signatures, and the producer use cases built on them (with in-memory fakes)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from lakehook.adapters.memory import InMemoryProducerRegistry, InMemorySecretStore
from lakehook.domain.errors import AuthenticationError, ValidationError
from lakehook.domain.producers import Producer, ProducerSpec
from lakehook.domain.signing import parse_signature, sign, verify
from lakehook.usecases.producers import PushAuthenticator, RegisterProducer

SECRET = "s3cr3t"
BODY = b'{"eventType":"SNAPSHOT_COMMITTED","assetKey":"paimon://lake/db/t","snapshotId":1}'
NOW = 1_725_963_330


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), b"1725963330." + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, BODY, NOW) == f"t=1725963330,v1={expected}"


def test_a_fresh_signature_verifies() -> None:
    verify(SECRET, BODY, sign(SECRET, BODY, NOW), NOW)


@pytest.mark.parametrize("skew", [-300, 300, 0, 299])
def test_signatures_within_five_minutes_either_way_verify(skew: int) -> None:
    verify(SECRET, BODY, sign(SECRET, BODY, NOW + skew), NOW)


@pytest.mark.parametrize("skew", [-301, 301, -86400])
def test_signatures_outside_the_tolerance_are_refused(skew: int) -> None:
    with pytest.raises(AuthenticationError, match="outside the 300 s tolerance"):
        verify(SECRET, BODY, sign(SECRET, BODY, NOW + skew), NOW)


def test_a_tampered_body_or_another_secret_is_refused() -> None:
    header = sign(SECRET, BODY, NOW)
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY.replace(b"1}", b"2}"), header, NOW)
    with pytest.raises(AuthenticationError, match="does not match"):
        verify("other", BODY, header, NOW)


def test_the_timestamp_is_part_of_what_is_signed() -> None:
    mac = sign(SECRET, BODY, NOW).split("v1=")[1]
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY, f"t={NOW + 1},v1={mac}", NOW)


def test_any_of_several_signatures_may_match_during_rotation() -> None:
    old = sign("old-secret", BODY, NOW).split("v1=")[1]
    new = sign(SECRET, BODY, NOW).split("v1=")[1]
    verify(SECRET, BODY, f"t={NOW},v1={old},v1={new}", NOW)
    verify(SECRET, BODY, f"t={NOW}, v1={new.upper()}", NOW)  # spaces and upper-case hex are fine


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (None, "missing X-Lakehook-Signature"),
        ("", "missing X-Lakehook-Signature"),
        ("garbage", "t=<unix seconds>,v1=<hex hmac-sha256>"),
        (f"t={NOW}", "t=<unix seconds>,v1=<hex hmac-sha256>"),
        ("v1=abcd", "t=<unix seconds>,v1=<hex hmac-sha256>"),
        ("t=abc,v1=abcd", "not unix seconds"),
        ("t=-5,v1=abcd", "not unix seconds"),
        ("t=²,v1=abcd", "not unix seconds"),  # isdigit() is true, int() raised ValueError: once a 500
        ("t=١٧٢٥٩٦٣٣٣٠,v1=abcd", "not unix seconds"),  # Arabic-Indic digits are not unix seconds
        (f"t={NOW},v1=é" + "0" * 63, "does not match"),  # non-ASCII: compare_digest raised TypeError, a 500
        (f"t={NOW},v1=", "does not match"),
    ],
)
def test_malformed_headers_are_authentication_errors(header: str | None, words: str) -> None:
    with pytest.raises(AuthenticationError, match=words):
        verify(SECRET, BODY, header, NOW)


def test_parse_signature_splits_timestamp_and_candidates() -> None:
    assert parse_signature("t=12,v1=AB,v0=cd,v1=ef") == (12, ["ab", "ef"])


# --- producers ---------------------------------------------------------------------------------


class CountingProducerRegistry(InMemoryProducerRegistry):
    """The in-memory registry, counting reads: the authenticator's cache must spare them."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_producer(self, producer_id: str) -> Producer | None:
        self.reads += 1
        return super().get_producer(producer_id)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


SPEC = ProducerSpec.model_validate({"assetKeyPrefixes": ["paimon://lake/ods_db/"], "description": "orders"})


def test_register_creates_a_producer_and_shows_its_secret_once() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    register = RegisterProducer(registry, secrets, "lakehook/", clock=lambda: 1000)
    first = register("orders-writer", SPEC)
    assert first.created and first.secret is not None and len(first.secret) == 64
    assert secrets.get_secret(first.producer.secret_ref) == first.secret
    assert first.producer.secret_ref == "lakehook/producers/orders-writer"

    again = RegisterProducer(registry, secrets, "lakehook/", clock=lambda: 2000)(
        "orders-writer", ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://spool/"]})
    )
    assert not again.created and again.secret is None
    assert again.producer.asset_key_prefixes == ["s3://spool/"]
    assert (again.producer.created_at, again.producer.updated_at) == (1000, 2000)
    assert secrets.get_secret(first.producer.secret_ref) == first.secret  # an update keeps the secret


def test_rotation_replaces_the_secret_and_shows_the_new_one() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    register = RegisterProducer(registry, secrets, "lakehook/")
    old = register("p", SPEC).secret
    rotated = register("p", SPEC, rotate_secret=True)
    assert not rotated.created and rotated.secret not in (None, old)
    assert secrets.get_secret(rotated.producer.secret_ref) == rotated.secret


def test_register_refuses_a_malformed_id_as_a_validation_error() -> None:
    registry = InMemoryProducerRegistry()
    with pytest.raises(ValidationError) as raised:
        RegisterProducer(registry, InMemorySecretStore(), "lakehook/")("bad id!", SPEC)
    assert raised.value.field == "producerId"
    assert registry.producers == {}


def _authenticator(ttl: float) -> tuple[PushAuthenticator, CountingProducerRegistry, Clock, str]:
    registry, secrets, clock = CountingProducerRegistry(), InMemorySecretStore(), Clock(NOW)
    secret = RegisterProducer(registry, secrets, "lakehook/")("p", SPEC).secret
    assert secret is not None
    registry.reads = 0
    return PushAuthenticator(registry, secrets, 300, ttl, clock=clock), registry, clock, secret


def test_authenticate_answers_the_producer_and_caches_it() -> None:
    auth, registry, clock, secret = _authenticator(ttl=30)
    producer = auth.authenticate("p", sign(secret, BODY, NOW), BODY)
    assert producer.producer_id == "p" and producer.asset_key_prefixes == ["paimon://lake/ods_db/"]
    clock.now += 29
    auth.authenticate("p", sign(secret, BODY, int(clock.now)), BODY)
    assert registry.reads == 1  # warm: no store request
    clock.now += 2
    auth.authenticate("p", sign(secret, BODY, int(clock.now)), BODY)
    assert registry.reads == 2  # the TTL passed: read again, so a change applies


@pytest.mark.parametrize(
    ("producer_id", "words"),
    [
        (None, "missing X-Lakehook-Producer"),
        ("", "missing X-Lakehook-Producer"),
        ("nobody", "unknown producer 'nobody'"),
        ("x" * 3000, "not a valid producer id"),  # never used as a store key (DynamoDB caps keys at 2 KB)
        ("p\n", "not a valid producer id"),
    ],
)
def test_unknown_or_missing_producers_are_refused(producer_id: str | None, words: str) -> None:
    auth, registry, _, secret = _authenticator(ttl=30)
    with pytest.raises(AuthenticationError, match=words):
        auth.authenticate(producer_id, sign(secret, BODY, NOW), BODY)
    if producer_id is None or producer_id in ("", "p\n") or len(producer_id) > 128:
        assert registry.reads == 0


def test_a_producer_without_its_secret_is_refused() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    RegisterProducer(registry, secrets, "lakehook/")("p", SPEC)
    secrets.secrets.clear()
    auth = PushAuthenticator(registry, secrets, 300, 30, clock=Clock(NOW))
    with pytest.raises(AuthenticationError, match="no signing secret"):
        auth.authenticate("p", sign("whatever", BODY, NOW), BODY)


def test_a_signature_by_a_rotated_secret_is_refused_once_the_cache_expires() -> None:
    registry, secrets, clock = InMemoryProducerRegistry(), InMemorySecretStore(), Clock(NOW)
    register = RegisterProducer(registry, secrets, "lakehook/")
    old = register("p", SPEC).secret
    auth = PushAuthenticator(registry, secrets, 300, 0, clock=clock)
    assert old is not None
    auth.authenticate("p", sign(old, BODY, NOW), BODY)
    new = register("p", SPEC, rotate_secret=True).secret
    assert new is not None
    with pytest.raises(AuthenticationError, match="does not match"):
        auth.authenticate("p", sign(old, BODY, NOW), BODY)
    assert auth.authenticate("p", sign(new, BODY, NOW), BODY).producer_id == "p"
