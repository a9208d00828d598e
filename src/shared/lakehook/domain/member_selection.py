"""A member's verdict on its asset's state: the newest version that satisfies its condition, or the block.

Each condition kind is one rule (:mod:`lakehook.domain.conditions`); this module runs them in precedence order and
builds the :class:`lakehook.domain.member_verdict.MemberEvaluation` (with what a trigger pins of the version chosen).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lakehook.domain.conditions import Blocked, Chosen, conditions_of
from lakehook.domain.json_form import json_form
from lakehook.domain.member_verdict import MemberEvaluation
from lakehook.domain.rules import Member
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.status import Status
from lakehook.domain.time import ms_to_iso
from lakehook.domain.triggers import PinnedInput


def _current(state: AssetState, member: Member) -> dict[str, Any]:
    c = member.condition
    data: dict[str, Any] = {"snapshotId": state.latest_snapshot_id, "stateVersion": state.version}
    if state.watermark is not None:
        data["watermark"] = state.watermark
    if c.quality_status:
        data["qualityPassedSnapshotId"] = state.quality_passed_snapshot_id
        data["qualityFailedSnapshotId"] = state.quality_failed_snapshot_id
    if c.schema_status:
        data["schemaId"] = state.latest_schema_id
        data["schemaStatus"] = state.schema_status.value
    if c.tag:
        data["tags"] = sorted(state.tags)
    if c.manifest:
        data["manifestUri"] = state.manifest_uri
        data["manifestStatus"] = state.manifest_status
        data["manifestReason"] = state.manifest_reason
    if c.coverage is not None and state.last_coverage_end is not None:
        data["lastCoveredInterval"] = {
            "start": ms_to_iso(state.last_coverage_start or 0),
            "end": ms_to_iso(state.last_coverage_end),
        }
    if state.backfill_status is not BackfillStatus.NONE:
        data["backfillId"] = state.backfill_id
        data["backfillStatus"] = state.backfill_status.value
    return {k: v for k, v in data.items() if v is not None}


def select_member(member: Member, state: AssetState | None, registered: bool | None = None) -> MemberEvaluation:
    """The newest version of the member's asset that satisfies its condition (READY), or the block.

    Each condition kind is one rule (:mod:`lakehook.domain.conditions`): they run in precedence order on the
    version chosen so far, and the first that blocks gives the status and reason. ``registered`` tells a
    registered asset without state (BLOCKED_BY_SNAPSHOT) from an unknown one; None means "not looked up",
    and a stateless member is then BLOCKED_BY_UNKNOWN_ASSET.
    """
    evaluation = _select(member, state, registered)
    return replace(evaluation, alias=member.alias) if member.alias is not None else evaluation


def _select(member: Member, state: AssetState | None, registered: bool | None) -> MemberEvaluation:
    key, required = member.asset_key, json_form(member.condition)
    if state is None:
        return _stateless(key, required, registered)
    rules = conditions_of(member)
    current = _current(state, member)
    for rule in rules:
        current.update(rule.shows(state))
    chosen = Chosen.newest(state)
    for rule in rules:
        outcome = rule.evaluate(state, chosen)
        if isinstance(outcome, Blocked):
            return MemberEvaluation(key, outcome.status, None, current, required, outcome.reason)
        chosen = outcome
    reason = next((note for rule in rules if (note := rule.note(state, chosen)) is not None), None)
    return MemberEvaluation(key, Status.READY, _pin(member, state, chosen), current, required, reason)


def _stateless(key: str, required: dict[str, Any], registered: bool | None) -> MemberEvaluation:
    if registered:
        reason = "registered, but no event has reached its state yet"
        return MemberEvaluation(key, Status.BLOCKED_BY_SNAPSHOT, None, {}, required, reason)
    suffix = " and it is not registered" if registered is False else ""
    reason = f"no event was ever recorded for this asset{suffix}"
    return MemberEvaluation(key, Status.BLOCKED_BY_UNKNOWN_ASSET, None, {}, required, reason)


def _pin(member: Member, state: AssetState, chosen: Chosen) -> PinnedInput:
    """What a trigger pins of the chosen version (the order only where it is not the id)."""
    c, known = member.condition, chosen.known
    return PinnedInput(
        asset_key=member.asset_key,
        snapshot_id=chosen.snapshot_id,
        snapshot_order=chosen.order if chosen.order != chosen.snapshot_id else None,
        schema_id=known.schema_id if known is not None else None,
        watermark=state.watermark,
        commit_time=known.commit_time if known is not None else None,
        state_version=state.version,
        manifest_uri=state.manifest_uri if c.manifest else None,
        manifest_sha256=state.manifest_sha256 if c.manifest else None,
        metadata_location=known.metadata_location if known is not None else None,
        tag=c.tag,
    )
