"""What counts as an update, on real tables: compaction commits, tags, and the metadata a run manifest pins.

Real Paimon and Iceberg tables (local warehouses, pyiceberg's SQL catalog on sqlite) are polled into the
DynamoDB table (moto); the table's own stream feeds the resolver and the dispatcher through the
FilterCriteria they ship with, as on AWS.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from lakehook.adapters.dynamodb.stream_records import RESOLVER_FILTER_PATTERNS
from lakehook.adapters.dynamodb.trigger_ledger import DISPATCH_FILTER_PATTERNS
from lakehook.container import Container
from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.json_form import json_form
from lakehook.domain.rules import Rule
from lakehook.handlers import handle_dispatch_batch, handle_stream_batch
from lakehook.local.filters import matches_any
from lakehook.usecases.replay import ReplayRefusedError
from tests.conftest import BUCKET
from tests.delta_tables import StagedDeltaTable
from tests.fakes.memory_dispatch import InMemoryTargetClient
from tests.integration.test_resolver_on_moto import Stream
from tests.lakehouse import (
    create_iceberg_table,
    create_paimon_table,
    iceberg_rewrite,
    paimon_commit,
    paimon_compact_commit,
    rows,
)
from tests.pollers import FORMATS, Lake, make_table

pytestmark = pytest.mark.integration

T0 = 1_750_000_000_000


class World:
    """The poller, resolver and dispatcher on moto, a memory scheduler as the webhook target."""

    def __init__(self, container: Container, stream: Stream) -> None:
        self.container = container
        self.stream = stream
        self.target = InMemoryTargetClient()
        container.overrides["target_clients"] = {"webhook": self.target}
        self.poll = Lake(container.table, container=container, sources=container.snapshot_sources).poll

    def register(
        self, key: str, fmt: str, catalog: str, properties: dict[str, str], table: str | None = None, **source: str
    ) -> AssetRegistration:
        """Register and poll once; Delta and Hudi sources name a ``location`` instead of a ``table``."""
        where = {"table": table} if table is not None else source
        asset = AssetRegistration.model_validate(
            {"assetKey": key, "format": fmt, "source": {"catalog": catalog, "properties": properties, **where}}
        )
        return self.add(asset)

    def add(self, asset: AssetRegistration) -> AssetRegistration:
        """Register ``asset`` and poll it once."""
        self.container.asset_registry.put_asset(asset, T0)
        # the registration's first poll takes every snapshot from here on
        self.poll(asset)
        return asset

    def rule(self, rule_id: str, key: str, condition: dict[str, Any] | None = None) -> None:
        member: dict[str, Any] = {"assetKey": key}
        if condition is not None:
            member["condition"] = condition
        rule = Rule.model_validate(
            {
                "ruleId": rule_id,
                "groups": [{"groupId": "g", "members": [member]}],
                "target": {"type": "webhook", "url": "https://scheduler.example.com/hooks/x", "secretRef": "t/x"},
            }
        )
        self.container.rule_store.put_rule(rule, T0)

    def settle(self) -> None:
        """Run the resolver and the dispatcher over the stream until it is quiet."""
        while records := self.stream.records():
            resolve = [r for r in records if matches_any(r, RESOLVER_FILTER_PATTERNS)]
            if resolve:
                assert handle_stream_batch({"Records": resolve}, self.container) == {"batchItemFailures": []}
            dispatch = [r for r in records if matches_any(r, DISPATCH_FILTER_PATTERNS)]
            if dispatch:
                assert handle_dispatch_batch({"Records": dispatch}, self.container) == {"batchItemFailures": []}

    def pinned(self, rule_id: str) -> list[int | None]:
        """The snapshot each of the rule's triggers pinned, oldest first."""
        items = self.container.trigger_store.list_for_rule(rule_id, limit=100).items
        return [t.inputs[0].snapshot_id for t in reversed(items)]


@pytest.fixture
def world(container: Container, ddb_client: Any) -> World:
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)  # the run manifests' bucket
    return World(container, Stream(ddb_client))


# --- compaction ---------------------------------------------------------------------------------


def test_a_paimon_compact_snapshot_is_not_an_update_unless_the_member_includes_compaction(
    world: World, tmp_path: Path
) -> None:
    options = {"warehouse": str(tmp_path / "paimon")}
    table = create_paimon_table(options, "ods.orders")
    key = "paimon://lake/ods/orders"
    paimon_commit(table, rows(1))  # snapshot 1: APPEND
    asset = world.register(key, "paimon", "lake", options, "ods.orders")
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    assert world.pinned("data_only") == world.pinned("with_compaction") == [1]

    paimon_compact_commit(table)  # snapshot 2: COMPACT
    world.poll(asset)
    world.settle()
    state = world.container.asset_store.get_state(key)
    assert state is not None and state.latest_commit_kind == "COMPACT" and state.latest_snapshot_id == 2
    assert world.pinned("data_only") == [1]  # no run: the compaction changed no data
    assert world.pinned("with_compaction") == [1, 2]

    paimon_commit(table, rows(2))  # snapshot 3: APPEND
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [1, 3]
    assert world.pinned("with_compaction") == [1, 2, 3]


def test_a_delta_optimize_and_vacuum_are_not_updates_unless_the_member_includes_compaction(
    world: World, tmp_path: Path
) -> None:
    from deltalake import DeltaTable, write_deltalake

    location = str(tmp_path / "delta" / "dim_customer")
    key = "delta://lake/dim/customer"
    write_deltalake(location, rows(1))  # version 0: WRITE
    write_deltalake(location, rows(2), mode="append")  # version 1: WRITE
    asset = world.register(key, "delta", "lake", {}, location=location)
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    assert world.pinned("data_only") == world.pinned("with_compaction") == [1]

    DeltaTable(location).optimize.compact()  # version 2: a real OPTIMIZE (two files into one)
    DeltaTable(location).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)  # 3, 4
    world.poll(asset)
    world.settle()
    state = world.container.asset_store.get_state(key)
    assert state is not None and (state.latest_commit_kind, state.latest_snapshot_id) == ("VACUUM END", 4)
    assert world.pinned("data_only") == [1]  # no run: neither the compaction nor the vacuum changed data
    assert world.pinned("with_compaction")[-1] == 4

    write_deltalake(location, rows(3), mode="append")  # version 5: WRITE
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [1, 5]
    assert world.pinned("with_compaction")[-1] == 5


def test_delta_commits_that_change_no_data_start_no_run_whatever_their_operation(world: World, tmp_path: Path) -> None:
    """Decided by the commit's add/remove actions (dataChange), not by its name: delta-rs's property, column
    and constraint changes carry no file at all, a z-order rewrites files with dataChange=false."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.schema import Field, PrimitiveType

    location = str(tmp_path / "delta" / "orders")
    key = "delta://lake/ods/orders"
    write_deltalake(location, rows(1, 2))  # version 0: WRITE
    asset = world.register(key, "delta", "lake", {}, location=location)
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    assert world.pinned("data_only") == [0]

    table = DeltaTable(location)
    table.alter.set_table_properties({"delta.logRetentionDuration": "interval 30 days"})  # version 1
    table.alter.add_columns([Field("note", PrimitiveType("string"), nullable=True)])  # version 2: a schema change
    table.alter.add_constraint({"positive": "amount > 0"})  # version 3
    table.optimize.z_order(["id"])  # version 4: files rewritten, dataChange=false
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [0]  # no run: the table holds the rows it held
    state = world.container.asset_store.get_state(key)
    assert state is not None and (state.latest_snapshot_id, state.latest_commit_kind) == (4, "OPTIMIZE")
    assert state.latest_data is not None and state.latest_data.snapshot_id == 0
    events = {e.snapshot_id: (e.commit_kind, e.data_changed) for e in _snapshot_events(world, key)}
    assert events == {
        0: ("WRITE", None),  # only a "no" is sent: a data change is left to its kind
        1: ("SET TBLPROPERTIES", False),
        2: ("ADD COLUMN", False),
        3: ("ADD CONSTRAINT", False),
        4: ("OPTIMIZE", False),
    }
    assert world.pinned("with_compaction")[-1] == 4

    write_deltalake(location, rows(3), mode="append", schema_mode="merge")  # version 5: WRITE
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [0, 5]


def test_a_delta_table_created_empty_starts_no_run_until_data_arrives(world: World, tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    location = str(tmp_path / "delta" / "orders")
    key = "delta://lake/ods/orders"
    DeltaTable.create(location, schema=rows().schema)  # version 0: CREATE TABLE, no file
    asset = world.register(key, "delta", "lake", {}, location=location)
    world.rule("data_only", key)
    world.settle()
    DeltaTable(location).alter.set_table_properties({"delta.appendOnly": "true"})  # version 1
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == []
    write_deltalake(location, rows(1), mode="append")  # version 2: the first data
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [2]


@pytest.mark.parametrize(
    ("golden", "quiet"),
    [
        (
            "delta/data-skipping-change-stats-collected-across-versions",
            {1: "SET TBLPROPERTIES", 3: "SET TBLPROPERTIES"},
        ),
        ("delta/snapshot-repartitioned", {5: "WRITE"}),  # a WRITE whose adds and removes say dataChange=false
    ],
)
def test_spark_commits_that_change_no_data_start_no_run(
    world: World, tmp_path: Path, golden: str, quiet: dict[int, str]
) -> None:
    """Delta's own Spark-written tables, revealed one version at a time as Spark wrote them."""
    staged = StagedDeltaTable.of(golden, tmp_path)
    key = "delta://lake/golden/" + golden.rsplit("/", 1)[-1].replace("-", "_")
    staged.reveal(0)
    asset = world.register(key, "delta", "lake", {}, location=str(staged.root))
    world.rule("data_only", key)
    world.settle()
    last = max(int(p.name[:20]) for p in staged.pending if p.name.endswith(".json"))
    expected = [0]
    for version in range(1, last + 1):
        staged.reveal(version)
        world.poll(asset)
        world.settle()
        if version not in quiet:
            expected.append(version)
        assert world.pinned("data_only") == expected, version
        state = world.container.asset_store.get_state(key)
        assert state is not None and state.latest_snapshot_id == version
        assert state.latest_commit_kind == quiet.get(version, state.latest_commit_kind)


def _snapshot_events(world: World, key: str) -> list[Any]:
    page = world.container.asset_store.list_events(key, limit=100)
    return [r.event for r in page.items if r.event.snapshot_id is not None]


def test_a_hudi_compaction_and_clustering_are_not_updates_unless_the_member_includes_compaction(
    world: World, tmp_path: Path
) -> None:
    from tests.hudi_tables import V9_MOR, StagedHudiTable

    hudi = StagedHudiTable.of(V9_MOR, tmp_path)  # Hudi's own MOR table, revealed commit by commit
    key = "hudi://lake/ods/txns"
    hudi.reveal(10)  # ten deltacommits and replacecommits that change data
    asset = world.register(key, "hudi", "lake", {}, location=hudi.location)
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    (data,) = world.pinned("data_only")

    compaction, clustering = hudi.reveal(2)  # a compaction (commit, COMPACT), a clustering (replacecommit, CLUSTER)
    world.poll(asset)
    world.settle()
    state = world.container.asset_store.get_state(key)
    assert state is not None and (state.latest_commit_kind, state.latest_snapshot_id) == ("CLUSTER", clustering)
    assert world.pinned("data_only") == [data]  # no run: neither changed data
    assert world.pinned("with_compaction")[-1] == clustering
    assert compaction < clustering

    (insert,) = hudi.reveal()  # a deltacommit (INSERT)
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [data, insert]


def test_an_iceberg_rewrite_replace_snapshot_is_not_an_update_unless_the_member_includes_compaction(
    world: World, tmp_path: Path
) -> None:
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = SqlCatalog("lake", **properties)
    table = create_iceberg_table(catalog, "ods.orders")
    key = "iceberg://lake/ods/orders"
    table.append(rows(1))
    table.append(rows(2))
    asset = world.register(key, "iceberg", "lake", {"type": "sql", **properties}, "ods.orders")
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    first = table.current_snapshot().snapshot_id

    iceberg_rewrite(table)  # a real rewrite: two data files become one, operation replace
    table = catalog.load_table("ods.orders")
    rewritten = table.current_snapshot()
    assert rewritten.summary is not None and rewritten.summary.operation.value == "replace"
    assert len(list(table.scan().plan_files())) == 1 and table.scan().to_arrow().num_rows == 2
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [first]
    assert world.pinned("with_compaction") == [first, rewritten.snapshot_id]

    table.append(rows(3))
    world.poll(asset)
    world.settle()
    newest = catalog.load_table("ods.orders").current_snapshot().snapshot_id
    assert world.pinned("data_only") == [first, newest]
    assert world.pinned("with_compaction") == [first, rewritten.snapshot_id, newest]


def test_iceberg_commits_that_change_no_data_start_no_run(world: World, tmp_path: Path) -> None:
    """An overwrite whose filter matched nothing and an empty append still commit snapshots (pyiceberg, as Spark
    does for a DELETE that matched no row), and a property change writes new metadata with no snapshot: none of
    them is new data. The next real append is."""
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = SqlCatalog("lake", **properties)
    table = create_iceberg_table(catalog, "ods.orders")
    key = "iceberg://lake/ods/orders"
    table.append(rows(1))
    asset = world.register(key, "iceberg", "lake", {"type": "sql", **properties}, "ods.orders")
    world.rule("data_only", key)
    world.rule("with_compaction", key, {"includeCompaction": True})
    world.settle()
    first = table.current_snapshot().snapshot_id

    table.overwrite(rows(9).slice(0, 0), overwrite_filter="id = 99")  # matches nothing, adds nothing
    table.append(rows(9).slice(0, 0))  # an empty append
    with table.transaction() as transaction:
        transaction.set_properties(owner="data-eng")  # metadata only: no snapshot
    table = catalog.load_table("ods.orders")
    noops = [s.snapshot_id for s in table.snapshots()][1:]
    assert len(noops) == 2 and table.properties["owner"] == "data-eng"
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [first]
    assert world.pinned("with_compaction") == [first, noops[-1]]
    state = world.container.asset_store.get_state(key)
    assert state.latest_snapshot_id == noops[-1] and state.latest_data is not None
    assert state.latest_data.snapshot_id == first

    table.append(rows(2))
    world.poll(asset)
    world.settle()
    newest = catalog.load_table("ods.orders").current_snapshot().snapshot_id
    assert world.pinned("data_only") == [first, newest]


# --- tags -----------------------------------------------------------------------------------------


def test_a_tag_member_pins_the_tagged_snapshot_and_fires_once_per_tag(world: World, tmp_path: Path) -> None:
    options = {"warehouse": str(tmp_path / "paimon")}
    table = create_paimon_table(options, "dws.gmv")
    key = "paimon://lake/dws/gmv"
    paimon_commit(table, rows(1))
    paimon_commit(table, rows(2))
    table.create_tag("month-end", snapshot_id=1)  # a tag on the older snapshot
    paimon_commit(table, rows(3))
    asset = world.register(key, "paimon", "lake", options, "dws.gmv")
    world.rule("monthly", key, {"tag": "month-end"})
    world.settle()
    assert world.pinned("monthly") == [1]  # the tagged snapshot, not the newest (3)

    paimon_commit(table, rows(4))  # later snapshots are not a new tag
    world.poll(asset)
    world.settle()
    assert world.pinned("monthly") == [1]
    (trigger,) = world.container.trigger_store.list_for_rule("monthly").items
    assert trigger.inputs[0].tag == "month-end"


def test_an_iceberg_tag_pins_its_snapshot_with_schema_and_metadata(world: World, tmp_path: Path) -> None:
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = SqlCatalog("lake", **properties)
    table = create_iceberg_table(catalog, "dws.gmv")
    key = "iceberg://lake/dws/gmv"
    table.append(rows(1))
    tagged = table.current_snapshot()
    world.rule("release", key, {"tag": "release"})
    asset = world.register(key, "iceberg", "lake", {"type": "sql", **properties}, "dws.gmv")
    world.settle()
    assert world.pinned("release") == []  # BLOCKED_BY_TAG
    table.append(rows(2))
    table.manage_snapshots().create_tag(tagged.snapshot_id, "release").commit()
    catalog.load_table("dws.gmv").append(rows(3))
    world.poll(asset)
    world.settle()
    assert world.pinned("release") == [tagged.snapshot_id]  # the tagged snapshot, two snapshots back
    (trigger,) = world.container.trigger_store.list_for_rule("release").items
    (pin,) = trigger.inputs
    assert pin.schema_id == tagged.schema_id and pin.commit_time == tagged.timestamp_ms
    assert pin.metadata_location is not None and pin.metadata_location.endswith(".metadata.json")
    assert trigger.manifest_uri is not None
    (pinned,) = world.container.manifest_store.get(trigger.manifest_uri).inputs
    assert pinned.metadata_location == pin.metadata_location and pinned.schema_id == tagged.schema_id
    catalog.load_table("dws.gmv").append(rows(4))
    world.poll(asset)
    world.settle()
    assert world.pinned("release") == [tagged.snapshot_id]


# --- the run manifest pins the metadata location -----------------------------------------------


def test_a_polled_iceberg_snapshot_pins_its_metadata_location_and_replay_checks_it(
    world: World, tmp_path: Path
) -> None:
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = SqlCatalog("lake", **properties)
    table = create_iceberg_table(catalog, "ods.orders")
    key = "iceberg://lake/ods/orders"
    table.append(rows(1))
    world.register(key, "iceberg", "lake", {"type": "sql", **properties}, "ods.orders")
    world.rule("orders", key)
    world.settle()
    table = catalog.load_table("ods.orders")
    snapshot = table.current_snapshot()
    (trigger,) = world.container.trigger_store.list_for_rule("orders").items
    assert trigger.manifest_uri is not None, "dispatched: the run manifest is written"
    manifest = world.container.manifest_store.get(trigger.manifest_uri)
    (pinned,) = manifest.inputs
    assert pinned.snapshot_id == snapshot.snapshot_id
    assert pinned.schema_id == snapshot.schema_id
    assert pinned.metadata_location == table.metadata_location  # the file that holds the snapshot

    table.append(rows(2))  # later commits do not change what the trigger pinned
    table.transaction().set_properties(owner="ops").commit_transaction()
    answer = world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True)
    assert answer.report.ok, answer.report.failures

    # the table is re-registered from a rewritten copy of its metadata: the pinned file no longer holds it
    current = catalog.load_table("ods.orders")
    source = Path(current.metadata_location.removeprefix("file://"))
    copy = source.with_name("rewritten.metadata.json")
    document = json.loads(source.read_text())
    for entry in document["metadata-log"]:  # every earlier file, rewritten elsewhere
        entry["metadata-file"] = entry["metadata-file"].replace(".metadata.json", ".rewritten.metadata.json")
    copy.write_text(json.dumps(document))
    catalog.drop_table("ods.orders")
    catalog.register_table("ods.orders", f"file://{copy}")
    with pytest.raises(ReplayRefusedError) as refused:
        world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True)
    (failure,) = refused.value.report.failures
    assert "metadata was rewritten since the trigger" in failure.reason
    assert failure.detail["metadataLocation"] == pinned.metadata_location


def test_replay_of_a_delta_trigger_checks_its_version_is_still_in_the_log(world: World, tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    location = str(tmp_path / "delta" / "orders")
    key = "delta://lake/ods/orders"
    write_deltalake(location, rows(1), configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    write_deltalake(location, rows(2), mode="append")  # version 1
    world.register(key, "delta", "lake", {}, location=location)
    world.rule("orders", key)
    world.settle()
    (trigger,) = world.container.trigger_store.list_for_rule("orders").items
    assert [p.snapshot_id for p in trigger.inputs] == [1]

    write_deltalake(location, rows(3), mode="append")  # later versions do not change what the trigger pinned
    answer = world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True)
    assert answer.report.ok, answer.report.failures

    write_deltalake(location, rows(4), mode="append")
    table = DeltaTable(location)
    table.create_checkpoint()  # at version 3
    table.cleanup_metadata()  # log retention 0: the pinned version's commit file is gone
    with pytest.raises(ReplayRefusedError) as refused:
        world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True)
    (failure,) = refused.value.report.failures
    assert failure.asset_key == key


# --- a replay reads the very spool manifest the trigger read --------------------------------------


def test_replay_of_a_spooled_extract_is_refused_once_the_manifest_at_its_uri_was_rewritten(world: World) -> None:
    from lakehook.client.spool import SpoolWriter

    s3 = boto3.client("s3", region_name="us-east-1")
    key = f"s3://{BUCKET}/spool/payments"
    uri = f"s3://{BUCKET}/spool/payments/run-8.manifest.json"
    fields = [{"name": "id", "type": "long", "nullable": False}]

    def spool(data: bytes, rows: int, at: str) -> None:
        with SpoolWriter(s3, manifest_uri=uri, asset_key=key, snapshot_id=8, fields=fields, clock=lambda: at) as writer:
            writer.upload_bytes(data, f"s3://{BUCKET}/spool/payments/run-8/part-0.csv", row_count=rows)
        world.container.record_manifest_verification.verify(uri)  # what the S3 notification starts

    spool(b"id\n1\n2\n", 2, "2025-06-01T10:05:00Z")
    world.rule("payments", key, {"manifest": "SEALED"})
    world.settle()
    (trigger,) = world.container.trigger_store.list_for_rule("payments").items
    sealed = json.loads(s3.get_object(Bucket=BUCKET, Key="spool/payments/run-8.manifest.json")["Body"].read())
    assert world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True).report.ok

    # the extract is re-run into the same URI: other rows, sealed and verifying, the same snapshot id
    spool(b"id\n1\n2\n3\n", 3, "2025-06-01T11:05:00Z")
    with pytest.raises(ReplayRefusedError) as refused:
        world.container.replay_trigger.replay(trigger.trigger_key, dry_run=True)
    (failure,) = refused.value.report.failures
    assert failure.check.value == "MANIFEST_SEALED" and "rewritten since the trigger" in failure.reason
    assert failure.detail["pinnedManifestSha256"] == sealed["sha256"] != failure.detail["manifestSha256"]
    state = world.container.asset_store.get_state(key)
    assert state is not None and state.manifest_sha256 == failure.detail["manifestSha256"]  # verified again
    (pin,) = trigger.inputs
    assert (pin.manifest_uri, json_form(pin)["manifestSha256"]) == (uri, sealed["sha256"])  # pinned at trigger time


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.value for f in FORMATS])
def test_a_compaction_polled_first_starts_no_run_and_the_next_data_commit_runs_once(
    world: World, tmp_path: Path, fmt: AssetFormat
) -> None:
    """Issue 33: a first poll takes only the newest snapshot; when that is a compaction (Iceberg replace, Paimon
    COMPACT, Delta OPTIMIZE, Hudi compaction) it is no data change, first seen or not: nothing runs on it. The
    tables are tests/pollers.py's: two data commits, then the compaction (Hudi: its sample's ten, then its own)."""
    table = make_table(fmt, tmp_path)
    table.commit(1)
    table.commit(2)
    table.compact()
    asset = world.add(table.asset)
    world.rule("data_only", table.key)
    world.rule("with_compaction", table.key, {"includeCompaction": True})
    world.settle()
    state = world.container.asset_store.get_state(table.key)
    assert state is not None and state.latest_data is None and state.latest_data_changed is False
    compaction = state.latest_snapshot_id
    assert world.pinned("data_only") == []  # the compaction is no update, though it is all lakehook has seen
    assert world.pinned("with_compaction") == [compaction]  # a member that asks for compactions gets it
    (group,) = world.container.explain_rule.explain("data_only")["groups"]
    (member,) = group["members"]
    assert member["status"] == "BLOCKED_BY_SNAPSHOT" and "changed no data" in member["reason"], member

    maintained = table.maintain()  # another maintenance commit (Delta: a VACUUM; Hudi: a clustering): nothing to run
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == []
    assert world.pinned("with_compaction") == [compaction, maintained]

    data = table.commit(9)
    world.poll(asset)
    world.settle()
    assert world.pinned("data_only") == [data]
    world.poll(asset)  # nothing new: no second run
    world.settle()
    assert world.pinned("data_only") == [data]
