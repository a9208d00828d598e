"""A rule per region over two of Hudi's own sample tables (tests/data/hudi, written by Apache Hudi), revealed commit by
commit as Hudi wrote them, polled into DynamoDB (moto), its stream through the resolver's FilterCriteria.

``v9_txns_simple_nometa`` (merge-on-read, partitioned by ``region``: us, eu, apac) holds inserts, updates and deletes
of one region each, an ``INSERT OVERWRITE … PARTITION (region = 'eu')``, a compaction and a clustering;
``v9_txns_simple_overwrite`` (copy-on-write, the same regions) two inserts and an ``INSERT OVERWRITE TABLE``. Each
region runs once both touched it, pinning the newest commit of each that did; the overwrite of eu runs eu only; the
compaction and the clustering run nothing. The generated test reveals the two tables' commits in generated
interleavings and compares every run with :class:`~tests.integration.partition_rules.Model` over what hudi-rs reads
of each commit's metadata.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.container import Container
from tests.hudi_tables import StagedHudiTable, unpack
from tests.hypothesis_profiles import examples
from tests.integration.partition_rules import Model, Rig, by_partition, fresh_rig
from tests.integration.test_hudi_source import hudi_rs_versions, register
from tests.integration.test_partitions_hudi import reference

pytestmark = pytest.mark.integration

TXNS, COW = "hudi://lake/ods/txns", "hudi://lake/ods/txns_cow"
SAMPLES = {TXNS: "v9_txns_simple_nometa", COW: "v9_txns_simple_overwrite"}
MEMBERS = [{"assetKey": TXNS, "partition": {}}, {"assetKey": COW, "partition": {}}]
REGIONS = ["region=apac", "region=eu", "region=us"]
TABLE_SERVICES = {"COMPACT", "LOG_COMPACT", "CLUSTER"}  # Hudi's WriteOperationType of rewrites that change no data


@cache
def commits(name: str) -> dict[int, tuple[set[str], bool]]:
    """Per completed instant of the whole sample table, as hudi-rs reads its metadata: the partitions it touched
    and whether it changed data."""
    with tempfile.TemporaryDirectory() as into:
        location = str(unpack(name, Path(into)))
        operations = hudi_rs_versions(location)
        _, touched = reference(location)
    return {i: (keys, operations[i]["operationType"] not in TABLE_SERVICES) for i, keys in touched.items()}


class Lake:
    """The two sample tables, staged with an empty timeline, and their assets."""

    def __init__(self, rig: Rig, root: Path) -> None:
        self.rig = rig
        self.tables: dict[str, StagedHudiTable] = {}
        for key, name in SAMPLES.items():
            (root / key[-4:]).mkdir()
            self.tables[key] = StagedHudiTable.of(name, root / key[-4:])
        self.assets = {key: register(t.location, key.removeprefix("hudi://lake/")) for key, t in self.tables.items()}

    def reveal(self, key: str, versions: int = 1) -> list[int]:
        """The table's next completed commits, polled and resolved: their instants."""
        shown = self.tables[key].reveal(versions)
        self.rig.poll(self.assets[key])
        self.rig.settle()
        return shown


@pytest.fixture
def lake(container: Container, ddb_client: Any, tmp_path: Path) -> Lake:
    return Lake(Rig(container, ddb_client), tmp_path)


def test_each_region_runs_once_both_touched_it_an_insert_overwrite_reruns_that_region_and_a_compaction_nothing(
    lake: Lake,
) -> None:
    rig = lake.rig
    (cow,) = lake.reveal(COW)  # an INSERT into us, eu and apac: the poller's first look starts here
    rig.put("regional", MEMBERS, by="region")
    (first,) = lake.reveal(TXNS)  # an INSERT into us, eu and apac too: each region runs once
    assert sorted(rig.runs("regional")) == [(r, {TXNS: first, COW: cow}) for r in REGIONS]

    (update,) = lake.reveal(TXNS)  # an UPDATE of one row of us: us runs again, the others do not
    assert rig.runs("regional")[3:] == [("region=us", {TXNS: update, COW: cow})]

    lake.reveal(TXNS, 5)  # DELETE us, UPDATE eu, DELETE eu, UPDATE apac, INSERT eu
    before = len(rig.runs("regional"))
    (replaced,) = lake.reveal(TXNS)  # INSERT OVERWRITE … PARTITION (region = 'eu'): eu alone runs
    assert hudi_rs_versions(lake.tables[TXNS].location)[replaced]["operationType"] == "INSERT_OVERWRITE"
    assert rig.runs("regional")[before:] == [("region=eu", {TXNS: replaced, COW: cow})]

    lake.reveal(TXNS, 2)  # INSERT us, INSERT apac
    before = len(rig.runs("regional"))
    compaction, clustering = lake.reveal(TXNS, 2)  # a compaction (us, apac), a clustering (every region)
    operations = hudi_rs_versions(lake.tables[TXNS].location)
    assert (operations[compaction]["operationType"], operations[clustering]["operationType"]) == ("COMPACT", "CLUSTER")
    assert len(rig.runs("regional")) == before  # neither changed data: nothing runs

    _, overwrite = lake.reveal(COW, 2)  # an INSERT into us and eu, then INSERT OVERWRITE TABLE: every region
    assert hudi_rs_versions(lake.tables[COW].location)[overwrite]["operationType"] == "INSERT_OVERWRITE_TABLE"
    txns = commits(SAMPLES[TXNS])
    newest = {r: max(i for i, (keys, data) in txns.items() if data and r in keys and i < clustering) for r in REGIONS}
    assert newest["region=eu"] == replaced
    assert sorted(rig.runs("regional")[before:]) == [(r, {TXNS: newest[r], COW: overwrite}) for r in REGIONS]


steps = st.lists(st.tuples(st.sampled_from([TXNS, COW]), st.integers(1, 3)), min_size=1, max_size=8)


@pytest.mark.slow
@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps, st.sampled_from(["ANY_UPDATED", "ALL_UPDATED"]))
def test_generated_interleavings_run_each_region_as_the_model_over_hudi_rs_says(
    order: list[tuple[str, int]], mode: str
) -> None:
    with fresh_rig() as rig, tempfile.TemporaryDirectory() as scratch:
        lake = Lake(rig, Path(scratch))
        (cow,) = lake.reveal(COW)  # the first look at one table; the rule starts from its newest commit
        rig.put("regional", MEMBERS, mode=mode, by="region")
        model = Model((TXNS, COW), mode)
        model.commit(COW, cow, cow, commits(SAMPLES[COW])[cow][0])
        model.settle()
        for key, versions in [(TXNS, 1), *order]:
            for instant in lake.reveal(key, versions):
                keys, data = commits(SAMPLES[key])[instant]
                model.commit(key, instant, instant, keys, data=data)
            model.settle()
            assert by_partition(rig.runs("regional")) == by_partition(model.runs), (key, versions)
