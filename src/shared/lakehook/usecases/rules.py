"""Manage rules (put/get/list/delete) and explain them ("why hasn't it run?"); their triggers are read by
``usecases.triggers``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.aliases import ALIAS_NAME
from lakehook.domain.errors import AuthorizationError, ConflictError, NotFoundError, ValidationError
from lakehook.domain.evaluation import select_member
from lakehook.domain.late_versions import is_late_skip
from lakehook.domain.partition_rules import group_partition_key
from lakehook.domain.requests import RecordedRequest, RequestAnswer, RequestKey
from lakehook.domain.rules import Group, Member, Mode, Rule, StartFrom, validate_id
from lakehook.domain.secret_names import AS_GIVEN, ProducerSecrets, SecretNameError, SecretNames
from lakehook.domain.state import AssetState
from lakehook.domain.targets import UnusableTarget, name_target_error, secret_refs, write_context
from lakehook.domain.time import ms_to_iso, now_ms
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, trigger_key
from lakehook.domain.url_policy import UrlPolicy
from lakehook.observability import logger
from lakehook.ports.aliases import AliasStore
from lakehook.ports.coverage import CoverageStore
from lakehook.ports.partitions import PartitionStore
from lakehook.ports.rules import RuleError, RuleStore, StateReader, StoredRule, TriggerStore, UnreadableRuleError
from lakehook.ports.store import AssetRegistry, Page, SecretStore
from lakehook.usecases.freshness import overdue_of_rule
from lakehook.usecases.resolve import ResolveAssetChange, ResolveReport
from lakehook.usecases.resolve_partitions import partition_pins

MAX_MANUAL_RUNS = 100  # manual runs of one set of versions (each finished one frees the next number)
MAX_SKIPS_SHOWN = 20  # explain lists the newest late versions skipped; GET /rules/{id}/triggers lists them all

_WATERMARK_TAGS = ("instant", "window")  # discriminator tags pydantic puts in error locations
DEPLOYED_POLICY = UrlPolicy()


def describe_rule_error(exc: PydanticValidationError) -> tuple[str, str]:
    """One line naming each bad field in the API's camelCase, and the first field."""
    parts: list[str] = []
    fields: list[str] = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        loc = [p for i, p in enumerate(loc) if not (p in _WATERMARK_TAGS and i and loc[i - 1] == "watermarkAtLeast")]
        if loc[:1] == ["target"]:
            where, message = name_target_error(error, loc)
        else:
            where, message = ".".join(loc) or "body", error["msg"].removeprefix("Value error, ")
        fields.append(where)
        parts.append(f"{where}: {message}")
    return "; ".join(parts), fields[0] if fields else "body"


def parse_rule(rule_id: str, body: Any, policy: UrlPolicy = DEPLOYED_POLICY) -> Rule:
    """The rule ``PUT /rules/{ruleId}`` describes; a ValidationError (400) names the bad field.

    Target URLs must satisfy ``policy`` (the stack's outbound URL policy; a deployed stack's by default).
    """
    try:
        validate_id(rule_id, "ruleId")
    except ValueError as exc:
        raise ValidationError(str(exc), field="ruleId") from exc
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object describing the rule", field="body")
    if "ruleId" in body and body["ruleId"] != rule_id:
        raise ValidationError(
            f"ruleId in the body ({body['ruleId']!r}) differs from the path ({rule_id!r})", field="ruleId"
        )
    try:
        return Rule.model_validate({**body, "ruleId": rule_id}, context=write_context(policy))
    except PydanticValidationError as exc:
        message, field = describe_rule_error(exc)
        raise ValidationError(message, field=field) from exc


def resolve_member_aliases(body: Any, aliases: AliasStore) -> Any:
    """The rule body with each member that names an alias (``{"alias": name}``, no ``assetKey``) replaced by one
    member per asset of the alias, each keeping the member's condition and the alias's name (DESIGN.md: "each
    member an asset key or alias"). Resolved here, when the rule is written: the stored rule names the assets
    it waits for, so the resolver wakes it and evaluates it on their state. A member naming both must name one
    of the alias's assets (the form ``GET /rules/{ruleId}`` answers). An alias that does not exist, or an asset
    that is not one of it, is a ValidationError naming the member's ``alias``; bodies of any other shape pass
    unchanged, for the rule's own validation to name what is wrong."""
    if not isinstance(body, dict) or not isinstance(body.get("groups"), list):
        return body
    read: dict[str, Any] = {}
    groups: list[Any] = []
    for g, group in enumerate(body["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("members"), list):
            groups.append(group)
            continue
        members: list[Any] = []
        for m, member in enumerate(group["members"]):
            if not isinstance(member, dict) or "alias" not in member:
                members.append(member)
                continue
            where, name = f"groups.{g}.members.{m}.alias", member["alias"]
            if not isinstance(name, str) or not ALIAS_NAME.fullmatch(name):
                raise ValidationError(f"{where}: an alias name is 1 to 128 letters, digits, '_', '.' or '-'", where)
            if name not in read:
                read[name] = aliases.get_alias(name)
            alias = read[name]
            if alias is None:
                raise ValidationError(
                    f"{where}: alias {name!r} does not exist; create it first (PUT /aliases/{name})", field=where
                )
            if "assetKey" in member:
                if member["assetKey"] not in alias.asset_keys:
                    raise ValidationError(
                        f"{where}: {member['assetKey']!r} is not an asset of alias {name!r} "
                        f"({', '.join(alias.asset_keys)}); name the alias alone to wait for its assets",
                        field=where,
                    )
                members.append(member)
            else:
                members.extend({**member, "assetKey": key} for key in alias.asset_keys)
        groups.append({**group, "members": members})
    return {**body, "groups": groups}


def error_to_api(error: RuleError | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"message": error.message, "at": ms_to_iso(error.at), "groupId": error.group_id}


def stored_to_api(stored: StoredRule) -> dict[str, Any]:
    data = {
        **stored.rule.to_api(),
        "revision": stored.revision,
        "createdAt": ms_to_iso(stored.created_at),
        "updatedAt": ms_to_iso(stored.updated_at),
    }
    if stored.last_error is not None:
        data["lastError"] = error_to_api(stored.last_error)
    return data


def refuse_producer_secrets(rule: Rule, producer_secrets: ProducerSecrets, names: SecretNames = AS_GIVEN) -> None:
    """No secret a rule's target names may be a producer's signing secret, however spelled: the target's
    host would receive it. A ValidationError naming the field, e.g. ``target.tokenRef``."""
    if isinstance(rule.target, UnusableTarget):
        return
    for field, ref in secret_refs(rule.target).items():
        where = f"target.{field}"
        try:
            reached = producer_secrets.holds(ref) or producer_secrets.holds(names.resolve(ref))
        except SecretNameError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        if reached:
            raise ValidationError(f"{where}: {producer_secrets.refusal(ref)}", field=where)


def check_target_secrets(rule: Rule, secrets: SecretStore, names: SecretNames = AS_GIVEN) -> None:
    """Every secret the rule's target names must exist under the name the dispatcher will look up (``names``:
    the stack's one naming rule, so it lies under the prefix the dispatcher may read); else a ValidationError
    naming the field, e.g. ``target.secretRef``, the name looked up and the rule."""
    if isinstance(rule.target, UnusableTarget):
        return
    for field, ref in secret_refs(rule.target).items():
        where = f"target.{field}"
        try:
            name = names.resolve(ref)
        except SecretNameError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        try:
            found = secrets.secret_exists(name)
        except AuthorizationError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        if not found:
            raise ValidationError(f"{where}: {names.missing(ref)} (see docs/rules.md#secrets)", field=where)


class ManageRules:
    """The rule routes' use cases. Deciding whether a rule is ready is the resolver's (``resolver``): explain,
    evaluate and a PUT all ask it, so what explain says is what the resolver does."""

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        reader: StateReader,
        registry: AssetRegistry | None = None,
        clock: Callable[[], int] = now_ms,
        coverage: CoverageStore | None = None,
        *,
        resolver: ResolveAssetChange,
        secrets: SecretStore | None = None,
        url_policy: UrlPolicy = DEPLOYED_POLICY,
        secret_names: SecretNames = AS_GIVEN,
        producer_secrets: ProducerSecrets | None = None,
        aliases: AliasStore | None = None,
        partitions: PartitionStore | None = None,
    ) -> None:
        """``secrets``: where targets' secrets must exist (unchecked without one); ``url_policy``: the stack's
        outbound URL policy; ``secret_names``: how the dispatcher turns a target's secret reference into a name;
        ``producer_secrets``: the producer signing secrets, which no target may name; ``aliases``: where the
        aliases members may name are (without one, a member naming an alias is refused)."""
        self._rules = rules
        self._triggers = triggers
        self._reader = reader
        self._registry = registry
        self._clock = clock
        self._coverage = coverage
        self._resolver = resolver
        self._secrets = secrets
        self._policy = url_policy
        self._secret_names = secret_names
        self._producer_secrets = producer_secrets
        self._aliases = aliases
        self._partitions = partitions

    def check(self, rule_id: str, body: Any) -> Rule:
        """Everything ``put`` checks, writing nothing (``?dryRun=true``): the rule, its target's URL policy
        and the existence of the secrets it names. Answers the rule as it would be stored."""
        if self._aliases is not None:
            body = resolve_member_aliases(body, self._aliases)
        rule = parse_rule(rule_id, body, self._policy)
        if self._producer_secrets is not None:
            refuse_producer_secrets(rule, self._producer_secrets, self._secret_names)
        if self._secrets is not None:
            check_target_secrets(rule, self._secrets, self._secret_names)
        return rule

    def put(self, rule_id: str, body: Any) -> tuple[StoredRule, bool]:
        """Create or replace; True when created. An enabled rule is evaluated at once, so one whose inputs
        already satisfy it fires now (``startFrom: LATEST``); with ``NEXT_CHANGE`` the versions present when it
        starts (created, re-enabled, or a new group) are recorded first, before the rule is visible, and only
        newer ones fire."""
        rule = self.check(rule_id, body)
        old = self._stored_before(rule_id) if rule.enabled else None
        if rule.enabled and rule.policy.start_from is StartFrom.NEXT_CHANGE:
            was_running = old is not None and old.rule.enabled
            before = {g.group_id for g in old.rule.groups} if old is not None and was_running else set()
            starting = [g.group_id for g in rule.groups if g.group_id not in before]
            if starting:
                self._resolver.start(rule, starting)
        stored = self._rules.put_rule(rule, self._clock())
        if rule.enabled:
            self._evaluate_quietly(rule)
        return stored, stored.revision == 1

    def _stored_before(self, rule_id: str) -> StoredRule | None:
        """The rule a PUT replaces; one stored in a form that does not load counts as none (the PUT repairs it)."""
        try:
            return self._rules.get_rule(rule_id)
        except UnreadableRuleError:
            return None

    def _evaluate_quietly(self, rule: Rule) -> None:
        """The PUT's own evaluation. The rule is stored either way: a failure here is the resolver's to retry."""
        try:
            self._resolver.evaluate(rule)
        except Exception:
            logger.exception("evaluation after put failed", extra={"rule_id": rule.rule_id, "status": "FAILED"})

    def get(self, rule_id: str) -> StoredRule:
        stored = self._rules.get_rule(rule_id)
        if stored is None:
            raise NotFoundError(f"rule {rule_id!r} does not exist")
        return stored

    def list(self, limit: int, next_token: str | None = None) -> Page[StoredRule]:
        return self._rules.list_rules(limit, next_token)

    def delete(self, rule_id: str) -> None:
        """Delete the rule (its triggers and cursors stay, so re-creating it never re-fires old versions)."""
        if not self._rules.delete_rule(rule_id):
            raise NotFoundError(f"rule {rule_id!r} does not exist")

    def explain(self, rule_id: str) -> dict[str, Any]:
        """For each group and member: READY or why not, with current and required values and the last trigger.

        The verdict is the resolver's own (:meth:`ResolveAssetChange.evaluate` without claiming): the same
        reads, the same EACH_VERSION history and the same decision."""
        stored = self.get(rule_id)
        return self._explain(stored, self._decide(stored.rule, claim=False))

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
        stored = self.get(rule_id)
        rule = stored.rule
        if group_id is not None and (not isinstance(group_id, str) or rule.group(group_id) is None):
            raise ValidationError(f"groupId {group_id!r} is not a group of rule {rule_id!r}", field="groupId")
        if force:
            # A manual run moves no cursor, so the explanation is the same before and after its claim: it is
            # made first, to be recorded with the claim under a request key.
            answer = self._explain(stored, self._decide(rule, claim=False))

            def answer_for(key: str) -> dict[str, Any]:
                return {**answer, "triggerKey": key, "claimed": [key], "manual": True}

            claimed = self._manual_run(rule, group_id, answer_for, request, options.get("partition"))
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
        keys = [t.trigger_key for t in report.claimed if t.status is TriggerStatus.TRIGGERING]
        explained = self._explain(self.get(rule_id), self._decide(rule, claim=False))
        return RequestAnswer(
            200, {**explained, "triggerKey": keys[0] if keys else None, "claimed": keys, "manual": False}
        )

    def _decide(self, rule: Rule, *, claim: bool) -> ResolveReport:
        registered: dict[str, bool] | None = None
        if self._registry is not None:
            inputs = self._reader.read(rule.asset_keys, ())  # an unparsable state is the group's ERROR, shown
            found = inputs.states.keys() | inputs.unreadable_states.keys()
            registered = {k: k in found or self._registry.get_asset(k) is not None for k in rule.asset_keys}
        return self._resolver.evaluate(rule, claim=claim, registered=registered)

    def _explain(self, stored: StoredRule, report: ResolveReport) -> dict[str, Any]:
        rule = stored.rule
        refs = [(rule.rule_id, g.group_id) for g in rule.groups]
        cursors = {g: c for (_, g), c in self._triggers.get_cursors(refs).items()}
        last: dict[str, Trigger] = {}
        for group_id, cursor in cursors.items():
            trigger = self._triggers.get(cursor.trigger_key) if cursor.trigger_key else None
            if trigger is not None:
                last[group_id] = trigger
        if any(g.partition_by is not None for g in rule.groups):
            # a partitioned group's runs move the cursors of its partitions: its newest run is the rule's newest of it
            for trigger in self._triggers.list_for_rule(rule.rule_id, limit=50).items:
                if trigger.partition is not None:
                    last.setdefault(trigger.group_id, trigger)
        skipped = self._late_skips(rule)
        groups = []
        ready = False
        for group in rule.groups:
            verdict = report.verdicts[(rule.rule_id, group.group_id)]
            ready = ready or verdict.ready
            data = verdict.to_api()
            data["lastTrigger"] = _summary(last.get(group.group_id))
            if rule.policy.mode is Mode.EACH_VERSION:
                data["skipped"] = [_skip(t) for t in skipped if t.group_id == group.group_id]
            groups.append(data)
        newest = max(last.values(), key=lambda t: (t.created_at, t.sequence), default=None)
        answer = {
            "ruleId": rule.rule_id,
            "enabled": rule.enabled,
            "mode": rule.policy.mode.value,
            "startFrom": rule.policy.start_from.value,
            "ready": ready,
            "groups": groups,
            "lastTrigger": _summary(newest),
            "lastError": error_to_api(stored.last_error),
            "evaluatedAt": ms_to_iso(self._clock()),
        }
        overdue = overdue_of_rule(stored, cursors, self._registry, self._reader, self._clock(), self._partitions)
        if overdue is not None:  # the rule or a member promises freshness
            answer["freshness"] = overdue.to_api()
        return answer

    def _late_skips(self, rule: Rule) -> Sequence[Trigger]:
        """The newest late versions the resolver skipped for an EACH_VERSION rule (one query; none for others)."""
        if rule.policy.mode is not Mode.EACH_VERSION:
            return []
        page = self._triggers.list_for_rule(rule.rule_id, TriggerStatus.SKIPPED, MAX_SKIPS_SHOWN)
        return [t for t in page.items if is_late_skip(t)]

    def _manual_run(
        self,
        rule: Rule,
        group_id: str | None,
        answer_for: Callable[[str], dict[str, Any]],
        request: RequestKey | None,
        partition: Any = None,
    ) -> Trigger | RecordedRequest:
        """A manual run of the group's current versions: each member's newest version satisfying its condition,
        else its newest version at all; for a partitioned group, of one ``partition``: its partitioned members'
        newest data commits touching it (docs/partitions.md). The cursor does not move: the rule's own triggers are
        unaffected. Under a request key, the claim is recorded with ``answer_for(its key)``; if another request
        took the key first, its answer instead."""
        if group_id is None and len(rule.groups) > 1:
            names = ", ".join(g.group_id for g in rule.groups)
            raise ValidationError(f"the rule has several groups ({names}); say which with groupId", field="groupId")
        group = rule.group(group_id) if group_id is not None else rule.groups[0]
        assert group is not None
        key_of = _manual_partition(group, partition)
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
                if request is None:
                    claimed = self._triggers.put_replay(trigger)
                else:
                    recorded = RecordedRequest.of(request, 200, answer_for(key), key, now)
                    outcome = self._triggers.put_replay_once(trigger, recorded)
                    if outcome.answered is not None:
                        return outcome.answered
                    claimed = outcome.claimed
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
    chosen = select_member(member, state)
    if chosen.pin is None and state is not None:
        anything = {"snapshotRequired": state.latest_snapshot_id is not None}
        chosen = select_member(Member.model_validate({"assetKey": member.asset_key, "condition": anything}), state)
    if chosen.pin is None:
        raise ConflictError(f"{member.asset_key} has no version to pin yet; a manual run needs one")
    return chosen.pin


def _skip(trigger: Trigger) -> dict[str, Any]:
    """A late version explain lists as skipped: which, why, and the SKIPPED trigger that records it."""
    pin = trigger.inputs[0]
    return {
        "assetKey": pin.asset_key,
        "snapshotId": pin.snapshot_id,
        "reason": trigger.reason,
        "triggerKey": trigger.trigger_key,
        "skippedAt": ms_to_iso(trigger.created_at),
    }


def _summary(trigger: Trigger | None) -> dict[str, Any] | None:
    if trigger is None:
        return None
    return {
        "triggerKey": trigger.trigger_key,
        "groupId": trigger.group_id,
        "status": trigger.status.value,
        "createdAt": ms_to_iso(trigger.created_at),
        "inputs": [p.to_api() for p in trigger.inputs],
        **({"window": trigger.window.to_api()} if trigger.window else {}),
        **({"partition": trigger.partition} if trigger.partition is not None else {}),
    }
