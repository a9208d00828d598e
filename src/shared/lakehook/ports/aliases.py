"""Port of aliases: names that resolve to concrete assets."""

from __future__ import annotations

from abc import ABC, abstractmethod

from lakehook.domain.aliases import Alias
from lakehook.ports.store import Page


class AliasStore(ABC):
    """Aliases by name."""

    @abstractmethod
    def put_alias(self, alias: Alias) -> bool:
        """Create or replace the alias (keeping its creation time). True if it was created."""

    @abstractmethod
    def get_alias(self, name: str) -> Alias | None:
        """The alias, or None."""

    @abstractmethod
    def list_aliases(self, limit: int, next_token: str | None = None) -> Page[Alias]:
        """Aliases in name order."""
