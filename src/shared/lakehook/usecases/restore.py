"""``lakehook restore reconcile``: write back the claims a table restore lost, from the run manifests in S3.

Run it on the restored table before any function reads it (docs/restore.md): every run manifest written since the
restore point whose trigger key the table does not hold becomes that claim again, SUCCEEDED (the run was
dispatched; :func:`lakehook.domain.restore.restored_claim`). A key the table holds is left as it is. The writes are
conditional (the key absent), so running it twice, or while a resolver claims, writes each claim once.

What it does not do: move the group cursors. A manifest pins versions, not their place in their table's history
(an Iceberg snapshot's sequence number is not in it), so it cannot say which version a cursor was past; a group
goes on from its restored cursor, and a combination it ran since is not run again because its key is taken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from lakehook.domain.dispatch import ManifestIntegrityError, RunManifest
from lakehook.domain.errors import NotFoundError
from lakehook.domain.restore import ReconcileReport, Refused, restored_claim
from lakehook.domain.time import now_ms
from lakehook.observability import logger
from lakehook.ports.dispatch import ManifestStore
from lakehook.ports.restore import ManifestArchive
from lakehook.ports.rules import TriggerStore

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
        for batch in _batches(self._archive.written_since(since_ms)):
            read = self._read(batch, report)
            held = self._triggers.get_many([m.trigger_key for m, _ in read])
            for manifest, uri in read:
                if manifest.trigger_key in held:
                    report.present.append(manifest.trigger_key)
                    continue
                claim = restored_claim(manifest, uri, self._clock())
                if dry_run or self._triggers.put_replay(claim):
                    report.restored.append(claim)
                else:  # claimed between the read and the write (a second reconcile, a resolver): it is there
                    report.present.append(manifest.trigger_key)
        logger.info(
            "restore reconciled",
            extra={
                "since": since_ms,
                "dry_run": dry_run,
                "restored": len(report.restored),
                "present": len(report.present),
                "refused": len(report.refused),
            },
        )
        return report

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
