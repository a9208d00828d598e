"""Record what verifying a spool manifest found, so a manifest member counts it only once verified.

A writer's MANIFEST_SEALED (pushed, or announced by the S3 notification of the manifest) is a
claim: the state takes the manifest as ``PENDING``. The verifier then moves it to ``SEALED``, or to
``INVALID`` with the object and the reason. An interrupted manifest blocks at once. A verified manifest's
SHA-256 goes into the state with it, so a trigger pins the very manifest it read (a replay refuses one
rewritten at the same URI since).

How a manifest reaches the verifier: S3 ``ObjectCreated`` notifications of ``spool/*.manifest.json``
in the manifest bucket, and, for manifests pushed as events (which may live in any bucket), one SQS
message per MANIFEST_SEALED the ingest path records (:func:`lakehook.usecases.ingest.verification_request`).
Both arrive at the SpoolVerifierFunction; verifying twice is harmless.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from lakehook.domain.errors import ValidationError
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.spool import SpoolVerification, VerificationStatus
from lakehook.domain.state import verification_advance
from lakehook.domain.time import now_ms
from lakehook.observability import logger
from lakehook.ports import AssetStore
from lakehook.usecases.ingest_state import advance_state, apply_change
from lakehook.usecases.spool import VerifySpoolManifest, manifest_uris


class RecordManifestVerification:
    """Verify a manifest and record the verdict in its asset's state (idempotent, so redeliveries are fine)."""

    def __init__(self, store: AssetStore, verifier: VerifySpoolManifest, clock: Callable[[], int] = now_ms) -> None:
        self._store = store
        self._verifier = verifier
        self._clock = clock

    def verify(self, manifest_uri: str, asset_key: str | None = None) -> SpoolVerification:
        """Verify; ``asset_key`` is the asset a pushed event named (a manifest of another asset is INVALID)."""
        result = self._verifier.verify(manifest_uri, expected_asset_key=asset_key)
        asset = asset_key or (result.manifest.asset_key if result.manifest is not None else None)
        if asset is None:  # unreadable, and no event named an asset: there is no state to mark
            logger.warning(
                "spool manifest unreadable",
                extra={"manifest_uri": manifest_uri, "status": result.status.value, "reason": result.reason},
            )
            return result
        claim = result.event() if result.status is not VerificationStatus.INVALID else None
        if claim is None:  # INVALID: record the writer's claim so the verdict has a manifest to attach to
            claim = AssetEvent.model_validate(
                {"eventType": EventType.MANIFEST_SEALED, "assetKey": asset, "manifestUri": manifest_uri}
            )
        now = self._clock()
        recording = self._store.record_event(claim, SourceType.VERIFICATION, now)
        advance_state(self._store, claim, now, recorded_at=recording.received_at)
        if result.status is not VerificationStatus.INTERRUPTED:
            verified = result.status is VerificationStatus.VERIFIED
            sha256 = result.manifest.sha256 if verified and result.manifest is not None else None
            verdict = verification_advance(manifest_uri, verified, result.reason, result.object_uri, sha256)
            seen = f"{manifest_uri}\x00{result.status.value}\x00{sha256 or ''}"
            marker = "verify:" + hashlib.sha256(seen.encode()).hexdigest()[:24]
            outcome = apply_change(self._store, asset, verdict, marker, now)
            logger.info(
                "spool manifest verified",
                extra={
                    "asset_key": asset,
                    "manifest_uri": manifest_uri,
                    "status": result.status.value,
                    "reason": result.reason,
                    "outcome": outcome.value,
                },
            )
        return result

    def from_notification(self, notification: Mapping[str, Any]) -> list[SpoolVerification]:
        """Every manifest an S3 ``ObjectCreated`` notification announces (S3 may repeat itself)."""
        return [self.verify(uri) for uri in manifest_uris(notification)]

    def from_request(self, body: Any) -> SpoolVerification:
        """One queued request ``{"manifestUri", "assetKey"}`` (see ``verification_request``)."""
        if not isinstance(body, dict) or not isinstance(body.get("manifestUri"), str):
            raise ValidationError("a verification request needs a manifestUri string", field="manifestUri")
        asset = body.get("assetKey")
        return self.verify(body["manifestUri"], asset if isinstance(asset, str) else None)
