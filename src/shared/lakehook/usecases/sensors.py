"""``POST /sensors/evaluate``: does an asset condition hold now (RFC §4, Strategy A)?

The condition is a stored rule's groups or one ad-hoc group, evaluated by explain (:class:`ExplainRule`: the
resolver's gather and plan, nothing applied), so a sensor and the resolver never disagree on a member. A sensor asks
whether the members' conditions hold, not whether a rule has versions it has not run yet: the groups are evaluated
under :data:`SENSOR_RULE_ID`, which no rule's cursors or triggers are stored under, with the default policy (the
rule's mode, cooldown and quiet period govern its runs, not what a sensor sees). Nothing is claimed or written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import NotFoundError, ValidationError
from lakehook.domain.rules import Group, Policy, Rule
from lakehook.domain.sensors import AD_HOC_GROUP_ID, POLL_INTERVAL_SECONDS, SENSOR_RULE_ID, SensorRequest
from lakehook.domain.targets import UnusableTarget
from lakehook.domain.time import now_ms
from lakehook.ports.aliases import AliasStore
from lakehook.ports.rules import RuleStore, StoredRule
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_reads import read_rule
from lakehook.usecases.rules import describe_rule_error, resolve_member_aliases

# a sensor starts nothing: its rule has a target dispatch would refuse, and never reaches dispatch
_NO_TARGET = UnusableTarget.of({"type": "sensor"}, "a sensor starts nothing")
_RUN_HISTORY = ("lastTrigger", "skipped")  # explain's fields about a rule's runs: a sensor has none


class EvaluateSensor:
    """Evaluate a sensor's condition now, or long-poll it: every ``interval`` seconds until it holds or the request's
    ``waitSeconds`` are over (``clock`` and ``sleep`` are the monotonic clock and its sleep; tests pass their own)."""

    def __init__(
        self,
        rules: RuleStore,
        explain: ExplainRule,
        aliases: AliasStore | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        interval: float = POLL_INTERVAL_SECONDS,
    ) -> None:
        """``aliases``: where an ad-hoc group's ``{"alias": name}`` members are resolved (without one, refused as a
        rule's would be)."""
        self._rules = rules
        self._explain = explain
        self._aliases = aliases
        self._clock = clock
        self._sleep = sleep
        self._interval = interval

    def evaluate(self, request: SensorRequest) -> dict[str, Any]:
        """The answer: ``ready``, the verdict and pins of the first READY group (else of the first group), the
        explanation of every group, and how many evaluations the wait took. A missing rule or group is a 404; a
        partitioned or scheduled group a 400."""
        stored = self._subject(request)
        started = self._clock()
        deadline = started + request.wait_seconds
        evaluations = 0
        while True:
            explained = self._explain.explain_stored(stored, stored.rule)
            evaluations += 1
            remaining = deadline - self._clock()
            if explained["ready"] or remaining <= 0:
                break
            self._sleep(min(self._interval, remaining))  # the last evaluation is at the end of the wait
        return _answer(request, explained, evaluations, self._clock() - started)

    def _subject(self, request: SensorRequest) -> StoredRule:
        """The rule the sensor evaluates, under the sensor's own id, with the default policy."""
        if request.rule_id is not None:
            groups = self._rule_groups(request.rule_id, request.group_id)
        else:
            groups = [self._ad_hoc_group(request.group or {})]
        for group in groups:
            _refuse_unsupported(group, "ruleId" if request.rule_id is not None else "group")
        rule = Rule.model_construct(
            rule_id=SENSOR_RULE_ID,
            description=None,
            groups=groups,
            policy=Policy(),
            target=_NO_TARGET,
            enabled=True,
            freshness=None,
            outlets=[],
        )
        now = now_ms()
        return StoredRule(rule=rule, revision=0, created_at=now, updated_at=now)

    def _rule_groups(self, rule_id: str, group_id: str | None) -> list[Group]:
        rule = read_rule(self._rules, rule_id).rule
        if group_id is None:
            return list(rule.groups)
        group = rule.group(group_id)
        if group is None:
            raise NotFoundError(f"rule {rule_id!r} has no group {group_id!r}")
        return [group]

    def _ad_hoc_group(self, body: dict[str, Any]) -> Group:
        """The ad-hoc group, checked as a rule's group is; errors name ``group.<field>``."""
        wrapped: Any = {"groups": [{"groupId": AD_HOC_GROUP_ID, **body}]}
        if self._aliases is not None:
            wrapped = resolve_member_aliases(wrapped, self._aliases)
        try:
            return _AdHocGroup.model_validate({"group": wrapped["groups"][0]}).group
        except PydanticValidationError as exc:
            message, field = describe_rule_error(exc)
            raise ValidationError(message, field=field) from exc


class _AdHocGroup(BaseModel):
    """The request's group as a field of its own, so a validation error's location starts with ``group``."""

    group: Group


def _refuse_unsupported(group: Group, field: str) -> None:
    """A partitioned group's readiness is per partition and a scheduled group's per tick: both need the run history
    a sensor does not have."""
    if group.partition_by is not None:
        raise ValidationError(
            f"group {group.group_id} has partitionBy: a sensor evaluates unpartitioned groups only", field=field
        )
    if group.schedule is not None:
        raise ValidationError(
            f"group {group.group_id} has a schedule: a sensor evaluates unscheduled groups only", field=field
        )


def _answer(request: SensorRequest, explained: dict[str, Any], evaluations: int, waited: float) -> dict[str, Any]:
    groups = [{k: v for k, v in g.items() if k not in _RUN_HISTORY} for g in explained["groups"]]
    chosen = next((g for g in groups if g["status"] == "READY"), groups[0])
    return {
        "ready": bool(explained["ready"]),
        "verdict": chosen["status"],
        "groupId": chosen["groupId"],
        "reason": chosen.get("reason"),
        "pins": chosen.get("pins", []),
        "ruleId": request.rule_id,
        "explanation": {"groups": groups, "evaluatedAt": explained["evaluatedAt"]},
        "evaluations": evaluations,
        "waitedSeconds": round(max(waited, 0.0), 3),
    }
