"""Producer signing secrets have a namespace of their own (issue 24): no target, asset source or ``secret put``
may name one in any spelling, a producer's creation never overwrites a secret lakehook did not make, and the
lineage route takes a producer's secret as a plain bearer key only from a producer that opted in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.container import Container
from lakehook.domain.assets import AssetSource
from lakehook.domain.errors import AuthenticationError, ConflictError, ValidationError
from lakehook.domain.producers import Producer, ProducerSpec, api_key, split_api_key, validate_producer_id
from lakehook.ports import ProducerRegistry, SecretStore
from lakehook.settings import Settings
from lakehook.usecases.producers import secret_owner
from tests import wiring
from tests.fakes.memory import InMemoryProducerRegistry, InMemorySecretStore
from tests.hypothesis_profiles import examples

SETTINGS = Settings(producer_secret_prefix="lakehook-producers/prod/", secret_prefix="lakehook/prod/")
NAMESPACE = SETTINGS.producer_secrets


def producers(registry: ProducerRegistry, secrets: SecretStore) -> Container:
    """The ingest API's producer use cases, built through the container on these fakes."""
    return wiring.in_memory(SETTINGS, producer_registry=registry, secret_store=secrets)


SPEC = ProducerSpec.model_validate({"assetKeyPrefixes": ["paimon://lake/ods_db/"]})
PRODUCER_ID = st.from_regex(r"[A-Za-z0-9_.-]{1,40}", fullmatch=True)


def spellings(name: str) -> st.SearchStrategy[str]:
    """Names Secrets Manager (or a careless check) could take for ``name``."""
    arn = st.builds(
        lambda partition, region, account, suffix: (
            f"arn:{partition}:secretsmanager:{region}:{account}:secret:{name}{suffix}"
        ),
        st.sampled_from(["aws", "aws-cn", "aws-us-gov"]),
        st.sampled_from(["us-east-1", "eu-west-1"]),
        st.from_regex(r"\d{12}", fullmatch=True),
        st.sampled_from(["", "-AbC123"]),
    )
    slashed = st.integers(1, 3).map(lambda n: "/" * n + name)
    cased = st.sampled_from([name.upper(), name.title(), name.swapcase()])
    return st.one_of(st.just(name), arn, slashed, cased, arn.map(str.upper))


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), producer_id=PRODUCER_ID, legacy=st.booleans())
def test_every_spelling_of_a_producer_secret_is_held(data: st.DataObject, producer_id: str, legacy: bool) -> None:
    name = f"lakehook/prod/producers/{producer_id}" if legacy else NAMESPACE.name(producer_id)
    assert NAMESPACE.holds(data.draw(spellings(name)))


@settings(max_examples=examples(200), deadline=None)
@given(rest=st.from_regex(r"[A-Za-z0-9_+=.@-][A-Za-z0-9/_+=.@-]{0,40}", fullmatch=True))
def test_target_secrets_are_not_held(rest: str) -> None:
    if rest.casefold().startswith("producers/"):
        rest = f"x{rest}"
    assert not NAMESPACE.holds(f"lakehook/prod/{rest}")
    assert not NAMESPACE.holds(f"lakehook-producers/other-stack/{rest}")  # another stack's producers: not ours


def test_a_source_reaches_a_secret_through_secretsmanager_or_ssms_reference_path() -> None:
    source = AssetSource.model_validate(
        {
            "catalog": "glue",
            "table": "db.t",
            "properties": {
                "s3.secret-access-key": "secretsmanager:lakehook-producers/prod/p#key",
                "client.token": "ssm:/aws/reference/secretsmanager/lakehook/prod/producers/p",
                "s3.session-token": "ssm:/lakehook/prod/session",
                "uri": "https://glue.example",
            },
        }
    )
    reached = source.referenced_secrets()
    assert reached == {
        "s3.secret-access-key": "lakehook-producers/prod/p",
        "client.token": "lakehook/prod/producers/p",
    }
    assert all(NAMESPACE.holds(ref) for ref in reached.values())


def test_a_new_producer_never_overwrites_a_secret_lakehook_did_not_create() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    secrets.put_secret("lakehook-producers/prod/orders", "someone else's")
    register = producers(registry, secrets).register_producer
    spec = ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://x/"], "eventSources": ["etl.orders"]})
    with pytest.raises(ConflictError, match="did not create"):
        register("orders", spec)
    assert secrets.get_secret("lakehook-producers/prod/orders") == "someone else's"
    assert registry.producers == {} and registry.event_source_owner("etl.orders") is None


def test_a_dry_run_of_a_producer_whose_secret_name_is_taken_is_the_same_409() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    secrets.put_secret("lakehook-producers/prod/orders", "someone else's")
    with pytest.raises(ConflictError, match="did not create"):
        producers(registry, secrets).register_producer("orders", SPEC, dry_run=True)


class RacingSecretStore(InMemorySecretStore):
    """Someone creates the secret between the registration's check and its write."""

    def may_own_secret(self, name: str, owner: str) -> bool:
        found = super().may_own_secret(name, owner)
        self.put_secret(name, "created meanwhile")
        return found


def test_a_secret_created_between_the_check_and_the_write_still_wins_and_claims_are_released() -> None:
    registry, secrets = InMemoryProducerRegistry(), RacingSecretStore()
    spec = ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://x/"], "eventSources": ["etl.orders"]})
    with pytest.raises(ConflictError, match="did not create"):
        producers(registry, secrets).register_producer("orders", spec)
    assert secrets.get_secret("lakehook-producers/prod/orders") == "created meanwhile"
    assert registry.producers == {} and registry.event_source_owner("etl.orders") is None


def test_a_registration_retried_after_a_failure_reuses_the_secret_it_created() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    secrets.put_owned_secret("lakehook-producers/prod/orders", "half-done", secret_owner("orders"))  # no producer item
    made = producers(registry, secrets).register_producer("orders", SPEC)
    assert made.created and made.secret is not None
    assert secrets.get_secret(made.producer.secret_ref) == made.secret != "half-done"


def test_rotating_a_producer_registered_before_the_namespace_moves_its_secret_into_it() -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    legacy = "lakehook/prod/producers/orders"
    secrets.put_secret(legacy, "old")
    registry.put_producer(
        Producer(producerId="orders", assetKeyPrefixes=["s3://x/"], secretRef=legacy, createdAt=1, updatedAt=1)
    )
    register = producers(registry, secrets).register_producer
    assert register("orders", SPEC).producer.secret_ref == legacy  # an update alone keeps it
    rotated = register("orders", SPEC, rotate_secret=True)
    assert rotated.producer.secret_ref == "lakehook-producers/prod/orders"
    assert secrets.get_secret(rotated.producer.secret_ref) == rotated.secret
    assert registry.get_producer("orders").secret_ref == "lakehook-producers/prod/orders"  # type: ignore[union-attr]


@pytest.mark.parametrize("bearer", [False, True])
def test_the_bearer_key_is_taken_only_from_a_producer_that_opted_in(bearer: bool) -> None:
    registry, secrets = InMemoryProducerRegistry(), InMemorySecretStore()
    spec = ProducerSpec.model_validate({"assetKeyPrefixes": ["s3://x/"], "lineageBearer": bearer})
    made = producers(registry, secrets).register_producer("orders", spec)
    assert made.secret is not None and made.producer.lineage_bearer is bearer
    auth = producers(registry, secrets).push_authenticator
    key = api_key("orders", made.secret)
    if bearer:
        assert auth.authenticate_api_key(key).producer_id == "orders"
    else:
        with pytest.raises(AuthenticationError, match="lineageBearer is off"):
            auth.authenticate_api_key(key)
    # a wrong key answers as for an unknown producer, opted in or not: nothing about the producer is revealed
    with pytest.raises(AuthenticationError) as wrong:
        auth.authenticate_api_key(api_key("orders", "0" * 64))
    with pytest.raises(AuthenticationError) as unknown:
        auth.authenticate_api_key(api_key("nobody", "0" * 64))
    assert str(wrong.value) == str(unknown.value)


# --- a producer's scope -------------------------------------------------------------------------------------------


def a_producer(**fields: object) -> Producer:
    return Producer.model_validate(
        {
            "producerId": "orders",
            "secretRef": "lakehook-producers/prod/orders",
            "createdAt": 0,
            "updatedAt": 0,
            **fields,
        }
    )


@pytest.mark.parametrize(
    ("prefix", "asset_key", "covered"),
    [
        ("paimon://lake", "paimon://lake", True),  # the prefix itself
        ("paimon://lake", "paimon://lake/db/t", True),  # whole segments below it
        ("paimon://lake", "paimon://lakehouse/db/t", False),  # not a segment of its own
        ("paimon://lake/", "paimon://lake/db", True),  # a prefix ending in '/' covers what follows it
        ("paimon://lake/db", "paimon://lake/db.t", False),
        ("paimon://lake/db", "paimon://lake", False),
    ],
)
def test_a_prefix_covers_the_asset_keys_of_its_whole_segments(prefix: str, asset_key: str, covered: bool) -> None:
    assert a_producer(assetKeyPrefixes=["s3://elsewhere/", prefix]).may_write(asset_key) is covered


def test_a_producer_reads_and_writes_only_the_watermark_namespaces_it_lists() -> None:
    watcher = a_producer(assetKeyPrefixes=["s3://x/"], watermarkNamespaces=["kafka:orders", "cdc"])
    assert watcher.may_use_watermarks("cdc") and watcher.may_use_watermarks("kafka:orders")
    assert not watcher.may_use_watermarks("kafka") and not a_producer(assetKeyPrefixes=["s3://x/"]).may_use_watermarks(
        ""
    )


def test_a_bus_event_is_a_producers_only_from_its_accounts_or_else_the_stacks_own() -> None:
    listed = a_producer(assetKeyPrefixes=["s3://x/"], busAccounts=["111111111111", "222222222222"])
    assert listed.takes_bus_events_from("222222222222", "999999999999")
    assert not listed.takes_bus_events_from("999999999999", "999999999999")  # listed: the stack's own is not implied
    unlisted = a_producer(assetKeyPrefixes=["s3://x/"])
    assert unlisted.takes_bus_events_from("999999999999", "999999999999")
    assert not unlisted.takes_bus_events_from("111111111111", "999999999999")
    assert not unlisted.takes_bus_events_from("999999999999", None)  # the stack's account unknown: none


@pytest.mark.parametrize(
    ("key", "split"),
    [
        ("orders:abc123", ("orders", "abc123")),
        ("orders:a:b", ("orders", "a:b")),  # the producer id ends at the first ':' (an id never holds one)
        ("orders", None),
        ("orders:", None),
        (":abc", None),
        ("bad id:abc", None),
    ],
)
def test_a_bearer_key_splits_at_its_first_separator_into_a_well_formed_producer_and_a_secret(
    key: str, split: tuple[str, str] | None
) -> None:
    assert split_api_key(key) == split


@pytest.mark.parametrize("producer_id", ["", "bad id!", "x" * 129, "a:b"])
def test_a_malformed_producer_id_is_a_400_naming_it(producer_id: str) -> None:
    with pytest.raises(ValidationError) as refused:
        validate_producer_id(producer_id)
    assert refused.value.field == "producerId"
    assert str(refused.value) == "producerId is 1-128 letters, digits, '_', '-' or '.'"
    assert validate_producer_id("x" * 128) == "x" * 128
