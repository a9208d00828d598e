"""The PollStatusStore contract (ports.lakehouse), on the fake and on DynamoDB: a status reads back as written,
every field, and the last put replaces it whole (a report, not a lock): fields it leaves out are gone."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.domain.snapshots import PollStatus, SnapshotGap
from tests.contracts.conftest import Backend
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

ORDERS, PAYMENTS = "paimon://lake/ods/orders", "paimon://lake/ods/payments"
times = st.none() | st.integers(0, 2**53)
statuses = st.builds(
    PollStatus,
    asset_key=st.sampled_from([ORDERS, PAYMENTS]),
    last_polled_at=times,
    last_success_at=times,
    last_snapshot_id=st.none() | st.integers(-(2**63), 2**63 - 1),
    consecutive_failures=st.integers(0, 1000),
    last_error=st.none() | st.text(max_size=40),
    last_error_kind=st.none() | st.sampled_from(["SourceAccessError", "TableNotFoundError"]),
    last_error_at=times,
    next_attempt_at=times,
    warnings=st.lists(st.text(min_size=1, max_size=20), max_size=3).map(tuple),
)


def test_a_status_reads_back_as_written_and_the_last_put_replaces_it(backend: Backend) -> None:
    failing = PollStatus(
        asset_key=ORDERS,
        last_polled_at=10,
        consecutive_failures=2,
        last_error="AccessDenied",
        last_error_kind="SourceAccessError",
        last_error_at=10,
        next_attempt_at=70,
        warnings=("a future instant",),
    )
    backend.polls.put(failing)

    assert backend.polls.get(ORDERS) == failing
    assert backend.polls.get(PAYMENTS) is None
    recovered = PollStatus(asset_key=ORDERS, last_polled_at=80, last_success_at=80, last_snapshot_id=7)
    backend.polls.put(recovered)
    assert backend.polls.get(ORDERS) == recovered  # no error, backoff or warning left from the failing one


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(puts=st.lists(statuses, min_size=1, max_size=4))
def test_each_asset_keeps_the_status_it_was_last_given(
    fresh_backend: Callable[[], Backend], puts: list[PollStatus]
) -> None:
    backend = fresh_backend()
    for status in puts:
        backend.polls.put(status)

    for asset in (ORDERS, PAYMENTS):
        last = [s for s in puts if s.asset_key == asset]
        assert backend.polls.get(asset) == (last[-1] if last else None)


@pytest.mark.parametrize(
    "gap",
    [
        SnapshotGap(after_snapshot_id=3, resumed_at_snapshot_id=9, missed=5),
        SnapshotGap(after_snapshot_id=3, resumed_at_snapshot_id=9),
        SnapshotGap(after_snapshot_id=3, resumed_at_snapshot_id=None),
    ],
)
def test_a_status_keeps_the_gap_it_found(backend: Backend, gap: SnapshotGap) -> None:
    status = PollStatus(asset_key=ORDERS, last_polled_at=10, last_gap=gap)
    backend.polls.put(status)
    assert backend.polls.get(ORDERS) == status
