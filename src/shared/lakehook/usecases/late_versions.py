"""What a STALE snapshot means for the EACH_VERSION rules of its asset, for the push's answer."""

from __future__ import annotations

from lakehook.domain.late_versions import passed_over, steps_through
from lakehook.domain.versions import SnapshotRecord
from lakehook.observability import logger
from lakehook.ports.rules import RuleStore, TriggerStore
from lakehook.usecases.ingest import UNKNOWN_RULES


class LateSnapshotNotice:
    """For a snapshot older than its asset's state: which EACH_VERSION rules already ran past it (it will not run
    there: :mod:`lakehook.domain.late_versions`) and which still run it, in order.

    Costs one reverse-index query (the asset's rules) and one batched read of their cursors, only for such a
    snapshot. The resolver makes the same decision when it logs the snapshot, with the cursor it reads then, and
    records each skip as a SKIPPED trigger that explain lists."""

    def __init__(self, rules: RuleStore, triggers: TriggerStore) -> None:
        self._rules = rules
        self._triggers = triggers

    def __call__(self, asset_key: str, record: SnapshotRecord) -> str | None:
        """The sentence for the push's reason, or None when no EACH_VERSION rule runs this asset's snapshots."""
        try:
            return self._describe(asset_key, record)
        except Exception:  # the event is recorded already: an unreadable rule must not fail its push
            logger.warning("rules of a late snapshot not read", extra={"asset_key": asset_key}, exc_info=True)
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
        skipped: list[str] = []
        in_order: list[str] = []
        for rule, group in groups:
            late = passed_over(rule, group, cursors.get((rule.rule_id, group.group_id)), record, asset_key)
            if late is not None:
                skipped.append(late.reason)
            else:
                name = rule.rule_id if len(rule.groups) == 1 else f"{rule.rule_id} (group {group.group_id})"
                if name not in in_order:
                    in_order.append(name)
        parts = list(dict.fromkeys(skipped))
        if in_order:
            names = ", ".join(in_order)
            parts.append(f"it runs in order for rule{'s' if len(in_order) > 1 else ''} {names}")
        return "; ".join(parts)
