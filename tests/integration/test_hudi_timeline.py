"""What the Hudi poller reads of real timelines across what Hudi does to them: every sample table's row counts
against the ``hudi`` (hudi-rs) reader, the 0.x→1.x upgrade (also caught half-way), a writer whose clock is
ahead, and instant times written in the writer's local zone.

The tables are Hudi's own (tests/data/hudi/README.md); tests/hudi_tables.py reveals them commit by commit,
upgrades a 0.x timeline as Hudi's ``SevenToEightUpgradeHandler`` does, and commits an instant as a writer
whose clock is decades ahead would (its files renamed to that time).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import boto3
import pytest
from hudi import HudiReadOptions, HudiTableBuilder

from lakehook.adapters.lakehouse.credentials import CredentialResolver
from lakehook.adapters.lakehouse.hudi import HudiSnapshotSource, instant_millis
from lakehook.answers.assets import PollStatusAnswer
from lakehook.container import Container
from lakehook.domain.assets import AssetFormat, AssetRegistration
from lakehook.domain.errors import ValidationError
from lakehook.domain.snapshots import OFFSET_KEY, POLLER_NAMESPACE, PollOffset, SnapshotCursor
from lakehook.domain.source_health import BlockedBy, Health, source_health
from lakehook.domain.time import now_ms
from lakehook.ports.lakehouse import SnapshotSource
from lakehook.settings import Settings
from lakehook.usecases.poll import PollOutcome
from tests.fakes.memory import InMemorySecretStore
from tests.hudi_tables import V6_COW, V9_MOR, StagedHudiTable, all_tables, timeline_dir, unpack, upgrade_timeline
from tests.integration.test_api import Api
from tests.integration.test_hudi_source import hudi_rs_versions, upload
from tests.integration.test_hudi_source import s3_options as s3_options  # the fixture
from tests.lakehouse import CountingMotoServer
from tests.pollers import Lake
from tests.pollers import hudi_asset as register

pytestmark = pytest.mark.integration


@pytest.fixture
def lake(table: Any) -> Lake:
    return Lake(table)


def rows_as_of(location: str) -> dict[int, int]:
    """The rows the hudi-rs reader reads as of each completed version (instant time → rows)."""
    table = HudiTableBuilder.from_base_uri(location).build()
    counts = {}
    for instant in sorted(hudi_rs_versions(location)):
        batches = table.read(HudiReadOptions().with_as_of_timestamp(str(instant)))
        counts[instant] = sum(b.num_rows for b in batches)
    return counts


def with_clock(lake: Lake, clock: Any) -> None:
    """The lake's poller with a Hudi source whose clock is ``clock`` (the other formats are not polled here)."""
    source = HudiSnapshotSource(CredentialResolver(InMemorySecretStore()), clock=clock)

    def sources(fmt: AssetFormat) -> SnapshotSource:
        if fmt is not AssetFormat.HUDI:
            raise ValidationError(f"only hudi here, not {fmt.value}")
        return source

    lake.with_sources(sources)


# --- every sample table against the reference reader ----------------------------------------------


@pytest.mark.parametrize("name", all_tables())
def test_every_sample_table_reports_the_rows_hudi_rs_reads(tmp_path: Path, lake: Lake, name: str) -> None:
    hudi = StagedHudiTable.of(name, tmp_path)
    asset = register(hudi.location, "ods.t")
    hudi.reveal()
    lake.poll(asset)
    hudi.reveal_all()
    lake.poll(asset)
    events = lake.events(asset.asset_key)
    rows = rows_as_of(hudi.location)
    assert [e.snapshot_id for e in events] == sorted(rows)  # every version hudi-rs reads, none other
    metadata = hudi_rs_versions(hudi.location)
    assert [e.commit_kind for e in events] == [metadata[e.snapshot_id or 0]["operationType"] for e in events]
    previous = 0
    for event in sorted(events, key=lambda e: e.sequence_number or 0):
        truth = rows[event.snapshot_id or 0]
        if event.delta_record_count is None:  # a compaction or a clustering: they change no rows
            assert event.commit_kind in ("COMPACT", "CLUSTER") and truth == previous
        else:
            assert event.delta_record_count == truth - previous, (event.snapshot_id, event.commit_kind)
        if event.total_record_count is not None:
            assert event.total_record_count == truth
        previous = truth


def test_the_corpus_has_overwrites_to_count(tmp_path: Path) -> None:
    overwrites = set()
    for name in all_tables():
        metadata = hudi_rs_versions(str(unpack(name, tmp_path / name)))
        overwrites |= {m["operationType"] for m in metadata.values()} & {"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE"}
    assert overwrites == {"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE"}


# --- the 0.x -> 1.x upgrade -------------------------------------------------------------------------


def test_commits_after_a_0x_table_is_upgraded_to_1x_are_still_seen(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    asset = register(hudi.location, "ods.users")
    (first,) = hudi.reveal()
    lake.poll(asset)
    (second,) = hudi.reveal()
    assert lake.poll(asset).snapshot_ids == (second,)
    upgrade_timeline(hudi.root)  # Hudi 1.x opens the table: its timeline moves to .hoodie/timeline/
    assert not list((hudi.root / ".hoodie").glob("*.commit"))
    assert lake.poll(asset).snapshot_ids == ()  # the rewritten commits are the ones already read
    (third,) = hudi.reveal(into=hudi.root / ".hoodie")  # the 1.x writer's next commit, completed now ...
    for path in (hudi.root / ".hoodie").glob(f"{third}*"):
        os.utime(path)
    upgrade_timeline(hudi.root, [third], finish=False)  # ... as it writes it: <instant>_<completion>, Avro
    result = lake.poll(asset)
    assert result.snapshot_ids == (third,) and [r.status.value for r in result.results] == ["ACCEPTED"]
    events = lake.events(asset.asset_key)
    assert [e.snapshot_id for e in events] == [first, second, third] == sorted(hudi_rs_versions(hudi.location))
    assert events[-1].commit_kind == "INSERT_OVERWRITE_TABLE"
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_a_table_caught_mid_upgrade_is_read_from_both_timelines(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    asset = register(hudi.location, "ods.users")
    hudi.reveal()
    lake.poll(asset)
    second, third = hudi.reveal(2)
    upgrade_timeline(hudi.root, [second], finish=False)  # moved; the third not yet; properties still say 6
    result = lake.poll(asset)
    assert result.snapshot_ids == (second, third)
    upgrade_timeline(hudi.root)  # the upgrade finishes: nothing new, nothing read twice
    assert lake.poll(asset).snapshot_ids == ()
    assert len(lake.events(asset.asset_key)) == 3


# --- a future-dated instant --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [V6_COW, V9_MOR])
def test_a_future_dated_instant_does_not_hide_later_commits_and_is_a_warning(
    tmp_path: Path, lake: Lake, name: str
) -> None:
    hudi = StagedHudiTable.of(name, tmp_path)
    asset = register(hudi.location, "ods.t")
    (first,) = hudi.reveal()
    lake.poll_all([asset])
    future = hudi.reveal_skewed(years=50)  # a writer whose clock is 50 years ahead commits
    (held,) = lake.poll_all([asset])
    assert held.snapshot_ids == () and held.warnings and str(future) in held.warnings[0]
    status = lake.statuses.get(asset.asset_key)
    assert status is not None and status.consecutive_failures == 0 and str(future) in status.warnings[0]
    later = hudi.reveal()  # the writers with right clocks go on committing
    (result,) = lake.poll_all([asset])
    assert result.snapshot_ids == tuple(later)
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert "warnings" in PollStatusAnswer.from_domain(lake.statuses.get(asset.asset_key) or status).dump()

    # fifty years on, the instant is in order and is taken; the warning goes
    with_clock(lake, lambda: now_ms() + 51 * 366 * 86_400_000)
    (caught_up,) = lake.poll_all([asset])
    assert caught_up.snapshot_ids == (future,)
    assert (lake.statuses.get(asset.asset_key) or status).warnings == ()
    assert [e.snapshot_id for e in lake.events(asset.asset_key)] == sorted([first, *later, future])


# --- an instant whose time cannot be a date ---------------------------------------------------------


@pytest.mark.parametrize("name", [V6_COW, V9_MOR])
def test_an_instant_whose_time_cannot_be_a_date_hides_no_later_commit_and_blocks_the_source(
    tmp_path: Path, lake: Lake, name: str
) -> None:
    hudi = StagedHudiTable.of(name, tmp_path)
    asset = register(hudi.location, "ods.t")
    (first,) = hudi.reveal()
    lake.poll_all([asset])
    bad = hudi.reveal_undatable()  # month 13: as a number, above every commit of its year
    (held,) = lake.poll_all([asset])
    assert held.snapshot_ids == () and held.read is not None and str(bad) in held.read.blockers[0]
    health = source_health(lake.statuses.get(asset.asset_key))
    assert health is not None and health.state is Health.BLOCKED and health.blocked_by is BlockedBy.UNREPRESENTABLE
    assert str(bad) in health.describe() and "cannot be a date" in health.describe()
    later = hudi.reveal(2)  # the commits after it are read, in order
    (result,) = lake.poll_all([asset])
    assert result.snapshot_ids == tuple(later)
    assert [e.snapshot_id for e in lake.events(asset.asset_key)] == [first, *later]
    assert bad not in lake.snapshot_ids(asset.asset_key)


def test_a_cursor_left_on_an_undatable_instant_reads_the_timeline_again(tmp_path: Path, lake: Lake) -> None:
    """A poller before the fix took a month-13 instant as the table's newest: the commits after it come all the same."""
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    asset = register(hudi.location, "ods.t")
    (first,) = hudi.reveal()
    lake.poll(asset)
    bad = hudi.reveal_undatable()
    record = lake.watermarks.get(POLLER_NAMESPACE, asset.asset_key, OFFSET_KEY)
    assert record is not None
    taken = PollOffset.from_value(record.value)
    cursor = SnapshotCursor(snapshot_id=bad, sequence_number=bad)
    lake.watermarks.put(  # what the old poller stored
        POLLER_NAMESPACE,
        asset.asset_key,
        OFFSET_KEY,
        taken.model_copy(update={"cursor": cursor, "pointer": "stale"}).to_value(),
        now_ms(),
        expected_version=record.version,
    )
    later = hudi.reveal(2)
    result = lake.poll(asset)
    assert set(later) <= set(result.snapshot_ids) and bad not in result.snapshot_ids
    assert first in lake.snapshot_ids(asset.asset_key)


def test_a_cursor_left_in_the_future_by_a_poller_whose_clock_was_ahead_misses_nothing(
    tmp_path: Path, lake: Lake
) -> None:
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    asset = register(hudi.location, "ods.t")
    hudi.reveal()
    lake.poll(asset)
    future = hudi.reveal_skewed(years=50)
    with_clock(lake, lambda: now_ms() + 51 * 366 * 86_400_000)  # a poller whose clock is ahead takes it
    assert lake.poll(asset).snapshot_ids == (future,)
    with_clock(lake, now_ms)  # its clock is put right; the right writers' commits go on
    later = hudi.reveal(2)
    result = lake.poll(asset)
    assert set(later) <= set(result.snapshot_ids) and future not in result.snapshot_ids
    assert lake.poll(asset).outcome is PollOutcome.UNCHANGED


def test_an_instant_just_ahead_of_the_clock_waits_for_it_without_a_warning(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    asset = register(hudi.location, "ods.t")
    shown = hudi.reveal(2)
    completed = max(int(p.name.split("_")[1].split(".")[0]) for p in timeline_dir(hudi.root).glob("*_*.*commit"))
    at = instant_millis(completed)
    with_clock(lake, lambda: at - 1_000)  # the writer's clock is a second ahead of the poller's
    (result,) = lake.poll_all([asset])
    assert result.snapshot_ids == (shown[0],) and result.warnings == ()
    with_clock(lake, lambda: at)
    (result,) = lake.poll_all([asset])
    assert result.snapshot_ids == (shown[1],)


# --- time zones --------------------------------------------------------------------------------------


def in_zone(asset: AssetRegistration, zone: str) -> AssetRegistration:
    data = asset.model_dump(by_alias=True, mode="json", exclude_none=True)
    return AssetRegistration.model_validate({**data, "source": {**data["source"], "timeZone": zone}})


def set_property(root: Path, name: str, value: str) -> None:
    properties = root / ".hoodie" / "hoodie.properties"
    lines = [line for line in properties.read_text().splitlines() if not line.startswith(f"{name}=")]
    properties.write_text("\n".join([*lines, f"{name}={value}"]) + "\n")


@pytest.mark.parametrize("timeline_zone", [None, "LOCAL", "UTC"])
def test_instant_times_are_read_in_the_writers_zone_unless_the_table_says_utc(
    tmp_path: Path, lake: Lake, timeline_zone: str | None
) -> None:
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    if timeline_zone is not None:
        set_property(hudi.root, "hoodie.table.timeline.timezone", timeline_zone)
    shown = hudi.reveal_all()
    asset = in_zone(register(hudi.location, "ods.users"), "Asia/Tokyo")
    lake.poll(asset)
    (event,) = lake.events(asset.asset_key)
    utc = instant_millis(shown[-1])
    assert event.commit_time == (utc if timeline_zone == "UTC" else utc - 9 * 3_600_000)
    if timeline_zone == "UTC":  # hudi-rs reads a UTC timeline as we do
        table = HudiTableBuilder.from_base_uri(hudi.location).build()
        (latest,) = [i for i in table.get_timeline().get_completed_replacecommits()]
        assert latest.epoch_mills == event.commit_time


def test_a_commit_time_without_a_zone_is_utc_as_before(tmp_path: Path, lake: Lake) -> None:
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    shown = hudi.reveal_all()
    asset = register(hudi.location, "ods.users")
    lake.poll(asset)
    (event,) = lake.events(asset.asset_key)
    assert event.commit_time == instant_millis(shown[-1])


def test_a_table_in_a_local_zone_ahead_of_utc_read_as_utc_says_so(tmp_path: Path, lake: Lake) -> None:
    """A writer in UTC+14 whose zone is not configured: its newest commit looks 14 hours ahead."""
    hudi = StagedHudiTable.of(V9_MOR, tmp_path)
    asset = register(hudi.location, "ods.t")
    hudi.reveal()
    completed = max(int(p.name.split("_")[1].split(".")[0]) for p in timeline_dir(hudi.root).glob("*_*.*commit"))
    with_clock(lake, lambda: instant_millis(completed) - 14 * 3_600_000)
    (result,) = lake.poll_all([asset])
    assert result.snapshot_ids == () and result.warnings and "timeZone" in result.warnings[0]
    (result,) = lake.poll_all([in_zone(asset, "Pacific/Kiritimati")])
    assert len(result.snapshot_ids) == 1 and result.warnings == ()


def test_a_source_time_zone_is_checked_when_the_asset_is_written(container: Container, settings: Settings) -> None:
    api = Api(settings.admin_token or "")
    source = {"catalog": "lake", "location": "s3://lake-bucket/ods/users"}
    asset = {"assetKey": "hudi://lake/ods/users", "format": "hudi"}
    for zone in ("Mars/Olympus_Mons", "../../etc/passwd", "", "+09:00"):
        answer = api.call("PUT", "/assets", {**asset, "source": {**source, "timeZone": zone}})
        assert answer.status == 400 and "timeZone" in answer.body["message"], (zone, answer.body)
    delta = {"assetKey": "delta://lake/ods/users", "format": "delta", "source": {**source, "timeZone": "UTC"}}
    answer = api.call("PUT", "/assets", delta)
    assert answer.status == 400 and "timeZone is for hudi sources" in answer.body["message"]
    assert api.call("PUT", "/assets", {**asset, "source": {**source, "timeZone": "Asia/Tokyo"}}).status in (200, 201)
    (stored,) = api.call("GET", "/assets").body["items"]
    assert stored["source"]["timeZone"] == "Asia/Tokyo"


def test_an_upgrade_on_s3_is_seen_in_the_listing_the_poll_makes_anyway(
    server: CountingMotoServer, s3_options: tuple[str, dict[str, str]], lake: Lake, tmp_path: Path
) -> None:
    bucket, options = s3_options
    hudi = StagedHudiTable.of(V6_COW, tmp_path)
    hudi.reveal(2)
    upload(server, hudi.root, bucket, "lake/users")
    endpoint = {k: options[k] for k in ("AWS_ENDPOINT_URL", "AWS_REGION")}  # the role's (moto's) credentials
    asset = register(f"s3://{bucket}/lake/users", "ods.users", endpoint)
    lake.poll(asset)
    server.reset()
    with server.measure() as unchanged:  # a 0.x table: one listing of .hoodie/, which also shows its folders
        assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(unchanged) == {("s3", "ListObjects"): 1}

    client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
    upgrade_timeline(hudi.root)
    (third,) = hudi.reveal(into=hudi.root / ".hoodie")
    for path in (hudi.root / ".hoodie").glob(f"{third}*"):
        os.utime(path)
    upgrade_timeline(hudi.root, [third], finish=False)
    old = client.list_objects_v2(Bucket=bucket, Prefix="lake/users/.hoodie/", Delimiter="/")["Contents"]
    for item in old:  # the upgrade deleted the 0.x instant files
        if item["Key"].rsplit("/", 1)[-1][:1].isdigit():
            client.delete_object(Bucket=bucket, Key=item["Key"])
    upload(server, hudi.root / ".hoodie", bucket, "lake/users/.hoodie")
    assert lake.poll(asset).snapshot_ids == (third,)
    server.reset()
    with server.measure() as upgraded:  # from now on: one listing of .hoodie/timeline/
        assert lake.poll(asset).outcome is PollOutcome.UNCHANGED
    assert dict(upgraded) == {("s3", "ListObjects"): 1}
