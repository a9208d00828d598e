"""S3ManifestStore: one run manifest per trigger key at ``manifests/<trigger key>.json``, written once.

The put is conditional (``If-None-Match: *``): it creates the object only if no object exists under
the key. A retry (412 Precondition Failed) reads what is there: the same bytes are our own earlier
write, anything else is refused with ManifestConflictError and never replaced. Manifests are
canonical JSON, so "the same manifest" is "the same bytes".
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from lakehook.domain.dispatch import ManifestConflictError, RunManifest, sha256_hex
from lakehook.domain.errors import NotFoundError
from lakehook.ports.dispatch import ManifestStore

PREFIX = "manifests/"


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3ManifestStore(ManifestStore):
    """Run manifests in the manifest bucket."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def uri_for(self, trigger_key: str) -> str:
        return f"s3://{self._bucket}/{PREFIX}{trigger_key}.json"

    def put_if_absent(self, trigger_key: str, manifest: RunManifest) -> str:
        key = f"{PREFIX}{trigger_key}.json"
        document = manifest.document()
        try:
            self._client.put_object(
                Bucket=self._bucket,
                Key=key,
                Body=document,
                ContentType="application/json",
                IfNoneMatch="*",
                Metadata={"sha256": manifest.sha256},
            )
        except ClientError as exc:
            if _code(exc) != "PreconditionFailed":
                raise  # ConditionalRequestConflict (a racing put in flight), throttling: the caller retries
            stored = self._read(key)
            if stored != document:
                raise ManifestConflictError(
                    f"a different manifest is stored for trigger {trigger_key!r} "
                    f"(sha256 {sha256_hex(stored)[:12]}, ours {sha256_hex(document)[:12]})"
                ) from exc
        return self.uri_for(trigger_key)

    def get(self, uri: str) -> RunManifest:
        parts = urlsplit(uri)
        if parts.scheme != "s3" or parts.netloc != self._bucket or not parts.path.startswith(f"/{PREFIX}"):
            raise NotFoundError(f"{uri} is not a run manifest of bucket {self._bucket}")
        return RunManifest.from_document(self._read(parts.path.lstrip("/")))

    def _read(self, key: str) -> bytes:
        try:
            return bytes(self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                raise NotFoundError(f"no manifest at s3://{self._bucket}/{key}") from exc
            raise
