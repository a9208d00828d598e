"""S3ManifestArchive on moto: the run manifests written since an instant, by S3's own write time."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from lakehook.adapters.s3.manifest_archive import S3ManifestArchive
from lakehook.adapters.s3.manifest_store import S3ManifestStore
from lakehook.domain.dispatch import RunManifest
from lakehook.domain.triggers import PinnedInput, Trigger

BUCKET = "restore-manifests"


@pytest.fixture
def s3(aws: None) -> Any:
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def manifest(n: int) -> RunManifest:
    pin = PinnedInput(asset_key="paimon://lake/ods_db/orders", snapshot_id=n)
    trigger = Trigger(
        trigger_key=f"rule.g.{n:04d}", rule_id="rule", group_id="g", inputs=(pin,), created_at=n, updated_at=n
    )
    return RunManifest.for_trigger(trigger)


def written_ms(s3: Any, key: str) -> int:
    return int(s3.head_object(Bucket=BUCKET, Key=key)["LastModified"].timestamp() * 1000)


def test_manifests_of_the_second_of_the_instant_and_after_are_listed_and_nothing_else(s3: Any) -> None:
    store, archive = S3ManifestStore(s3, BUCKET), S3ManifestArchive(s3, BUCKET)
    uris = [store.put_if_absent(f"rule.g.{n:04d}", manifest(n)) for n in range(3)]
    s3.put_object(Bucket=BUCKET, Key="spool/orders.manifest.json", Body=b"{}")  # a spool manifest: not a run's
    times = [written_ms(s3, f"manifests/rule.g.{n:04d}.json") for n in range(3)]
    assert all(t % 1000 == 0 for t in times)  # S3 keeps whole seconds

    assert sorted(archive.written_since(min(times) + 999)) == sorted(uris)  # within the second: listed (harmless)
    assert list(archive.written_since(max(times) + 1000)) == []
    assert sorted(archive.written_since(0)) == sorted(uris)
