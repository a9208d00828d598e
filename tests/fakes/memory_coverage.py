"""In-memory fakes of the coverage and spool ports, for unit tests and the reference model. Thread-safe: the
coverage store merges under its lock; the object store and snapshot existence only read through their ports
(a test fills ``objects``, ``retained`` and ``failures`` before it starts any thread)."""

from __future__ import annotations

from collections.abc import Iterator

from lakehook.adapters.memory.coverage import InMemoryCoverageStore as InMemoryCoverageStore
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.snapshots import SnapshotInfo
from lakehook.ports.spool import ObjectNotFoundError, ObjectStore, ObjectTooLargeError, SnapshotExistence
from lakehook.wire.spool_format import parse_s3_uri


class InMemoryObjectStore(ObjectStore):
    """Objects as bytes by URI."""

    def __init__(self, chunk_size: int = 1024) -> None:
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        self.objects: dict[str, bytes] = {}
        self._chunk_size = chunk_size

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    def size(self, uri: str) -> int | None:
        _location(uri)  # as the S3 store: a URI that names no object is ObjectNotFoundError, not "absent"
        data = self.objects.get(uri)
        return None if data is None else len(data)

    def read(self, uri: str, max_bytes: int) -> bytes:
        data = self._get(uri)
        if len(data) > max_bytes:
            raise ObjectTooLargeError(f"{uri} is {len(data)} bytes; at most {max_bytes} are read whole")
        return data

    def chunks(self, uri: str) -> Iterator[bytes]:
        data = self._get(uri)
        for start in range(0, len(data), self._chunk_size):
            yield data[start : start + self._chunk_size]

    def _get(self, uri: str) -> bytes:
        _location(uri)
        if uri not in self.objects:
            raise ObjectNotFoundError(f"{uri} does not exist")
        return self.objects[uri]


def _location(uri: str) -> None:
    try:
        parse_s3_uri(uri)
    except ValueError as exc:
        raise ObjectNotFoundError(str(exc)) from exc


class InMemorySnapshotExistence(SnapshotExistence):
    """Retained snapshots per asset key; an exception per asset key simulates an unreadable table."""

    def __init__(self) -> None:
        self.retained: dict[str, dict[int, SnapshotInfo]] = {}
        self.failures: dict[str, Exception] = {}

    def find_snapshot(self, asset: AssetRegistration, snapshot_id: int) -> SnapshotInfo | None:
        if asset.asset_key in self.failures:
            raise self.failures[asset.asset_key]
        return self.retained.get(asset.asset_key, {}).get(snapshot_id)
