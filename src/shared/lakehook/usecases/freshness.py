"""What is overdue: one rule for explain, every rule and asset for the freshness check's metric and alarm; and the
RFC's waits (seed 000 section 6.3), each the longest at the moment of the check: the age of an asset's newest
snapshot (state lag), how far its watermark is behind the clock (watermark lag), and how long a group of an enabled
rule has been BLOCKED_BY_QUALITY.

One rule whose promise cannot be checked (a deadline cron stored before lakehook refused crons that never fire,
a cursor that does not parse) is reported as such, with the reason, and never stops the others being checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lakehook.answers.freshness import OverdueAnswer
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.evaluation import GroupEvaluation
from lakehook.domain.freshness import (
    Freshness,
    Lag,
    Overdue,
    OverdueKind,
    asset_overdue,
    longer,
    partition_expected_overdue,
    partition_overdue,
    rule_overdue,
    state_lag_seconds,
    watermark_lag_seconds,
)
from lakehook.domain.partition_time import partition_span
from lakehook.domain.rules import Rule
from lakehook.domain.source_health import SourceHealth
from lakehook.domain.state import AssetState
from lakehook.domain.status import Status
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor
from lakehook.observability import logger
from lakehook.ports import AssetRegistry
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import GroupRef, RuleStore, StateReader, StoredRule, TriggerStore
from lakehook.usecases.source_health import SourceHealths

PAGE = 200
# What checking one rule's promise may raise because of that rule (its stored body, its cursors), not the store:
# croniter's errors and pydantic's are ValueErrors, an instant out of range an OverflowError.
RULE_FAULTS = (ValueError, ArithmeticError)


def last_claimed_at(cursors: Mapping[Any, GroupCursor], rule: Rule | None = None) -> int | None:
    """When any group of the rule last triggered (a skip is not a run: the cursor keeps the run's time); with
    ``rule``, any of its unpartitioned groups (a partitioned group's runs are per partition)."""
    counted = None if rule is None else {g.group_id for g in rule.groups if g.partition_by is None}
    return max(
        (
            c.claimed_at
            for c in cursors.values()
            if c.claimed_at is not None and (counted is None or (c.partition is None and c.group_id in counted))
        ),
        default=None,
    )


def rule_wide(rule: Rule) -> Freshness | None:
    """The promise the rule's own runs keep (``expectedBy``, ``maxWaitSeconds`` over its group runs): none when every
    group is partitioned, whose groups keep them per partition (:func:`partitions_overdue`)."""
    return rule.freshness if any(g.partition_by is None for g in rule.groups) else None


def rule_wide_overdue(rule: Rule, created_at: int, cursors: Mapping[Any, GroupCursor], now: int) -> list[Overdue]:
    """The rule's own ``expectedBy`` and ``maxWaitSeconds``, counted on its unpartitioned groups' runs."""
    return rule_overdue(rule_wide(rule), created_at, last_claimed_at(cursors, rule), now)


Evaluate = Callable[[Rule], Mapping[GroupRef, GroupEvaluation]]
"""The resolver's verdicts on one rule's groups, deciding only (``ResolveAssetChange.evaluate(claim=False)``)."""


def quality_gated(rule: Rule) -> bool:
    """Whether some member of the rule requires a passed quality check (only such a rule can wait on one)."""
    return any(m.condition.quality_status for g in rule.groups for m in g.members)


def quality_blocked_since(verdict: GroupEvaluation, states: Mapping[str, AssetState]) -> int | None:
    """Since when a BLOCKED_BY_QUALITY group has waited: the commit of the oldest among its quality-blocked
    members' newest snapshots (the data that waits for a passing check), else that state's last change; None when
    the group is not blocked by quality or nothing tells."""
    if verdict.status is not Status.BLOCKED_BY_QUALITY:
        return None
    blocked = [m.asset_key for m in verdict.members if m.status is Status.BLOCKED_BY_QUALITY]
    times = [
        t
        for k in blocked or [m.asset_key for m in verdict.members]
        if (s := states.get(k)) is not None and (t := s.latest_commit_time or s.updated_at) is not None
    ]
    return min(times, default=None)


def partitions_overdue(rule: Rule, partitions: PartitionStore | None, now: int) -> list[Overdue]:
    """The rule's partitioned groups whose oldest pending partition waited longer than ``partitionMaxAgeSeconds``
    (and ``maxWaitSeconds``, kept per partition) to run, and whose pending partition missed its ``expectedBy``
    deadline; per partitioned group one query page per about 20,000 pending partitions (keys and times only), none
    without a promise."""
    freshness = rule.freshness
    if freshness is None or partitions is None:
        return []
    ages = [
        (freshness.partition_max_age_seconds, OverdueKind.PARTITION_MAX_AGE),
        (freshness.max_wait_seconds, OverdueKind.MAX_WAIT),
    ]
    if all(age is None for age, _ in ages) and freshness.expected_by is None:
        return []
    found: list[Overdue] = []
    for group in rule.groups:
        if group.partition_by is None:
            continue
        since = partitions.pending_since(rule.rule_id, group.group_id)
        found += [o for age, kind in ages if (o := partition_overdue(group.group_id, age, since, now, kind))]
        if freshness.expected_by is not None:
            spans = {p: s for p in since if (s := partition_span(p, group.partition_timezone)) is not None}
            overdue = partition_expected_overdue(group.group_id, freshness.expected_by, spans, since, now)
            found += [overdue] if overdue is not None else []
    return found


def caused(found: list[Overdue], asset_keys: list[str], healths: SourceHealths | None) -> list[Overdue]:
    """The overdue promises with their cause, when one of ``asset_keys`` (what they depend on) has a source that is
    BLOCKED or has a GAP: one poll status read per asset, only when something is overdue."""
    cause = healths.cause(asset_keys) if found and healths is not None else None
    return [replace(o, cause=cause) for o in found] if cause is not None else found


def fault_reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class RuleFreshness:
    """What one rule is overdue for; ``error`` when its own promise could not be checked (its members' ages
    still are)."""

    overdue: list[Overdue]
    error: str | None = None


def overdue_of_rule(
    stored: StoredRule,
    cursors: Mapping[Any, GroupCursor],
    registry: AssetRegistry | None,
    reader: StateReader,
    now: int,
    partitions: PartitionStore | None = None,
    healths: SourceHealths | None = None,
) -> RuleFreshness | None:
    """The rule's own promises (expectedBy, maxWaitSeconds, partitionMaxAgeSeconds over the pending partitions in
    ``partitions``) and its members' maxAgeSeconds, broken at ``now``, each with its cause when ``healths`` says a
    source it reads is BLOCKED or has a GAP; None when neither the rule nor any member promises anything."""
    rule = stored.rule
    error: str | None = None
    try:
        found = rule_wide_overdue(rule, stored.created_at, cursors, now)
        found = caused(found + partitions_overdue(rule, partitions, now), rule.asset_keys, healths)
    except RULE_FAULTS as exc:
        found, error = [], fault_reason(exc)
    ages: dict[str, int] = {}
    if registry is not None:
        ages = {k: a.max_age_seconds for k in rule.asset_keys if (a := registry.get_asset(k)) and a.max_age_seconds}
    if rule.freshness is None and not ages:
        return None
    if ages:
        states = reader.get_states(list(ages))
        for key, age in ages.items():
            found += caused([o] if (o := asset_overdue(key, age, states.get(key), now)) else [], [key], healths)
    return RuleFreshness(found, error)


@dataclass
class FreshnessReport:
    """Overdue rules and assets; ``unchecked``: the rules whose promise could not be checked, and why. The longest
    waits: ``state_lag`` and ``watermark_lag`` over registered assets, ``quality_blocked`` over the groups of
    enabled quality-gated rules (``quality_gated``: how many such rules were evaluated); None: nothing measured."""

    rules: dict[str, list[Overdue]] = field(default_factory=dict)
    assets: list[Overdue] = field(default_factory=list)
    unchecked: dict[str, str] = field(default_factory=dict)
    state_lag: Lag | None = None
    watermark_lag: Lag | None = None
    quality_blocked: Lag | None = None
    quality_gated: int = 0
    untrusted: list[SourceHealth] = field(default_factory=list)  # polled sources BLOCKED or with a GAP
    sources_checked: bool = False  # whether source health was read (the check was given the poll statuses)

    def to_log(self) -> dict[str, Any]:
        return {
            "rulesOverdue": {
                r: [OverdueAnswer.from_domain(o).dump() for o in found] for r, found in self.rules.items()
            },
            "assetsOverdue": [OverdueAnswer.from_domain(o).dump() for o in self.assets],
            "rulesUnchecked": dict(self.unchecked),
            "sourcesUntrusted": [h.describe() for h in self.untrusted],
        }

    def waits(self) -> dict[str, Any]:
        """The longest waits and whose they are, for the log line that goes with their metrics."""
        found = {"stateLag": self.state_lag, "watermarkLag": self.watermark_lag, "qualityBlocked": self.quality_blocked}
        return {name: {"seconds": lag.seconds, "of": lag.of} for name, lag in found.items() if lag is not None}


class CheckFreshness:
    """Every enabled rule with a freshness promise, and every registered asset with ``maxAgeSeconds``; a rule
    whose promise cannot be checked goes to ``unchecked`` and the check goes on.

    Requests per run: the rule pages, one cursor read per rule with a promise (and one query of pending partitions
    per partitioned group of a rule promising partitionMaxAgeSeconds, maxWaitSeconds or expectedBy, which such a
    group keeps per partition), one evaluation (the resolver's
    reads, no writes) per enabled rule with a ``qualityStatus`` member when ``evaluate`` is given, the asset pages,
    and one batch of state reads per page of assets; other rules cost nothing more. With ``poll_statuses``, one
    batch of poll status reads per page of assets with a polled one: the sources BLOCKED or with a GAP are counted
    (``untrusted``), and an overdue rule or asset names such a source it reads as its cause (a rule's members outside
    the asset pages read so far cost a read each, only when the rule is overdue).
    """

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        registry: AssetRegistry,
        reader: StateReader,
        clock: Callable[[], int] = now_ms,
        evaluate: Evaluate | None = None,
        partitions: PartitionStore | None = None,
        poll_statuses: PollStatusStore | None = None,
    ) -> None:
        self._poll_statuses = poll_statuses
        self._rules = rules
        self._partitions = partitions
        self._triggers = triggers
        self._registry = registry
        self._reader = reader
        self._clock = clock
        self._evaluate = evaluate

    def _quality_wait(self, rule: Rule, now: int, report: FreshnessReport) -> None:
        """How long the rule's groups have been BLOCKED_BY_QUALITY, into the report's longest such wait."""
        assert self._evaluate is not None
        verdicts = self._evaluate(rule)
        report.quality_gated += 1
        blocked = [(ref, v) for ref, v in verdicts.items() if v.status is Status.BLOCKED_BY_QUALITY]
        if not blocked:
            return
        states = self._reader.get_states(sorted({m.asset_key for _, v in blocked for m in v.members}))
        for (rule_id, group_id), verdict in blocked:
            since = quality_blocked_since(verdict, states)
            seconds = None if since is None else max(0, now - since) / 1000
            report.quality_blocked = longer(report.quality_blocked, seconds, f"{rule_id}/{group_id}")

    def _check_rule(
        self, stored: StoredRule, now: int, report: FreshnessReport, healths: SourceHealths | None = None
    ) -> None:
        """The rule's own promise, into the report: overdue, or unchecked (logged) when it cannot be checked."""
        rule = stored.rule
        try:
            groups = [(rule.rule_id, g.group_id) for g in rule.groups if g.partition_by is None]
            cursors = self._triggers.get_cursors(groups) if groups else {}
            found = rule_wide_overdue(rule, stored.created_at, cursors, now)
            found += partitions_overdue(rule, self._partitions, now)
        except RULE_FAULTS as exc:
            report.unchecked[rule.rule_id] = fault_reason(exc)
            logger.error(
                "freshness unchecked",
                extra={"rule_id": rule.rule_id, "status": "ERROR", "reason": report.unchecked[rule.rule_id]},
            )
            return
        if found:
            report.rules[rule.rule_id] = caused(found, rule.asset_keys, healths)

    def __call__(self) -> FreshnessReport:
        now = self._clock()
        report = FreshnessReport()
        healths = SourceHealths(self._poll_statuses) if self._poll_statuses is not None else None
        report.sources_checked = healths is not None
        token: str | None = None
        while True:
            page = self._rules.list_rules(PAGE, token)
            report.unchecked.update(page.unreadable)
            for stored in page.items:
                rule = stored.rule
                if rule.enabled and self._evaluate is not None and quality_gated(rule):
                    self._quality_wait(rule, now, report)
                if rule.freshness is not None and rule.enabled:
                    self._check_rule(stored, now, report, healths)
            token = page.next_token
            if token is None:
                break
        while True:
            assets = self._registry.list_assets(PAGE, token)
            self._check_assets(assets.items, now, report, healths)
            token = assets.next_token
            if token is None:
                return report

    def _check_assets(
        self, assets: list[AssetRegistration], now: int, report: FreshnessReport, healths: SourceHealths | None
    ) -> None:
        """One page of registered assets, into the report: their waits, what is overdue, the untrusted sources."""
        states = self._reader.get_states([a.asset_key for a in assets]) if assets else {}
        polled = [a.asset_key for a in assets if a.source is not None]
        if healths is not None and polled:
            healths.read(polled)
            report.untrusted += healths.untrusted(polled)
        for asset in assets:
            key, state = asset.asset_key, states.get(asset.asset_key)
            report.state_lag = longer(report.state_lag, state_lag_seconds(state, now), key)
            report.watermark_lag = longer(report.watermark_lag, watermark_lag_seconds(state, now), key)
            if (o := asset_overdue(key, asset.max_age_seconds, state, now)) is not None:
                report.assets += caused([o], [key], healths)
