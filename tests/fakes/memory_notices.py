"""The notice store on the in-memory registry: the notice state rides on the registration, as on DynamoDB's META
item (a re-registration starts with no notice; a table that is not registered records nothing)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

from lakehook.domain.assets import AssetRegistration
from lakehook.domain.notice_state import NoticeState
from lakehook.ports import Page
from lakehook.ports.notices import NoticeStore, PlannedAsset
from tests.fakes.memory import InMemoryAssetRegistry


class InMemoryNoticeStore(NoticeStore):
    def __init__(self, registry: InMemoryAssetRegistry) -> None:
        self.registry = registry
        self._states: dict[str, tuple[AssetRegistration, NoticeState]] = {}
        self._lock = threading.Lock()

    def _current(self, asset_key: str) -> tuple[AssetRegistration | None, NoticeState]:
        """The registration and its notice state; a state kept for an earlier registration is gone with it."""
        registration = self.registry.get_asset(asset_key)
        kept = self._states.get(asset_key)
        if registration is None or kept is None or kept[0] is not registration:
            return registration, NoticeState()
        return registration, kept[1]

    def record_notice(self, asset_keys: Sequence[str], at_ms: int) -> None:
        with self._lock:
            for key in asset_keys:
                registration, _ = self._current(key)
                if registration is not None:
                    self._states[key] = (registration, NoticeState(last_notice_ms=at_ms))

    def record_missed(self, asset_key: str, at_ms: int) -> None:
        with self._lock:
            registration, state = self._current(asset_key)
            if registration is not None and state.missed_since_ms is None:
                self._states[asset_key] = (registration, replace(state, missed_since_ms=at_ms))

    def notices(self, asset_key: str) -> NoticeState:
        with self._lock:
            return self._current(asset_key)[1]

    def list_planned(self, limit: int, next_token: str | None = None) -> Page[PlannedAsset]:
        page = self.registry.list_assets(limit, next_token)
        with self._lock:
            return Page([PlannedAsset(a, self._current(a.asset_key)[1]) for a in page.items], page.next_token)
