"""After a table restore: the claims a run manifest proves were made, and what a reconcile found.

A point-in-time restore gives back the table as it was at the restore point: the claims made after it are gone,
but their runs were dispatched. Each dispatched run left its run manifest in S3 (written once, before the run is
started: :mod:`lakehook.usecases.dispatch`), named by its trigger key and holding everything the claim pinned. So a
manifest whose claim the restored table lacks is a claim to write back, as already dispatched: the resolver then
meets the key when it claims that combination again (``attribute_not_exists``) and starts nothing, while every
combination without a manifest is claimed and started as usual. See docs/restore.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakehook.domain.dispatch import RunManifest
from lakehook.domain.time import instant_from_json, ms_to_iso
from lakehook.domain.triggers import PinnedInput, Trigger, TriggerStatus, Window

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


@dataclass(frozen=True)
class Refused:
    """A manifest the reconcile could not use (unreadable, or altered since it was written): named, never skipped
    silently, so an operator can look at it."""

    manifest_uri: str
    reason: str

    def to_api(self) -> dict[str, str]:
        return {"manifestUri": self.manifest_uri, "reason": self.reason}


@dataclass
class ReconcileReport:
    """What a reconcile did: the claims written back, the keys the restored table already held, the refused
    manifests (and, with ``dry_run``, the claims it would write)."""

    since: int
    dry_run: bool = False
    restored: list[Trigger] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    @property
    def read(self) -> int:
        return len(self.restored) + len(self.present) + len(self.refused)

    def to_api(self) -> dict[str, object]:
        return {
            "since": ms_to_iso(self.since),
            "dryRun": self.dry_run,
            "manifestsRead": self.read,
            "restored": [
                {"triggerKey": t.trigger_key, "ruleId": t.rule_id, "groupId": t.group_id, "manifestUri": t.manifest_uri}
                for t in self.restored
            ],
            "present": list(self.present),
            "refused": [r.to_api() for r in self.refused],
        }
