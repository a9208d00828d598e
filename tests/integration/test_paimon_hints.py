"""Paimon's ``LATEST`` and ``EARLIEST`` files are hints: the poller reads past wrong ones as Paimon's readers do.

Java's ``HintFileUtils.findLatest`` trusts ``LATEST`` only when ``snapshot-(hint+1)`` does not exist, else it
lists the snapshot directory; ``findEarliest`` trusts ``EARLIEST`` only when that snapshot exists, else it
lists. A writer leaves a hint behind whenever its hint write fails after the snapshot is committed (pypaimon's
``RenamingSnapshotCommit`` logs a warning and carries on), and expiration can leave ``EARLIEST`` behind. Each
test commits with pypaimon, then rewrites a hint as such a writer leaves it, and the poller must report exactly
what pypaimon's own ``SnapshotManager`` reads from the same directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from lakehook.domain.snapshots import SnapshotGap
from lakehook.usecases.poll import PollOutcome
from tests.integration.test_paimon_source import by_reference
from tests.lakehouse import CountingMotoServer, create_paimon_table, paimon_commit, rows
from tests.pollers import Lake, lake_with_keys
from tests.pollers import paimon_asset as register

pytestmark = pytest.mark.integration


@pytest.fixture
def warehouse(tmp_path: Path) -> dict[str, str]:
    return {"warehouse": str(tmp_path / "warehouse")}


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def snapshot_dir(warehouse: dict[str, str], name: str = "ods.orders") -> Path:
    database, table = name.split(".")
    return Path(warehouse["warehouse"], f"{database}.db", table, "snapshot")


def reference(table: Any) -> tuple[list[int], int | None, int | None]:
    """What pypaimon's reader sees: every listed snapshot, the latest and the earliest."""
    manager = table.snapshot_manager()
    listed = [s.id for s in manager.list_snapshots()]
    latest = manager.get_latest_snapshot()
    earliest = manager.try_get_earliest_snapshot() if listed else None
    return listed, latest.id if latest else None, earliest.id if earliest else None


def polled_ids(lake: Lake, key: str) -> list[int]:
    return [e.snapshot_id or 0 for e in lake.events(key)]


# --- LATEST ---------------------------------------------------------------------------------------


def test_a_lagging_latest_hint_does_not_hide_the_newest_snapshots(warehouse: dict[str, str], lake: Lake) -> None:
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    assert lake.poll(asset).snapshot_ids == (1,)
    paimon_commit(orders, rows(2))
    paimon_commit(orders, rows(3))
    (snapshot_dir(warehouse) / "LATEST").write_text("1")  # the writer's hint writes for 2 and 3 failed

    listed, latest, _ = reference(orders)
    assert (listed, latest) == ([1, 2, 3], 3)
    result = lake.poll(asset)
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (2, 3)
    assert polled_ids(lake, asset.asset_key) == listed
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == latest
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    paimon_commit(orders, rows(4))  # the next commit writes the hint again: read on from 3, nothing twice
    assert lake.poll(asset).snapshot_ids == (4,)


def test_a_first_poll_behind_a_lagging_hint_starts_at_the_real_latest(warehouse: dict[str, str], lake: Lake) -> None:
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    for i in range(3):
        paimon_commit(orders, rows(i))
    (snapshot_dir(warehouse) / "LATEST").write_text("2")

    result = lake.poll(asset)  # a first poll takes the newest snapshot only
    assert result.snapshot_ids == (reference(orders)[1],) == (3,)
    paimon_commit(orders, rows(9))
    assert lake.poll(asset).snapshot_ids == (4,)


@pytest.mark.parametrize("hint", [None, "", "not-a-number"], ids=["missing", "empty", "garbage"])
def test_a_missing_or_unreadable_latest_hint_is_resolved_by_listing(
    warehouse: dict[str, str], lake: Lake, hint: str | None
) -> None:
    """Java's readHint yields no id for an absent or unparsable hint, and findLatest then lists the directory."""
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    lake.poll(asset)
    paimon_commit(orders, rows(2))
    paimon_commit(orders, rows(3))
    latest_file = snapshot_dir(warehouse) / "LATEST"
    if hint is None:
        latest_file.unlink()
    else:
        latest_file.write_text(hint)

    listed, latest, _ = reference(orders)
    assert (listed, latest) == ([1, 2, 3], 3)
    result = lake.poll(asset)
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (2, 3)
    assert polled_ids(lake, asset.asset_key) == listed
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


# --- EARLIEST -------------------------------------------------------------------------------------


def expire(directory: Path, ids: range, earliest_hint: int) -> None:
    """What expiration leaves: the snapshot files deleted, and an EARLIEST hint (here: one that was left stale)."""
    for sid in ids:
        (directory / f"snapshot-{sid}").unlink()
    (directory / "EARLIEST").write_text(str(earliest_hint))


@pytest.mark.parametrize("stale", [1, 2, 4], ids=["at-the-cursor", "at-the-next", "inside-the-gap"])
def test_a_stale_earliest_hint_does_not_stop_the_table(warehouse: dict[str, str], lake: Lake, stale: int) -> None:
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    lake.poll_all([asset])
    for i in range(5):
        paimon_commit(orders, rows(i))  # snapshots 2..6
    expire(snapshot_dir(warehouse), range(1, 5), earliest_hint=stale)  # 1..4 expired; the hint names an expired one

    listed, latest, earliest = reference(orders)
    assert (listed, latest, earliest) == ([5, 6], 6, 5)
    (result,) = lake.poll_all([asset])
    assert result.outcome is PollOutcome.ADVANCED and result.snapshot_ids == (5, 6)
    assert result.gap == SnapshotGap(afterSnapshotId=1, resumedAtSnapshotId=earliest, missed=3)
    assert polled_ids(lake, asset.asset_key) == [1, *listed]
    state = lake.store.get_state(asset.asset_key)
    assert state is not None and state.latest_snapshot_id == latest
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_an_earliest_hint_ahead_of_the_oldest_retained_snapshot_misses_nothing(
    warehouse: dict[str, str], lake: Lake
) -> None:
    """A hint that names a retained snapshot is trusted by Java; a poller behind it still reads what exists."""
    orders = create_paimon_table(warehouse, "ods.orders")
    asset = register(warehouse, "ods.orders")
    paimon_commit(orders, rows(1))
    lake.poll(asset)
    for i in range(4):
        paimon_commit(orders, rows(i))  # 2..5
    expire(snapshot_dir(warehouse), range(1, 3), earliest_hint=3)  # 1, 2 expired, hint exact
    assert lake.poll(asset).snapshot_ids == (3, 4, 5)
    assert polled_ids(lake, asset.asset_key) == [1, *reference(orders)[0]]


# --- on S3 (moto) ---------------------------------------------------------------------------------


@pytest.fixture
def s3_warehouse(server: CountingMotoServer, aws: None, request: pytest.FixtureRequest) -> dict[str, str]:
    bucket = f"hints-{request.node.name.lower().replace('_', '-').replace('[', '-').replace(']', '')[:40]}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return {
        "warehouse": f"s3://{bucket}/warehouse",
        "fs.s3.endpoint": server.endpoint,
        "fs.s3.region": "us-east-1",
        "fs.s3.accessKeyId": "testing",
        "fs.s3.accessKeySecret": "testing",
        "fs.s3.path-style-access": "true",
    }


@pytest.fixture
def s3_lake(table: Any) -> Lake:
    return lake_with_keys(table, "lakehook/paimon-s3")


def put_hint(server: CountingMotoServer, warehouse: dict[str, str], name: str, value: str) -> None:
    bucket, prefix = warehouse["warehouse"].removeprefix("s3://").split("/", 1)
    s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/ods.db/orders/snapshot/{name}", Body=value.encode())


def test_s3_a_lagging_latest_and_a_stale_earliest_are_read_past(
    server: CountingMotoServer, s3_warehouse: dict[str, str], s3_lake: Lake
) -> None:
    orders = create_paimon_table(s3_warehouse, "ods.orders")
    asset = register(by_reference(s3_warehouse), "ods.orders")
    paimon_commit(orders, rows(1))
    s3_lake.poll(asset)
    paimon_commit(orders, rows(2))
    put_hint(server, s3_warehouse, "LATEST", "1")
    assert reference(orders)[1] == 2
    assert s3_lake.poll(asset).snapshot_ids == (2,)

    for i in range(3):
        paimon_commit(orders, rows(i))  # 3..5
    for sid in (1, 2, 3):
        orders.file_io.delete(f"{orders.table_path}/snapshot/snapshot-{sid}")
    put_hint(server, s3_warehouse, "EARLIEST", "1")
    put_hint(server, s3_warehouse, "LATEST", "4")
    listed, latest, earliest = reference(orders)
    assert (listed, latest, earliest) == ([4, 5], 5, 4)
    result = s3_lake.poll(asset)
    assert result.snapshot_ids == (4, 5)
    assert result.gap == SnapshotGap(afterSnapshotId=2, resumedAtSnapshotId=4, missed=1)
    assert s3_lake.poll(asset).outcome is PollOutcome.UNCHANGED
