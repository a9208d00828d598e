"""SpoolWriter: spool a job's output to S3 and seal it with a manifest lakehook can verify.

For writer and extract jobs; needs the standard library and a boto3 S3 client, nothing else::

    s3 = boto3.client("s3")
    with SpoolWriter(s3, manifest_uri="s3://spool-bucket/orders/run-42.manifest.json",
                     asset_key="s3://spool-bucket/orders", snapshot_id=42,
                     fields=[{"name": "order_id", "type": "long", "nullable": False}]) as spool:
        spool.upload_file("/tmp/part-0.parquet", "s3://spool-bucket/orders/run-42/part-0.parquet", row_count=1000)
        spool.upload_stream(stream, "s3://spool-bucket/orders/run-42/part-1.parquet", row_count=800)
    # leaving the block seals it (SEALED, written after every object); an exception inside writes
    # INTERRUPTED with the error as the reason, then propagates

Sizes and SHA-256 are measured by the writer itself: from the local file before uploading it, or
on the bytes of a stream as they are uploaded (the stream is read exactly once). Give every attempt
its own manifest URI: a retry that re-stages from scratch then seals a new manifest, which
replaces the interrupted one in the asset's state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from lakehook.wire.spool_format import (
    CHECKSUM_FIELD,
    FORMAT_VERSION,
    INTERRUPTED,
    MANIFEST_SUFFIX,
    SEALED,
    manifest_checksum,
    parse_s3_uri,
)

READ_CHUNK = 8 * 1024 * 1024


class SpoolWriteError(Exception):
    """The spool could not be written or sealed as asked."""


def _utc_now() -> str:
    return datetime.now(tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _HashingReader:
    """A read-only, non-seekable view of a stream that hashes and counts every byte read through it.

    Non-seekable on purpose: the S3 transfer manager then reads it once, in order, so what is
    hashed is exactly what is uploaded.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.sha256 = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.sha256.update(data)
        self.size += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


class SpoolWriter:
    """Upload objects, remember their sizes and SHA-256, then seal (or interrupt) with the manifest."""

    def __init__(
        self,
        s3: Any,
        *,
        manifest_uri: str,
        asset_key: str,
        snapshot_id: int,
        fields: Sequence[dict[str, Any]],
        schema_id: int | None = None,
        writer: str | None = None,
        clock: Callable[[], str] = _utc_now,
    ) -> None:
        parse_s3_uri(manifest_uri)
        if not manifest_uri.endswith(MANIFEST_SUFFIX):
            raise SpoolWriteError(f"a manifest URI ends with {MANIFEST_SUFFIX} (S3 notifications filter on it)")
        if not fields:
            raise SpoolWriteError("the schema needs at least one field")
        self._s3 = s3
        self.manifest_uri = manifest_uri
        self._asset_key = asset_key
        self._snapshot_id = snapshot_id
        self._schema: dict[str, Any] = {"fields": [dict(f) for f in fields]}
        if schema_id is not None:
            self._schema["schemaId"] = schema_id
        self._writer = writer
        self._clock = clock
        self.objects: list[dict[str, Any]] = []
        self.status: str | None = None  # SEALED or INTERRUPTED once the manifest is written

    # --- objects ----------------------------------------------------------------------------------

    def upload_file(self, path: str | Path, uri: str, *, row_count: int | None = None) -> dict[str, Any]:
        """Hash the local file (one read), then upload it (multipart when large)."""
        bucket, key = parse_s3_uri(uri)
        sha, size = hashlib.sha256(), 0
        with open(path, "rb") as handle:
            while chunk := handle.read(READ_CHUNK):
                sha.update(chunk)
                size += len(chunk)
        self._s3.upload_file(str(path), bucket, key)
        return self._check_and_add(uri, size, sha.hexdigest(), row_count)

    def upload_bytes(self, data: bytes, uri: str, *, row_count: int | None = None) -> dict[str, Any]:
        """Upload bytes held in memory (one PUT)."""
        bucket, key = parse_s3_uri(uri)
        self._s3.put_object(Bucket=bucket, Key=key, Body=data)
        return self._add(uri, len(data), hashlib.sha256(data).hexdigest(), row_count)

    def upload_stream(self, stream: IO[bytes], uri: str, *, row_count: int | None = None) -> dict[str, Any]:
        """Upload a readable stream, hashing the bytes as they go up (read exactly once)."""
        bucket, key = parse_s3_uri(uri)
        reader = _HashingReader(stream)
        self._s3.upload_fileobj(reader, bucket, key)
        return self._check_and_add(uri, reader.size, reader.sha256.hexdigest(), row_count)

    def add_object(self, uri: str, size: int, sha256: str, *, row_count: int | None = None) -> dict[str, Any]:
        """Record an object another process wrote and measured; lakehook verifies it like any other."""
        parse_s3_uri(uri)
        return self._add(uri, size, sha256.lower(), row_count)

    def _check_and_add(self, uri: str, size: int, sha256: str, row_count: int | None) -> dict[str, Any]:
        bucket, key = parse_s3_uri(uri)
        stored = int(self._s3.head_object(Bucket=bucket, Key=key)["ContentLength"])
        if stored != size:
            raise SpoolWriteError(f"{uri} is {stored} bytes on S3 but {size} were written")
        return self._add(uri, size, sha256, row_count)

    def _add(self, uri: str, size: int, sha256: str, row_count: int | None) -> dict[str, Any]:
        if self.status is not None:
            raise SpoolWriteError(f"the manifest is already {self.status}; start a new spool")
        if any(o["uri"] == uri for o in self.objects):
            raise SpoolWriteError(f"{uri} is already part of this spool")
        entry: dict[str, Any] = {"uri": uri, "size": size, "sha256": sha256}
        if row_count is not None:
            entry["rowCount"] = row_count
        self.objects.append(entry)
        return entry

    # --- the manifest -------------------------------------------------------------------------------

    def seal(self, row_count: int | None = None) -> dict[str, Any]:
        """Write the SEALED manifest, after every object. ``row_count`` defaults to the objects' sum."""
        if row_count is None:
            counts = [o.get("rowCount") for o in self.objects]
            if any(c is None for c in counts):
                raise SpoolWriteError("give seal() the row count, or a row_count for every object")
            row_count = sum(int(c) for c in counts if c is not None)
        return self._write(SEALED, row_count, None)

    def interrupt(self, reason: str, row_count: int | None = None) -> dict[str, Any]:
        """Write the INTERRUPTED manifest: downstream stays blocked until a sealed one replaces it."""
        rows = row_count if row_count is not None else sum(int(o.get("rowCount") or 0) for o in self.objects)
        return self._write(INTERRUPTED, rows, reason[:2048] or "interrupted")

    def _write(self, status: str, row_count: int, reason: str | None) -> dict[str, Any]:
        if self.status is not None:
            raise SpoolWriteError(f"the manifest is already {self.status}")
        document: dict[str, Any] = {
            "formatVersion": FORMAT_VERSION,
            "assetKey": self._asset_key,
            "snapshotId": self._snapshot_id,
            "rowCount": row_count,
            "schema": self._schema,
            "objects": list(self.objects),
            "status": status,
            "createdAt": self._clock(),
        }
        if self._writer is not None:
            document["writer"] = self._writer
        if reason is not None:
            document["reason"] = reason
        document[CHECKSUM_FIELD] = manifest_checksum(document)
        bucket, key = parse_s3_uri(self.manifest_uri)
        body = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        self._s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
        self.status = status
        return document

    def __enter__(self) -> SpoolWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.status is not None:
            return
        if error is None:
            self.seal()
            return
        try:
            self.interrupt(f"{kind.__name__ if kind else 'error'}: {error}")
        except Exception as exc:  # the job's own error matters more; keep it, note ours
            error.add_note(f"lakehook: the INTERRUPTED manifest could not be written either: {exc}")
