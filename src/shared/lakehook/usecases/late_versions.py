"""What a STALE snapshot means for the EACH_VERSION rules of its asset, decided when its push is recorded and answered
by it (and, for the resolver, whether a group ran it before its push came)."""

from __future__ import annotations

from collections.abc import Callable

from lakehook.domain.late_versions import already_ran, passed_over, ran_among, reached, steps_through
from lakehook.domain.rules import Group, Rule
from lakehook.domain.time import now_ms
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
    """For a snapshot older than its asset's state: decide, once, what it means for each EACH_VERSION group it is a
    version of, and answer that for the push. A group that already ran past it skips it (it will not run there:
    :mod:`lakehook.domain.late_versions`; the SKIPPED trigger is recorded here, in the answer's words), one that ran
    it already says so (its quality verdict came before its push), and the others run it, in order.

    What decides is whether a newer version had RUN (been claimed) for the group when the snapshot arrived, not when
    the resolver reads its stream record: the snapshot is logged first (so every later read of the log holds it),
    then noted on the cursor of each group that had not reached it
    (:meth:`lakehook.ports.rules.TriggerStore.admit_late`: one atomic write per group, answering the cursor as it
    left it). A claim the resolver planned before that note fails (claims are conditional on the note count) and
    the group is planned again with the log that holds the snapshot, so a version answered "it runs in order" runs
    before any newer one. A group whose cursor was past it, read or as the note left it, had run a newer one (a
    cursor only moves on), so the skip is what happens.

    Costs one reverse-index query (the asset's rules), one conditional put (the log), one batched read of their
    cursors and one update per group whose cursor had not reached it (the note), only for such a snapshot; when a
    cursor holds it or a newer one and the log held it before (some claim pinned it), a page of that rule's
    triggers; and one conditional put per skip."""

    def __init__(
        self,
        rules: RuleStore,
        triggers: TriggerStore,
        history: StateHistory,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._rules = rules
        self._triggers = triggers
        self._history = history
        self._clock = clock

    def __call__(self, asset_key: str, record: SnapshotRecord, at: int | None = None) -> str | None:
        """The sentence for the push's reason, or None when no EACH_VERSION rule runs this asset's snapshots;
        ``at``: when the push was received (the skips' date)."""
        try:
            return self._describe(asset_key, record, self._clock() if at is None else at)
        except Exception:  # the event is recorded already: an unreadable rule must not fail its push
            logger.warning("rules of a late snapshot not read", extra={"asset_key": asset_key}, exc_info=True)
            from lakehook.usecases.ingest import UNKNOWN_RULES  # here: the resolver imports this module, not ingest

            return UNKNOWN_RULES

    def _stepping_groups(self, asset_key: str, record: SnapshotRecord) -> list[tuple[Rule, Group]]:
        """The groups of the asset's rules that step through its versions one by one to this one."""
        return [
            (rule, group)
            for rule in self._rules.rules_for_asset(asset_key)
            for group in rule.groups_with(asset_key)
            if steps_through(rule, group, asset_key, record)
        ]

    def _describe(self, asset_key: str, record: SnapshotRecord, at: int) -> str | None:
        groups = self._stepping_groups(asset_key, record)
        if not groups:
            return None
        logged = not self._history.log_snapshot(asset_key, record, at, late=True)  # logged before: a claim pinned it
        cursors = self._triggers.get_cursors([(r.rule_id, g.group_id) for r, g in groups])
        # A cursor that holds it or a newer version always will (cursors only move on): no note needed. The others
        # are noted (a partitioned group's runs move its partitions' cursors, not the group's: none to note).
        behind = [
            (r.rule_id, g.group_id)
            for r, g in groups
            if g.partition_by is None and not reached(cursors.get((r.rule_id, g.group_id)), record, asset_key)
        ]
        if behind:
            cursors.update(self._triggers.admit_late(behind, record.order, asset_key))
        told: list[str] = []
        in_order: list[str] = []
        for rule, group in groups:
            cursor = cursors.get((rule.rule_id, group.group_id))
            sentence = self._told(rule, group, cursor, asset_key, record, logged, at)
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
        self,
        rule: Rule,
        group: Group,
        cursor: GroupCursor | None,
        asset_key: str,
        record: SnapshotRecord,
        logged: bool,
        at: int,
    ) -> str | None:
        """What the push answers for one group: it ran or will not run (the reason; a skip is recorded), or None:
        it runs in order."""
        ran = (
            logged
            and reached(cursor, record, asset_key)
            and ran_for_group(self._triggers, rule.rule_id, group.group_id, asset_key, record)
        )
        found = already_ran(rule, group, cursor, record, asset_key, ran)
        if found is not None:
            return found.reason
        skipped = passed_over(rule, group, cursor, record, asset_key)
        if skipped is None:
            return None
        assert cursor is not None
        if self._triggers.put_replay(skipped.trigger(cursor, at)):
            logger.info(
                "late version skipped",
                extra={
                    "rule_id": rule.rule_id,
                    "group_id": group.group_id,
                    "asset_key": asset_key,
                    "snapshot_id": record.snapshot_id,
                    "status": "SKIPPED",
                    "reason": skipped.reason,
                },
            )
        return skipped.reason
