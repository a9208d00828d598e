"""The asset routes' use cases on fakes: ``RegisterAsset`` checks everything before it writes (a dry run writes
nothing), and ``ReadAssetState`` answers the state, the registration and the poll status together."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.answers.assets import PollStatusAnswer
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.domain.secret_names import ProducerSecrets, SecretNames
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.usecases.assets import ReadAssetState, RegisterAsset
from lakehook.usecases.ingest_state import advance_state
from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore, InMemorySecretStore

ORDERS = "iceberg://lake/ods/orders"
NAMES = SecretNames("lakehook/test/")


class PollStatuses(PollStatusStore):
    def __init__(self) -> None:
        self.statuses: dict[str, PollStatus] = {}

    def get(self, asset_key: str) -> PollStatus | None:
        return self.statuses.get(asset_key)

    def put(self, status: PollStatus) -> None:
        self.statuses[status.asset_key] = status


def registration(**properties: str) -> AssetRegistration:
    return AssetRegistration.model_validate(
        {
            "assetKey": ORDERS,
            "format": "iceberg",
            "source": {"catalog": "lake", "table": "ods.orders", "properties": {"type": "sql", **properties}},
        }
    )


@pytest.fixture
def world() -> tuple[RegisterAsset, InMemoryAssetRegistry, InMemorySecretStore]:
    registry, secrets = InMemoryAssetRegistry(), InMemorySecretStore()
    register = RegisterAsset(
        registry,
        secrets,
        producer_secrets=ProducerSecrets.of("lakehook-producers/test/", "lakehook/test/"),
        secret_names=NAMES,
        url_policy=UrlPolicy(),
        clock=lambda: 1_000,
    )
    return register, registry, secrets


def test_a_source_secret_that_does_not_exist_is_a_400_and_nothing_is_written(world: Any) -> None:
    register, registry, secrets = world
    asset = registration(**{"s3.secret-access-key": "secretsmanager:lake-creds#key"})
    for dry_run in (True, False):
        with pytest.raises(ValidationError) as refused:
            register(asset, dry_run=dry_run)
        assert refused.value.field == "source.properties" and "s3.secret-access-key" in str(refused.value)
    assert registry.assets == {}
    secrets.put_secret(NAMES.resolve("lake-creds"), "{}")
    assert register(asset, dry_run=True) is False and registry.assets == {}  # checked, not written
    assert register(asset) is True and register(asset) is False  # created, then replaced
    assert registry.get_asset(ORDERS) == asset


def test_a_source_may_not_name_a_producers_signing_secret(world: Any) -> None:
    register, registry, _ = world
    with pytest.raises(ValidationError, match="is a producer signing secret") as refused:
        register(registration(**{"token": "secretsmanager:lakehook-producers/test/orders-writer"}), dry_run=True)
    assert refused.value.field == "source.properties"
    assert registry.assets == {}


def test_the_state_answer_joins_state_registration_and_poll_status() -> None:
    states, registry, polls = InMemoryAssetStore(), InMemoryAssetRegistry(), PollStatuses()
    read = ReadAssetState(states, registry, polls)
    with pytest.raises(NotFoundError):
        read(ORDERS)
    registry.put_asset(registration(), 0)
    assert read(ORDERS) == {"assetKey": ORDERS, "version": 0, "registered": True, "pollStatus": None}
    polls.put(PollStatus(asset_key=ORDERS, last_polled_at=5, consecutive_failures=2))
    assert read(ORDERS)["pollStatus"] == PollStatusAnswer.from_domain(polls.statuses[ORDERS]).dump()
    event = AssetEvent.model_validate(
        {"eventType": "SNAPSHOT_COMMITTED", "assetKey": "custom://pushed/t", "snapshotId": 7}
    )
    states.record_event(event, SourceType.PUSH, 10)
    advance_state(states, event, 10)
    pushed = read("custom://pushed/t")
    assert (pushed["latestSnapshotId"], pushed["registered"]) == (7, False) and "pollStatus" not in pushed
