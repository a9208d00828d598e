"""The WatermarkStore, DeferralStore, AliasStore and ProducerRegistry contracts, on the fake and on DynamoDB:
compare-and-set on a watermark's version; one pending deferral per group (or recheck per asset), found when due in
the order of the due-time index and marked due once; aliases keep their creation time and are listed by name in
pages; producers are listed by id; an event source belongs to one producer at a time."""

from __future__ import annotations

import pytest

from lakehook.domain.aliases import Alias
from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.producers import Producer
from lakehook.ports.rules import AssetRecheck, Deferral
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

NS, ASSET = "poller", "paimon://lake/ods/orders"


def test_a_watermark_is_a_compare_and_set_on_its_version(backend: Backend) -> None:
    store = backend.watermarks
    first = store.put(NS, ASSET, "offset", {"snapshot": 1}, 10, expected_version=0)
    with pytest.raises(ConflictError):
        store.put(NS, ASSET, "offset", {"snapshot": 2}, 20, expected_version=0)  # it exists now
    with pytest.raises(ConflictError):
        store.put(NS, ASSET, "offset", {"snapshot": 2}, 20, expected_version=5)
    second = store.put(NS, ASSET, "offset", {"snapshot": 2}, 20, expected_version=1)
    blind = store.put(NS, ASSET, "offset", [1, "two", None, 3.5], 30)

    assert (first.version, second.version, blind.version) == (1, 2, 3)
    assert store.get(NS, ASSET, "offset") == blind
    assert blind.value == [1, "two", None, 3.5] and blind.updated_at == 30
    assert store.get(NS, ASSET, "absent") is None


def test_watermarks_are_listed_by_key_and_deleted_by_version(backend: Backend) -> None:
    store = backend.watermarks
    for key in ("b", "a", "c"):
        store.put(NS, ASSET, key, key, 10)
    store.put(NS, "paimon://lake/ods/other", "z", 1, 10)
    store.put("other", ASSET, "y", 1, 10)

    assert [r.key for r in store.list(NS, ASSET)] == ["a", "b", "c"]
    with pytest.raises(ConflictError):
        store.delete(NS, ASSET, "a", expected_version=2)
    with pytest.raises(ConflictError):
        store.delete(NS, ASSET, "absent", expected_version=1)
    assert store.delete(NS, ASSET, "a", expected_version=1) is True
    assert store.delete(NS, ASSET, "b") is True
    assert store.delete(NS, ASSET, "b") is False
    assert [r.key for r in store.list(NS, ASSET)] == ["c"]


def test_a_group_keeps_one_pending_deferral_the_latest_asked_for(backend: Backend) -> None:
    store = backend.deferrals
    store.defer(Deferral("dwd", "g", 500))
    store.defer(Deferral("dwd", "g", 300))
    store.defer(Deferral("dws", "g", 400))

    assert store.due(299, 10) == []
    assert store.due(1000, 10) == [Deferral("dwd", "g", 300), Deferral("dws", "g", 400)]
    assert store.mark_due(Deferral("dwd", "g", 500), 1000) is False  # not the pending one any more
    assert store.mark_due(Deferral("dwd", "g", 300), 1000) is True
    assert store.mark_due(Deferral("dwd", "g", 300), 1001) is False  # once
    assert store.due(1000, 10) == [Deferral("dws", "g", 400)]
    store.defer(Deferral("dwd", "g", 300))  # asked again after it was marked: pending again
    assert store.due(1000, 1) == [Deferral("dwd", "g", 300)]


def test_rechecks_and_deferrals_due_at_once_come_in_the_index_order(backend: Backend) -> None:
    store = backend.deferrals
    store.recheck([ASSET, "paimon://lake/ods/a"], 100)
    store.defer(Deferral("zeta", "g", 100))
    store.defer(Deferral("Alpha", "g", 100))
    store.recheck([ASSET], 50)  # one pending recheck per asset: the latest

    # oldest first; at one due time by what the index sorts by: the rule and group, or ``ASSET`` and the asset key
    assert store.due(100, 10) == [
        AssetRecheck(ASSET, 50),
        AssetRecheck("paimon://lake/ods/a", 100),
        Deferral("Alpha", "g", 100),
        Deferral("zeta", "g", 100),
    ]
    assert store.mark_due(AssetRecheck(ASSET, 50), 100) is True
    assert store.mark_due(AssetRecheck(ASSET, 50), 100) is False
    assert len(store.due(100, 2)) == 2


def test_an_alias_keeps_its_creation_time_and_aliases_are_listed_by_name(backend: Backend) -> None:
    store = backend.aliases
    for name in ("ods_c", "ods_a", "ods_b"):
        assert store.put_alias(Alias(name=name, asset_keys=(ASSET,), created_at=10, updated_at=10)) is True
    replaced = Alias(
        name="ods_a", asset_keys=(ASSET, "paimon://lake/ods/b"), description="two", created_at=20, updated_at=20
    )

    assert store.put_alias(replaced) is False
    assert store.get_alias("ods_a") == replaced.model_copy(update={"created_at": 10})
    assert store.get_alias("absent") is None
    names: list[str] = []
    token: str | None = None
    for _ in range(5):
        page = store.list_aliases(2, token)
        assert len(page.items) <= 2
        names += [a.name for a in page.items]
        token = page.next_token
        if token is None:
            break
    assert names == ["ods_a", "ods_b", "ods_c"]
    with pytest.raises(ValidationError):
        store.list_aliases(2, "not a token")


def producer(producer_id: str, at: int = 10) -> Producer:
    return Producer(
        producer_id=producer_id,
        asset_key_prefixes=["paimon://lake/ods/"],
        secret_ref=f"lakehook-producers/{producer_id}",
        created_at=at,
        updated_at=at,
    )


def test_producers_are_kept_and_listed_by_id(backend: Backend) -> None:
    registry = backend.producers
    for producer_id in ("writer-b", "writer-a", "writer-c"):
        assert registry.put_producer(producer(producer_id)) is True
    assert registry.put_producer(producer("writer-a", at=20)) is False

    assert registry.get_producer("writer-a") == producer("writer-a", at=20)
    assert registry.get_producer("absent") is None
    first = registry.list_producers(2)
    assert first.next_token is not None
    rest = registry.list_producers(2, first.next_token)
    assert [p.producer_id for p in [*first.items, *rest.items]] == ["writer-a", "writer-b", "writer-c"]
    assert rest.next_token is None
    with pytest.raises(ValidationError):
        registry.list_producers(2, "not a token")


def test_an_event_source_belongs_to_one_producer_at_a_time(backend: Backend) -> None:
    registry = backend.producers
    registry.claim_event_source("com.example.orders", "writer-a")
    registry.claim_event_source("com.example.orders", "writer-a")  # again: still its own

    with pytest.raises(ConflictError):
        registry.claim_event_source("com.example.orders", "writer-b")
    registry.release_event_source("com.example.orders", "writer-b")  # not its to give up: nothing
    assert registry.event_source_owner("com.example.orders") == "writer-a"
    registry.release_event_source("com.example.orders", "writer-a")
    assert registry.event_source_owner("com.example.orders") is None
    registry.claim_event_source("com.example.orders", "writer-b")
    assert registry.event_source_owner("com.example.orders") == "writer-b"
    registry.release_event_source("com.example.absent", "writer-b")
