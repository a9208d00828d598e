"""Spool manifests on the local stack: S3 notifications and pushed seals both reach the verifier."""

from __future__ import annotations

import json
from typing import Any

import boto3
import requests

from lakehook.client.spool import SpoolWriter
from lakehook.local.runtime import LocalStack
from tests.support import signed_headers
from tests.waiting import wait_until

ADMIN = "spool-admin"
FIELDS: list[dict[str, Any]] = [{"name": "id", "type": "long", "nullable": False}]


def test_manifests_written_to_the_bucket_or_pushed_are_verified_before_they_count() -> None:
    with LocalStack(port=0, admin_token=ADMIN) as stack:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        s3 = boto3.client("s3", endpoint_url=stack.endpoint_url, region_name="us-east-1")
        bucket = stack.names["ManifestBucket"]

        def state(asset: str) -> dict[str, Any]:
            answer = requests.get(
                f"{stack.api_url}/assets/state", params={"assetKey": asset}, headers=admin, timeout=30
            )
            return answer.json() if answer.status_code == 200 else {}

        def wait_for(asset: str, status: str, seconds: float = 20) -> dict[str, Any]:
            def became() -> dict[str, Any] | None:
                found = state(asset)
                return found if found.get("manifestStatus") == status else None

            return wait_until(lambda: f"{asset} never became {status}: {state(asset)}", became, seconds, every=0.2)

        # GIVEN an extract that seals its spool in the manifest bucket: the bucket notifies the verifier
        orders = f"s3://{bucket}/spool/orders"
        with SpoolWriter(
            s3, manifest_uri=f"{orders}/run-1.manifest.json", asset_key=orders, snapshot_id=1, fields=FIELDS
        ) as writer:
            writer.upload_bytes(b"id\n1\n", f"{orders}/run-1/part-0.csv", row_count=1)
        sealed = wait_for(orders, "SEALED")
        assert sealed["manifestUri"] == writer.manifest_uri and sealed["manifestSnapshotId"] == 1

        # GIVEN a spool in another bucket, announced by a signed push: the push is queued for the verifier
        s3.create_bucket(Bucket="extracts")
        payments = "s3://extracts/payments"
        with SpoolWriter(
            s3, manifest_uri=f"{payments}/run-2.manifest.json", asset_key=payments, snapshot_id=2, fields=FIELDS
        ) as pushed:
            pushed.upload_bytes(b"id\n1\n2\n", f"{payments}/run-2/part-0.csv", row_count=2)
        producer = requests.put(
            f"{stack.api_url}/producers/extractor",
            headers=admin,
            json={"assetKeyPrefixes": ["s3://extracts/"]},
            timeout=30,
        )
        assert producer.status_code == 201, producer.text
        body = json.dumps(
            {"eventType": "MANIFEST_SEALED", "assetKey": payments, "manifestUri": pushed.manifest_uri}
        ).encode()
        answer = requests.post(
            f"{stack.api_url}/asset-events",
            data=body,
            headers=signed_headers("extractor", producer.json()["secret"], body),
            timeout=30,
        )
        assert answer.status_code == 200 and answer.json()["results"][0]["status"] == "ACCEPTED", answer.text
        assert wait_for(payments, "SEALED")["manifestUri"] == pushed.manifest_uri
