"""In-memory fakes of the ports, for unit tests and the reference model (never in a Lambda layer: see
src/shared/Makefile). Thread-safe: every read and write of a fake's state holds that fake's lock. The asset store
lives in the package (``lakehook.adapters.memory``: the backtest replays history on it) and is re-exported here."""

from __future__ import annotations

import threading
from typing import Any

from lakehook.adapters.memory.assets import InMemoryAssetStore as InMemoryAssetStore
from lakehook.adapters.memory.paging import page_of as _page
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.commit_notices import WatchEntry, watch_entries
from lakehook.domain.errors import ConflictError, NotFoundError
from lakehook.domain.producers import Producer
from lakehook.domain.snapshots import PollStatus
from lakehook.domain.watermarks import WatermarkRecord
from lakehook.ports import (
    AssetRegistry,
    Page,
    ProducerRegistry,
    SecretStore,
    WatermarkStore,
)
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.queue import WorkQueue


class InMemoryAssetRegistry(AssetRegistry):
    def __init__(self) -> None:
        self.assets: dict[str, AssetRegistration] = {}
        self._lock = threading.Lock()

    def put_asset(self, asset: AssetRegistration, now_ms: int) -> bool:
        with self._lock:  # created is decided and written at once, as DynamoDB's conditional put does
            created = asset.asset_key not in self.assets
            self.assets[asset.asset_key] = asset
            return created

    def get_asset(self, asset_key: str) -> AssetRegistration | None:
        with self._lock:
            return self.assets.get(asset_key)

    def list_assets(self, limit: int, next_token: str | None = None) -> Page[AssetRegistration]:
        with self._lock:
            ordered = [self.assets[k] for k in sorted(self.assets)]
        return _page(ordered, limit, next_token, "assets")

    def assets_watching(self, watch_key: str) -> list[WatchEntry]:
        with self._lock:
            registered = list(self.assets.values())
        return sorted(
            (entry for asset in registered for key, entry in watch_entries(asset).items() if key == watch_key),
            key=lambda e: e.asset_key,
        )


class InMemoryProducerRegistry(ProducerRegistry):
    def __init__(self) -> None:
        self.producers: dict[str, Producer] = {}
        self.sources: dict[str, str] = {}
        self._lock = threading.Lock()

    def put_producer(self, producer: Producer) -> bool:
        with self._lock:
            created = producer.producer_id not in self.producers
            self.producers[producer.producer_id] = producer
            return created

    def get_producer(self, producer_id: str) -> Producer | None:
        with self._lock:
            return self.producers.get(producer_id)

    def event_source_owner(self, source: str) -> str | None:
        with self._lock:
            return self.sources.get(source)

    def claim_event_source(self, source: str, producer_id: str) -> None:
        with self._lock:  # decided and written at once, as DynamoDB's conditional put does
            owner = self.sources.setdefault(source, producer_id)
        if owner != producer_id:
            raise ConflictError(f"event source {source!r} belongs to producer {owner!r}")

    def release_event_source(self, source: str, producer_id: str) -> None:
        with self._lock:
            if self.sources.get(source) == producer_id:
                del self.sources[source]

    def list_producers(self, limit: int, next_token: str | None = None) -> Page[Producer]:
        with self._lock:
            ordered = [self.producers[k] for k in sorted(self.producers)]
        return _page(ordered, limit, next_token, "producers")


class InMemorySecretStore(SecretStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.secrets: dict[str, str] = {}
        self.owners: dict[str, str] = {}
        self.previous: dict[str, str] = {}  # as Secrets Manager's AWSPREVIOUS: the value before the last overwrite

    def _write(self, name: str, value: str) -> None:
        if name in self.secrets:
            self.previous[name] = self.secrets[name]
        self.secrets[name] = value

    def put_secret(self, name: str, value: str) -> str:
        with self._lock:
            self._write(name, value)
        return name

    def may_own_secret(self, name: str, owner: str) -> bool:
        with self._lock:
            return name not in self.secrets or self.owners.get(name) == owner

    def put_owned_secret(self, name: str, value: str, owner: str) -> str:
        with self._lock:
            if name in self.secrets and self.owners.get(name) != owner:
                raise ConflictError(f"secret {name!r} already exists and lakehook did not create it for {owner}")
            self._write(name, value)
            self.owners[name] = owner
        return name

    def get_secret(self, ref: str) -> str:
        with self._lock:
            found = self.secrets.get(ref)
        if found is None:
            raise NotFoundError(f"secret {ref!r} does not exist")
        return found

    def get_previous_secret(self, ref: str) -> str | None:
        with self._lock:
            return self.previous.get(ref) if ref in self.secrets else None


class InMemoryWatermarkStore(WatermarkStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[tuple[str, str, str], WatermarkRecord] = {}

    def get(self, namespace: str, asset_key: str, key: str) -> WatermarkRecord | None:
        with self._lock:
            return self.records.get((namespace, asset_key, key))

    def put(
        self, namespace: str, asset_key: str, key: str, value: Any, now_ms: int, expected_version: int | None = None
    ) -> WatermarkRecord:
        with self._lock:
            old = self.records.get((namespace, asset_key, key))
            current = old.version if old else 0
            if expected_version is not None and expected_version != current:
                raise ConflictError(f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}")
            record = WatermarkRecord(
                namespace=namespace, asset_key=asset_key, key=key, value=value, version=current + 1, updated_at=now_ms
            )
            self.records[(namespace, asset_key, key)] = record
            return record

    def delete(self, namespace: str, asset_key: str, key: str, expected_version: int | None = None) -> bool:
        with self._lock:
            old = self.records.get((namespace, asset_key, key))
            if expected_version is not None and (old is None or old.version != expected_version):
                raise ConflictError(f"watermark {namespace}/{asset_key}/{key} is not at version {expected_version}")
            return self.records.pop((namespace, asset_key, key), None) is not None

    def list(self, namespace: str, asset_key: str) -> list[WatermarkRecord]:
        with self._lock:
            ordered = sorted(self.records.items())
        return [r for (ns, ak, _), r in ordered if ns == namespace and ak == asset_key]


class InMemoryPollStatusStore(PollStatusStore):
    def __init__(self) -> None:
        self.statuses: dict[str, PollStatus] = {}
        self._lock = threading.Lock()

    def get(self, asset_key: str) -> PollStatus | None:
        with self._lock:
            return self.statuses.get(asset_key)

    def put(self, status: PollStatus) -> None:
        with self._lock:
            self.statuses[status.asset_key] = status


class InMemoryWorkQueue(WorkQueue):
    """A work queue (the poll queue, the verification queue) as a list of the messages sent, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []

    def send(self, messages: list[dict[str, Any]]) -> int:
        with self._lock:
            self.messages.extend(messages)
        return len(messages)
