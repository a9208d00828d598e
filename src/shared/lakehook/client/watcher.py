"""State for custom watchers (the watermark AIP): ``low_watermark``, ``get_high_watermark``, ``persist_watermark``.

A watcher watches something lakehook does not poll itself (an S3 prefix, a database's ``updated_at``, an API) and
remembers how far it has seen in lakehook's watermark store, so a restarted watcher resumes instead of rescanning.
It signs its requests as a producer whose ``watermarkNamespaces`` list its namespace: a credential confined to that
namespace (and to its ``assetKeyPrefixes`` for the events it pushes), not the admin token. Standard library only::

    class OrdersTable(Watcher):
        def get_high_watermark(self) -> int:
            return db.scalar("SELECT max(updated_at) FROM orders")

    watcher = OrdersTable(WatermarkClient(URL, "orders-watcher", SECRET), "watchers", "jdbc://erp/orders")
    low, high = watcher.low_watermark, watcher.get_high_watermark()
    if high != low:
        push.send(...)                    # what changed in (low, high]
        watcher.persist_watermark(high)   # compare-and-set: raises WatermarkConflictError if another copy moved it

Writes are compare-and-set on the version the watcher last read, so two copies of a watcher never both advance
from the same low watermark; the loser re-reads (``refresh``) and sees what the winner persisted.
"""

from __future__ import annotations

import json
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakehook.client.retrying import HttpRejectedError, HttpUnavailableError, RefusedError
from lakehook.client.signed import SignedClient

WATERMARKS_PATH = "/watermarks"


class WatermarkError(Exception):
    """The watermark store could not be read or written."""


class WatermarkRejectedError(WatermarkError, RefusedError):
    """The API refused the request (401, 403: a namespace outside the producer's, 400); retrying won't help."""


class WatermarkConflictError(WatermarkRejectedError):
    """A compare-and-set lost: the watermark is no longer at the version it was read at."""


@dataclass(frozen=True)
class Watermark:
    """A stored watermark: its value and version (the compare-and-set token; 0 = not written yet)."""

    value: Any
    version: int


ABSENT = Watermark(None, 0)


class WatermarkClient(SignedClient):
    """Read and compare-and-set watermarks, signed with a producer's secret (``PUT /producers/{id}`` answered it;
    options: :class:`~lakehook.client.signed.SignedClient`)."""

    PATH = WATERMARKS_PATH

    def get(self, namespace: str, asset_key: str, key: str) -> Watermark:
        """The stored watermark, or :data:`ABSENT` (version 0) when none was written."""
        query = urllib.parse.urlencode({"namespace": namespace, "assetKey": asset_key, "key": key})
        try:
            answer = self._send("GET", f"{self.url}?{query}", b"")
        except WatermarkRejectedError as exc:
            if exc.status == 404:
                return ABSENT
            raise
        return Watermark(answer.get("value"), int(answer["version"]))

    def put(self, namespace: str, asset_key: str, key: str, value: Any, expected_version: int | None) -> Watermark:
        """Write ``value``; with ``expected_version`` only if the stored version is still that (0: not written yet),
        else :class:`WatermarkConflictError`. A write retried after a lost answer that finds its own value in
        place (one version on) succeeded."""
        request: dict[str, Any] = {"namespace": namespace, "assetKey": asset_key, "key": key, "value": value}
        if expected_version is not None:
            request["expectedVersion"] = expected_version
        body = json.dumps(request, separators=(",", ":"), allow_nan=False).encode()
        try:
            answer = self._send("PUT", self.url, body)
        except WatermarkConflictError:
            if expected_version is None or self._retrying.attempts == 1:
                raise
            stored = self.get(namespace, asset_key, key)
            if stored.version == expected_version + 1 and stored.value == value:
                return stored
            raise
        return Watermark(answer.get("value"), int(answer["version"]))

    def _send(self, method: str, url: str, body: bytes) -> dict[str, Any]:
        try:
            return self._retrying.send_json(method, url, body or None, self._signed_headers(body))
        except HttpRejectedError as exc:
            error = WatermarkConflictError if exc.status == 409 else WatermarkRejectedError
            raise error(exc.status, exc.message) from exc
        except HttpUnavailableError as exc:
            raise WatermarkError(str(exc)) from exc


class Watcher(ABC):
    """A custom watcher's persisted state: one watermark at (``namespace``, ``asset_key``, ``key``). Subclasses say
    how far the watched thing has got (:meth:`get_high_watermark`); the rest is compare-and-set bookkeeping."""

    def __init__(self, client: WatermarkClient, namespace: str, asset_key: str, key: str = "watermark") -> None:
        self.client = client
        self.namespace = namespace
        self.asset_key = asset_key
        self.key = key
        self._read: Watermark | None = None

    @abstractmethod
    def get_high_watermark(self) -> Any:
        """How far the watched thing has got now (a JSON value: a time, an offset, the last object key...)."""

    @property
    def low_watermark(self) -> Any:
        """The watermark persisted last (None before the first), read once and then kept: the version
        :meth:`persist_watermark` compares against. :meth:`refresh` reads it again."""
        return self._current().value

    def refresh(self) -> Any:
        """Read the persisted watermark again (after a :class:`WatermarkConflictError`)."""
        self._read = None
        return self.low_watermark

    def persist_watermark(self, value: Any) -> Watermark:
        """Store ``value`` if the watermark is still at the version read by :attr:`low_watermark`; raises
        :class:`WatermarkConflictError` if another copy of the watcher moved it since."""
        self._read = self.client.put(self.namespace, self.asset_key, self.key, value, self._current().version)
        return self._read

    def advance(self, high: Any, announce: Callable[[], Any]) -> bool:
        """Announce what moved (``announce``: push its event), then persist ``high``. False when another copy of the
        watcher persisted first (it announced the same). Announcing first means a crash in between announces again
        next turn, which lakehook answers DUPLICATE, rather than never."""
        announce()
        try:
            self.persist_watermark(high)
        except WatermarkConflictError:
            return False
        return True

    def _current(self) -> Watermark:
        if self._read is None:
            self._read = self.client.get(self.namespace, self.asset_key, self.key)
        return self._read
