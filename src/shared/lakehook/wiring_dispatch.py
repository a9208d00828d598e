"""Composition of dispatch, run completion and aliases, to be folded into the Container.

Each builder takes the process's :class:`Container`, builds its adapter once (lazily, so moto can start
first) and honours ``Container.of(settings, trigger_ledger=InMemoryTriggerLedger(), ...)`` overrides under
the same names. The handlers at the bottom are what the dispatcher and compensator functions call.

Settings this reads when the Settings model has them (defaults otherwise):
``allow_insecure_loopback_targets`` (False), ``dispatch_attempts`` (3), ``dispatch_total_attempts`` (10),
``dispatch_lease_seconds`` (300), ``dispatch_stuck_after_seconds`` (600).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lakehook.adapters import aws
from lakehook.container import Container, current
from lakehook.domain.dispatch import RetryPolicy
from lakehook.observability import logger
from lakehook.ports.aliases import AliasStore
from lakehook.ports.dispatch import ManifestStore, TargetClient, TriggerLedger
from lakehook.usecases.aliases import ManageAliases
from lakehook.usecases.completion import CompleteRun
from lakehook.usecases.dispatch import DispatchPolicy, DispatchTrigger, RedriveTriggers, handle_dispatch_record
from lakehook.wiring_rules import rule_store

T = TypeVar("T")
_CACHE = "_dispatch_wiring"


def _cached(container: Container, name: str, build: Callable[[], T]) -> T:
    if name in container.overrides:
        return container.overrides[name]  # type: ignore[no-any-return]
    cache: dict[str, Any] = container.__dict__.setdefault(_CACHE, {})
    if name not in cache:
        cache[name] = build()
    return cache[name]  # type: ignore[no-any-return]


def _setting(container: Container, name: str, default: Any) -> Any:
    return getattr(container.settings, name, default)


def trigger_ledger(container: Container) -> TriggerLedger:
    from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger

    return _cached(container, "trigger_ledger", lambda: DynamoDBTriggerLedger(container.table))


def manifest_store(container: Container) -> ManifestStore:
    from lakehook.adapters.s3.manifest_store import S3ManifestStore

    return _cached(
        container,
        "manifest_store",
        lambda: S3ManifestStore(aws.client("s3", container.settings), container.settings.bucket_name),
    )


def alias_store(container: Container) -> AliasStore:
    from lakehook.adapters.dynamodb.alias_store import DynamoDBAliasStore

    return _cached(container, "alias_store", lambda: DynamoDBAliasStore(container.table))


def target_clients(container: Container) -> Mapping[str, TargetClient]:
    from lakehook.adapters.targets import TargetDeps, build_target_clients

    def build() -> Mapping[str, TargetClient]:
        deps = TargetDeps(
            secrets=container.secret_store,
            aws=lambda service: aws.client(service, container.settings),
            allow_insecure_loopback=bool(_setting(container, "allow_insecure_loopback_targets", False)),
        )
        return build_target_clients(deps)

    return _cached(container, "target_clients", build)


def dispatch_policy(container: Container) -> DispatchPolicy:
    return DispatchPolicy(
        attempts=RetryPolicy(int(_setting(container, "dispatch_attempts", 3)), 0.5, 8.0),
        redrive=RetryPolicy(int(_setting(container, "dispatch_total_attempts", 10)), 30.0, 900.0),
        lease_seconds=float(_setting(container, "dispatch_lease_seconds", 300.0)),
        stuck_after_seconds=float(_setting(container, "dispatch_stuck_after_seconds", 600.0)),
    )


def dispatcher(container: Container) -> DispatchTrigger:
    return _cached(
        container,
        "dispatcher",
        lambda: DispatchTrigger(
            trigger_ledger(container),
            rule_store(container),
            manifest_store(container),
            target_clients(container),
            dispatch_policy(container),
        ),
    )


def redriver(container: Container) -> RedriveTriggers:
    return _cached(container, "redriver", lambda: RedriveTriggers(trigger_ledger(container), dispatcher(container)))


def complete_run(container: Container) -> CompleteRun:
    return _cached(
        container,
        "complete_run",
        lambda: CompleteRun(trigger_ledger(container), container.ingest, alias_store(container)),
    )


def manage_aliases(container: Container) -> ManageAliases:
    return _cached(container, "manage_aliases", lambda: ManageAliases(alias_store(container)))


# --- function handlers ---------------------------------------------------------------------------------


def handle_dispatch_batch(event: Mapping[str, Any], container: Container | None = None) -> dict[str, Any]:
    """Dispatch a DynamoDB stream batch of claims (``{"Records": [...]}``) in order; answer the partial
    batch response. On an error the failed record is reported and the rest left for the retry (Lambda
    resumes from the lowest reported sequence number); dispatch is idempotent, so redelivery is safe."""
    wired = container or current()
    for record in event.get("Records") or []:
        try:
            handle_dispatch_record(record, dispatcher(wired))
        except Exception:
            sequence = (record.get("dynamodb") or {}).get("SequenceNumber")
            logger.exception("dispatch record failed", extra={"status": "FAILED", "reason": "retrying from here"})
            return {"batchItemFailures": [{"itemIdentifier": sequence}] if sequence else []}
    return {"batchItemFailures": []}


def redrive_triggers(container: Container | None = None) -> dict[str, int]:
    """The compensator's scheduled pass over stuck and failed claims; answers counts per status."""
    report = redriver(container or current())()
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.status.value] = counts.get(result.status.value, 0) + 1
    return counts
