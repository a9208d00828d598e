"""What writer jobs, watchers and downstream runs import: light helpers (the standard library, and boto3 for the
spool writer): the push client, the sensor client (``LakehookClient.wait_for``) and the watcher SDK (``Watcher``).

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
from lakehook.client.s3_watcher import S3PrefixWatcher
from lakehook.client.sensor import (
    LakehookClient,
    SensorError,
    SensorRejectedError,
    SensorResult,
    SensorTimeoutError,
    SensorUnavailableError,
)
from lakehook.client.signing import sign
from lakehook.client.watcher import (
    Watcher,
    Watermark,
    WatermarkClient,
    WatermarkConflictError,
    WatermarkError,
    WatermarkRejectedError,
)

__all__ = [
    "TRIGGER_KEY_PROPERTY",
    "LakehookClient",
    "PushClient",
    "PushError",
    "PushRejectedError",
    "PushResult",
    "PushUnavailableError",
    "S3PrefixWatcher",
    "SensorError",
    "SensorRejectedError",
    "SensorResult",
    "SensorTimeoutError",
    "SensorUnavailableError",
    "SpoolWriteError",
    "SpoolWriter",
    "Watcher",
    "Watermark",
    "WatermarkClient",
    "WatermarkConflictError",
    "WatermarkError",
    "WatermarkRejectedError",
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
