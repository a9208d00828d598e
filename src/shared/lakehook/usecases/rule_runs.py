"""Evaluate a rule now: ``POST /rules/{ruleId}/evaluate``, the resolver's own evaluation claiming what is ready,
or with ``force`` a manual run of the current versions (of one partition, for a partitioned group)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lakehook.domain.errors import ConflictError, ValidationError
from lakehook.domain.evaluation import select_member
from lakehook.domain.partition_rules import group_partition_key
from lakehook.domain.requests import RecordedRequest, RequestAnswer, RequestKey
from lakehook.domain.rules import Group, Member, Rule
from lakehook.domain.state import AssetState
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.observability import logger
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import RuleStore, StateReader, TriggerStore
from lakehook.usecases.resolve import ResolveAssetChange
from lakehook.usecases.resolve_partitions import partition_pins
from lakehook.usecases.rule_explain import ExplainRule
from lakehook.usecases.rule_reads import read_rule

MAX_MANUAL_RUNS = 100  # manual runs of one set of versions (each finished one frees the next number)


class EvaluateRule:
    """``POST /rules/{ruleId}/evaluate``. What is ready is the resolver's (``resolver``) to decide and claim; the
    answer is the rule's explanation (``explain``) after it."""

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        reader: StateReader,
        clock: Callable[[], int] = now_ms,
        *,
        resolver: ResolveAssetChange,
        explain: ExplainRule,
        partitions: PartitionStore | None = None,
    ) -> None:
        """``partitions``: the partition log a partitioned group's manual run pins its versions from."""
        self._rules = rules
        self._triggers = triggers
        self._reader = reader
        self._clock = clock
        self._resolver = resolver
        self._explainer = explain
        self._partitions = partitions

    def evaluate(self, rule_id: str, body: Any = None) -> dict[str, Any]:
        """``POST /rules/{id}/evaluate``: evaluate now and claim what is ready (the same versions give the same key,
        so repeating it claims nothing new). ``{"force": true}`` starts a manual run of the current versions
        instead, under a key of its own (``<rule>.<group>.manual-<n>.<hash>``); refused (409) while one for the
        same versions is in flight. Answers the explanation after it (a manual run moves no cursor, so its
        explanation is made just before its claim), and the trigger keys claimed."""
        return self.answer_evaluate(rule_id, body).body

    def answer_evaluate(self, rule_id: str, body: Any = None, idempotency_key: str | None = None) -> RequestAnswer:
        """:meth:`evaluate` as the route answers it. Under an ``idempotency_key`` a forced run is recorded with its
        answer in the claim's transaction: the same request repeated answers that again (``replayed``) and starts
        nothing; another request under the key raises IdempotencyKeyReusedError. An evaluation that is not forced
        is idempotent by its trigger keys already and records nothing."""
        options = _evaluate_options(body)
        force = options.get("force", False)
        request = RequestKey.of(idempotency_key, "evaluate", {"ruleId": rule_id, "body": options})
        if request is not None:
            recorded = self._triggers.get_request(request.key, self._clock())
            if recorded is not None:
                return RequestAnswer.replay_of(recorded.answer_to(request))
        group_id = options.get("groupId")
        stored = read_rule(self._rules, rule_id)
        rule = stored.rule
        if group_id is not None and (not isinstance(group_id, str) or rule.group(group_id) is None):
            raise ValidationError(f"groupId {group_id!r} is not a group of rule {rule_id!r}", field="groupId")
        if force:
            group, partition = _manual_target(rule, group_id, options.get("partition"))  # a 400 before any read
            # A manual run moves no cursor, so the explanation is the same before and after its claim: it is
            # made first, to be recorded with the claim under a request key.
            answer = self._explainer.explain_stored(stored, rule)

            def answer_for(key: str) -> dict[str, Any]:
                return {**answer, "triggerKey": key, "claimed": [key], "manual": True}

            claimed = self._manual_run(rule, group, partition, answer_for, request)
            if isinstance(claimed, RecordedRequest):  # a racing twin of this request claimed first
                assert request is not None
                return RequestAnswer.replay_of(claimed.answer_to(request))
            return RequestAnswer(200, answer_for(claimed.trigger_key))
        if "partition" in options:
            raise ValidationError(
                'partition names the partition a manual run runs: send it with "force": true', field="partition"
            )
        if not rule.enabled:
            raise ConflictError(f"rule {rule_id!r} is disabled; enable it, or force a manual run")
        report = self._resolver.evaluate(rule, group_ids=None if group_id is None else [group_id])
        keys = _claimed_keys(report.claimed, rule_id, group_id)
        explained = self._explainer.explain_stored(read_rule(self._rules, rule_id), rule)
        return RequestAnswer(
            200, {**explained, "triggerKey": keys[0] if keys else None, "claimed": keys, "manual": False}
        )

    def _manual_run(
        self,
        rule: Rule,
        group: Group,
        key_of: str | None,
        answer_for: Callable[[str], dict[str, Any]],
        request: RequestKey | None,
    ) -> Trigger | RecordedRequest:
        """A manual run of the group's current versions: each member's newest version satisfying its condition,
        else its newest version at all; for a partitioned group, of one ``partition``: its partitioned members'
        newest data commits touching it (docs/partitions.md). The cursor does not move: the rule's own triggers are
        unaffected. Under a request key, the claim is recorded with ``answer_for(its key)``; if another request
        took the key first, its answer instead."""
        pins = self._manual_pins(group, key_of)
        now = self._clock()
        for n in range(1, MAX_MANUAL_RUNS + 1):
            key = trigger_key(rule.rule_id, group.group_id, pins, None, 0, marker=f"manual-{n}", partition=key_of)
            existing = self._triggers.get(key)
            # Under a request key the claim is tried even when this number is taken: a racing twin of this very
            # request may have taken it, and the refused transaction hands back that twin's answer.
            if existing is None or request is not None:
                trigger = Trigger(
                    trigger_key=key,
                    rule_id=rule.rule_id,
                    group_id=group.group_id,
                    status=TriggerStatus.TRIGGERING,
                    inputs=pins,
                    partition=key_of,
                    created_at=now,
                    updated_at=now,
                    reason="manual run (POST /rules/{ruleId}/evaluate with force)"
                    if key_of is None
                    else f"manual run of {key_of} (POST /rules/{{ruleId}}/evaluate with force and partition)",
                )
                recorded = None if request is None else RecordedRequest.of(request, 200, answer_for(key), key, now)
                claimed = self._triggers.put_replay_answered(trigger, recorded)
                if isinstance(claimed, RecordedRequest):
                    return claimed
                if claimed:
                    logger.info(
                        "manual run claimed",
                        extra={
                            "rule_id": rule.rule_id,
                            "group_id": group.group_id,
                            "trigger_key": key,
                            **({"partition": key_of} if key_of is not None else {}),
                        },
                    )
                    return trigger
                existing = self._triggers.get(key)  # a racing request took this number
            if existing is not None and existing.status is TriggerStatus.TRIGGERING:
                raise ConflictError(f"a manual run of these versions is in flight: {key}")
        raise ConflictError(f"these versions have had {MAX_MANUAL_RUNS} manual runs already")

    def _manual_pins(self, group: Group, partition: str | None) -> tuple[PinnedInput, ...]:
        """The versions a manual run of ``group`` (of one ``partition`` of it) pins, in the order of its members."""
        states = self._reader.get_states(group.asset_keys)
        if group.require is not None:  # a tree's member with no version pins nothing, as in a claim
            pinned = tuple(p for m in group.members if (p := _version_of(m, states.get(m.asset_key))) is not None)
            if not pinned:
                raise ConflictError(
                    f"no member of group {group.group_id} has a version to pin yet; a manual run needs one"
                )
            return pinned
        touching = partition_pins(self._partitions, group, partition, states) if partition is not None else {}
        return tuple(
            touching[m.asset_key]
            if partition is not None and m.partition is not None
            else _manual_pin(m, states.get(m.asset_key))
            for m in group.members
        )


def _evaluate_options(body: Any) -> dict[str, Any]:
    """The options of ``POST /rules/{id}/evaluate``: ``force``, ``groupId`` and ``partition``, each optional."""
    options = body if body is not None else {}
    if not isinstance(options, dict):
        raise ValidationError('the body must be a JSON object such as {"force": true}', field="body")
    unknown = sorted(set(options) - {"force", "groupId", "partition"})
    if unknown:
        raise ValidationError(f"unknown field {unknown[0]!r}; expected force, groupId or partition", field=unknown[0])
    if not isinstance(options.get("force", False), bool):
        raise ValidationError("force must be true or false", field="force")
    return options


def _manual_target(rule: Rule, group_id: str | None, partition: Any) -> tuple[Group, str | None]:
    """The group a manual run runs (``groupId``, needed when the rule has several) and its one partition's canonical
    key (:func:`_manual_partition`); a ValidationError naming the field otherwise."""
    if group_id is None and len(rule.groups) > 1:
        names = ", ".join(g.group_id for g in rule.groups)
        raise ValidationError(f"the rule has several groups ({names}); say which with groupId", field="groupId")
    group = rule.group(group_id) if group_id is not None else rule.groups[0]
    assert group is not None
    return group, _manual_partition(group, partition)


def _manual_partition(group: Group, partition: Any) -> str | None:
    """The canonical key of the one partition a manual run of ``group`` runs (None for a group without
    partitionBy); a ValidationError naming ``partition`` when it is missing, malformed or of other fields."""
    if group.partition_by is None:
        if partition is not None:
            raise ValidationError(f"group {group.group_id} has no partitionBy: it has no partitions", field="partition")
        return None
    shape = "/".join(f"{f}=<value>" for f in group.partition_by)
    if partition is None:
        raise ValidationError(
            f"group {group.group_id} has partitionBy: a manual run runs one partition; say which with "
            f'"partition": "{shape}"',
            field="partition",
        )
    try:
        return group_partition_key(partition, group.partition_by)
    except ValueError as exc:
        raise ValidationError(str(exc), field="partition") from exc


def _manual_pin(member: Member, state: AssetState | None) -> PinnedInput:
    """What a manual run pins of a member: its newest version satisfying its condition, else its newest at all."""
    pin = _version_of(member, state)
    if pin is None:
        raise ConflictError(f"{member.asset_key} has no version to pin yet; a manual run needs one")
    return pin


def _version_of(member: Member, state: AssetState | None) -> PinnedInput | None:
    """A member's newest version satisfying its condition, else its newest at all, else None."""
    chosen = select_member(member, state)
    if chosen.pin is None and state is not None:
        anything = {"snapshotRequired": state.latest_snapshot_id is not None}
        chosen = select_member(Member.model_validate({"assetKey": member.asset_key, "condition": anything}), state)
    return chosen.pin


def _claimed_keys(claimed: Sequence[Trigger], rule_id: str, group_id: str | None) -> list[str]:
    """The keys of the runs the evaluated rule (its group ``group_id``, if one was named) claimed: a claim that logs
    a snapshot known only from its pin wakes the asset's other EACH_VERSION groups in the same call, and their runs
    are not this evaluation's answer."""
    return [
        t.trigger_key
        for t in claimed
        if t.status is TriggerStatus.TRIGGERING and t.rule_id == rule_id and group_id in (None, t.group_id)
    ]
