"""What a STALE snapshot means for the EACH_VERSION rules of its asset, for the push's answer (and, for the resolver,
whether a group ran it before its push came)."""

from __future__ import annotations

from lakehook.domain.late_versions import already_ran, passed_over, ran_among, reached, steps_through
from lakehook.domain.rules import Group, Rule
from lakehook.domain.triggers import GroupCursor
from lakehook.domain.versions import SnapshotRecord
from lakehook.observability import logger
from lakehook.ports.rules import RuleStore, StateHistory, TriggerStore

# How many pages of a rule's triggers (newest first) are read to tell whether a group ran a late snapshot the log
# holds; past them, the log's word is taken (some claim pinned it).
RAN_PAGES = 4
RAN_PAGE_SIZE = 50


def ran_for_group(triggers: TriggerStore, rule_id: str, group_id: str, asset_key: str, record: SnapshotRecord) -> bool:
    """Whether one of the group's runs pinned ``record`` (:func:`lakehook.domain.late_versions.ran_among`), reading
    the rule's triggers newest first: one page in the usual case, where the group ran it a few claims ago."""
    token: str | None = None
    for _ in range(RAN_PAGES):
        page = triggers.list_for_rule(rule_id, limit=RAN_PAGE_SIZE, next_token=token)
        found = ran_among(page.items, group_id, asset_key, record)
        if found is not None:
            return found
        token = page.next_token
        if token is None:
            return False
    return True


def logged_already(history: StateHistory, asset_key: str, record: SnapshotRecord) -> bool:
    """Whether the asset's snapshot log holds the snapshot already (a claim pinned it before its push came)."""
    after = history.snapshots_after(asset_key, record.order - 1, 1)
    return bool(after) and after[0].record.order == record.order


class LateSnapshotNotice:
    """For a snapshot older than its asset's state: which EACH_VERSION rules already ran past it (it will not run
    there: :mod:`lakehook.domain.late_versions`), which ran it already (its quality verdict came before its push),
    and which still run it, in order.

    Costs one reverse-index query (the asset's rules) and one batched read of their cursors, only for such a
    snapshot; when a cursor holds it or a newer one, one snapshot-log query, and when the log holds it (some claim
    pinned it), a page of each such rule's triggers. The resolver makes the same decision when it logs the
    snapshot, with the cursor it reads then, and records each skip as a SKIPPED trigger that explain lists."""

    def __init__(self, rules: RuleStore, triggers: TriggerStore, history: StateHistory) -> None:
        self._rules = rules
        self._triggers = triggers
        self._history = history

    def __call__(self, asset_key: str, record: SnapshotRecord) -> str | None:
        """The sentence for the push's reason, or None when no EACH_VERSION rule runs this asset's snapshots."""
        try:
            return self._describe(asset_key, record)
        except Exception:  # the event is recorded already: an unreadable rule must not fail its push
            logger.warning("rules of a late snapshot not read", extra={"asset_key": asset_key}, exc_info=True)
            from lakehook.usecases.ingest import UNKNOWN_RULES  # here: the resolver imports this module, not ingest

            return UNKNOWN_RULES

    def _describe(self, asset_key: str, record: SnapshotRecord) -> str | None:
        groups = [
            (rule, group)
            for rule in self._rules.rules_for_asset(asset_key)
            for group in rule.groups_with(asset_key)
            if steps_through(rule, group, asset_key, record)
        ]
        if not groups:
            return None
        cursors = self._triggers.get_cursors([(r.rule_id, g.group_id) for r, g in groups])
        mine = [(r, g, cursors.get((r.rule_id, g.group_id))) for r, g in groups]
        logged = any(reached(c, record, asset_key) for _, _, c in mine) and logged_already(
            self._history, asset_key, record
        )
        told: list[str] = []
        in_order: list[str] = []
        for rule, group, cursor in mine:
            sentence = self._told(rule, group, cursor, asset_key, record, logged)
            if sentence is not None:
                told.append(sentence)
                continue
            name = rule.rule_id if len(rule.groups) == 1 else f"{rule.rule_id} (group {group.group_id})"
            if name not in in_order:
                in_order.append(name)
        parts = list(dict.fromkeys(told))
        if in_order:
            names = ", ".join(in_order)
            parts.append(f"it runs in order for rule{'s' if len(in_order) > 1 else ''} {names}")
        return "; ".join(parts)

    def _told(
        self, rule: Rule, group: Group, cursor: GroupCursor | None, asset_key: str, record: SnapshotRecord, logged: bool
    ) -> str | None:
        """What the push answers for one group: it ran or will not run (the reason), or None: it runs in order."""
        ran = (
            logged
            and reached(cursor, record, asset_key)
            and ran_for_group(self._triggers, rule.rule_id, group.group_id, asset_key, record)
        )
        found = already_ran(rule, group, cursor, record, asset_key, ran) or passed_over(
            rule, group, cursor, record, asset_key
        )
        return found.reason if found is not None else None
