"""S3 event notifications on the local stack: watch a bucket, invoke the subscribed function as S3 would.

moto's server does not deliver bucket notifications to our in-process functions, so a watcher lists
the bucket every so often and, for each object created (or rewritten) since it last looked whose key
matches the subscription's prefix and suffix, invokes the function with an ``ObjectCreated:Put``
record shaped like S3's (the key URL-encoded, spaces as ``+``). Delivery is at least once, like S3's:
a function that fails is invoked again on the next look.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

from lakehook.local.invoker import LocalFunction
from lakehook.local.template import BucketSubscription

log = logging.getLogger("lakehook.local")


def notification(bucket: str, key: str, size: int, etag: str, region: str = "us-east-1") -> dict[str, Any]:
    """One ``ObjectCreated:Put`` notification as S3 hands it to Lambda."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": region,
                "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                "eventName": "ObjectCreated:Put",
                "userIdentity": {"principalId": "local"},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {"x-amz-request-id": "local", "x-amz-id-2": "local"},
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "local",
                    "bucket": {
                        "name": bucket,
                        "ownerIdentity": {"principalId": "local"},
                        "arn": f"arn:aws:s3:::{bucket}",
                    },
                    "object": {"key": quote_plus(key, safe="/"), "size": size, "eTag": etag, "sequencer": "0"},
                },
            }
        ]
    }


def wants_created(subscription: BucketSubscription) -> bool:
    """Whether the subscription asks for ObjectCreated events (the only kind a watcher can see)."""
    return any(e in ("s3:ObjectCreated:*", "s3:ObjectCreated:Put") for e in subscription.events)


class BucketWatcher:
    """Invoke ``fn`` for each new or rewritten object of ``bucket`` that matches ``subscription``."""

    def __init__(
        self, s3: Any, fn: LocalFunction, bucket: str, subscription: BucketSubscription, every: float = 0.5
    ) -> None:
        self._s3 = s3
        self._fn = fn
        self._bucket = bucket
        self._subscription = subscription
        self._every = every
        self._seen: dict[str, str] = {}  # key → ETag delivered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.looks = 0  # completed looks (listings), so a test can wait for the next one instead of sleeping

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"s3-{self._fn.spec.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def look(self) -> int:
        """List the bucket once and deliver what is new; answer how many notifications succeeded."""
        delivered = 0
        for obj in self._new_objects():
            event = notification(self._bucket, obj["Key"], int(obj["Size"]), str(obj["ETag"]).strip('"'))
            try:
                self._fn.invoke(event)
            except Exception:
                log.exception("s3 notification of %s/%s failed in %s", self._bucket, obj["Key"], self._fn.spec.name)
                continue  # not marked seen: delivered again on the next look
            self._seen[obj["Key"]] = obj["ETag"]
            delivered += 1
        return delivered

    def _new_objects(self) -> list[dict[str, Any]]:
        sub = self._subscription
        found: list[dict[str, Any]] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=sub.prefix):
            for obj in page.get("Contents", []):
                if obj["Key"].endswith(sub.suffix) and self._seen.get(obj["Key"]) != obj["ETag"]:
                    found.append(obj)
        return sorted(found, key=lambda o: (o["LastModified"], o["Key"]))

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except Exception:
                log.exception("listing %s failed", self._bucket)
            self.looks += 1
            self._stop.wait(self._every)
