"""SQSWorkQueue: the poll fan-out queue."""

from __future__ import annotations

import json
from typing import Any

from lakehook.ports.queue import WorkQueue

SQS_BATCH = 10
SQS_BATCH_BYTES = 256 * 1024  # SendMessageBatch: the bodies of one request together


class QueueSendError(Exception):
    """SQS refused some messages of a batch even after a retry."""


class SQSWorkQueue(WorkQueue):
    """SendMessageBatch in tens (fewer when their bodies would pass 256 KiB together); entries SQS reports failed are
    retried once, then raised."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    def send(self, messages: list[dict[str, Any]]) -> int:
        for bodies in _batches([json.dumps(m, separators=(",", ":")) for m in messages]):
            entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies)]
            for _ in range(2):
                failed = {
                    f["Id"]
                    for f in self._client.send_message_batch(QueueUrl=self._url, Entries=entries).get("Failed", [])
                }
                entries = [e for e in entries if e["Id"] in failed]
                if not entries:
                    break
            if entries:
                raise QueueSendError(f"SQS refused {len(entries)} messages for {self._url}")
        return len(messages)


def _batches(bodies: list[str]) -> list[list[str]]:
    """The bodies in SendMessageBatch requests: at most ten, and 256 KiB together, a request."""
    batches: list[list[str]] = []
    size = 0
    for body in bodies:
        length = len(body.encode())
        if not batches or len(batches[-1]) >= SQS_BATCH or size + length > SQS_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(body)
        size += length
    return batches
