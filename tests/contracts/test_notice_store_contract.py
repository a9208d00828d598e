"""The NoticeStore contract (ports.notices), on the fake and on DynamoDB: a notice is recorded on the table's
registration and listed with it; a missed commit keeps its first time until the next notice; a table that is not
registered records nothing, and a re-registration forgets its notices."""

from __future__ import annotations

import pytest

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.notice_state import NoticeState
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

T0 = 1_750_000_000_000


def delta(name: str, **extra: object) -> AssetRegistration:
    source = {"catalog": "lake", "location": f"s3://lake/{name}"}
    body = {"assetKey": f"delta://lake/db/{name}", "format": "delta", "source": source, **extra}
    return AssetRegistration.model_validate(body)


def test_a_notice_and_a_missed_commit_are_kept_with_the_registration(backend: Backend) -> None:
    orders, items = delta("orders"), delta("items", pollIntervalSeconds=600)
    for asset in (orders, items):
        backend.registry.put_asset(asset, T0)
    notices = backend.notices
    assert notices.notices(orders.asset_key) == NoticeState()

    notices.record_notice([orders.asset_key, items.asset_key], T0 + 1)
    notices.record_missed(orders.asset_key, T0 + 2)
    notices.record_missed(orders.asset_key, T0 + 3)  # the first time a commit was missed stays
    assert notices.notices(orders.asset_key) == NoticeState(T0 + 1, T0 + 2)
    assert notices.notices(items.asset_key) == NoticeState(T0 + 1)

    page = notices.list_planned(1)
    assert [(p.registration, p.notices) for p in page.items] == [(items, NoticeState(T0 + 1))]
    (rest,) = notices.list_planned(1, page.next_token).items
    assert (rest.registration, rest.notices) == (orders, NoticeState(T0 + 1, T0 + 2))

    notices.record_notice([orders.asset_key], T0 + 4)  # notices arrive again: the missed commit is forgotten
    assert notices.notices(orders.asset_key) == NoticeState(T0 + 4)


def test_an_unregistered_table_records_nothing_and_a_re_registration_forgets(backend: Backend) -> None:
    notices = backend.notices
    notices.record_notice(["delta://lake/db/absent"], T0)
    notices.record_missed("delta://lake/db/absent", T0)
    assert notices.notices("delta://lake/db/absent") == NoticeState()
    assert backend.registry.get_asset("delta://lake/db/absent") is None

    orders = delta("orders")
    backend.registry.put_asset(orders, T0)
    notices.record_notice([orders.asset_key], T0 + 1)
    backend.registry.put_asset(delta("orders", description="again"), T0 + 2)
    assert notices.notices(orders.asset_key) == NoticeState()
