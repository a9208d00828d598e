"""The composition root: every function's graph of adapters and use cases, built lazily, once per process.

One section per function family (the functions of template.yaml each section serves are named in its header).
A part is a method under ``@part``: built on first use (so moto can start first, and a function loads only the
libraries its own parts import), then kept. ``Container.of(settings, rule_store=InMemoryRuleStore(), ...)``
replaces a part by its name, and every part built after that is built on the replacement. The batch and
schedule entry points the resolver, sweep, dispatcher and compensator call are in :mod:`lakehook.handlers`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from lakehook.adapters import aws
from lakehook.settings import Settings, get_settings

# Each function builds only the parts its path uses, so each part's modules (their pydantic models above all)
# are imported by the builder that needs them, not when a handler imports the container.
if TYPE_CHECKING:
    from lakehook.ports import AssetRegistry, AssetStore, ProducerRegistry, SecretStore, WatermarkStore
    from lakehook.ports.access import AccessStore
    from lakehook.ports.aliases import AliasStore
    from lakehook.ports.coverage import CoverageStore
    from lakehook.ports.dispatch import ManifestStore, RunSlotStore, TargetClient, TriggerLedger
    from lakehook.ports.lakehouse import PollStatusStore, SnapshotSources
    from lakehook.ports.notices import NoticeStore
    from lakehook.ports.partitions import PartitionStore
    from lakehook.ports.quality import EvaluationTimesReader
    from lakehook.ports.queue import WorkQueue
    from lakehook.ports.rules import DeferralStore, RuleStore, StateHistory, StateReader, TriggerStore
    from lakehook.ports.spool import ObjectStore, SnapshotExistence
    from lakehook.usecases.access import Authorize, ManageAccess
    from lakehook.usecases.aliases import ManageAliases
    from lakehook.usecases.assets import ListAssets, ReadAssetState, RegisterAsset
    from lakehook.usecases.backtest import BacktestRule
    from lakehook.usecases.bus_ingest import IngestBusEvents
    from lakehook.usecases.completion import CompleteRun, CompletionTokens
    from lakehook.usecases.confirmation import ConfirmRuns, SweepNotAdvanced
    from lakehook.usecases.deferral_sweep import SweepOnSchedule
    from lakehook.usecases.dispatch import (
        DispatchPolicy,
        DispatchResult,
        DispatchTrigger,
        RedriveTriggers,
        RetryTrigger,
    )
    from lakehook.usecases.freshness import CheckFreshness
    from lakehook.usecases.glue_quality import IngestGlueQuality
    from lakehook.usecases.ingest import IngestEvents
    from lakehook.usecases.late_versions import LateSnapshotNotice
    from lakehook.usecases.lineage import ReceiveLineage
    from lakehook.usecases.manifests import RecordManifestVerification
    from lakehook.usecases.plan_polls import PlanNotifiedPolls, PlanPolls, PlanPollsFor, RunPollWork
    from lakehook.usecases.producers import PushAuthenticator, RegisterProducer
    from lakehook.usecases.push import PushEvents
    from lakehook.usecases.replay import ReplayTrigger
    from lakehook.usecases.resolve import ResolveAssetChange, SweepDeferred
    from lakehook.usecases.rule_explain import ExplainRule
    from lakehook.usecases.rule_reads import ReadRules
    from lakehook.usecases.rule_runs import EvaluateRule
    from lakehook.usecases.rule_writes import DeleteRule, PutRule
    from lakehook.usecases.run_slots import RunSlotGate
    from lakehook.usecases.sensors import EvaluateSensor
    from lakehook.usecases.spool import VerifySpoolManifest
    from lakehook.usecases.triggers import ReadTriggers


T = TypeVar("T")


class part(Generic[T]):  # lower case: a decorator, as functools.cached_property
    """A part of the container: an override under its name wins, else it is built once and kept.

    The override is looked up on every access, so a test may set or drop one at any time; two threads racing on
    a first use may both build, and the first one kept is the one every caller gets.
    """

    def __init__(self, build: Callable[[Container], T]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> part[T]: ...
    @overload
    def __get__(self, instance: Container, owner: type) -> T: ...
    def __get__(self, instance: Container | None, owner: type) -> part[T] | T:
        if instance is None:
            return self
        if self.name in instance.overrides:
            return cast(T, instance.overrides[self.name])
        built = instance.built
        if self.name not in built:
            built.setdefault(self.name, self.build(instance))
        return cast(T, built[self.name])


@dataclass
class Container:
    """Adapters and use cases for one process. Tests build one from fakes with ``Container.of``."""

    settings: Settings
    overrides: dict[str, Any] = field(default_factory=dict)
    built: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, settings: Settings, **parts: Any) -> Container:
        return cls(settings, dict(parts))

    # --- the table and the adapters every function shares ---------------------------------------------

    @part
    def table(self) -> Any:
        return aws.dynamodb_table(self.settings)

    @part
    def asset_store(self) -> AssetStore:
        from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore

        return DynamoDBAssetStore(self.table, self.settings.event_retention_days)

    @part
    def asset_registry(self) -> AssetRegistry:
        from lakehook.adapters.dynamodb.registry import DynamoDBAssetRegistry

        return DynamoDBAssetRegistry(self.table)

    @part
    def producer_registry(self) -> ProducerRegistry:
        from lakehook.adapters.dynamodb.registry import DynamoDBProducerRegistry

        return DynamoDBProducerRegistry(self.table)

    @part
    def secret_store(self) -> SecretStore:
        from lakehook.adapters.secrets import SecretsManagerSecretStore

        return SecretsManagerSecretStore(aws.client("secretsmanager", self.settings))

    @part
    def watermark_store(self) -> WatermarkStore:
        from lakehook.adapters.dynamodb.watermark_store import DynamoDBWatermarkStore

        return DynamoDBWatermarkStore(self.table)

    @part
    def coverage_store(self) -> CoverageStore:
        from lakehook.adapters.dynamodb.coverage_store import DynamoDBCoverageStore

        return DynamoDBCoverageStore(self.table)

    @part
    def alias_store(self) -> AliasStore:
        from lakehook.adapters.dynamodb.alias_store import DynamoDBAliasStore

        return DynamoDBAliasStore(self.table)

    @part
    def access_store(self) -> AccessStore:
        from lakehook.adapters.dynamodb.access_store import DynamoDBAccessStore

        return DynamoDBAccessStore(self.table)

    @part
    def manage_access(self) -> ManageAccess:
        from lakehook.usecases.access import ManageAccess

        return ManageAccess(self.access_store)

    @part
    def authorize(self) -> Authorize:
        from lakehook.domain.access import UnboundIdentity
        from lakehook.usecases.access import Authorize

        settings = self.settings
        return Authorize(self.access_store, settings.admin_token, UnboundIdentity(settings.unbound_iam_identity))

    # --- ingest: IngestApiFunction (pushes, producers, aliases), BusIngestFunction ------------------------

    @part
    def verification_queue(self) -> WorkQueue | None:
        """Where pushed MANIFEST_SEALED events ask to be verified; None where no verifier listens."""
        from lakehook.adapters.sqs import SQSWorkQueue

        url = self.settings.spool_verify_queue_url
        return SQSWorkQueue(aws.client("sqs", self.settings), url) if url else None

    @part
    def ingest(self) -> IngestEvents:
        from lakehook.usecases.coverage import RecordCoverage
        from lakehook.usecases.ingest import IngestEvents

        return IngestEvents(
            self.asset_store,
            coverage=RecordCoverage(self.coverage_store, per_partition=self.settings.coverage_per_partition),
            verifications=self.verification_queue,
            readable_spool=self.settings.readable_spool,
            # built on the first late snapshot: the rule and trigger stores stay off the ingest path's cold start
            late=lambda asset_key, record, at: self.late_snapshot_notice(asset_key, record, at),
        )

    @part
    def push_events(self) -> PushEvents:
        from lakehook.usecases.push import PushEvents

        return PushEvents(
            self.ingest, self.alias_store, self.settings.max_events_per_push, enabled=self.settings.push_enabled
        )

    @part
    def receive_lineage(self) -> ReceiveLineage:
        from lakehook.usecases.lineage import ReceiveLineage

        return ReceiveLineage(self.ingest, self.asset_registry, lambda: self.work_queue)

    @part
    def register_asset(self) -> RegisterAsset:
        from lakehook.usecases.assets import RegisterAsset

        return RegisterAsset(
            self.asset_registry,
            self.secret_store,
            producer_secrets=self.settings.producer_secrets,
            secret_names=self.settings.secret_names,
            url_policy=self.settings.url_policy,
        )

    @part
    def list_assets(self) -> ListAssets:
        from lakehook.usecases.assets import ListAssets

        return ListAssets(self.asset_registry, self.poll_status_store)

    @part
    def read_asset_state(self) -> ReadAssetState:
        from lakehook.usecases.assets import ReadAssetState

        return ReadAssetState(
            self.asset_store,
            self.asset_registry,
            self.poll_status_store,
            notices=self.notice_store,
            cadence=self.settings.poll_cadence,
        )

    @part
    def late_snapshot_notice(self) -> LateSnapshotNotice:
        from lakehook.usecases.late_versions import LateSnapshotNotice

        return LateSnapshotNotice(self.rule_store, self.trigger_store, self.state_history)

    @part
    def register_producer(self) -> RegisterProducer:
        from lakehook.usecases.producers import RegisterProducer

        return RegisterProducer(
            self.producer_registry,
            self.secret_store,
            self.settings.producer_secrets,
            changed=self.push_authenticator.forget,  # this process's kept registration: its next push reads it
        )

    @part
    def push_authenticator(self) -> PushAuthenticator:
        from lakehook.usecases.producers import PushAuthenticator

        return PushAuthenticator(
            self.producer_registry,
            self.secret_store,
            self.settings.signature_tolerance_seconds,
            self.settings.producer_cache_seconds,
            registration_seconds=self.settings.producer_registration_seconds,
        )

    @part
    def ingest_bus_events(self) -> IngestBusEvents:
        from lakehook.usecases.bus_ingest import IngestBusEvents

        limit = self.settings.max_events_per_push
        return IngestBusEvents(self.producer_registry, self.ingest, self.alias_store, limit, self.ingest_glue_quality)

    @part
    def evaluation_times(self) -> EvaluationTimesReader:
        from lakehook.adapters.glue_quality import GlueEvaluationTimes

        return GlueEvaluationTimes(aws.client("glue", self.settings))

    @part
    def ingest_glue_quality(self) -> IngestGlueQuality:
        from lakehook.usecases.glue_quality import IngestGlueQuality

        return IngestGlueQuality(
            self.asset_registry, self.asset_store, self.ingest, self.alias_store, self.evaluation_times
        )

    @part
    def manage_aliases(self) -> ManageAliases:
        from lakehook.usecases.aliases import ManageAliases

        return ManageAliases(self.alias_store)

    # --- spool manifests: SpoolVerifierFunction, and the replay's pre-flight ------------------------------

    @part
    def object_store(self) -> ObjectStore:
        from lakehook.adapters.s3.object_store import S3ObjectStore

        return S3ObjectStore(aws.client("s3", self.settings))

    @part
    def verify_spool_manifest(self) -> VerifySpoolManifest:
        from lakehook.usecases.spool import VerifySpoolManifest

        return VerifySpoolManifest(self.object_store, readable=self.settings.readable_spool)

    @part
    def record_manifest_verification(self) -> RecordManifestVerification:
        from lakehook.usecases.manifests import RecordManifestVerification

        return RecordManifestVerification(self.asset_store, self.verify_spool_manifest)

    # --- polling: PollPlannerFunction, PollWorkerFunction (lakehouse libraries load on a worker's first poll) -

    @part
    def poll_status_store(self) -> PollStatusStore:
        from lakehook.adapters.dynamodb.poll_status_store import DynamoDBPollStatusStore

        return DynamoDBPollStatusStore(self.table)

    @part
    def snapshot_sources(self) -> SnapshotSources:
        from lakehook.adapters.lakehouse.credentials import ssm_parameter_reader
        from lakehook.adapters.lakehouse.factory import snapshot_sources

        return snapshot_sources(
            self.secret_store,
            ssm_parameter_reader(aws.client("ssm", self.settings)),
            reserved=self.settings.producer_secrets,
            url_policy=self.settings.url_policy,
            names=self.settings.secret_names,
        )

    @part
    def run_poll_work(self) -> RunPollWork:
        from lakehook.observability import metrics
        from lakehook.usecases.plan_polls import RunPollWork
        from lakehook.usecases.poll import Compensate, CompensateAsset, PollAsset, PollAssets
        from lakehook.usecases.poll_hangs import HANG_AFTER_MS

        confirm = self.confirm_runs
        poll = PollAssets(
            PollAsset(
                self.snapshot_sources,
                self.watermark_store,
                self.ingest,
                batch_limit=self.settings.poll_snapshot_limit,
                confirm=confirm,
            ),
            self.poll_status_store,
            metrics=metrics,
            hang_after_ms=HANG_AFTER_MS,
        )
        grace_ms = round(self.settings.compensation_grace_seconds * 1000)
        one = CompensateAsset(self.snapshot_sources, self.asset_store, self.ingest, grace_ms=grace_ms, confirm=confirm)
        compensate = Compensate(one, metrics=metrics)
        return RunPollWork(self.asset_registry, poll, compensate, fill=compensate.fill, notices=self.notice_store)

    @part
    def notice_store(self) -> NoticeStore:
        from lakehook.adapters.dynamodb.notice_store import DynamoDBNoticeStore

        return DynamoDBNoticeStore(self.table)

    @part
    def work_queue(self) -> WorkQueue:
        from lakehook.adapters.sqs import SQSWorkQueue

        if not self.settings.poll_queue_url:
            raise RuntimeError("LAKEHOOK_POLL_QUEUE_URL is not set: the poll planner has no queue")
        return SQSWorkQueue(aws.client("sqs", self.settings), self.settings.poll_queue_url)

    @part
    def resolver_queue(self) -> WorkQueue | None:
        """The resolver's own queue (work past one invocation's bound), when the stack has one."""
        from lakehook.adapters.sqs import SQSWorkQueue

        url = self.settings.resolver_queue_url
        return SQSWorkQueue(aws.client("sqs", self.settings), url) if url else None

    @part
    def plan_polls(self) -> PlanPolls:
        from lakehook.usecases.plan_polls import PlanPolls

        return PlanPolls(
            self.notice_store,
            self.work_queue,
            self.settings.poll_cadence,
            per_message=self.settings.poll_tables_per_message,
        )

    @part
    def plan_notified_polls(self) -> PlanNotifiedPolls:
        from lakehook.usecases.plan_polls import PlanNotifiedPolls

        return PlanNotifiedPolls(self.asset_registry, self.work_queue, self.notice_store)

    @part
    def plan_polls_for(self) -> PlanPollsFor:
        """The poll planner's entry: a commit notice or the schedule's tick."""
        from lakehook.usecases.plan_polls import PlanPollsFor

        return PlanPollsFor(lambda: self.plan_polls, lambda: self.plan_notified_polls)

    # --- rules and the resolver: ResolverFunction, DeferralSweepFunction, the rule routes -----------------

    @part
    def rule_store(self) -> RuleStore:
        from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore

        return DynamoDBRuleStore(self.table)

    @part
    def trigger_store(self) -> TriggerStore:
        from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore

        return DynamoDBTriggerStore(self.table)

    @part
    def state_reader(self) -> StateReader:
        from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader

        return DynamoDBStateReader(self.table)

    @part
    def state_history(self) -> StateHistory:
        from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory

        return DynamoDBStateHistory(self.table)

    @part
    def partition_store(self) -> PartitionStore:
        from lakehook.adapters.dynamodb.partition_store import DynamoDBPartitionStore

        return DynamoDBPartitionStore(self.table)

    @part
    def deferral_store(self) -> DeferralStore:
        from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore

        return DynamoDBDeferralStore(self.table)

    @part
    def resolver(self) -> ResolveAssetChange:
        """A rule's error is what the domain calls one, or a request DynamoDB refused for its content; every
        other error fails the batch so Lambda retries it."""
        from lakehook.adapters.aws import is_rejected_by_data
        from lakehook.usecases.resolve import ResolveAssetChange, ResolverStores, is_rule_error

        stores = ResolverStores(
            self.rule_store,
            self.state_reader,
            self.trigger_store,
            self.state_history,
            self.deferral_store,
            coverage=self.coverage_store,
            partitions=self.partition_store,
            poll_queue=self.work_queue if self.settings.poll_queue_url else None,
            resolver_queue=self.resolver_queue,
            assets=self.asset_store,
        )
        return ResolveAssetChange(stores, rule_error=lambda exc: is_rule_error(exc) or is_rejected_by_data(exc))

    @part
    def sweeper(self) -> SweepDeferred:
        from lakehook.usecases.resolve import SweepDeferred

        return SweepDeferred(self.deferral_store)

    @part
    def confirm_runs(self) -> ConfirmRuns:
        """Outlet commits carrying a trigger key confirm its run (called by the poll and compensation)."""
        from lakehook.usecases.confirmation import ConfirmRuns

        return ConfirmRuns(self.trigger_ledger, self.rule_store, slots=self.slot_gate, assets=self.asset_store)

    @part
    def sweep_not_advanced(self) -> SweepNotAdvanced:
        """The deferral sweep's part: started runs past confirm.withinSeconds with no confirmation."""
        from lakehook.observability import metrics
        from lakehook.usecases.confirmation import SweepNotAdvanced

        return SweepNotAdvanced(self.trigger_ledger, self.rule_store, metrics=metrics)

    @part
    def deferral_sweep(self) -> SweepOnSchedule:
        """The deferral sweep's entry: the minute's due deferrals, or the freshness schedule's check."""
        from lakehook.freshness_metrics import publish_freshness
        from lakehook.usecases.deferral_sweep import SweepOnSchedule

        return SweepOnSchedule(
            lambda: len(self.sweeper()),
            lambda: self.check_freshness,
            publish_freshness,
            lambda: self.sweep_not_advanced(),
        )

    @part
    def check_freshness(self) -> CheckFreshness:
        from lakehook.usecases.freshness import CheckFreshness

        # The resolver decides only (claim=False): the freshness check measures how long groups wait on quality.
        return CheckFreshness(
            self.rule_store,
            self.trigger_store,
            self.asset_registry,
            self.state_reader,
            evaluate=lambda rule: self.resolver.evaluate(rule, claim=False).verdicts,
            partitions=self.partition_store,
            poll_statuses=self.poll_status_store,
        )

    @part
    def put_rule(self) -> PutRule:
        from lakehook.usecases.rule_writes import PutRule

        return PutRule(
            self.rule_store,
            resolver=self.resolver,
            secrets=self.secret_store,
            url_policy=self.settings.url_policy,
            secret_names=self.settings.secret_names,
            producer_secrets=self.settings.producer_secrets,
            aliases=self.alias_store,
        )

    @part
    def read_rules(self) -> ReadRules:
        from lakehook.usecases.rule_reads import ReadRules

        return ReadRules(self.rule_store)

    @part
    def delete_rule(self) -> DeleteRule:
        from lakehook.usecases.rule_writes import DeleteRule

        return DeleteRule(self.rule_store, self.trigger_store)

    @part
    def explain_rule(self) -> ExplainRule:
        """Its verdicts are the resolver's own (``evaluate(rule, claim=False)``)."""
        from lakehook.usecases.rule_explain import ExplainRule

        return ExplainRule(
            self.rule_store,
            self.trigger_store,
            self.state_reader,
            self.asset_registry,
            resolver=self.resolver,
            partitions=self.partition_store,
            poll_statuses=self.poll_status_store,
            slots=self.slot_gate,
            notices=self.notice_store,
            cadence=self.settings.poll_cadence,
        )

    @part
    def evaluate_rule(self) -> EvaluateRule:
        from lakehook.usecases.rule_runs import EvaluateRule

        return EvaluateRule(
            self.rule_store,
            self.trigger_store,
            self.state_reader,
            resolver=self.resolver,
            explain=self.explain_rule,
            partitions=self.partition_store,
        )

    @part
    def backtest_rule(self) -> BacktestRule:
        """``POST /rules/{ruleId}/backtest``: the rule checked as a PUT checks it, replayed on throw-away stores."""
        from lakehook.usecases.backtest import BacktestRule

        return BacktestRule(self.rule_store, self.asset_store, self.put_rule, self.settings.event_retention_days)

    @part
    def evaluate_sensor(self) -> EvaluateSensor:
        """``POST /sensors/evaluate``: explain's verdicts on a rule's groups or an ad-hoc group, long-polled."""
        from lakehook.usecases.sensors import EvaluateSensor

        return EvaluateSensor(self.rule_store, self.explain_rule, self.alias_store)

    # --- triggers and dispatch: DispatcherFunction, TriggerRedriveFunction, the trigger and run routes ------

    @part
    def trigger_ledger(self) -> TriggerLedger:
        from lakehook.adapters.dynamodb.trigger_ledger import DynamoDBTriggerLedger

        return DynamoDBTriggerLedger(self.table)

    @part
    def manifest_store(self) -> ManifestStore:
        from lakehook.adapters.s3.manifest_store import S3ManifestStore

        return S3ManifestStore(aws.client("s3", self.settings), self.settings.bucket_name)

    @part
    def target_clients(self) -> Mapping[str, TargetClient]:
        from lakehook.adapters.targets import TargetDeps, build_target_clients

        deps = TargetDeps(
            secrets=self.secret_store,
            aws=lambda service: aws.client(service, self.settings),
            allow_insecure_loopback=self.settings.allow_insecure_loopback_targets,
            url_policy=self.settings.url_policy,
            secret_names=self.settings.secret_names,
        )
        return build_target_clients(deps)

    @part
    def dispatch_record(self) -> Callable[[Any], DispatchResult | None]:
        """The dispatcher on one stream record: its claim key and claim read from the record as the DynamoDB
        ledger writes them (``handle_dispatch_record``)."""
        from lakehook.adapters.dynamodb.trigger_ledger import claimed_entry, claimed_trigger_key
        from lakehook.usecases.dispatch import handle_dispatch_record

        return lambda record: handle_dispatch_record(record, self.dispatcher, claimed_trigger_key, claimed_entry)

    @part
    def dispatch_policy(self) -> DispatchPolicy:
        """Attempts within one invocation and re-drives between them, from the settings."""
        from lakehook.domain.dispatch import RetryPolicy
        from lakehook.usecases.dispatch import DispatchPolicy

        settings = self.settings
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

    @part
    def completion_tokens(self) -> CompletionTokens:
        """Completion tokens under the stack's completion key (kept per process; see CompletionTokens for rotation)."""
        from lakehook.usecases.completion import CompletionTokens

        return CompletionTokens(self.secret_store, self.settings.completion_key_secret)

    @part
    def dispatcher(self) -> DispatchTrigger:
        from lakehook.usecases.dispatch import DispatchTrigger

        tokens = self.completion_tokens
        return DispatchTrigger(
            self.trigger_ledger,
            self.rule_store,
            self.manifest_store,
            self.target_clients,
            self.dispatch_policy,
            completion_token=tokens.issue if tokens.configured else None,
            slots=self.slot_gate,
            events=self.state_reader,
        )

    @part
    def run_slot_store(self) -> RunSlotStore:
        from lakehook.adapters.dynamodb.run_slot_store import DynamoDBRunSlotStore

        return DynamoDBRunSlotStore(self.table)

    @part
    def slot_gate(self) -> RunSlotGate:
        """A rule's maxInFlight: claims wait for a run slot at dispatch, completions and the compensator free them."""
        from lakehook.usecases.run_slots import RunSlotGate

        return RunSlotGate(self.run_slot_store, self.trigger_ledger)

    @part
    def redriver(self) -> RedriveTriggers:
        from lakehook.usecases.dispatch import RedriveTriggers

        return RedriveTriggers(self.trigger_ledger, self.dispatcher, slots=(self.slot_gate, self.rule_store))

    @part
    def read_triggers(self) -> ReadTriggers:
        from lakehook.usecases.triggers import ReadTriggers

        return ReadTriggers(self.trigger_store, slots=self.slot_gate, rules=self.rule_store)

    @part
    def retry_trigger(self) -> RetryTrigger:
        from lakehook.usecases.dispatch import RetryTrigger

        return RetryTrigger(self.trigger_ledger)

    @part
    def complete_run(self) -> CompleteRun:
        from lakehook.usecases.completion import CompleteRun

        return CompleteRun(self.trigger_ledger, self.ingest, self.alias_store, self.rule_store, slots=self.slot_gate)

    # --- replay: ReplayApiFunction (the pre-flight reads lakehouse tables: their libraries load lazily) -----

    @part
    def snapshot_existence(self) -> SnapshotExistence:
        from lakehook.usecases.spool import SnapshotSourceExistence

        return SnapshotSourceExistence(self.snapshot_sources)

    @part
    def replay_trigger(self) -> ReplayTrigger:
        from lakehook.usecases.replay import ReplayTrigger
        from lakehook.usecases.spool import PreflightReplay

        preflight = PreflightReplay(
            self.verify_spool_manifest, self.asset_registry, self.asset_store, self.snapshot_existence
        )
        return ReplayTrigger(self.trigger_store, preflight, manifests=self.manifest_store, rules=self.rule_store)


_current: Container | None = None
_lock = threading.Lock()


def current() -> Container:
    """The process's container, built from the environment on first use."""
    global _current
    with _lock:
        if _current is None:
            _current = Container(get_settings())
        return _current


LAMBDA_INIT = "AWS_LAMBDA_INITIALIZATION_TYPE"  # set by the Lambda runtime in every execution environment


def prewarm(*parts: str) -> None:
    """Build the process container's named parts now, as a function's module loads: in Lambda that is the
    execution environment's init phase, so its boto3 clients are not built inside the first invocation. Only in
    Lambda (``AWS_LAMBDA_INITIALIZATION_TYPE`` set); elsewhere (tests, the local runtime) parts stay lazy, built on
    first use, so a moto server or a test's container can come first. A part that fails to build is left to its
    first use, which raises where the invocation can answer it."""
    if not os.environ.get(LAMBDA_INIT):
        return
    container = current()
    for name in parts:
        try:
            getattr(container, name)
        except Exception:  # the invocation that needs it builds it again and reports the failure
            logging.getLogger(__name__).warning("part %s not built at init", name, exc_info=True)


def use(container: Container | None) -> None:
    """Replace the process's container (tests, the local runtime); None resets it."""
    global _current
    with _lock:
        _current = container
