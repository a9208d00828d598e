"""The port a restore reconcile reads through: the run manifests written since an instant."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator


class ManifestArchive(ABC):
    """Where run manifests are kept, listed by when they were written."""

    @abstractmethod
    def written_since(self, since_ms: int) -> Iterator[str]:
        """The URIs of every run manifest written at or after ``since_ms`` (epoch milliseconds), each once, paging
        through as many as there are."""
