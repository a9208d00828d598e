"""The rule routes' use cases on one set of fakes, wired as ``lakehook.container`` wires them."""

from __future__ import annotations

from collections.abc import Callable

from lakehook.domain.time import now_ms
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import RuleStore, StateReader, TriggerStore
from lakehook.ports.store import AssetRegistry
from lakehook.usecases.resolve import ResolveAssetChange
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_runs import EvaluateRule


def evaluate_rule(
    rules: RuleStore,
    triggers: TriggerStore,
    reader: StateReader,
    clock: Callable[[], int] = now_ms,
    *,
    resolver: ResolveAssetChange,
    registry: AssetRegistry | None = None,
    partitions: PartitionStore | None = None,
) -> EvaluateRule:
    """``POST /rules/{ruleId}/evaluate``'s use case, answering with an :class:`ExplainRule` on the same fakes."""
    explain = ExplainRule(rules, triggers, reader, registry, clock, resolver=resolver, partitions=partitions)
    return EvaluateRule(rules, triggers, reader, clock, resolver=resolver, explain=explain, partitions=partitions)
