"""After a table restore: the claims a run manifest proves were made, and what a reconcile found.

A point-in-time restore gives back the table as it was at the restore point: the claims made after it are gone,
but their runs were dispatched. Each dispatched run left its run manifest in S3 (written once, before the run is
started: :mod:`lakehook.usecases.dispatch`), named by its trigger key and holding everything the claim pinned. So a
manifest whose claim the restored table lacks is a claim to write back, as already dispatched: the resolver then
meets the key when it claims that combination again (``attribute_not_exists``) and starts nothing, while every
combination without a manifest is claimed and started as usual.

A group's cursor (the versions it last ran with, which ``ALL_UPDATED`` and ``EACH_VERSION`` count from) is moved to
its newest written-back run when the manifest says exactly where those versions stand
(:func:`cursor_after_restore`): a manifest pins snapshot ids, not an Iceberg snapshot's sequence number, so a pin of
an asset whose order is not its snapshot id (or whose order the restored cursor does not show) leaves the cursor
where it was, and the reconcile names the group. See docs/restore.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakehook.domain.dispatch import RunManifest
from lakehook.domain.time import instant_from_json
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, TriggerStatus, Window

RESTORED_REASON = "written back from its run manifest after a table restore: dispatched before, not started again"


def _window(manifest: RunManifest) -> Window | None:
    if manifest.window is None:
        return None
    return Window(start=instant_from_json(manifest.window["start"]), end=instant_from_json(manifest.window["end"]))


def restored_claim(manifest: RunManifest, manifest_uri: str, now: int) -> Trigger:
    """The claim ``manifest`` proves was made, as already dispatched (SUCCEEDED after one attempt, no run id known).

    The key is the manifest's own (never recomputed: the key is what the resolver will meet), and so are the rule,
    group, partition, window, replay epoch and pinned versions."""
    created = instant_from_json(manifest.created_at)
    return Trigger(
        trigger_key=manifest.trigger_key,
        rule_id=manifest.rule_id,
        group_id=manifest.group_id,
        status=TriggerStatus.SUCCEEDED,
        inputs=tuple(
            PinnedInput(
                asset_key=i.asset_key,
                snapshot_id=i.snapshot_id,
                schema_id=i.schema_id,
                watermark=i.watermark,
                commit_time=i.commit_time,
                metadata_location=i.metadata_location,
            )
            for i in manifest.inputs
        ),
        window=_window(manifest),
        partition=manifest.partition,
        replay_epoch=manifest.replay_epoch,
        replay_of=manifest.replay_of,
        attempts=1,
        created_at=created,
        updated_at=max(now, created),
        manifest_uri=manifest_uri,
        reason=RESTORED_REASON,
    )


def moves_cursor(claim: Trigger) -> bool:
    """Whether the resolver moved its group's cursor with this claim: a run the group's policy started, not a
    replay, nor a manual run or another claim under a marker of its own (``<rule>.<group>.<marker>.<hash>``)."""
    own = claim.trigger_key.removeprefix(f"{claim.rule_id}.{claim.group_id}.")
    return claim.replay_of is None and own != claim.trigger_key and "." not in own


def cursor_ref(claim: Trigger) -> tuple[str, str]:
    """The (rule, cursor id) of the cursor the claim moved: its group's, or its partition's."""
    return claim.rule_id, GroupCursor.initial(claim.rule_id, claim.group_id, claim.partition).group_id


def cursor_after_restore(cursor: GroupCursor, claim: Trigger) -> GroupCursor | str:
    """The cursor once ``claim`` (its group's newest run) is written back; or why the cursor stays as it is."""
    if cursor.claimed_at is not None and cursor.claimed_at >= claim.created_at:
        return "the restored cursor is at a run as new as the manifest's"
    if cursor.replay_epoch != claim.replay_epoch:
        return f"the restored cursor is in replay epoch {cursor.replay_epoch}, the manifest in {claim.replay_epoch}"
    unknown = sorted(
        p.asset_key
        for p in claim.inputs
        if p.snapshot_id is not None
        and ((last := cursor.pins.get(p.asset_key)) is None or last.snapshot_order is not None)
    )
    if unknown:
        return f"the manifest does not say where the snapshots of {', '.join(unknown)} stand in their tables' order"
    moved = claim.model_copy(update={"sequence": cursor.seq + 1})
    return cursor.after(moved, dict(cursor.backfills))


@dataclass(frozen=True)
class Refused:
    """A manifest the reconcile could not use (unreadable, or altered since it was written): named, never skipped
    silently, so an operator can look at it."""

    manifest_uri: str
    reason: str


@dataclass
class ReconcileReport:
    """What a reconcile did: the claims written back, the keys the restored table already held (``in_flight``:
    those of them still TRIGGERING there, whose dispatch the manifest shows began), the refused manifests, the
    cursors moved and left (with ``dry_run``, what it would do)."""

    since: int
    dry_run: bool = False
    restored: list[Trigger] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)
    cursors_moved: list[str] = field(default_factory=list)
    cursors_left: dict[str, str] = field(default_factory=dict)

    @property
    def read(self) -> int:
        return len(self.restored) + len(self.present) + len(self.refused)
