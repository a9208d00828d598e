"""HMAC push signatures, and the producer use cases built on them (with in-memory fakes)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lakehook.domain.errors import AuthenticationError, ValidationError
from lakehook.domain.producers import Producer, ProducerSpec
from lakehook.domain.secret_names import ProducerSecrets
from lakehook.domain.signing import parse_signature, sign, verify
from lakehook.usecases.producers import NOT_VERIFIED, PushAuthenticator, RegisterProducer
from tests.fakes.memory import InMemoryProducerRegistry, InMemorySecretStore

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


PRODUCER_SECRETS = ProducerSecrets.of("lakehook-producers/stack/", "lakehook/stack/")
SPEC = ProducerSpec.model_validate({"assetKeyPrefixes": ["paimon://lake/ods_db/"], "description": "orders"})


def test_register_creates_a_producer_and_shows_its_secret_once() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    register = RegisterProducer(registry, secrets, PRODUCER_SECRETS, clock=lambda: 1000)
    first = register("orders-writer", SPEC)
    assert first.created and first.secret is not None and len(first.secret) == 64
    assert secrets.get_secret(first.producer.secret_ref) == first.secret
    assert first.producer.secret_ref == "lakehook-producers/stack/orders-writer"

    again = RegisterProducer(registry, secrets, PRODUCER_SECRETS, clock=lambda: 2000)(
        "orders-writer", ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://spool/"]})
    )
    assert not again.created and again.secret is None
    assert again.producer.asset_key_prefixes == ["s3://spool/"]
    assert (again.producer.created_at, again.producer.updated_at) == (1000, 2000)
    assert secrets.get_secret(first.producer.secret_ref) == first.secret  # an update keeps the secret


def test_rotation_replaces_the_secret_and_shows_the_new_one() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    register = RegisterProducer(registry, secrets, PRODUCER_SECRETS)
    old = register("p", SPEC).secret
    rotated = register("p", SPEC, rotate_secret=True)
    assert not rotated.created and rotated.secret not in (None, old)
    assert secrets.get_secret(rotated.producer.secret_ref) == rotated.secret


def test_register_refuses_a_malformed_id_as_a_validation_error() -> None:
    registry = InMemoryProducerRegistry()
    with pytest.raises(ValidationError) as raised:
        RegisterProducer(registry, InMemorySecretStore(), PRODUCER_SECRETS)("bad id!", SPEC)
    assert raised.value.field == "producerId"
    assert registry.producers == {}


class CountingSecretStore(InMemorySecretStore):
    """The in-memory secret store, counting reads: the authenticator's cache must spare them."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_secret(self, ref: str) -> str:
        self.reads += 1
        return super().get_secret(ref)


@dataclass
class Authenticating:
    auth: PushAuthenticator
    register: RegisterProducer
    registry: CountingProducerRegistry
    secrets: CountingSecretStore
    clock: Clock
    secret: str

    def push(self, secret: str | None = None, producer_id: str = "p") -> Producer:
        return self.auth.authenticate(producer_id, sign(secret or self.secret, BODY, int(self.clock.now)), BODY)


def _authenticating(ttl: float = 30, kept: float = 0) -> Authenticating:
    registry, secrets, clock = CountingProducerRegistry(), CountingSecretStore(), Clock(NOW)
    register = RegisterProducer(registry, secrets, PRODUCER_SECRETS)
    secret = register("p", SPEC).secret
    assert secret is not None
    registry.reads = secrets.reads = 0
    auth = PushAuthenticator(registry, secrets, 300, ttl, clock=clock, registration_seconds=kept)
    return Authenticating(auth, register, registry, secrets, clock, secret)


def test_a_kept_registration_spares_the_read_of_every_push_within_its_bound() -> None:
    a = _authenticating(ttl=3600, kept=30)
    for _ in range(5):
        a.push()
        a.clock.now += 7  # 0, 7, 14, 21, 28 s after the read: all within the bound
    assert (a.registry.reads, a.auth.registration_reads_saved) == (1, 4)
    a.clock.now += 2  # 30 s after the read
    a.push()
    assert a.registry.reads == 2


def test_a_narrowed_prefix_written_elsewhere_applies_within_the_bound_and_one_written_here_at_once() -> None:
    a = _authenticating(ttl=3600, kept=30)
    assert a.push().may_write("paimon://lake/ods_db/orders")
    a.register("p", ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://spool/"]}))  # another function wrote it
    assert a.push().may_write("paimon://lake/ods_db/orders")  # the kept registration, for at most the bound
    a.clock.now += 30
    assert not a.push().may_write("paimon://lake/ods_db/orders")
    here = RegisterProducer(a.registry, a.secrets, PRODUCER_SECRETS, changed=a.auth.forget)
    here("p", SPEC)  # written by this process: forgotten at once
    assert a.push().may_write("paimon://lake/ods_db/orders")


def test_a_rotated_secret_is_accepted_at_once_and_the_old_one_ends_within_the_bound() -> None:
    a = _authenticating(ttl=3600, kept=30)
    a.push()
    new = a.register("p", SPEC, rotate_secret=True).secret
    assert new is not None
    assert a.push(new).producer_id == "p"  # refused by the kept registration, so read again: accepted
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push()  # the fresh read replaced the kept registration: the old secret is refused now
    a.register("p", SPEC, rotate_secret=True)
    assert a.push(new).producer_id == "p"  # kept: the previous secret for at most the bound
    a.clock.now += 30
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push(new)


def test_an_unknown_producer_is_never_kept() -> None:
    a = _authenticating(ttl=3600, kept=30)
    for _ in range(3):
        with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
            a.push(producer_id="nobody")
    assert a.registry.reads == 3


def test_authenticate_answers_the_producer_and_caches_only_its_secret() -> None:
    a = _authenticating(ttl=30)
    producer = a.push()
    assert producer.producer_id == "p" and producer.asset_key_prefixes == ["paimon://lake/ods_db/"]
    a.clock.now += 29
    a.push()
    # the producer is read on every request (consistently), its secret once
    assert (a.registry.reads, a.secrets.reads) == (2, 1)
    a.clock.now += 2
    a.push()
    assert (a.registry.reads, a.secrets.reads) == (3, 2)  # past the TTL: read again


def test_a_rotated_secret_is_refused_at_once_despite_the_cache() -> None:
    a = _authenticating(ttl=3600)
    a.push()
    new = a.register("p", SPEC, rotate_secret=True).secret
    assert new is not None
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push()
    assert a.push(new).producer_id == "p"
    # rotating again (and again) never lets an older secret back in
    newer = a.register("p", SPEC, rotate_secret=True).secret
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push(new)
    assert a.push(newer).producer_id == "p"


def test_narrowed_prefixes_apply_to_the_next_request() -> None:
    a = _authenticating(ttl=3600)
    assert a.push().may_write("paimon://lake/ods_db/orders")
    a.register("p", ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://spool/"]}))
    producer = a.push()  # same secret: still valid
    assert not producer.may_write("paimon://lake/ods_db/orders") and producer.may_write("s3://spool/x")


def test_a_secret_changed_outside_lakehook_applies_within_the_ttl() -> None:
    a = _authenticating(ttl=30)
    a.push()
    ref = a.registry.get_producer("p").secret_ref  # type: ignore[union-attr]
    a.secrets.put_secret(ref, "f" * 64)  # an operator edits Secrets Manager directly
    assert a.push().producer_id == "p"  # the cached secret, for at most the TTL
    a.clock.now += 30
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push()
    assert a.push("f" * 64).producer_id == "p"


@pytest.mark.parametrize(
    ("producer_id", "words"),
    [
        (None, "missing X-Lakehook-Producer"),
        ("", "missing X-Lakehook-Producer"),
        ("nobody", NOT_VERIFIED),
        ("x" * 3000, "not a valid producer id"),  # never used as a store key (DynamoDB caps keys at 2 KB)
        ("p\n", "not a valid producer id"),
    ],
)
def test_unknown_or_missing_producers_are_refused(producer_id: str | None, words: str) -> None:
    a = _authenticating()
    with pytest.raises(AuthenticationError, match=words):
        a.auth.authenticate(producer_id, sign(a.secret, BODY, NOW), BODY)
    if producer_id is None or producer_id in ("", "p\n") or len(producer_id) > 128:
        assert a.registry.reads == 0


@pytest.mark.parametrize("header", ["garbage", "t=abc,v1=00", f"t={NOW - 3600},v1=00", f"t={NOW},v1=" + "0" * 64])
def test_known_and_unknown_producers_answer_alike_for_any_signature(header: str) -> None:
    a = _authenticating()
    answers = []
    for producer_id in ("p", "nobody"):
        with pytest.raises(AuthenticationError) as raised:
            a.auth.authenticate(producer_id, header, BODY)
        answers.append(str(raised.value))
    assert answers[0] == answers[1]


def test_a_producer_without_its_secret_is_refused_like_an_unknown_one() -> None:
    a = _authenticating()
    a.secrets.secrets.clear()
    with pytest.raises(AuthenticationError, match=NOT_VERIFIED):
        a.push()


@given(position=st.integers(0, 63), digit=st.sampled_from("0123456789abcdef"))
def test_a_signature_altered_at_any_hex_digit_is_refused(position: int, digit: str) -> None:
    """Every one of the 64 hex digits counts, the tail too (a comparison cut to a prefix would let a forged tail
    through)."""
    mac = sign(SECRET, BODY, NOW).split("v1=")[1]
    assume(mac[position] != digit)
    forged = mac[:position] + digit + mac[position + 1 :]
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY, f"t={NOW},v1={forged}", NOW)


def test_a_signature_whose_last_hex_digit_differs_is_refused() -> None:
    mac = sign(SECRET, BODY, NOW).split("v1=")[1]
    forged = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY, f"t={NOW},v1={forged}", NOW)
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY, f"t={NOW},v1={mac[:16]}", NOW)  # a prefix alone is no signature


def test_a_part_without_a_value_is_skipped_not_the_end_of_the_header() -> None:
    mac = sign(SECRET, BODY, NOW).split("v1=")[1]
    verify(SECRET, BODY, f"scheme,t={NOW},v1={mac}", NOW)  # parts after one without "=" are still read
    with pytest.raises(AuthenticationError, match="does not match"):
        verify(SECRET, BODY, f"t={NOW},v1={mac}=0", NOW)  # a value is all after the first "="


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("t=abc,v1=abcd", "signature timestamp t= is not unix seconds"),
        ("garbage", "signature header must be t=<unix seconds>,v1=<hex hmac-sha256>"),
        (f"t={NOW},v1=abcd", "signature does not match the body"),
    ],
)
def test_a_refusal_says_exactly_why(header: str, message: str) -> None:
    """The 401's message, as a producer reads it (docs/api.md): exactly this text."""
    with pytest.raises(AuthenticationError) as refused:
        verify(SECRET, BODY, header, NOW)
    assert str(refused.value) == message
