"""The commit-notice state of registered tables (``domain.notice_state``): kept with each registration, so the
planner reads it with the registrations it lists anyway."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.notice_state import NoticeState
from lakehook.ports.store import Page


@dataclass(frozen=True)
class PlannedAsset:
    """A registered asset as the poll planner sees it: its registration and its notice state."""

    registration: AssetRegistration
    notices: NoticeState


class NoticeStore(ABC):
    """Where notices are recorded per registered table. A table that is not registered records nothing; a new
    registration (``PUT /assets``) starts with no notice."""

    @abstractmethod
    def record_notice(self, asset_keys: Sequence[str], at_ms: int) -> None:
        """A notice named these tables at ``at_ms``: each is ARRIVING again (a missed commit is forgotten)."""

    @abstractmethod
    def record_missed(self, asset_key: str, at_ms: int) -> None:
        """A safety-net poll found a commit no notice announced: QUIET from ``at_ms`` (the first such time kept)."""

    @abstractmethod
    def notices(self, asset_key: str) -> NoticeState:
        """The table's notice state (no notice: an empty one)."""

    @abstractmethod
    def list_planned(self, limit: int, next_token: str | None = None) -> Page[PlannedAsset]:
        """Registered assets in key order, each with its notice state (what ``list_assets`` lists)."""
