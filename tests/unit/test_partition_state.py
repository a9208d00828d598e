"""latestPartitions: the partitions of the newest data-changing snapshot, whatever order the snapshots arrive in."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.answers.assets import AssetStateAnswer
from lakehook.domain.events import AssetEvent, SourceType
from lakehook.usecases.ingest_state import advance_state
from tests.fakes.memory import InMemoryAssetStore
from tests.hypothesis_profiles import examples

ORDERS = "paimon://lake/ods_db/ods_order_latest"
keys = st.lists(st.sampled_from([f"dt=2026-12-0{d}/region={r}" for d in range(1, 4) for r in ("eu", "us")]))


def snapshot(sid: int, kind: str, partitions: list[str] | None) -> AssetEvent:
    body: dict[str, Any] = {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": ORDERS,
        "snapshotId": sid,
        "commitKind": kind,
    }
    if partitions is not None:
        body["partitions"] = partitions
    return AssetEvent.model_validate(body)


commits = st.lists(
    st.tuples(st.sampled_from(["APPEND", "OVERWRITE", "COMPACT"]), st.one_of(st.none(), keys)), min_size=1, max_size=8
)


@settings(max_examples=examples(150))
@given(commits, st.randoms(use_true_random=False), st.integers(min_value=0, max_value=3))
def test_the_newest_data_change_names_the_partitions_in_any_arrival_order(
    history: list[tuple[str, list[str] | None]], random: Any, copies: int
) -> None:
    # GIVEN snapshots 1..n of one table, some compactions, some naming no partitions (unpartitioned or not told)
    events = [snapshot(i + 1, kind, parts) for i, (kind, parts) in enumerate(history)]
    # WHEN they arrive reordered, late, and some of them more than once
    arrivals = events + [random.choice(events) for _ in range(copies)]
    random.shuffle(arrivals)
    store = InMemoryAssetStore()
    for clock, event in enumerate(arrivals, start=1):
        store.record_event(event, SourceType.POLL, clock)
        advance_state(store, event, clock, recorded_at=clock)
    # THEN latestPartitions is what the newest data-changing snapshot touched (a compaction changes no data)
    state = store.get_state(ORDERS)
    assert state is not None
    data = [e for e in events if e.commit_kind != "COMPACT"]
    if not data:
        assert state.latest_partitions is None
        return
    newest = max(data, key=lambda e: e.snapshot_id or 0)
    assert state.latest_data is not None and state.latest_data.snapshot_id == newest.snapshot_id
    if newest.partitions is None:
        assert state.latest_partitions is None  # never an older snapshot's partitions passed off as its own
    else:
        assert state.latest_partitions is not None
        assert state.latest_partitions.snapshot_id == newest.snapshot_id
        assert state.latest_partitions.keys == tuple(sorted(set(newest.partitions.keys)))
        shown = AssetStateAnswer.from_domain(state, registered=False).dump()
        assert shown["latestPartitions"]["keys"] == list(state.latest_partitions.keys)


def test_an_overwrite_replacing_one_partition_names_only_it() -> None:
    store = InMemoryAssetStore()
    first = snapshot(1, "APPEND", ["dt=2026-12-01", "dt=2026-12-02"])
    overwrite = snapshot(2, "OVERWRITE", ["dt=2026-12-02"])
    for clock, event in enumerate((first, overwrite), start=1):
        store.record_event(event, SourceType.POLL, clock)
        advance_state(store, event, clock, recorded_at=clock)
    state = store.get_state(ORDERS)
    assert state is not None and state.latest_partitions is not None
    assert state.latest_partitions.keys == ("dt=2026-12-02",) and state.latest_partitions.snapshot_id == 2


bad_keys = st.one_of(
    st.text(max_size=10).filter(lambda t: "=" not in t),  # no name=value
    st.just("a=1/a=2"),  # a field twice
    st.text(min_size=513, max_size=600, alphabet="ab").map(lambda t: f"k={t}"),  # too long
)


@given(bad_keys, st.sampled_from(["partitionKey", "partitions"]))
def test_a_push_naming_a_malformed_partition_is_rejected_naming_the_field(key: str, field: str) -> None:
    from pydantic import ValidationError

    from lakehook.usecases.ingest import describe_validation_error, parse_event

    body = {
        "eventType": "SNAPSHOT_COMMITTED",
        "assetKey": ORDERS,
        "snapshotId": 1,
        field: [key] if field == "partitions" else key,
    }
    try:
        parse_event(body)
    except ValidationError as exc:
        assert field in describe_validation_error(exc)
    else:
        raise AssertionError(f"{field}={key!r} was accepted")


def test_a_push_naming_more_partitions_than_the_limit_is_rejected() -> None:
    from pydantic import ValidationError

    from lakehook.domain.limits import MAX_TOUCHED_PARTITIONS
    from lakehook.usecases.ingest import describe_validation_error, parse_event

    body = {"eventType": "SNAPSHOT_COMMITTED", "assetKey": ORDERS, "snapshotId": 1}
    body["partitions"] = [f"id={i}" for i in range(MAX_TOUCHED_PARTITIONS + 1)]
    try:
        parse_event(body)
    except ValidationError as exc:
        assert "partitions" in describe_validation_error(exc)
    else:
        raise AssertionError("accepted")
