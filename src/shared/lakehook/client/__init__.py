"""What writer jobs import: light helpers (the standard library, and boto3 for the spool writer).

``PushClient`` and the snapshot helpers need only the standard library; the spool writer is
imported on first use, so a job that only pushes never loads it. ``commit_properties`` (and
``user_metadata``) are what a run sets on its outlet commits so that they confirm it.
"""

from __future__ import annotations

from typing import Any

from lakehook.client.outlets import TRIGGER_KEY_PROPERTY, commit_properties, user_metadata
from lakehook.client.push import (
    PushClient,
    PushError,
    PushRejectedError,
    PushResult,
    PushUnavailableError,
    event_id,
    snapshot_event_from_iceberg,
    snapshot_event_from_paimon,
)
from lakehook.client.signing import sign

__all__ = [
    "TRIGGER_KEY_PROPERTY",
    "PushClient",
    "PushError",
    "PushRejectedError",
    "PushResult",
    "PushUnavailableError",
    "SpoolWriteError",
    "SpoolWriter",
    "commit_properties",
    "event_id",
    "sign",
    "snapshot_event_from_iceberg",
    "snapshot_event_from_paimon",
    "user_metadata",
]


def __getattr__(name: str) -> Any:
    if name in ("SpoolWriter", "SpoolWriteError"):
        from lakehook.client import spool

        return getattr(spool, name)
    raise AttributeError(f"module 'lakehook.client' has no attribute {name!r}")
