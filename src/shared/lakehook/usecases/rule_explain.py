"""Explain a rule: ``GET /rules/{ruleId}/explain`` ("why hasn't it run?"), for each group and member READY or
what blocks it. The verdicts are the resolver's own; ``usecases.rule_runs`` answers the same explanation after
``POST /rules/{ruleId}/evaluate``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lakehook.answers.explain import Explanation, GroupExplanation, InFlightExplanation, RuleErrorAnswer
from lakehook.answers.freshness import RuleFreshnessAnswer
from lakehook.answers.triggers import TriggerSummary
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.notice_state import PollCadence
from lakehook.domain.rules import Mode, Rule
from lakehook.domain.time import ms_to_iso, now_ms
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.ports.lakehouse import PollStatusStore
from lakehook.ports.notices import NoticeStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import RuleStore, StateReader, StoredRule, TriggerStore
from lakehook.ports.store import AssetRegistry
from lakehook.usecases.freshness import overdue_of_rule
from lakehook.usecases.resolve import ResolveAssetChange, ResolveReport
from lakehook.usecases.rule_reads import read_rule
from lakehook.usecases.run_slots import RunSlotGate
from lakehook.usecases.source_health import SourceHealths, with_source_health

MAX_SKIPS_SHOWN = 20  # explain lists the newest late versions skipped; GET /rules/{id}/triggers lists them all


class ExplainRule:
    """``GET /rules/{ruleId}/explain``. Deciding whether a rule is ready is the resolver's (``resolver``), so what
    explain says is what the resolver does."""

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        reader: StateReader,
        registry: AssetRegistry | None = None,
        clock: Callable[[], int] = now_ms,
        *,
        resolver: ResolveAssetChange,
        partitions: PartitionStore | None = None,
        poll_statuses: PollStatusStore | None = None,
        slots: RunSlotGate | None = None,
        notices: NoticeStore | None = None,
        cadence: PollCadence | None = None,
    ) -> None:
        """``registry``: the registered assets (it tells a stateless member's registered asset from an unknown
        one, and says what freshness an asset promises); ``partitions``: the partition log a partitioned group's
        freshness is measured on; ``poll_statuses``: the polled members' source health (one read per member): a
        group that waits on a member whose source is BLOCKED or GAP says it cannot decide, and why; ``notices`` (with
        the stack's ``cadence``): a member whose commit notices stopped shows its source LAGGING."""
        self._notices = notices
        self._cadence = cadence
        self._poll_statuses = poll_statuses
        self._rules = rules
        self._triggers = triggers
        self._reader = reader
        self._registry = registry
        self._clock = clock
        self._resolver = resolver
        self._partitions = partitions
        self._slots = slots

    def explain(self, rule_id: str) -> dict[str, Any]:
        """For each group and member: READY or why not, with current and required values and the last trigger.

        The verdict is the resolver's own (:meth:`ResolveAssetChange.evaluate` without claiming): the same
        reads, the same EACH_VERSION history and the same decision."""
        stored = read_rule(self._rules, rule_id)
        return self._explain(stored, self._decide(stored.rule, claim=False))

    def explain_stored(self, stored: StoredRule, rule: Rule) -> dict[str, Any]:
        """The explanation of ``stored`` with the resolver's verdicts on ``rule`` (deciding only, claiming
        nothing): what ``POST /rules/{ruleId}/evaluate`` answers, ``rule`` being the rule it evaluated."""
        return self._explain(stored, self._decide(rule, claim=False))

    def _decide(self, rule: Rule, *, claim: bool) -> ResolveReport:
        registered: dict[str, bool] | None = None
        if self._registry is not None:
            inputs = self._reader.read(rule.asset_keys, ())  # an unparsable state is the group's ERROR, shown
            found = inputs.states.keys() | inputs.unreadable_states.keys()
            registered = {k: k in found or self._registry.get_asset(k) is not None for k in rule.asset_keys}
        return self._resolver.evaluate(rule, claim=claim, registered=registered)

    def _explain(self, stored: StoredRule, report: ResolveReport) -> dict[str, Any]:
        rule = stored.rule
        cursors, last = self._last_triggers(rule)
        skipped = self._late_skips(rule)
        healths = None
        if self._poll_statuses is not None:  # every member's poll status in one batch
            healths = SourceHealths(self._poll_statuses, self._notices, self._cadence, self._clock)
            healths.read(rule.asset_keys)
        groups = []
        ready = False
        each_version = rule.policy.mode is Mode.EACH_VERSION
        for group in rule.groups:
            verdict = report.verdicts[(rule.rule_id, group.group_id)]
            ready = ready or verdict.ready
            late = [t for t in skipped if t.group_id == group.group_id] if each_version else None
            explained = GroupExplanation.from_domain(verdict).with_history(last.get(group.group_id), late)
            groups.append(with_source_health(explained, verdict.ready, healths) if healths is not None else explained)
        newest = max(last.values(), key=lambda t: (t.created_at, t.sequence), default=None)
        answer = Explanation(
            rule_id=rule.rule_id,
            enabled=rule.enabled,
            mode=rule.policy.mode.value,
            start_from=rule.policy.start_from.value,
            ready=ready,
            groups=groups,
            last_trigger=None if newest is None else TriggerSummary.from_domain(newest),
            last_error=None if stored.last_error is None else RuleErrorAnswer.from_domain(stored.last_error),
            evaluated_at=ms_to_iso(self._clock()),
        )
        overdue = overdue_of_rule(
            stored, cursors, self._registry, self._reader, self._clock(), self._partitions, healths
        )
        if overdue is not None:  # the rule or a member promises freshness
            answer.freshness = RuleFreshnessAnswer.from_domain(overdue)
        limit = rule.policy.slot_limit
        if limit is not None and self._slots is not None:  # maxInFlight: what runs, and who waits for a slot
            answer.in_flight = InFlightExplanation.model_validate(self._slots.explain(rule.rule_id, limit))
        return answer.dump()

    def _last_triggers(self, rule: Rule) -> tuple[dict[str, GroupCursor], dict[str, Trigger]]:
        """Each group's cursor and newest trigger (a partitioned group's: its newest partition run, since its runs
        move its partitions' cursors)."""
        refs = [(rule.rule_id, g.group_id) for g in rule.groups]
        cursors = {g: c for (_, g), c in self._triggers.get_cursors(refs).items()}
        last: dict[str, Trigger] = {}
        for group_id, cursor in cursors.items():
            trigger = self._triggers.get(cursor.trigger_key) if cursor.trigger_key else None
            if trigger is not None:
                last[group_id] = trigger
        if any(g.partition_by is not None for g in rule.groups):
            for trigger in self._triggers.list_for_rule(rule.rule_id, limit=50).items:
                if trigger.partition is not None and not is_late_skip(trigger):
                    last.setdefault(trigger.group_id, trigger)
        return cursors, last

    def _late_skips(self, rule: Rule) -> Sequence[Trigger]:
        """The newest late versions the resolver skipped for an EACH_VERSION rule (one query; none for others)."""
        if rule.policy.mode is not Mode.EACH_VERSION:
            return []
        page = self._triggers.list_for_rule(rule.rule_id, TriggerStatus.SKIPPED, MAX_SKIPS_SHOWN)
        return [t for t in page.items if is_late_skip(t)]
