"""The container on fakes: every adapter part of ``lakehook.container.Container`` replaced by its in-memory fake,
so any use case is built exactly as its function builds it, with no AWS.

``in_memory(settings, **parts)`` answers a container whose adapters are the fakes (one asset store, one trigger
store under the ledger and the state reader, ...); ``parts`` replaces any of them, or any use case, by name. A test
reads the fakes back through the container (``container.asset_store``) or keeps the ones it passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakehook.adapters.lakehouse.factory import snapshot_sources
from lakehook.adapters.targets import REGISTRY
from lakehook.container import Container
from lakehook.settings import Settings
from tests.fakes.memory import (
    InMemoryAssetRegistry,
    InMemoryAssetStore,
    InMemoryPollStatusStore,
    InMemoryProducerRegistry,
    InMemorySecretStore,
    InMemoryWatermarkStore,
    InMemoryWorkQueue,
)
from tests.fakes.memory_access import InMemoryAccessStore
from tests.fakes.memory_coverage import InMemoryCoverageStore, InMemoryObjectStore
from tests.fakes.memory_dispatch import (
    InMemoryAliasStore,
    InMemoryManifestStore,
    InMemoryTargetClient,
    InMemoryTriggerLedger,
)
from tests.fakes.memory_notices import InMemoryNoticeStore
from tests.fakes.memory_partitions import InMemoryPartitionStore
from tests.fakes.memory_quality import InMemoryEvaluationTimes
from tests.fakes.memory_rules import (
    InMemoryDeferralStore,
    InMemoryRuleStore,
    InMemoryStateHistory,
    InMemoryStateReader,
    InMemoryTriggerStore,
)
from tests.fakes.memory_slots import InMemoryRunSlotStore

if TYPE_CHECKING:
    from lakehook.ports import AssetStore
    from lakehook.ports.dispatch import ManifestStore, TargetClient, TriggerLedger
    from lakehook.ports.rules import RuleStore
    from lakehook.usecases.dispatch import DispatchPolicy, DispatchResult, DispatchTrigger
    from lakehook.usecases.ingest import IngestEvents
    from lakehook.usecases.resolve import ResolveAssetChange, ResolverStores


class NoTable:
    """Stands in for the DynamoDB table: a use case that reaches past its ports to the table fails loudly."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the DynamoDB table was used ({name}) in a container of fakes")


def fakes(**parts: Any) -> dict[str, Any]:
    """Every adapter part of the container as a fake (``parts`` win): the stores share what the real ones share
    (the ledger works on the trigger store's claims, the state reader reads the asset store's states)."""
    assets = parts["asset_store"] if "asset_store" in parts else InMemoryAssetStore()
    triggers = parts["trigger_store"] if "trigger_store" in parts else InMemoryTriggerStore()
    secrets = parts["secret_store"] if "secret_store" in parts else InMemorySecretStore()
    registry = parts["asset_registry"] if "asset_registry" in parts else InMemoryAssetRegistry()
    built: dict[str, Any] = {
        "table": NoTable(),
        "asset_store": assets,
        "asset_registry": registry,
        "notice_store": InMemoryNoticeStore(registry),  # the notice state rides on the registrations
        "producer_registry": InMemoryProducerRegistry(),
        "secret_store": secrets,
        "watermark_store": InMemoryWatermarkStore(),
        "coverage_store": InMemoryCoverageStore(),
        "alias_store": InMemoryAliasStore(),
        "access_store": InMemoryAccessStore(),
        "verification_queue": InMemoryWorkQueue(),
        "object_store": InMemoryObjectStore(),
        "poll_status_store": InMemoryPollStatusStore(),
        # the real factory on fake secrets: a lakehouse library loads only when a table of its format is read
        "snapshot_sources": snapshot_sources(secrets),
        "work_queue": InMemoryWorkQueue(),
        "resolver_queue": InMemoryWorkQueue(),
        "rule_store": InMemoryRuleStore(),
        "trigger_store": triggers,
        "state_reader": InMemoryStateReader(
            assets.get_state, triggers, events=lambda: [e.event for e in assets.events.values()]
        ),
        "state_history": InMemoryStateHistory(),
        "partition_store": InMemoryPartitionStore(),
        "deferral_store": InMemoryDeferralStore(),
        "trigger_ledger": InMemoryTriggerLedger(triggers),
        "manifest_store": InMemoryManifestStore(),
        "run_slot_store": InMemoryRunSlotStore(),
        "target_clients": {name: InMemoryTargetClient() for name in REGISTRY},
        "evaluation_times": InMemoryEvaluationTimes(),  # Glue Data Quality results' start and end
    }
    built.update(parts)
    return built


def in_memory(settings: Settings | None = None, **parts: Any) -> Container:
    """A container whose adapters are all fakes (``parts`` replace any part by its name)."""
    return Container.of(settings or Settings(), **fakes(**parts))


# --- the use cases a test builds on its own collaborators -------------------------------------------------------
# A test that keeps its own fakes (a clock it moves, a store it wraps, a store on moto) takes its use cases from
# here, never from their constructors: a constructor change touches the container and this file only. Each takes
# the collaborators its constructor takes, positional as there, and a test's special ones (``clock``, ``late``,
# ``observer``, ``sleep``, ...) as keyword overrides; what a test leaves out is the constructor's default.


def ingest_events(store: AssetStore, **overrides: Any) -> IngestEvents:
    """The ingest use case (the container's ``ingest``) on ``store``."""
    from lakehook.usecases.ingest import IngestEvents

    return IngestEvents(store, **overrides)


def resolve_asset_change(stores: ResolverStores, **overrides: Any) -> ResolveAssetChange:
    """The resolver (the container's ``resolver``) on ``stores``."""
    from lakehook.usecases.resolve import ResolveAssetChange

    return ResolveAssetChange(stores, **overrides)


def dispatch_trigger(
    ledger: TriggerLedger,
    rules: RuleStore,
    manifests: ManifestStore,
    targets: Mapping[str, TargetClient],
    policy: DispatchPolicy | None = None,
    **overrides: Any,
) -> DispatchTrigger:
    """The dispatcher (the container's ``dispatcher``) on a ledger, rules, manifests, target clients and a policy."""
    from lakehook.usecases.dispatch import DispatchTrigger

    return DispatchTrigger(ledger, rules, manifests, targets, policy, **overrides)


def dispatch_record(record: Any, dispatch: DispatchTrigger) -> DispatchResult | None:
    """``dispatch`` on one stream record, read as the container's ``dispatch_record`` reads it (the DynamoDB
    ledger's claim key and claim image)."""
    from lakehook.adapters.dynamodb.trigger_ledger import claimed_entry, claimed_trigger_key
    from lakehook.usecases.dispatch import handle_dispatch_record

    return handle_dispatch_record(record, dispatch, claimed_trigger_key, claimed_entry)
