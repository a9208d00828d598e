"""The StateReader contract (ports.rules), on the fake and on DynamoDB, reading what the asset and trigger stores
wrote: the states and group cursors that exist, in one batched read however many keys (pages of 100 on DynamoDB);
what was recorded of a snapshot, from its SNAPSHOT_COMMITTED event as first recorded; and a snapshot's quality
verdict from its checks (a failure outweighs a pass), absent where no check reported."""

from __future__ import annotations

from typing import Any

import pytest

from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.state import snapshot_record
from lakehook.domain.versions import Verdict
from lakehook.ports.rules import GroupRef
from lakehook.usecases.ingest_state import advance_state
from tests.contracts.builders import T0, cursor_after, initial, trigger
from tests.contracts.conftest import Backend

pytestmark = pytest.mark.integration

ORDERS, PAYMENTS = "paimon://lake/ods_db/orders", "paimon://lake/ods_db/payments"


def event(event_type: str, asset: str, snapshot: int, **extra: Any) -> AssetEvent:
    return AssetEvent.model_validate({"eventType": event_type, "assetKey": asset, "snapshotId": snapshot, **extra})


def ingest(backend: Backend, pushed: AssetEvent, at: int = T0) -> None:
    """What ingest does with an event: record it once, then move the state by it."""
    recording = backend.assets.record_event(pushed, SourceType.PUSH, at)
    advance_state(backend.assets, pushed, at, recording.received_at)


def test_the_states_that_exist_are_read_as_the_asset_store_keeps_them(backend: Backend) -> None:
    ingest(backend, event("SNAPSHOT_COMMITTED", ORDERS, 3, commitKind="APPEND"))
    ingest(backend, event("QUALITY_CHECK_PASSED", ORDERS, 3))
    ingest(backend, event("SNAPSHOT_COMMITTED", PAYMENTS, 9))

    states = backend.reader.get_states([ORDERS, PAYMENTS, "paimon://lake/ods_db/absent"])
    assert states == {ORDERS: backend.assets.get_state(ORDERS), PAYMENTS: backend.assets.get_state(PAYMENTS)}
    assert states[ORDERS].latest_snapshot_id == 3 and states[PAYMENTS].latest_snapshot_id == 9
    assert backend.reader.get_states([]) == {}


def test_one_read_answers_states_and_cursors_past_a_page_of_keys(backend: Backend) -> None:
    assets = [f"paimon://lake/ods_db/t{i:03d}" for i in range(70)]
    for i, asset in enumerate(assets):
        ingest(backend, event("SNAPSHOT_COMMITTED", asset, i + 1))
    refs: list[GroupRef] = [(f"rule{i:02d}", "g") for i in range(40)]
    cursors = {}
    for rule_id, group_id in refs[::2]:  # every other group has claimed once
        claimed = trigger(1, rule_id=rule_id, group_id=group_id)
        result = backend.triggers.claim(claimed, cursor_after(initial(rule_id, group_id), claimed), None)
        cursors[(rule_id, group_id)] = result.cursor

    inputs = backend.reader.read([*assets, "paimon://lake/ods_db/absent"], [*refs, ("absent", "g")])
    assert inputs.states == {a: backend.assets.get_state(a) for a in assets}  # 70 + 40 + 2 keys: two pages
    assert inputs.cursors == cursors
    assert (inputs.unreadable_states, inputs.unreadable_cursors) == ({}, {})


def test_a_snapshot_is_read_as_its_event_was_first_recorded(backend: Backend) -> None:
    first = event("SNAPSHOT_COMMITTED", ORDERS, 3, commitKind="APPEND", schemaId=1, commitTime=1_700_000_000_000)
    ingest(backend, first)
    ingest(backend, event("SNAPSHOT_COMMITTED", ORDERS, 3, commitKind="OVERWRITE"), T0 + 1)  # the same identity
    zero = event("SNAPSHOT_COMMITTED", ORDERS, 0)  # a snapshot id of 0 (a Delta table's first version)
    ingest(backend, zero)
    ingest(backend, event("QUALITY_CHECK_PASSED", PAYMENTS, 5))  # a check, no snapshot event

    found = backend.reader.snapshots([(ORDERS, 3), (ORDERS, 0), (PAYMENTS, 5), (ORDERS, 4)])
    assert found == {
        (ORDERS, 3): snapshot_record(first),
        (ORDERS, 0): snapshot_record(event("SNAPSHOT_COMMITTED", ORDERS, 0)),
    }
    assert backend.reader.snapshots([]) == {}


def test_a_snapshots_verdict_is_its_checks_a_failure_outweighing_a_pass(backend: Backend) -> None:
    ingest(backend, event("QUALITY_CHECK_PASSED", ORDERS, 1))
    ingest(backend, event("QUALITY_CHECK_FAILED", ORDERS, 2))
    ingest(backend, event("QUALITY_CHECK_PASSED", ORDERS, 3))
    ingest(backend, event("QUALITY_CHECK_FAILED", ORDERS, 3))
    ingest(backend, event("SNAPSHOT_COMMITTED", ORDERS, 4))  # no check reported on it
    for sid in range(10, 70):  # past a page of keys (two per snapshot)
        ingest(backend, event("QUALITY_CHECK_PASSED", PAYMENTS, sid))

    wanted = [(ORDERS, sid) for sid in (1, 2, 3, 4, 5)] + [(PAYMENTS, sid) for sid in range(10, 70)]
    assert backend.reader.quality_verdicts(wanted) == {
        (ORDERS, 1): Verdict.PASSED,
        (ORDERS, 2): Verdict.FAILED,
        (ORDERS, 3): Verdict.FAILED,
        **{(PAYMENTS, sid): Verdict.PASSED for sid in range(10, 70)},
    }


def test_the_events_of_pinned_versions_are_read_as_first_recorded_past_a_page(backend: Backend) -> None:
    first = event("SNAPSHOT_COMMITTED", ORDERS, 3, commitKind="APPEND", payload={"run": "a"}, partitions=["dt=1"])
    ingest(backend, first)
    ingest(backend, event("SNAPSHOT_COMMITTED", ORDERS, 3, payload={"run": "b"}), T0 + 1)  # the same identity
    mark = AssetEvent.model_validate({"eventType": "WATERMARK_ADVANCED", "assetKey": PAYMENTS, "watermark": T0})
    ingest(backend, mark)
    for sid in range(10, 120):  # past a page of keys
        ingest(backend, event("SNAPSHOT_COMMITTED", PAYMENTS, sid, payload={"n": sid}))
    snap, wm = EventType.SNAPSHOT_COMMITTED, EventType.WATERMARK_ADVANCED
    wanted = [(ORDERS, snap, "3"), (ORDERS, snap, "4"), (PAYMENTS, wm, str(T0))]
    wanted += [(PAYMENTS, snap, str(sid)) for sid in range(10, 120)]
    found = backend.reader.recorded_events(wanted)
    assert found == {
        (ORDERS, snap, "3"): first,
        (PAYMENTS, wm, str(T0)): mark,
        **{
            (PAYMENTS, snap, str(s)): event("SNAPSHOT_COMMITTED", PAYMENTS, s, payload={"n": s}) for s in range(10, 120)
        },
    }
    assert backend.reader.recorded_events([]) == {}
