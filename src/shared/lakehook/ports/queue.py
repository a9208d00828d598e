"""A work queue that hands batches of work to worker functions (SQS on AWS)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class WorkQueue(ABC):
    """Send JSON messages to the workers."""

    @abstractmethod
    def send(self, messages: list[dict[str, Any]]) -> int:
        """Send every message (batched as the queue allows); answer how many were sent."""
