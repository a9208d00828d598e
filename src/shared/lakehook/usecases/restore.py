"""``lakehook restore reconcile``: write back the claims a table restore lost, from the run manifests in S3.

Run it on the restored table before any function reads it (docs/restore.md): every run manifest written since the
restore point whose trigger key the table does not hold becomes that claim again, SUCCEEDED (the run was
dispatched; :func:`lakehook.domain.restore.restored_claim`). A key the table holds is left as it is. The writes are
conditional (the key absent), so running it twice, or while a resolver claims, writes each claim once.

A group's cursor moves to its newest written-back run, in the same transaction as that claim (the resolver's own
``TriggerStore.claim``, conditional on the cursor read), when the manifest says where its versions stand
(:func:`lakehook.domain.restore.cursor_after_restore`); otherwise it stays, and the report names the group. The
claims are gathered before they are written (a CLI run holds one small claim per manifest since the restore point).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from lakehook.domain.dispatch import ManifestIntegrityError, RunManifest
from lakehook.domain.errors import NotFoundError
from lakehook.domain.restore import (
    ReconcileReport,
    Refused,
    cursor_after_restore,
    cursor_ref,
    moves_cursor,
    restored_claim,
)
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import GroupCursor, Trigger, TriggerStatus
from lakehook.observability import logger
from lakehook.ports.dispatch import ManifestStore
from lakehook.ports.restore import ManifestArchive
from lakehook.ports.rules import ClaimOutcome, TriggerStore

BATCH = 100  # manifests read, then their keys looked up in one batched read


def _batches(uris: Iterable[str], size: int = BATCH) -> Iterator[list[str]]:
    batch: list[str] = []
    for uri in uris:
        batch.append(uri)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _newest_per_cursor(claims: Iterable[Trigger]) -> dict[tuple[str, str], Trigger]:
    """Per cursor, the newest of ``claims`` that moved it when it was made (the resolver dates a group's claims in
    the order it makes them)."""
    newest: dict[tuple[str, str], Trigger] = {}
    for claim in claims:
        if not moves_cursor(claim):
            continue
        ref = cursor_ref(claim)
        known = newest.get(ref)
        if known is None or (claim.created_at, claim.trigger_key) > (known.created_at, known.trigger_key):
            newest[ref] = claim
    return newest


class ReconcileRestore:
    """Write back, as dispatched, the claims the run manifests since a restore point prove were made."""

    def __init__(
        self,
        archive: ManifestArchive,
        manifests: ManifestStore,
        triggers: TriggerStore,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._archive = archive
        self._manifests = manifests
        self._triggers = triggers
        self._clock = clock

    def reconcile(self, since_ms: int, dry_run: bool = False) -> ReconcileReport:
        report = ReconcileReport(since=since_ms, dry_run=dry_run)
        lost: list[Trigger] = []
        for batch in _batches(self._archive.written_since(since_ms)):
            read = self._read(batch, report)
            held = self._triggers.get_many([m.trigger_key for m, _ in read])
            report.present += [m.trigger_key for m, _ in read if m.trigger_key in held]
            report.in_flight += [k for k, t in held.items() if t.status is TriggerStatus.TRIGGERING]
            lost += [restored_claim(m, uri, self._clock()) for m, uri in read if m.trigger_key not in held]
        newest = _newest_per_cursor(lost)
        cursors = self._triggers.get_cursors(list(newest))
        for claim in lost:
            ref = cursor_ref(claim)
            if newest.get(ref) is claim:
                initial = GroupCursor.initial(claim.rule_id, claim.group_id, claim.partition)
                self._write_moving(claim, cursors.get(ref) or initial, report)
            elif dry_run or self._triggers.put_replay(claim):
                report.restored.append(claim)
            else:  # claimed between the read and the write (a second reconcile, a resolver): it is there
                report.present.append(claim.trigger_key)
        logger.info(
            "restore reconciled",
            extra={
                "since": since_ms,
                "dry_run": dry_run,
                "restored": len(report.restored),
                "present": len(report.present),
                "refused": len(report.refused),
                "cursors_moved": len(report.cursors_moved),
                "cursors_left": len(report.cursors_left),
            },
        )
        return report

    def _write_moving(self, claim: Trigger, cursor: GroupCursor, report: ReconcileReport) -> None:
        """Write a group's newest run back, moving its cursor with it when the manifest says where it stands."""
        ref = "/".join(cursor_ref(claim))
        moved = cursor_after_restore(cursor, claim)
        if isinstance(moved, str):
            report.cursors_left[ref] = moved
        elif report.dry_run:
            report.cursors_moved.append(ref)
        else:
            outcome = self._triggers.claim(claim.model_copy(update={"sequence": moved.seq}), moved, cursor).outcome
            if outcome is ClaimOutcome.CLAIMED:
                report.cursors_moved.append(ref)
                report.restored.append(claim)
                return
            if outcome is ClaimOutcome.DUPLICATE:
                report.present.append(claim.trigger_key)
                return
            report.cursors_left[ref] = "the cursor moved while the reconcile ran"
        if report.dry_run or self._triggers.put_replay(claim):
            report.restored.append(claim)
        else:
            report.present.append(claim.trigger_key)

    def _read(self, uris: list[str], report: ReconcileReport) -> list[tuple[RunManifest, str]]:
        """The manifests at ``uris``, each stored where its own key says; the others refused with the reason."""
        read: list[tuple[RunManifest, str]] = []
        for uri in uris:
            try:
                manifest = self._manifests.get(uri)
            except (NotFoundError, ManifestIntegrityError) as exc:
                report.refused.append(Refused(uri, str(exc)))
                continue
            if self._manifests.uri_for(manifest.trigger_key) != uri:
                report.refused.append(Refused(uri, f"holds the manifest of {manifest.trigger_key!r}, not its own"))
                continue
            read.append((manifest, uri))
        return read
