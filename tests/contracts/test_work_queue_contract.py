"""The WorkQueue contract (ports.queue), on the fake and on SQS: every message sent arrives once (in no promised
order), as the JSON it was, however many (SQS takes ten a batch), and ``send`` answers how many it sent."""

from __future__ import annotations

import pytest

from tests.contracts.conftest import QueueBackend

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("count", [0, 1, 10, 23])
def test_every_message_sent_arrives_once_as_it_was(queue_backend: QueueBackend, count: int) -> None:
    messages = [
        {"mode": "poll", "assetKeys": [f"paimon://lake/ods/t{i}"], "n": i, "nested": {"ok": True}} for i in range(count)
    ]

    assert queue_backend.queue.send(messages) == count
    assert queue_backend.received() == messages
