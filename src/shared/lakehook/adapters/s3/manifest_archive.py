"""S3ManifestArchive: the run manifests (``manifests/<trigger key>.json``) written since an instant.

S3 lists keys in key order, not by time, so every page of the prefix is read and filtered on ``LastModified``
(the time the object was written; a manifest is written once). ``LastModified`` has whole seconds, so the instant
is taken down to its second: a manifest of the same second is listed too (a reconcile skips a key the table holds).
One ListObjectsV2 request per 1,000 manifests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lakehook.adapters.s3.manifest_store import PREFIX
from lakehook.ports.restore import ManifestArchive


class S3ManifestArchive(ManifestArchive):
    """Run manifests of the manifest bucket, by write time."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def written_since(self, since_ms: int) -> Iterator[str]:
        floor = since_ms - since_ms % 1000
        for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=PREFIX):
            for item in page.get("Contents", []):
                written = int(item["LastModified"].timestamp() * 1000)
                if written >= floor and item["Key"].endswith(".json"):
                    yield f"s3://{self._bucket}/{item['Key']}"
