"""The AssetRegistry contract (ports.store), on the fake and on DynamoDB: a registration is created once and then
replaced, listed in key order in pages (a foreign token refused), and indexed under its watch keys so a commit
notice finds it in one lookup; a re-registration that changes its watch keys moves it in the index."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import WatchEntry, location_watch_key, table_watch_key
from lakehook.domain.errors import ValidationError
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

T0 = 1_750_000_000_000


def paimon(table: str, warehouse: str = "s3://lake/wh", **props: str) -> AssetRegistration:
    database, name = table.split(".")
    source: dict[str, Any] = {"catalog": "lake", "properties": {"warehouse": warehouse, **props}, "table": table}
    return AssetRegistration.model_validate(
        {"assetKey": f"paimon://lake/{database}/{name}", "format": "paimon", "source": source}
    )


def delta(key: str, location: str) -> AssetRegistration:
    return AssetRegistration.model_validate(
        {"assetKey": key, "format": "delta", "source": {"catalog": "lake", "location": location}}
    )


def test_a_registration_is_created_once_then_replaced(backend: Backend) -> None:
    registry = backend.registry
    first = paimon("ods.orders")
    second = first.model_copy(update={"description": "the orders, again"})

    assert registry.put_asset(first, T0) is True
    assert registry.get_asset(first.asset_key) == first
    assert registry.put_asset(second, T0 + 1) is False
    assert registry.get_asset(first.asset_key) == second
    assert registry.get_asset("paimon://lake/ods/absent") is None


def test_assets_are_listed_in_key_order_in_pages(backend: Backend) -> None:
    registry = backend.registry
    tables = ["ods.c", "ods.a", "dwd.b", "ods.b", "dwd.a"]
    for table in tables:
        registry.put_asset(paimon(table), T0)

    keys: list[str] = []
    token: str | None = None
    for _ in range(len(tables) + 1):
        page = registry.list_assets(2, token)
        assert len(page.items) <= 2
        keys += [a.asset_key for a in page.items]
        token = page.next_token
        if token is None:
            break
    assert keys == sorted(paimon(t).asset_key for t in tables)
    assert [a.asset_key for a in registry.list_assets(100).items] == keys
    with pytest.raises(ValidationError):
        registry.list_assets(2, "not a token")


def test_a_registered_table_is_found_under_each_of_its_watch_keys(backend: Backend) -> None:
    registry = backend.registry
    glue = paimon("ods.orders", "s3://lake/wh/", metastore="GLUE", **{"client.region": "eu-west-1"})
    twin = AssetRegistration.model_validate(
        {**glue.model_dump(by_alias=True, exclude_none=True), "assetKey": "paimon://other/ods/orders"}
    )
    path = delta("delta://lake/ods/events", "s3a://lake/delta/events/")
    sourceless = AssetRegistration.model_validate({"assetKey": "paimon://x/a/b", "format": "paimon"})
    for asset in (glue, twin, path, sourceless):
        registry.put_asset(asset, T0)

    by_table = registry.assets_watching(table_watch_key("ods.orders"))
    assert by_table == [
        WatchEntry(glue.asset_key, catalog_type="glue", region="eu-west-1"),
        WatchEntry(twin.asset_key, catalog_type="glue", region="eu-west-1"),
    ]
    assert registry.assets_watching(location_watch_key("s3://lake/wh/ods.db/orders")) == by_table
    assert registry.assets_watching(location_watch_key("s3://lake/delta/events")) == [WatchEntry(path.asset_key)]
    assert registry.assets_watching(table_watch_key("ods.absent")) == []


def test_a_re_registration_moves_the_table_in_the_watch_index(backend: Backend) -> None:
    registry = backend.registry
    registry.put_asset(delta("delta://lake/ods/events", "s3://lake/delta/events"), T0)
    registry.put_asset(delta("delta://lake/ods/events", "s3://lake/delta/events-v2"), T0 + 1)

    assert registry.assets_watching(location_watch_key("s3://lake/delta/events")) == []
    assert registry.assets_watching(location_watch_key("s3://lake/delta/events-v2")) == [
        WatchEntry("delta://lake/ods/events")
    ]
    registry.put_asset(AssetRegistration.model_validate({"assetKey": "delta://lake/ods/events", "format": "delta"}), T0)
    assert registry.assets_watching(location_watch_key("s3://lake/delta/events-v2")) == []
