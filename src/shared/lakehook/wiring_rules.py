"""Composition of the resolver and the rule routes, to be folded into the Container.

Each builder takes the process's :class:`Container`, builds its adapter once (lazily, so moto can
start first) and honours ``Container.of(settings, rule_store=InMemoryRuleStore(), ...)`` overrides
under the same names. The stream handlers are what the resolver and sweep functions call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lakehook.container import Container, current
from lakehook.observability import logger

if TYPE_CHECKING:  # each builder imports its use case: a function imports only what its path builds
    from lakehook.ports.rules import DeferralStore, RuleStore, StateHistory, StateReader, TriggerStore
    from lakehook.usecases.freshness import CheckFreshness
    from lakehook.usecases.replay import ReplayTrigger
    from lakehook.usecases.resolve import ResolveAssetChange, SweepDeferred
    from lakehook.usecases.rules import ManageRules


def rule_store(container: Container) -> RuleStore:
    from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore

    return container.component("rule_store", lambda: DynamoDBRuleStore(container.table))


def trigger_store(container: Container) -> TriggerStore:
    from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore

    return container.component("trigger_store", lambda: DynamoDBTriggerStore(container.table))


def state_reader(container: Container) -> StateReader:
    from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader

    return container.component("state_reader", lambda: DynamoDBStateReader(container.table))


def state_history(container: Container) -> StateHistory:
    from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory

    return container.component("state_history", lambda: DynamoDBStateHistory(container.table))


def deferral_store(container: Container) -> DeferralStore:
    from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore

    return container.component("deferral_store", lambda: DynamoDBDeferralStore(container.table))


def resolver(container: Container) -> ResolveAssetChange:
    """The resolver. A rule's error is what the domain calls one, or a request DynamoDB refused for its content;
    every other error fails the batch so Lambda retries it."""
    from lakehook.adapters.aws import is_rejected_by_data
    from lakehook.usecases.resolve import ResolveAssetChange, is_rule_error

    return container.component(
        "resolver",
        lambda: ResolveAssetChange(
            rule_store(container),
            state_reader(container),
            trigger_store(container),
            state_history(container),
            deferral_store(container),
            coverage=container.coverage_store,
            rule_error=lambda exc: is_rule_error(exc) or is_rejected_by_data(exc),
            poll_queue=container.work_queue if container.settings.poll_queue_url else None,
        ),
    )


def sweeper(container: Container) -> SweepDeferred:
    from lakehook.usecases.resolve import SweepDeferred

    return container.component("sweeper", lambda: SweepDeferred(deferral_store(container)))


def check_freshness(container: Container) -> CheckFreshness:
    from lakehook.usecases.freshness import CheckFreshness

    return container.component(
        "check_freshness",
        lambda: CheckFreshness(
            rule_store(container), trigger_store(container), container.asset_registry, state_reader(container)
        ),
    )


def manage_rules(container: Container) -> ManageRules:
    from lakehook.usecases.rules import ManageRules

    return container.component(
        "manage_rules",
        lambda: ManageRules(
            rule_store(container),
            trigger_store(container),
            state_reader(container),
            container.asset_registry,
            coverage=container.coverage_store,
            resolver=resolver(container),
            secrets=container.secret_store,
            url_policy=container.settings.url_policy,
            secret_prefix=None if container.settings.local_mode else container.settings.secret_prefix,
        ),
    )


def replay_trigger(container: Container) -> ReplayTrigger:
    """The replay route's use case; ``snapshot_existence`` may be overridden (lakehouse libraries load lazily)."""

    def build() -> ReplayTrigger:
        from lakehook.usecases.replay import ReplayTrigger
        from lakehook.usecases.spool import PreflightReplay, SnapshotSourceExistence

        existence = container.overrides.get("snapshot_existence") or SnapshotSourceExistence(container.snapshot_sources)
        preflight = PreflightReplay(
            container.verify_spool_manifest, container.asset_registry, container.asset_store, existence
        )
        from lakehook.wiring_dispatch import manifest_store

        return ReplayTrigger(trigger_store(container), preflight, manifests=manifest_store(container))

    return container.component("replay_trigger", build)


# --- stream handlers ----------------------------------------------------------------------------------


def handle_stream_batch(event: Mapping[str, Any], container: Container | None = None) -> dict[str, Any]:
    """Resolve one stream batch as a whole (``{"Records": [...]}``); answer the partial-failure response.

    The batch is resolved together (assets deduplicated, one batched read). A rule that raises is recorded on
    the rule and retried by the sweep; the rest of the batch goes on. On an infrastructure error the first
    record is reported failed, so Lambda retries the whole batch in order (claims are idempotent), and rechecks
    of its assets are left first, so the sweep re-evaluates them even if Lambda finally gives the batch up.
    """
    from lakehook.adapters.dynamodb.stream_records import resolver_input, sequence_number
    from lakehook.ports.rules import Deferral, StateChange

    records = list(event.get("Records") or [])
    try:
        parsed = [resolver_input(r) for r in records]
        changes = [p for p in parsed if isinstance(p, StateChange)]
        deferred = [p for p in parsed if isinstance(p, Deferral)]
        if changes or deferred:
            resolver(container or current())(changes, deferred)
    except Exception:
        logger.exception("resolver batch failed", extra={"status": "FAILED", "reason": "retrying the batch"})
        first = sequence_number(records[0])
        return {"batchItemFailures": [{"itemIdentifier": first}] if first else []}
    return {"batchItemFailures": []}


def handle_stream_record(record: Mapping[str, Any], container: Container | None = None) -> None:
    """Resolve one stream record (a Powertools ``record_handler``); raises so the batch processor retries it.

    Prefer :func:`handle_stream_batch`: per-record handling costs one batched read per record, and a
    failed record followed by a successful one lets an EACH_VERSION rule claim the later version first.
    """
    from lakehook.adapters.dynamodb.stream_records import resolver_input
    from lakehook.ports.rules import Deferral, StateChange

    found = resolver_input(record)
    if isinstance(found, StateChange):
        resolver(container or current())([found])
    elif isinstance(found, Deferral):
        resolver(container or current())(deferred=[found])


def sweep_deferred(container: Container | None = None) -> int:
    """The scheduled sweep: mark due deferrals; answer how many."""
    return len(sweeper(container or current())())
