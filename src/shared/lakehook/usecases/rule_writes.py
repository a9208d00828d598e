"""Write rules: ``PUT /rules/{ruleId}`` (``PutRule``: create or replace, or with ``?dryRun=true`` check only)
and ``DELETE /rules/{ruleId}`` (``DeleteRule``). What a rule is and how its body is checked:
``usecases.rules``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakehook.domain.errors import NotFoundError
from lakehook.domain.rules import BackfillPolicy, Rule, StartFrom
from lakehook.domain.secret_names import AS_GIVEN, ProducerSecrets, SecretNames
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import Trigger, TriggerStatus
from lakehook.domain.url_policy import UrlPolicy
from lakehook.observability import logger
from lakehook.ports.aliases import AliasStore
from lakehook.ports.rules import RuleStore, StoredRule, TriggerStore, UnreadableRuleError
from lakehook.ports.store import SecretStore
from lakehook.usecases.resolve import ResolveAssetChange
from lakehook.usecases.rules import (
    DEPLOYED_POLICY,
    check_target_secrets,
    parse_rule,
    refuse_producer_secrets,
    resolve_member_aliases,
)


class PutRule:
    """``PUT /rules/{ruleId}``: check the rule, then store it. An enabled rule is evaluated at once by the resolver
    (``resolver``), which also records where a ``NEXT_CHANGE`` rule starts."""

    def __init__(
        self,
        rules: RuleStore,
        clock: Callable[[], int] = now_ms,
        *,
        resolver: ResolveAssetChange,
        secrets: SecretStore | None = None,
        url_policy: UrlPolicy = DEPLOYED_POLICY,
        secret_names: SecretNames = AS_GIVEN,
        producer_secrets: ProducerSecrets | None = None,
        aliases: AliasStore | None = None,
    ) -> None:
        """``secrets``: where targets' secrets must exist (unchecked without one); ``url_policy``: the stack's
        outbound URL policy; ``secret_names``: how the dispatcher turns a target's secret reference into a name;
        ``producer_secrets``: the producer signing secrets, which no target may name; ``aliases``: where the
        aliases members may name are (without one, a member naming an alias is refused)."""
        self._rules = rules
        self._clock = clock
        self._resolver = resolver
        self._secrets = secrets
        self._policy = url_policy
        self._secret_names = secret_names
        self._producer_secrets = producer_secrets
        self._aliases = aliases

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

    def preview(self, rule_id: str, body: Any) -> tuple[Rule, list[Trigger]]:
        """``?dryRun=true``: everything ``put`` checks, and the runs its own evaluation would start now, from the
        resolver's plan (gather and plan, as explain does; nothing claimed, nothing written). A partitioned group
        with ``startFrom: LATEST`` lists a run per ready partition its members' newest commits touched, facts other
        rules wrote included. A disabled rule starts none; a ``NEXT_CHANGE`` group that starts with this write
        records where it starts instead of running. A SKIPPED claim (``backfill: SKIP``) starts no run: not listed."""
        rule = self.check(rule_id, body)
        if not rule.enabled:
            return rule, []
        starting = set(self._starting_groups(rule, backfills=False))
        report = self._resolver.evaluate(rule, claim=False)
        runs = [t for t in report.planned if t.status is TriggerStatus.TRIGGERING and t.group_id not in starting]
        return rule, runs

    def _starting_groups(self, rule: Rule, *, backfills: bool = True) -> list[str]:
        """The groups of an enabled rule that start with this write (the rule is new, was disabled, or the group is
        new) and record a starting point first: a ``NEXT_CHANGE`` rule's (the versions present now, instead of a
        run) and, unless ``backfills`` is False, a partitioned ``backfill: SKIP`` rule's (the backfills completed
        before it; its partitions then run as they would)."""
        next_change = rule.policy.start_from is StartFrom.NEXT_CHANGE
        if not next_change and not (backfills and _skips_backfills_per_partition(rule)):
            return []
        old = self._stored_before(rule.rule_id)
        was_running = old is not None and old.rule.enabled
        before = {g.group_id for g in old.rule.groups} if old is not None and was_running else set()
        return [g.group_id for g in rule.groups if g.group_id not in before]

    def put(self, rule_id: str, body: Any) -> tuple[StoredRule, bool]:
        """Create or replace; True when created. An enabled rule is evaluated at once, so one whose inputs
        already satisfy it fires now (``startFrom: LATEST``); with ``NEXT_CHANGE`` the versions present when it
        starts (created, re-enabled, or a new group) are recorded first, before the rule is visible, and only
        newer ones fire."""
        rule = self.check(rule_id, body)
        starting = self._starting_groups(rule) if rule.enabled else []
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


def _skips_backfills_per_partition(rule: Rule) -> bool:
    """A rule whose partitioned group starts by recording the backfills completed before it (``backfill: SKIP``)."""
    return rule.policy.backfill is BackfillPolicy.SKIP and any(g.partition_by is not None for g in rule.groups)


class DeleteRule:
    """``DELETE /rules/{ruleId}``."""

    def __init__(self, rules: RuleStore, triggers: TriggerStore) -> None:
        self._rules = rules
        self._triggers = triggers

    def delete(self, rule_id: str) -> None:
        """Delete the rule. Its triggers and the cursors its claims moved stay, so re-creating it never re-fires old
        versions; the cursors of groups that never ran (only snapshots noted on them) go, so a rule re-created under
        the id starts from what arrives then, not from what the deleted one saw arrive."""
        try:
            old = self._rules.get_rule(rule_id)
        except UnreadableRuleError:
            old = None
        if not self._rules.delete_rule(rule_id):
            raise NotFoundError(f"rule {rule_id!r} does not exist")
        if old is not None:
            self._triggers.forget_unstarted([(rule_id, g.group_id) for g in old.rule.groups])
