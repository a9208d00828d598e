"""A custom watcher on the watcher SDK: new files in a directory advance an asset's watermark.

lakehook polls Iceberg, Paimon, Delta and Hudi tables itself; anything else (a landing directory, an S3 prefix, a
database's ``updated_at``) is watched by a small program like this one. It keeps how far it has seen in lakehook's
watermark store (``low_watermark``), so a restart resumes instead of announcing every file again, and it persists
with compare-and-set, so two copies never both announce the same files. For each turn:

1. ``low_watermark``: the newest file time announced so far (None on the first turn);
2. ``get_high_watermark()``: the newest file time now;
3. if it moved, push ``WATERMARK_ADVANCED`` for the asset (a rule's ``watermarkAtLeast`` waits for it), then
   ``persist_watermark(high)``. A crash between the two pushes the same watermark again next turn: lakehook
   answers it DUPLICATE.

Its credential is a producer, not the admin token: ``PUT /producers/dir-watcher`` with
``{"assetKeyPrefixes": ["file://landing"], "watermarkNamespaces": ["watchers"]}`` (the secret is in the answer)::

    LAKEHOOK_SECRET=... python directory_watcher.py --url http://127.0.0.1:3000 --producer dir-watcher \\
        --dir /data/landing --asset-key file://landing/orders --interval 30
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from lakehook.client import PushClient, WatermarkClient, Watcher

NAMESPACE = "watchers"


class DirectoryWatcher(Watcher):
    """The newest modification time (epoch milliseconds) of the regular files directly in ``directory``."""

    def __init__(self, client: WatermarkClient, asset_key: str, directory: Path) -> None:
        super().__init__(client, NAMESPACE, asset_key, key="newestFileMs")
        self.directory = directory

    def get_high_watermark(self) -> int | None:
        times = [entry.stat().st_mtime_ns // 1_000_000 for entry in self.directory.iterdir() if entry.is_file()]
        return max(times, default=None)


def turn(watcher: DirectoryWatcher, push: PushClient) -> dict[str, Any] | None:
    """One turn: the event pushed for files newer than the last turn's, or None when nothing moved (or another copy
    of the watcher got there first)."""
    low, high = watcher.refresh(), watcher.get_high_watermark()
    if high is None or (low is not None and high <= low):
        return None
    event = {"eventType": "WATERMARK_ADVANCED", "assetKey": watcher.asset_key, "watermark": high}
    # push, then persist with compare-and-set; False: another copy persisted first (and pushed the same)
    return event if watcher.advance(high, lambda: push.send(event)) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the stack's ApiUrl")
    parser.add_argument("--producer", required=True, help="a producer with this namespace in its watermarkNamespaces")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--asset-key", required=True)
    parser.add_argument("--interval", type=float, default=0, help="seconds between turns; 0: one turn")
    args = parser.parse_args()
    secret = os.environ["LAKEHOOK_SECRET"]
    watcher = DirectoryWatcher(WatermarkClient(args.url, args.producer, secret), args.asset_key, args.dir)
    push = PushClient(args.url, args.producer, secret)
    while True:
        print(turn(watcher, push) or "nothing new", flush=True)
        if not args.interval:
            return
        time.sleep(args.interval)


if __name__ == "__main__":
    main()
