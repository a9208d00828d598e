"""The point every partition of a partitioned group starts from, kept in the group's own cursor (a partition's runs
move its partition's cursor, never the group's), and claimed there as a group claims: a SKIPPED trigger, once.

- ``startFrom: NEXT_CHANGE`` (:func:`start_point`): when the rule is written or re-enabled, each partitioned
  member's newest data commit (``baseline``). A partition runs once a member has a commit touching it newer than
  that; what was there counts as run (:func:`lakehook.domain.partition_evaluation.started`).
- ``backfill: SKIP`` (:func:`backfill_point`): once a partitioned member's backfill completed, its newest data
  commit then. Each partition absorbs the commits of that member touching it up to there that it has not run (a
  SKIPPED claim of the partition, :func:`lakehook.domain.group_steps.partition_backfill_skip`); later commits run.

An unpartitioned group records its starting point in the same cursor, from its own verdict
(:meth:`lakehook.usecases.resolve.ResolveAssetChange.start`); both are claimed through :func:`point_claim`. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from lakehook.domain.evaluation import backfills_of
from lakehook.domain.group_steps import completed_backfills
from lakehook.domain.planned_claims import PlannedClaim
from lakehook.domain.rules import BackfillPolicy, Group, Rule
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.triggers import GroupCursor, PinnedInput, TriggerStatus, Window, next_trigger
from lakehook.domain.versions import SnapshotRecord

START_REASON = "startFrom NEXT_CHANGE: the versions present when the rule started; only newer ones run"


def point_claim(
    rule: Rule,
    group: Group,
    cursor: GroupCursor | None,
    pins: tuple[PinnedInput, ...],
    states: Mapping[str, AssetState],
    now: int,
    *,
    reason: str,
    marker: str,
    baseline: bool,
    window: Window | None = None,
    backfills: Mapping[str, str] | None = None,
) -> PlannedClaim:
    """The SKIPPED claim of the group's cursor that records a point (no run), conditional on ``cursor``; with it the
    backfills seen (``backfills``, else those the members' states name)."""
    base = cursor if cursor is not None else GroupCursor.initial(rule.rule_id, group.group_id)
    trigger = next_trigger(
        rule.rule_id,
        group.group_id,
        base,
        pins,
        status=TriggerStatus.SKIPPED,
        now=now,
        reason=reason,
        window=window,
        marker=marker,
    )
    seen = backfills if backfills is not None else backfills_of(group, states)
    return PlannedClaim(trigger, cursor, base, seen, baseline=baseline)


def record_pin(asset_key: str, record: SnapshotRecord) -> PinnedInput:
    """A data commit as a pin (as a partition fact pins it)."""
    return PinnedInput(
        asset_key=asset_key,
        snapshot_id=record.snapshot_id,
        snapshot_order=record.order if record.order != record.snapshot_id else None,
        schema_id=record.schema_id,
        commit_time=record.commit_time,
    )


def newest_data(group: Group, states: Mapping[str, AssetState], keys: set[str] | None = None) -> dict[str, PinnedInput]:
    """Each partitioned member's newest data commit (of those of ``keys``), by asset key."""
    found: dict[str, PinnedInput] = {}
    for member in group.partitioned_members:
        state = states.get(member.asset_key)
        if (keys is None or member.asset_key in keys) and state is not None and state.latest_data is not None:
            found[member.asset_key] = record_pin(member.asset_key, state.latest_data)
    return found


def start_point(
    rule: Rule, group: Group, states: Mapping[str, AssetState], cursor: GroupCursor | None, now: int
) -> PlannedClaim | None:
    """``startFrom: NEXT_CHANGE`` of a partitioned group: the claim recording each partitioned member's newest data
    commit as where the rule started; None when no member has one, or the cursor holds none older."""
    assert group.partition_by is not None
    found = newest_data(group, states)
    last = cursor.pins if cursor is not None and cursor.seq > 0 else {}
    if not any(k not in last or p.ordinal > last[k].ordinal for k, p in found.items()):
        return None
    pins = tuple({**last, **found}.values())
    seen = completed_of(group, states)
    return point_claim(
        rule, group, cursor, pins, states, now, reason=START_REASON, marker="start", baseline=True, backfills=seen
    )


def completed_of(group: Group, states: Mapping[str, AssetState]) -> dict[str, str]:
    """The backfill each member's state names, once it completed (a running one is still to be absorbed)."""
    return {
        k: s.backfill_id
        for k in group.asset_keys
        if (s := states.get(k)) is not None and s.backfill_id and s.backfill_status is BackfillStatus.COMPLETED
    }


def watch_point(
    rule: Rule, group: Group, states: Mapping[str, AssetState], cursor: GroupCursor | None, now: int
) -> PlannedClaim | None:
    """``backfill: SKIP`` of a partitioned group written (or re-enabled) with no point yet: the claim recording the
    backfills its members completed before, skipping nothing (they are not the group's to absorb: as a group that
    never ran, it did not hold for them); None when there are none, or it has a point."""
    seen = completed_of(group, states)
    if rule.policy.backfill is not BackfillPolicy.SKIP or group.partition_by is None or cursor is not None or not seen:
        return None
    digest = _digest(sorted(f"{k}={v}" for k, v in seen.items()))
    reason = "backfill SKIP: the backfills completed before the rule started are not skipped"
    return point_claim(
        rule, group, None, (), states, now, reason=reason, marker=f"backfill-{digest}", baseline=False, backfills=seen
    )


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]


def ended_backfills(
    rule: Rule, group: Group, states: Mapping[str, AssetState], cursor: GroupCursor | None
) -> list[int]:
    """``backfill: SKIP`` of a partitioned group: the members whose backfill completed since the group's cursor
    recorded a point (its partitions are all to be looked at again: each absorbs the commits touching it)."""
    if rule.policy.backfill is not BackfillPolicy.SKIP or group.partition_by is None:
        return []
    return completed_backfills(group, states, cursor)


def backfill_point(
    rule: Rule, group: Group, states: Mapping[str, AssetState], cursor: GroupCursor | None, now: int
) -> PlannedClaim | None:
    """``backfill: SKIP`` of a partitioned group: once a member's backfill completed that the group's cursor has not
    seen, the claim recording where it ended (that member's newest data commit, beside the ends recorded before);
    None when none did (the backfills its members completed before the rule was written are recorded then:
    :func:`watch_point`)."""
    done = ended_backfills(rule, group, states, cursor)
    if not done:
        return None
    keys = {group.members[i].asset_key for i in done}
    pins = tuple({**(cursor.pins if cursor is not None else {}), **newest_data(group, states, keys)}.values())
    ids = sorted(f"{k}={states[k].backfill_id}" for k in keys)
    reason = f"backfill completed ({', '.join(ids)}); the commits it made are skipped in every partition they touched"
    marker, seen = f"backfill-{_digest(ids)}", completed_of(group, states)
    return point_claim(
        rule, group, cursor, pins, states, now, reason=reason, marker=marker, baseline=False, backfills=seen
    )
