"""The StateHistory contract (ports.rules), on the fake and on DynamoDB: past states by version range, and the
snapshot log by order, where a snapshot logged before keeps when (and as what) it was first logged."""

from __future__ import annotations

import pytest

from lakehook.domain.state import AssetState
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

ORDERS, PAYMENTS = "paimon://lake/ods/orders", "paimon://lake/ods/payments"


def state(version: int, asset: str = ORDERS) -> AssetState:
    return AssetState(asset_key=asset, version=version, latest_snapshot_id=version * 10, latest_watermark=version)


def snapshot(order: int, kind: str = "APPEND") -> SnapshotRecord:
    return SnapshotRecord(snapshot_id=order, order=order, commit_kind=kind, commit_time=1_700_000_000_000 + order)


def test_past_states_are_kept_and_read_by_version_range(backend: Backend) -> None:
    backend.history.record({ORDERS: [state(3), state(1), state(2)], PAYMENTS: [state(2, PAYMENTS)]}, 10)
    backend.history.record({ORDERS: [state(2), state(4)]}, 20)  # a redelivery, and one more

    assert backend.history.between(ORDERS, 2, 3) == [state(2), state(3)]
    assert backend.history.between(ORDERS, 0, 100) == [state(v) for v in (1, 2, 3, 4)]
    assert backend.history.between(ORDERS, 3, 2) == []
    assert backend.history.between(PAYMENTS, 1, 5) == [state(2, PAYMENTS)]
    assert backend.history.between("paimon://lake/ods/none", 0, 5) == []


def test_a_logged_snapshot_keeps_when_and_as_what_it_was_first_logged(backend: Backend) -> None:
    backend.history.record_snapshots({ORDERS: [snapshot(5), snapshot(5, "OVERWRITE"), snapshot(3)]}, 100)
    backend.history.record_snapshots({ORDERS: [snapshot(5, "COMPACT"), snapshot(9)], PAYMENTS: [snapshot(1)]}, 200)

    assert backend.history.snapshots_after(ORDERS, 0, 10) == [
        LoggedSnapshot(snapshot(3), 100),
        LoggedSnapshot(snapshot(5), 100),
        LoggedSnapshot(snapshot(9), 200),
    ]


def test_log_snapshot_tells_whether_it_logged_it(backend: Backend) -> None:
    backend.history.record_snapshots({ORDERS: [snapshot(3)]}, 100)

    assert backend.history.log_snapshot(ORDERS, snapshot(5), 200) is True
    assert backend.history.log_snapshot(ORDERS, snapshot(5, "COMPACT"), 300) is False
    assert backend.history.log_snapshot(ORDERS, snapshot(3), 300, late=True) is False
    assert backend.history.log_snapshot(ORDERS, snapshot(2), 300, late=True) is True
    assert backend.history.snapshots_after(ORDERS, 0, 10) == [
        LoggedSnapshot(snapshot(2), 300, late=True),  # a late push's: it says nothing of the snapshots before it
        LoggedSnapshot(snapshot(3), 100),
        LoggedSnapshot(snapshot(5), 200),
    ]


@pytest.mark.parametrize(("after", "limit", "orders"), [(3, 10, [5, 9]), (0, 2, [3, 5]), (9, 10, []), (4, 1, [5])])
def test_snapshots_after_an_order_come_oldest_first_up_to_the_limit(
    backend: Backend, after: int, limit: int, orders: list[int]
) -> None:
    backend.history.record_snapshots({ORDERS: [snapshot(9), snapshot(3), snapshot(5)]}, 100)

    found = backend.history.snapshots_after(ORDERS, after, limit)

    assert [s.record.order for s in found] == orders
