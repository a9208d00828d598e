"""The SpoolVerifierFunction handler with its sample payloads, on moto: S3 notifications and queued requests."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from lakehook.client.spool import SpoolWriter
from lakehook.container import Container
from tests.conftest import BUCKET
from tests.support import ROOT, FakeLambdaContext, load_handler

SAMPLES = ROOT / "events" / "spool_verifier"
FIELDS: list[dict[str, Any]] = [{"name": "order_id", "type": "long", "nullable": False}]


def sample(name: str) -> dict[str, Any]:
    return dict(json.loads((SAMPLES / f"{name}.json").read_text()))


@pytest.fixture
def s3(container: Container) -> Any:
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def seal(s3: Any, asset: str, key: str, snapshot_id: int) -> str:
    manifest_uri = f"s3://{BUCKET}/{key}"
    with SpoolWriter(s3, manifest_uri=manifest_uri, asset_key=asset, snapshot_id=snapshot_id, fields=FIELDS) as w:
        w.upload_bytes(b"order_id\n1\n2\n", f"s3://{BUCKET}/{key}.d/part-0.csv", row_count=2)
    return manifest_uri


def test_the_s3_notification_sample_verifies_the_manifest_and_seals_its_asset(container: Container, s3: Any) -> None:
    asset = f"s3://{BUCKET}/spool/orders"
    manifest_uri = seal(s3, asset, "spool/orders/run 7.manifest.json", 7)  # the sample's key is URL-encoded
    answer = load_handler("spool_verifier")(sample("s3_manifest_created"), FakeLambdaContext())
    assert [v["status"] for v in answer["verified"]] == ["VERIFIED"]
    state = container.asset_store.get_state(asset)
    assert state is not None
    assert (state.manifest_uri, state.manifest_status, state.manifest_snapshot_id) == (manifest_uri, "SEALED", 7)


def test_the_queue_sample_records_a_tampered_manifest_invalid_and_drops_a_malformed_request(
    container: Container, s3: Any
) -> None:
    asset = f"s3://{BUCKET}/spool/payments"
    seal(s3, asset, "spool/payments/run-8.manifest.json", 8)
    s3.put_object(Bucket=BUCKET, Key="spool/payments/run-8.manifest.json.d/part-0.csv", Body=b"order_id\n1\n")
    answer = load_handler("spool_verifier")(sample("sqs_verify_request"), FakeLambdaContext())
    assert answer == {"batchItemFailures": []}  # the request without a manifestUri is dropped, not retried
    state = container.asset_store.get_state(asset)
    assert state is not None and state.manifest_status == "INVALID"
    assert state.manifest_object == f"s3://{BUCKET}/spool/payments/run-8.manifest.json.d/part-0.csv"
    assert state.manifest_reason is not None and "truncated" in state.manifest_reason
