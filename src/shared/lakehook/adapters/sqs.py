"""SQSWorkQueue: the poll fan-out queue."""

from __future__ import annotations

import json
from typing import Any

from lakehook.ports.queue import WorkQueue

SQS_BATCH = 10


class QueueSendError(Exception):
    """SQS refused some messages of a batch even after a retry."""


class SQSWorkQueue(WorkQueue):
    """SendMessageBatch in tens; entries SQS reports failed are retried once, then raised."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    def send(self, messages: list[dict[str, Any]]) -> int:
        for start in range(0, len(messages), SQS_BATCH):
            entries = [
                {"Id": str(i), "MessageBody": json.dumps(m, separators=(",", ":"))}
                for i, m in enumerate(messages[start : start + SQS_BATCH])
            ]
            for _ in range(2):
                failed = {
                    f["Id"]
                    for f in self._client.send_message_batch(QueueUrl=self._url, Entries=entries).get("Failed", [])
                }
                entries = [e for e in entries if e["Id"] in failed]
                if not entries:
                    break
            if entries:
                raise QueueSendError(f"SQS refused {len(entries)} poll messages for {self._url}")
        return len(messages)
