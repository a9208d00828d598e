"""Ports of the replay gates: reading spool manifests and streaming objects, and asking a table
whether a pinned snapshot is still retained."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.errors import LakehookError, NotFoundError
from lakehook.domain.snapshots import SnapshotInfo


class ObjectNotFoundError(NotFoundError):
    """The object (or its bucket) does not exist."""


class ObjectTooLargeError(LakehookError):
    """The object is larger than the caller is willing to hold in memory."""


class ObjectAccessError(LakehookError):
    """The object store refused access or failed; the object's state is unknown."""


@dataclass(frozen=True)
class ObjectDigest:
    """What streaming an object through SHA-256 found: the bytes read and their digest."""

    size: int
    sha256: str


class ObjectStore(ABC):
    """Objects by ``s3://bucket/key`` URI: size, small reads, and bounded-memory streaming."""

    @abstractmethod
    def size(self, uri: str) -> int | None:
        """The object's size in bytes (one HEAD), or None if it does not exist."""

    @abstractmethod
    def read(self, uri: str, max_bytes: int) -> bytes:
        """The whole object, for small ones (manifests). ObjectNotFoundError, ObjectTooLargeError."""

    @abstractmethod
    def chunks(self, uri: str) -> Iterator[bytes]:
        """The object's bytes in chunks of at most :attr:`chunk_size`; memory stays bounded by it."""

    @property
    @abstractmethod
    def chunk_size(self) -> int:
        """The largest chunk :meth:`chunks` yields."""

    def digest(self, uri: str) -> ObjectDigest:
        """SHA-256 and size of the object, streamed chunk by chunk (objects of several GB are fine)."""
        hasher = hashlib.sha256()
        size = 0
        for chunk in self.chunks(uri):
            hasher.update(chunk)
            size += len(chunk)
        return ObjectDigest(size, hasher.hexdigest())


class SnapshotExistence(ABC):
    """Whether a table still retains a snapshot (expiry removes old ones); for the replay pre-flight.

    A narrow port of its own: :class:`~lakehook.ports.lakehouse.SnapshotSource` reads snapshots
    after a cursor and has no "is this one still there?" question.
    """

    @abstractmethod
    def find_snapshot(self, asset: AssetRegistration, snapshot_id: int) -> SnapshotInfo | None:
        """The snapshot if the table still retains it, else None.

        Raises the SnapshotSource errors (TableNotFoundError, SourceAccessError, CorruptMetadataError).
        """
