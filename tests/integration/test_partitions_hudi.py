"""Hudi: the partitions each commit touched, on Hudi's own sample tables (tests/data/hudi), against hudi-rs.

The reference is what the ``hudi`` (hudi-rs) binding reads of each completed instant's metadata
(``partitionToWriteStats``, and a replacecommit's ``partitionToReplaceFileIds``) with the table's partition
schema naming the fields; the tables are partitioned hive-style (``region=…``, ``city=…``) and not
(``byteField`` values as bare directories), on 0.x (JSON) and 1.x (Avro) timelines, with an
``INSERT_OVERWRITE_TABLE`` among them, and two unpartitioned ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hudi import HudiTableBuilder

from lakehook.domain.partitions import format_partition_key
from tests.hudi_tables import StagedHudiTable, all_tables
from tests.integration.test_hudi_source import hudi_rs_versions
from tests.pollers import Lake
from tests.pollers import hudi_asset as register

pytestmark = pytest.mark.integration


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def reference(location: str) -> tuple[list[str], dict[int, set[str]]]:
    """hudi-rs: the table's partition fields, and each version's touched partitions as canonical keys."""
    fields = HudiTableBuilder.from_base_uri(location).build().get_partition_schema().names
    touched: dict[int, set[str]] = {}
    for instant, meta in hudi_rs_versions(location).items():
        paths = set(meta.get("partitionToWriteStats") or {}) | set(meta.get("partitionToReplaceFileIds") or {})
        keys = set()
        for path in paths if fields else ():  # an unpartitioned table writes the partition path ""
            segments = path.split("/")
            values = [s.split("=", 1)[1] if "=" in s else s for s in segments]
            keys.add(format_partition_key(list(zip(fields, values, strict=True))))
        touched[instant] = keys
    return fields, touched


@pytest.mark.parametrize("name", all_tables())
def test_every_sample_table_names_the_partitions_hudi_rs_reads(tmp_path: Path, lake: Lake, name: str) -> None:
    hudi = StagedHudiTable.of(name, tmp_path)
    asset = register(hudi.location, "ods.t")
    hudi.reveal()
    lake.poll(asset)
    hudi.reveal_all()
    lake.poll(asset)
    events = {e.snapshot_id or 0: e for e in lake.events(asset.asset_key)}
    fields, expected = reference(hudi.location)
    assert sorted(events) == sorted(expected)
    for instant, keys in expected.items():
        partitions = events[instant].partitions
        if not fields:  # unpartitioned: nothing recorded, not an empty set
            assert partitions is None, instant
            continue
        assert partitions is not None and set(partitions.keys) == keys, instant
        assert partitions.count == len(keys) and not partitions.truncated
    state = lake.store.get_state(asset.asset_key)
    assert state is not None
    if fields and state.latest_data is not None:
        assert state.latest_partitions is not None
        assert set(state.latest_partitions.keys) == expected[state.latest_data.snapshot_id]


def test_the_partitioned_samples_are_among_them() -> None:
    # what the test above covers: both partitioning styles on both timeline layouts, and overwrites
    names = set(all_tables())
    assert {"v6_simplekeygen_nonhivestyle_overwritetable", "v8_trips_8i3u1d", "v9_txns_simple_overwrite"} <= names
