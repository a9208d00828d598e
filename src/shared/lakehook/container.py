"""The composition root shared by handlers: adapters built lazily, once per process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from lakehook.adapters import aws
from lakehook.settings import Settings, get_settings

# Each function builds only the parts its path uses, so each part's modules (their pydantic models above all)
# are imported by the builder that needs them, not when a handler imports the container.
if TYPE_CHECKING:
    from lakehook.ports import AssetRegistry, AssetStore, ProducerRegistry, SecretStore, WatermarkStore
    from lakehook.ports.coverage import CoverageStore
    from lakehook.ports.lakehouse import PollStatusStore, SnapshotSources
    from lakehook.ports.queue import WorkQueue
    from lakehook.ports.spool import ObjectStore
    from lakehook.usecases.bus_ingest import IngestBusEvents
    from lakehook.usecases.ingest import IngestEvents
    from lakehook.usecases.manifests import RecordManifestVerification
    from lakehook.usecases.plan_polls import PlanNotifiedPolls, PlanPolls, RunPollWork
    from lakehook.usecases.producers import PushAuthenticator, RegisterProducer
    from lakehook.usecases.spool import VerifySpoolManifest


T = TypeVar("T")


@dataclass
class Container:
    """Adapters and use cases for one process. Tests build one from fakes with ``Container.of``."""

    settings: Settings
    overrides: dict[str, Any] = field(default_factory=dict)
    _components: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, settings: Settings, **ports: Any) -> Container:
        return cls(settings, dict(ports))

    def _port(self, name: str, build: Any) -> Any:
        return self.overrides[name] if name in self.overrides else build()

    def component(self, name: str, build: Callable[[], T]) -> T:
        """A named part built once per container (an override under the same name wins).

        The wiring modules (``wiring_rules``, ``wiring_dispatch``) build their parts through it, so
        ``Container.of(settings, rule_store=InMemoryRuleStore())`` reaches them too.
        """
        if name in self.overrides:
            return self.overrides[name]  # type: ignore[no-any-return]
        if name not in self._components:
            self._components[name] = build()
        return self._components[name]  # type: ignore[no-any-return]

    @cached_property
    def table(self) -> Any:
        return aws.dynamodb_table(self.settings)

    @cached_property
    def asset_store(self) -> AssetStore:
        from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore

        return self._port(  # type: ignore[no-any-return]
            "asset_store", lambda: DynamoDBAssetStore(self.table, self.settings.event_retention_days)
        )

    @cached_property
    def asset_registry(self) -> AssetRegistry:
        from lakehook.adapters.dynamodb.registry import DynamoDBAssetRegistry

        return self._port("asset_registry", lambda: DynamoDBAssetRegistry(self.table))  # type: ignore[no-any-return]

    @cached_property
    def producer_registry(self) -> ProducerRegistry:
        from lakehook.adapters.dynamodb.registry import DynamoDBProducerRegistry

        return self._port(  # type: ignore[no-any-return]
            "producer_registry", lambda: DynamoDBProducerRegistry(self.table)
        )

    @cached_property
    def secret_store(self) -> SecretStore:
        from lakehook.adapters.secrets import SecretsManagerSecretStore

        return self._port(  # type: ignore[no-any-return]
            "secret_store", lambda: SecretsManagerSecretStore(aws.client("secretsmanager", self.settings))
        )

    @cached_property
    def watermark_store(self) -> WatermarkStore:
        from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore

        return self._port("watermark_store", lambda: DynamoDBWatermarkStore(self.table))  # type: ignore[no-any-return]

    @cached_property
    def coverage_store(self) -> CoverageStore:
        from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore

        return self._port("coverage_store", lambda: DynamoDBCoverageStore(self.table))  # type: ignore[no-any-return]

    @cached_property
    def verification_queue(self) -> WorkQueue | None:
        """Where pushed MANIFEST_SEALED events ask to be verified; None where no verifier listens."""
        from lakehook.adapters.sqs import SQSWorkQueue

        def build() -> WorkQueue | None:
            url = self.settings.spool_verify_queue_url
            return SQSWorkQueue(aws.client("sqs", self.settings), url) if url else None

        return self._port("verification_queue", build)  # type: ignore[no-any-return]

    @cached_property
    def ingest(self) -> IngestEvents:
        from lakehook.usecases.coverage import RecordCoverage
        from lakehook.usecases.ingest import IngestEvents

        return IngestEvents(
            self.asset_store, coverage=RecordCoverage(self.coverage_store), verifications=self.verification_queue
        )

    @cached_property
    def object_store(self) -> ObjectStore:
        from lakehook.adapters.s3.object_store import S3ObjectStore

        return self._port("object_store", lambda: S3ObjectStore(aws.client("s3", self.settings)))  # type: ignore[no-any-return]

    @cached_property
    def verify_spool_manifest(self) -> VerifySpoolManifest:
        from lakehook.usecases.spool import VerifySpoolManifest

        return VerifySpoolManifest(self.object_store)

    @cached_property
    def record_manifest_verification(self) -> RecordManifestVerification:
        from lakehook.usecases.manifests import RecordManifestVerification

        return RecordManifestVerification(self.asset_store, self.verify_spool_manifest)

    @cached_property
    def register_producer(self) -> RegisterProducer:
        from lakehook.usecases.producers import RegisterProducer

        return RegisterProducer(self.producer_registry, self.secret_store, self.settings.secret_prefix)

    @cached_property
    def push_authenticator(self) -> PushAuthenticator:
        from lakehook.usecases.producers import PushAuthenticator

        return PushAuthenticator(
            self.producer_registry,
            self.secret_store,
            self.settings.signature_tolerance_seconds,
            self.settings.producer_cache_seconds,
        )

    # --- polling (issue 3): the lakehouse libraries load only when a worker first polls ----------

    @cached_property
    def poll_status_store(self) -> PollStatusStore:
        from lakehook.adapters.dynamodb.poll_status_store import DynamoDBPollStatusStore

        return self._port("poll_status_store", lambda: DynamoDBPollStatusStore(self.table))  # type: ignore[no-any-return]

    @cached_property
    def snapshot_sources(self) -> SnapshotSources:
        from lakehook.adapters.lakehouse.credentials import ssm_parameter_reader
        from lakehook.adapters.lakehouse.factory import snapshot_sources

        return self._port(  # type: ignore[no-any-return]
            "snapshot_sources",
            lambda: snapshot_sources(self.secret_store, ssm_parameter_reader(aws.client("ssm", self.settings))),
        )

    @cached_property
    def run_poll_work(self) -> RunPollWork:
        from lakehook.observability import metrics
        from lakehook.usecases.plan_polls import RunPollWork
        from lakehook.usecases.poll import Compensate, CompensateAsset, PollAsset, PollAssets

        poll = PollAssets(
            PollAsset(self.snapshot_sources, self.watermark_store, self.ingest), self.poll_status_store, metrics=metrics
        )
        one = CompensateAsset(self.snapshot_sources, self.asset_store, self.ingest)
        return RunPollWork(self.asset_registry, poll, Compensate(one, metrics=metrics), fill=one.fill)

    @cached_property
    def work_queue(self) -> WorkQueue:
        from lakehook.adapters.sqs import SQSWorkQueue

        def build() -> WorkQueue:
            if not self.settings.poll_queue_url:
                raise RuntimeError("LAKEHOOK_POLL_QUEUE_URL is not set: the poll planner has no queue")
            return SQSWorkQueue(aws.client("sqs", self.settings), self.settings.poll_queue_url)

        return self._port("work_queue", build)  # type: ignore[no-any-return]

    @cached_property
    def plan_polls(self) -> PlanPolls:
        from lakehook.usecases.plan_polls import PlanPolls

        return PlanPolls(self.asset_registry, self.work_queue)

    @cached_property
    def ingest_bus_events(self) -> IngestBusEvents:
        from lakehook.usecases.bus_ingest import IngestBusEvents
        from lakehook.wiring_dispatch import alias_store

        limit = self.settings.max_events_per_push
        return IngestBusEvents(self.producer_registry, self.ingest, alias_store(self), limit)

    @cached_property
    def plan_notified_polls(self) -> PlanNotifiedPolls:
        from lakehook.usecases.plan_polls import PlanNotifiedPolls

        return PlanNotifiedPolls(self.asset_registry, self.work_queue)


_current: Container | None = None
_lock = threading.Lock()


def current() -> Container:
    """The process's container, built from the environment on first use."""
    global _current
    with _lock:
        if _current is None:
            _current = Container(get_settings())
        return _current


def use(container: Container | None) -> None:
    """Replace the process's container (tests, the local runtime); None resets it."""
    global _current
    with _lock:
        _current = container
