"""Composition of dispatch, run completion and aliases, to be folded into the Container.

Each builder takes the process's :class:`Container`, builds its adapter once (lazily, so moto can start
first) and honours ``Container.of(settings, trigger_ledger=InMemoryTriggerLedger(), ...)`` overrides under
the same names. The handlers at the bottom are what the dispatcher and compensator functions call.

Settings this reads when the Settings model has them (defaults otherwise):
``allow_insecure_loopback_targets`` (False), ``dispatch_attempts`` (3), ``dispatch_total_attempts`` (10),
``dispatch_lease_seconds`` (300), ``dispatch_stuck_after_seconds`` (600), the backoffs
``dispatch_retry_base_seconds`` / ``dispatch_retry_max_seconds`` (0.5 / 8) within an invocation and
``dispatch_redrive_base_seconds`` / ``dispatch_redrive_max_seconds`` (30 / 900) between re-drives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakehook.adapters import aws
from lakehook.container import Container, current
from lakehook.observability import logger
from lakehook.wiring_rules import rule_store

if TYPE_CHECKING:  # each builder imports its use case: a function imports only what its path builds
    from lakehook.ports.aliases import AliasStore
    from lakehook.ports.dispatch import ManifestStore, TargetClient, TriggerLedger
    from lakehook.usecases.aliases import ManageAliases
    from lakehook.usecases.completion import CompleteRun, CompletionTokens
    from lakehook.usecases.dispatch import DispatchPolicy, DispatchTrigger, RedriveTriggers, RetryTrigger


def trigger_ledger(container: Container) -> TriggerLedger:
    from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger

    return container.component("trigger_ledger", lambda: DynamoDBTriggerLedger(container.table))


def manifest_store(container: Container) -> ManifestStore:
    from lakehook.adapters.s3.manifest_store import S3ManifestStore

    return container.component(
        "manifest_store",
        lambda: S3ManifestStore(aws.client("s3", container.settings), container.settings.bucket_name),
    )


def alias_store(container: Container) -> AliasStore:
    from lakehook.adapters.dynamodb.alias_store import DynamoDBAliasStore

    return container.component("alias_store", lambda: DynamoDBAliasStore(container.table))


def target_clients(container: Container) -> Mapping[str, TargetClient]:
    from lakehook.adapters.targets import TargetDeps, build_target_clients

    def build() -> Mapping[str, TargetClient]:
        deps = TargetDeps(
            secrets=container.secret_store,
            aws=lambda service: aws.client(service, container.settings),
            allow_insecure_loopback=container.settings.allow_insecure_loopback_targets,
            url_policy=container.settings.url_policy,
        )
        return build_target_clients(deps)

    return container.component("target_clients", build)


def dispatch_policy(container: Container) -> DispatchPolicy:
    from lakehook.domain.dispatch import RetryPolicy
    from lakehook.usecases.dispatch import DispatchPolicy

    settings = container.settings
    return DispatchPolicy(
        attempts=RetryPolicy(
            settings.dispatch_attempts, settings.dispatch_retry_base_seconds, settings.dispatch_retry_max_seconds
        ),
        redrive=RetryPolicy(
            settings.dispatch_total_attempts,
            settings.dispatch_redrive_base_seconds,
            settings.dispatch_redrive_max_seconds,
        ),
        lease_seconds=float(settings.dispatch_lease_seconds),
        stuck_after_seconds=float(settings.dispatch_stuck_after_seconds),
    )


def completion_tokens(container: Container) -> CompletionTokens:
    """Completion tokens under the stack's completion key (kept per process; see CompletionTokens for rotation)."""
    from lakehook.usecases.completion import CompletionTokens

    return container.component(
        "completion_tokens",
        lambda: CompletionTokens(container.secret_store, container.settings.completion_key_secret),
    )


def dispatcher(container: Container) -> DispatchTrigger:
    from lakehook.usecases.dispatch import DispatchTrigger

    tokens = completion_tokens(container)
    return container.component(
        "dispatcher",
        lambda: DispatchTrigger(
            trigger_ledger(container),
            rule_store(container),
            manifest_store(container),
            target_clients(container),
            dispatch_policy(container),
            completion_token=tokens.issue if tokens.configured else None,
        ),
    )


def redriver(container: Container) -> RedriveTriggers:
    from lakehook.usecases.dispatch import RedriveTriggers

    return container.component("redriver", lambda: RedriveTriggers(trigger_ledger(container), dispatcher(container)))


def retry_trigger(container: Container) -> RetryTrigger:
    from lakehook.usecases.dispatch import RetryTrigger

    return container.component("retry_trigger", lambda: RetryTrigger(trigger_ledger(container)))


def complete_run(container: Container) -> CompleteRun:
    from lakehook.usecases.completion import CompleteRun

    return container.component(
        "complete_run",
        lambda: CompleteRun(trigger_ledger(container), container.ingest, alias_store(container), rule_store(container)),
    )


def manage_aliases(container: Container) -> ManageAliases:
    from lakehook.usecases.aliases import ManageAliases

    return container.component("manage_aliases", lambda: ManageAliases(alias_store(container)))


# --- function handlers ---------------------------------------------------------------------------------


def handle_dispatch_batch(event: Mapping[str, Any], container: Container | None = None) -> dict[str, Any]:
    """Dispatch a DynamoDB stream batch of claims (``{"Records": [...]}``) in order; answer the partial
    batch response. On an error the failed record is reported and the rest left for the retry (Lambda
    resumes from the lowest reported sequence number); dispatch is idempotent, so redelivery is safe."""
    from lakehook.usecases.dispatch import handle_dispatch_record

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
