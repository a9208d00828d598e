"""A shipped watcher that is not a table: new objects under an S3 prefix, on the watcher SDK.

Each turn lists only the keys after the last one seen (``ListObjectsV2`` with ``StartAfter``, in key order), so a
prefix of millions of objects is never rescanned. When new objects arrived it pushes ``SNAPSHOT_COMMITTED`` for
the prefix's asset (``snapshotId``: how many objects it has seen in all, so every batch is a newer version;
``watermark``: the newest ``LastModified`` seen) and then persists its state with compare-and-set::

    import boto3
    from lakehook.client import PushClient, S3PrefixWatcher, WatermarkClient

    watcher = S3PrefixWatcher(WatermarkClient(URL, "landing-watcher", SECRET), PushClient(URL, "landing-watcher",
                              SECRET), boto3.client("s3"), "landing", "orders/", asset_key="s3://landing/orders")
    watcher.turn()   # -> the event pushed, or None

Fit for prefixes whose new objects sort after the old ones (time-stamped names, ``dt=2026-12-07/`` partitions):
an object written later under a smaller key than one already seen is not announced. Its credential is a producer
with ``s3://landing/orders`` in its ``assetKeyPrefixes`` and the namespace in its ``watermarkNamespaces``; boto3
is the caller's (only a client object is needed: ``list_objects_v2``).
"""

from __future__ import annotations

from typing import Any

from lakehook.client.push import PushClient
from lakehook.client.watcher import Watcher, WatermarkClient

NAMESPACE = "watchers"
PAGE_SIZE = 1000  # S3's own maximum per ListObjectsV2 page


class S3PrefixWatcher(Watcher):
    """New objects under ``s3://bucket/prefix``; the persisted state is ``{"lastKey", "objects", "newestMs"}``."""

    def __init__(
        self,
        client: WatermarkClient,
        push: PushClient,
        s3: Any,
        bucket: str,
        prefix: str,
        *,
        asset_key: str | None = None,
        namespace: str = NAMESPACE,
    ) -> None:
        super().__init__(client, namespace, asset_key or f"s3://{bucket}/{prefix.rstrip('/')}", key="objects")
        self.push = push
        self.s3 = s3
        self.bucket = bucket
        self.prefix = prefix

    def get_high_watermark(self) -> dict[str, Any] | None:
        """The state after the objects listed beyond the last key seen (the low watermark), or None when none has
        ever been seen."""
        state = dict(self.low_watermark or {"lastKey": None, "objects": 0, "newestMs": None})
        for entry in self._listed_after(state["lastKey"]):
            modified = int(entry["LastModified"].timestamp() * 1000)
            state["lastKey"] = entry["Key"]
            state["objects"] += 1
            state["newestMs"] = max(state["newestMs"] or modified, modified)
        return state if state["objects"] else None

    def turn(self) -> dict[str, Any] | None:
        """Announce the objects that arrived since the last turn: the event pushed, or None when none did (or
        another copy of the watcher persisted first: it announced them)."""
        low = self.refresh()
        high = self.get_high_watermark()
        if high is None or (low is not None and high["objects"] == low["objects"]):
            return None
        event = {
            "eventType": "SNAPSHOT_COMMITTED",
            "assetKey": self.asset_key,
            "snapshotId": high["objects"],
            "commitTime": high["newestMs"],
            "watermark": high["newestMs"],
        }
        return event if self.advance(high, lambda: self.push.send(event)) else None

    def _listed_after(self, last_key: str | None) -> Any:
        options: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.prefix, "MaxKeys": PAGE_SIZE}
        if last_key is not None:
            options["StartAfter"] = last_key
        while True:
            page = self.s3.list_objects_v2(**options)
            yield from page.get("Contents", [])
            if not page.get("IsTruncated"):
                return
            options = {**options, "ContinuationToken": page["NextContinuationToken"]}
            options.pop("StartAfter", None)
