"""What ``lakehook restore reconcile`` reports (docs/operations.md, restoring the table): the claims written back
from the run manifests, those the restored table already held, the manifests refused and the cursors moved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from lakehook.answers.base import Answer, Iso
from lakehook.domain.time import ms_to_iso

if TYPE_CHECKING:
    from lakehook.domain.restore import ReconcileReport


class RestoredClaim(Answer):
    trigger_key: str = Field(alias="triggerKey")
    rule_id: str = Field(alias="ruleId")
    group_id: str = Field(alias="groupId")
    manifest_uri: str | None = Field(alias="manifestUri", description="the run manifest it was read back from")


class RefusedManifest(Answer):
    """A manifest the reconcile could not use (unreadable, or altered since it was written)."""

    manifest_uri: str = Field(alias="manifestUri")
    reason: str


class CursorLeft(Answer):
    cursor: str
    reason: str = Field(description="why it was not moved")


class ReconcileAnswer(Answer):
    since: Iso = Field(description="manifests written since then were read")
    dry_run: bool = Field(alias="dryRun", description="true: what it would do, nothing written")
    manifests_read: int = Field(alias="manifestsRead")
    restored: list[RestoredClaim] = Field(description="the claims written back")
    present: list[str] = Field(description="the trigger keys the restored table already held")
    in_flight: list[str] = Field(alias="inFlight", description="of them, those still TRIGGERING whose dispatch began")
    refused: list[RefusedManifest]
    cursors_moved: list[str] = Field(alias="cursorsMoved")
    cursors_left: list[CursorLeft] = Field(alias="cursorsLeft")

    @classmethod
    def from_domain(cls, report: ReconcileReport) -> ReconcileAnswer:
        return cls(
            since=ms_to_iso(report.since),
            dry_run=report.dry_run,
            manifests_read=report.read,
            restored=[
                RestoredClaim(
                    trigger_key=t.trigger_key, rule_id=t.rule_id, group_id=t.group_id, manifest_uri=t.manifest_uri
                )
                for t in report.restored
            ],
            present=list(report.present),
            in_flight=list(report.in_flight),
            refused=[RefusedManifest(manifest_uri=r.manifest_uri, reason=r.reason) for r in report.refused],
            cursors_moved=list(report.cursors_moved),
            cursors_left=[CursorLeft(cursor=ref, reason=why) for ref, why in report.cursors_left.items()],
        )
