"""What one resolver invocation reports (claims, verdicts, deferrals, lost races, failed rules), what it is built
from (:class:`ResolverStores`, :class:`ResolverLimits`), and which errors are a rule's rather than the
infrastructure's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from lakehook.domain.evaluation import GroupEvaluation, Status
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.observability import MetricName
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.queue import WorkQueue
from lakehook.ports.rules import (
    AssetRecheck,
    Deferral,
    DeferralStore,
    GroupRef,
    RuleStore,
    StateHistory,
    StateReader,
    TriggerStore,
)
from lakehook.ports.store import AssetStore

READY_METRIC = "lakehouse_asset_dependency_ready_total"
BLOCKED_METRIC = "lakehouse_asset_dependency_blocked_by"


# Errors of the data a rule evaluates, or of the code evaluating it: retrying the batch cannot help, so the rule
# records them and the batch goes on. Anything else (the SDK's errors, OSError for connections and timeouts,
# ConflictError for contention) is the infrastructure's: the batch fails and Lambda retries it.
RULE_ERRORS: tuple[type[BaseException], ...] = (
    ArithmeticError,
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    AssertionError,
    RecursionError,
)


class OutOfTime(Exception):
    """The invocation is about to reach its timeout: it stops before its next write and fails, so it is retried
    (what it did is idempotent) instead of being killed with nothing left behind."""


TimeLeft = Callable[[], int]
"""milliseconds left in this invocation (Lambda's ``context.get_remaining_time_in_millis``)"""


def in_time(time_left: TimeLeft | None, limits: ResolverLimits) -> None:
    """Raise :class:`OutOfTime` when less than ``limits.margin_ms`` is left."""
    if time_left is not None and (left := time_left()) < limits.margin_ms:
        raise OutOfTime(f"{left} ms left, less than the resolver's margin of {limits.margin_ms} ms")


def is_rule_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug of one rule (its data or the code evaluating it), not the infrastructure's."""
    return isinstance(exc, RULE_ERRORS)


def describe_error(exc: BaseException) -> str:
    """``<ExceptionType>: <message>``, cut to what an API answer should carry."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:999] + "…"


@dataclass(frozen=True)
class ResolverStores:
    """The ports the resolver reads and writes. Optional ones: coverage members, partitioned groups, and the queue
    a snapshot gap asks a targeted poll on (without it, a gap waits for the next scheduled poll)."""

    rules: RuleStore
    reader: StateReader
    triggers: TriggerStore
    history: StateHistory
    deferrals: DeferralStore
    coverage: CoverageStore | None = None
    partitions: PartitionStore | None = None
    poll_queue: WorkQueue | None = None
    resolver_queue: WorkQueue | None = None  # takes the work past one invocation's bound (resolve_continue.py)
    # the part items of a commit's partitions, which an evaluation no stream batch brought reads (a PUT, evaluate now)
    assets: AssetStore | None = None


def bounded(stores: ResolverStores, explain: bool) -> bool:
    """Whether the reads of partitioned groups are bounded: what lies past a bound is carried to the resolver queue
    (with no queue, or for explain, nothing is past it)."""
    return stores.resolver_queue is not None and not explain


@dataclass(frozen=True)
class ResolverLimits:
    """How far one invocation goes: lost races per group before the batch fails (``max_conflicts``), claims per
    group before the rest is deferred to the next invocation (``max_claims_per_group``), how long a state stays
    unchanged before a gap in its history is final (``history_settle_ms``: its owner handled or dropped its stream
    records), and when a failed rule or batch is evaluated again (``retry_ms``: the next sweep after it)."""

    max_conflicts: int = 10
    max_claims_per_group: int = 100
    max_facts: int = 1000  # partition facts one invocation writes; the rest of its batch goes to the resolver queue
    max_partition_claims: int = 1000  # claims of all partitioned groups in one invocation (the rest: the queue's)
    pending_page: int = 1000  # pending partitions of a group one invocation reads (the next page: the queue's)
    max_fact_reads: int = 5000  # facts of a group's partitions one invocation reads (a rollup's units count each)
    max_version_reads: int = 500  # EACH_VERSION per partition: next-version queries of one invocation, all groups
    commit_log_page: int = 1000  # EACH_VERSION per partition: a table's logged commits one query reads (for a gap)
    margin_ms: int = 10_000  # an invocation with less time left makes no more writes: it fails, and is retried
    history_settle_ms: int = 15 * 60_000
    retry_ms: int = 60_000


@dataclass(frozen=True)
class RuleFailure:
    """A rule (group) whose evaluation raised a rule error; the rest of the batch went on."""

    rule_id: str
    group_id: str | None
    message: str


@dataclass
class ResolveReport:
    """What one invocation did: claims (in claim order), final verdicts, deferrals, lost races, failed rules."""

    claimed: list[Trigger] = field(default_factory=list)
    verdicts: dict[GroupRef, GroupEvaluation] = field(default_factory=dict)
    deferred: list[Deferral] = field(default_factory=list)
    conflicts: int = 0
    failed: list[RuleFailure] = field(default_factory=list)
    rechecks: list[AssetRecheck] = field(default_factory=list)
    carried: int = 0  # messages sent to the resolver queue: work past this invocation's bound
    # the verdict each group had when it was first evaluated in this invocation (before its claims moved it)
    first_verdicts: dict[GroupRef, GroupEvaluation] = field(default_factory=dict)
    # late snapshots an EACH_VERSION group had already run past: recorded as SKIPPED, never run
    skipped: list[Trigger] = field(default_factory=list)
    # explain only (nothing claimed): the triggers a claiming evaluation now would claim, in the plan's order
    planned: list[Trigger] = field(default_factory=list)
    # assets whose snapshot log a claim grew with a snapshot known only from its pin (a quality-passed one whose own
    # push has not come), with the groups that claimed it: no stream record tells the asset's other EACH_VERSION
    # groups, which may wait at that very gap
    logged_pins: dict[str, set[GroupRef]] = field(default_factory=dict)

    def blocked_by(self) -> Counter[str]:
        """Why groups that did not fire in this invocation are waiting (metric dimension values)."""
        fired = {(t.rule_id, t.group_id) for t in self.claimed}
        return Counter(
            v.status.blocked_by
            for ref, v in self.verdicts.items()
            if ref not in fired and v.status not in (Status.READY, Status.DISABLED)
        )

    def verdict(self, ref: GroupRef, verdict: GroupEvaluation) -> None:
        """Note a group's verdict (the latest is the group's; the first stays in ``first_verdicts``)."""
        self.verdicts[ref] = verdict
        self.first_verdicts.setdefault(ref, verdict)


Observer = Callable[[ResolveReport], None]


def emit_metrics(report: ResolveReport) -> None:
    """Powertools EMF: dependency-ready claims, and blocked groups by what blocks them."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from lakehook.observability import NAMESPACE

    ready = sum(1 for t in report.claimed if t.status is TriggerStatus.TRIGGERING)
    if ready:
        with single_metric(name=READY_METRIC, unit=MetricUnit.Count, value=ready, namespace=NAMESPACE):
            pass
    if report.failed:
        errors = len(report.failed)
        with single_metric(
            name=MetricName.RULE_EVALUATION_ERROR, unit=MetricUnit.Count, value=errors, namespace=NAMESPACE
        ):
            pass
    for reason, count in sorted(report.blocked_by().items()):
        with single_metric(name=BLOCKED_METRIC, unit=MetricUnit.Count, value=count, namespace=NAMESPACE) as metric:
            metric.add_dimension(name="blocked_by", value=reason)
