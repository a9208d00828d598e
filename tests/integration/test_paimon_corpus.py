"""Snapshot files in the format Paimon's Java writer serializes (tests/data/paimon, from apache/paimon-rust),
placed into a table pypaimon wrote: the poller reports exactly what pypaimon's own ``SnapshotManager`` reads.

Java's ``Snapshot`` carries fields pypaimon does not model (``statistics``), writes ``null`` for an absent
manifest list and ``Long.MAX_VALUE`` as a batch commit's ``commitIdentifier``; none of these may make the
poller refuse the snapshot, drop a count, or report anything the reference reader does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lakehook.usecases.poll import PollOutcome
from tests.lakehouse import create_paimon_table, paimon_commit, rows
from tests.pollers import Lake
from tests.pollers import paimon_asset as register

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).parent.parent / "data" / "paimon"
SNAPSHOTS = sorted(p.name for p in CORPUS.glob("snapshot-*.json"))


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def test_the_corpus_is_there() -> None:
    assert SNAPSHOTS == ["snapshot-v3-none-field.json", "snapshot-v3.json"]


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_a_java_written_snapshot_is_read_as_pypaimon_reads_it(tmp_path: Path, lake: Lake, name: str) -> None:
    warehouse = {"warehouse": str(tmp_path / "warehouse")}
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1, 2))
    assert lake.poll(asset).snapshot_ids == (1,)

    written = (CORPUS / name).read_text()
    snapshot_dir = Path(warehouse["warehouse"], "ods.db", "orders", "snapshot")
    (snapshot_dir / "snapshot-2").write_text(written)  # as a Java writer commits it (id 2 in the file)

    reference = orders.snapshot_manager().get_latest_snapshot()
    assert reference is not None and reference.id == 2
    result = lake.poll(asset)
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (2,)
    event = next(e for e in lake.events(asset.asset_key) if e.snapshot_id == 2)
    raw = json.loads(written)
    # What pypaimon read, and what the file says, field by field.
    assert event.commit_kind == reference.commit_kind == raw["commitKind"]
    assert event.commit_time == reference.time_millis == raw["timeMillis"]
    assert event.schema_id == reference.schema_id == raw["schemaId"]
    assert event.total_record_count == reference.total_record_count == raw["totalRecordCount"]
    assert event.delta_record_count == reference.delta_record_count == raw["deltaRecordCount"]
    assert event.changelog_record_count == reference.changelog_record_count == raw["changelogRecordCount"]
    assert event.parent_snapshot_id == 1
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == 2
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
