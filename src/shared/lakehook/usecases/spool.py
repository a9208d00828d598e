"""Replay gates: verify spool manifests, learn of them from S3 notifications, and pre-flight a replay.

- :class:`VerifySpoolManifest` decides whether a manifest counts: VERIFIED (sealed, its checksum
  holds, the row counts add up, every object exists with the stated size and SHA-256), INVALID
  (with the object and the reason) or INTERRUPTED. Its answer names the event to ingest.
- :func:`manifest_uris` reads the manifests an S3 ``ObjectCreated`` notification names
  (:mod:`lakehook.usecases.manifests` verifies them and records the verdict).
- :class:`PreflightReplay` answers, item by item, whether a trigger may be replayed: every pinned
  spool manifest still sealed and verifying, every pinned snapshot still retained, no
  incompatible schema drift since the trigger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import unquote_plus

from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.assets import TABLE_FORMATS, AssetFormat, AssetRegistration, asset_scheme
from lakehook.domain.snapshots import SnapshotCursor, SnapshotInfo
from lakehook.domain.spool import (
    ObjectProblem,
    Problem,
    SpooledObject,
    SpoolManifest,
    SpoolStatus,
    SpoolVerification,
    VerificationStatus,
)
from lakehook.domain.spool_buckets import ReadableSpool
from lakehook.domain.state import SchemaStatus
from lakehook.domain.time import now_ms
from lakehook.domain.triggers import PinnedInput
from lakehook.ports import AssetRegistry, AssetStore
from lakehook.ports.lakehouse import CorruptMetadataError, SnapshotSources, SourceAccessError, TableNotFoundError
from lakehook.ports.spool import ObjectNotFoundError, ObjectStore, ObjectTooLargeError, SnapshotExistence
from lakehook.usecases.ingest import describe_validation_error
from lakehook.wire.spool_format import CHECKSUM_FIELD, MANIFEST_SUFFIX, manifest_checksum, s3_uri

MAX_MANIFEST_BYTES = 16 * 1024 * 1024


# --- verification -------------------------------------------------------------------------------


class VerifySpoolManifest:
    """Verify one spool manifest against the objects it lists.

    Costs one GET of the manifest, one HEAD per object (all of them, so every missing or
    truncated object is named before any byte is hashed), then one streamed GET per object,
    ``workers`` at a time. Storage errors other than "not found" (access denied, a broken
    connection) raise ObjectAccessError: the verification did not finish and should be retried.
    """

    def __init__(
        self,
        objects: ObjectStore,
        clock: Callable[[], int] = now_ms,
        max_manifest_bytes: int = MAX_MANIFEST_BYTES,
        workers: int = 4,
        readable: ReadableSpool | None = None,
    ) -> None:
        """``readable``: the buckets this verifier's role may read (None: any); a manifest listing an object
        elsewhere is INVALID (OBJECT_UNREADABLE, naming the bucket and the parameter) rather than retried."""
        self._readable = readable
        self._objects = objects
        self._clock = clock
        self._max_manifest_bytes = max_manifest_bytes
        self._workers = max(1, workers)

    def verify(self, manifest_uri: str, expected_asset_key: str | None = None) -> SpoolVerification:
        """Read and check the manifest; ``expected_asset_key`` is the asset of an event that pointed at it."""
        checked_at = self._clock()
        read = self._read(manifest_uri)
        if isinstance(read, ObjectProblem):
            return SpoolVerification(manifest_uri, VerificationStatus.INVALID, checked_at, None, (read,))
        document, manifest = read

        def invalid(*problems: ObjectProblem) -> SpoolVerification:
            return SpoolVerification(manifest_uri, VerificationStatus.INVALID, checked_at, manifest, problems)

        if expected_asset_key is not None and manifest.asset_key != expected_asset_key:
            owner = manifest.asset_key
            detail = f"the manifest belongs to {owner}, not {expected_asset_key}"
            return invalid(ObjectProblem(manifest_uri, Problem.ASSET_MISMATCH, detail))
        if manifest.status is SpoolStatus.INTERRUPTED:
            # The interruption guard: whatever else is wrong with it, an interrupted extract blocks.
            return SpoolVerification(manifest_uri, VerificationStatus.INTERRUPTED, checked_at, manifest)
        inconsistent = _inconsistency(manifest_uri, document, manifest)
        if inconsistent is not None:
            return invalid(inconsistent)
        problems = (
            self._out_of_reach(manifest.objects)
            or self._check_sizes(manifest.objects)
            or self._check_digests(manifest.objects)
        )
        if problems:
            return invalid(*problems)
        return SpoolVerification(manifest_uri, VerificationStatus.VERIFIED, checked_at, manifest)

    def _read(self, uri: str) -> tuple[dict[str, Any], SpoolManifest] | ObjectProblem:
        """The manifest as its JSON object and as the model, or why it cannot be read."""

        def unreadable(detail: str) -> ObjectProblem:
            return ObjectProblem(uri, Problem.MANIFEST_UNREADABLE, detail)

        try:
            raw = self._objects.read(uri, self._max_manifest_bytes)
        except ObjectNotFoundError:
            return ObjectProblem(uri, Problem.MANIFEST_MISSING, "the manifest does not exist")
        except ObjectTooLargeError as exc:
            return unreadable(str(exc))
        try:
            document = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return unreadable(f"the manifest is not JSON: {exc}")
        if not isinstance(document, dict):
            return unreadable("the manifest is not a JSON object")
        try:
            manifest_checksum(document)  # refuses floats: without a canonical form nothing can be checked
            return document, SpoolManifest.model_validate(document)
        except PydanticValidationError as exc:
            return unreadable(describe_validation_error(exc))
        except ValueError as exc:
            return unreadable(str(exc))

    def _out_of_reach(self, objects: Sequence[SpooledObject]) -> list[ObjectProblem]:
        """The objects this verifier may not read: access would be denied on every try, so none is asked for."""
        if self._readable is None:
            return []
        refusals = ((obj.uri, self._readable.refusal(obj.uri)) for obj in objects)
        return [ObjectProblem(uri, Problem.OBJECT_UNREADABLE, why) for uri, why in refusals if why is not None]

    def _check_sizes(self, objects: Sequence[SpooledObject]) -> list[ObjectProblem]:
        def check(obj: SpooledObject) -> ObjectProblem | None:
            size = self._objects.size(obj.uri)
            if size is None:
                return ObjectProblem(obj.uri, Problem.OBJECT_MISSING, "the object does not exist")
            if size != obj.size:
                how = "truncated" if size < obj.size else "larger than sealed"
                return ObjectProblem(
                    obj.uri,
                    Problem.SIZE_MISMATCH,
                    f"the object is {size} bytes, the manifest states {obj.size} ({how})",
                )
            return None

        return [p for p in self._each(check, objects) if p is not None]

    def _check_digests(self, objects: Sequence[SpooledObject]) -> list[ObjectProblem]:
        def check(obj: SpooledObject) -> ObjectProblem | None:
            try:
                digest = self._objects.digest(obj.uri)
            except ObjectNotFoundError:
                return ObjectProblem(obj.uri, Problem.OBJECT_MISSING, "the object disappeared while it was verified")
            if digest.size != obj.size:
                return ObjectProblem(
                    obj.uri, Problem.SIZE_MISMATCH, f"read {digest.size} bytes, the manifest states {obj.size}"
                )
            if digest.sha256 != obj.sha256:
                return ObjectProblem(
                    obj.uri,
                    Problem.SHA256_MISMATCH,
                    f"the object's SHA-256 is {digest.sha256}, the manifest states {obj.sha256}",
                )
            return None

        return [p for p in self._each(check, objects) if p is not None]

    def _each(
        self, check: Callable[[SpooledObject], ObjectProblem | None], objects: Sequence[SpooledObject]
    ) -> list[ObjectProblem | None]:
        """``check`` on every object, in manifest order; several at once when there are several."""
        if self._workers == 1 or len(objects) <= 1:
            return [check(o) for o in objects]
        with ThreadPoolExecutor(max_workers=min(self._workers, len(objects))) as pool:
            return list(pool.map(check, objects))


def manifest_uris(notification: Mapping[str, Any]) -> list[str]:
    """The manifests an S3 event notification announces as created (keys arrive URL-encoded)."""
    uris: list[str] = []
    for record in notification.get("Records") or []:
        if record.get("eventSource") != "aws:s3" or not str(record.get("eventName", "")).startswith("ObjectCreated:"):
            continue
        s3 = record.get("s3") or {}
        bucket = (s3.get("bucket") or {}).get("name")
        key = unquote_plus(str((s3.get("object") or {}).get("key", "")))
        if bucket and key.endswith(MANIFEST_SUFFIX):
            uri = s3_uri(bucket, key)
            if uri not in uris:
                uris.append(uri)
    return uris


# --- the replay pre-flight ------------------------------------------------------------------------


class Check(StrEnum):
    MANIFEST_SEALED = "MANIFEST_SEALED"  # the pinned spool manifest is still sealed and verifies
    SNAPSHOT_RETAINED = "SNAPSHOT_RETAINED"  # the pinned Iceberg / Paimon snapshot has not expired
    SCHEMA_COMPATIBLE = "SCHEMA_COMPATIBLE"  # the schema has not drifted incompatibly since the trigger


class ItemStatus(StrEnum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"  # could not apply (nothing pinned to compare, no source to read); never blocks


@dataclass(frozen=True)
class ChecklistItem:
    """One line of the pre-flight checklist."""

    check: Check
    asset_key: str
    status: ItemStatus
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PreflightReport:
    """The checklist; a replay may go ahead only when no item FAILED."""

    items: tuple[ChecklistItem, ...]

    @property
    def ok(self) -> bool:
        return all(i.status is not ItemStatus.FAILED for i in self.items)

    @property
    def failures(self) -> list[ChecklistItem]:
        return [i for i in self.items if i.status is ItemStatus.FAILED]


@dataclass(frozen=True)
class ReplayInput:
    """A trigger's pinned input as the pre-flight checks it; the manifest fields when it read spooled output."""

    asset_key: str
    snapshot_id: int | None = None
    schema_id: int | None = None
    spool_manifest_uri: str | None = None
    spool_manifest_sha256: str | None = None  # the manifest seen at trigger time; a rewritten one fails
    metadata_location: str | None = None  # Iceberg: the metadata.json pinned; table metadata rewritten since fails

    @classmethod
    def from_pin(
        cls, pin: PinnedInput, spool_manifest_uri: str | None = None, spool_manifest_sha256: str | None = None
    ) -> ReplayInput:
        return cls(
            pin.asset_key,
            pin.snapshot_id,
            pin.schema_id,
            spool_manifest_uri,
            spool_manifest_sha256,
            pin.metadata_location,
        )


class PreflightReplay:
    """Check that a replay would read exactly what the trigger pinned; answer the checklist item by item."""

    def __init__(
        self,
        verifier: VerifySpoolManifest,
        registry: AssetRegistry,
        store: AssetStore,
        snapshots: SnapshotExistence,
    ) -> None:
        self._verifier = verifier
        self._registry = registry
        self._store = store
        self._snapshots = snapshots

    def check(self, inputs: Sequence[ReplayInput]) -> PreflightReport:
        items: list[ChecklistItem] = []
        for pinned in inputs:
            manifest: SpoolManifest | None = None
            if pinned.spool_manifest_uri is not None:
                item, manifest = self._manifest(pinned)
                items.append(item)
            snapshot: SnapshotInfo | None = None
            if pinned.snapshot_id is not None and asset_scheme(pinned.asset_key) in TABLE_FORMATS:
                item, snapshot = self._snapshot(pinned)
                items.append(item)
            items.append(self._schema(pinned, snapshot, manifest))
        return PreflightReport(tuple(items))

    def _manifest(self, pinned: ReplayInput) -> tuple[ChecklistItem, SpoolManifest | None]:
        assert pinned.spool_manifest_uri is not None
        uri = pinned.spool_manifest_uri
        result = self._verifier.verify(uri, expected_asset_key=pinned.asset_key)
        detail: dict[str, Any] = {"manifestUri": uri, "verification": result.status.value}

        def item(status: ItemStatus, reason: str) -> ChecklistItem:
            return ChecklistItem(Check.MANIFEST_SEALED, pinned.asset_key, status, reason, detail)

        if result.status is VerificationStatus.INTERRUPTED:
            return item(
                ItemStatus.FAILED,
                f"the extract was interrupted ({result.reason}); re-stage it from scratch before replaying",
            ), None
        if result.status is VerificationStatus.INVALID:
            detail["object"] = result.object_uri
            return item(ItemStatus.FAILED, f"the manifest does not verify: {result.reason}"), None
        manifest = result.manifest
        assert manifest is not None
        expected = pinned.spool_manifest_sha256
        detail["manifestSha256"] = manifest.sha256
        if expected is not None and manifest.sha256 != expected:
            detail["pinnedManifestSha256"] = expected
            return item(
                ItemStatus.FAILED,
                f"the manifest was rewritten since the trigger: its sha256 is "
                f"{manifest.sha256}, the trigger pinned {expected}",
            ), None
        if pinned.snapshot_id is not None and manifest.snapshot_id != pinned.snapshot_id:
            return item(
                ItemStatus.FAILED,
                f"the manifest now seals snapshot {manifest.snapshot_id}, the trigger pinned {pinned.snapshot_id}",
            ), None
        size = manifest.total_bytes
        unpinned = "" if expected is not None else " (the trigger pinned no manifest hash: a rewrite is not detectable)"
        return item(
            ItemStatus.PASSED,
            f"sealed and verified: {len(manifest.objects)} objects, {size} bytes, {manifest.row_count} rows{unpinned}",
        ), manifest

    def _snapshot(self, pinned: ReplayInput) -> tuple[ChecklistItem, SnapshotInfo | None]:
        assert pinned.snapshot_id is not None
        detail: dict[str, Any] = {"snapshotId": pinned.snapshot_id}
        if pinned.metadata_location is not None:
            detail["metadataLocation"] = pinned.metadata_location

        def item(status: ItemStatus, reason: str) -> ChecklistItem:
            return ChecklistItem(Check.SNAPSHOT_RETAINED, pinned.asset_key, status, reason, detail)

        registration = self._registry.get_asset(pinned.asset_key)
        if registration is None or registration.source is None:
            return item(
                ItemStatus.SKIPPED,
                "the asset has no registered source, so lakehook cannot read the table to check the snapshot",
            ), None
        try:
            found = self._snapshots.find_snapshot(registration, pinned.snapshot_id)
        except TableNotFoundError as exc:
            return item(ItemStatus.FAILED, f"the table no longer exists: {exc}"), None
        except (SourceAccessError, CorruptMetadataError) as exc:
            return item(ItemStatus.FAILED, f"the table could not be read, so the snapshot is unconfirmed: {exc}"), None
        if found is None:
            return item(
                ItemStatus.FAILED,
                f"snapshot {pinned.snapshot_id} has expired: the table no longer "
                "retains it, so a replay cannot read what the trigger read",
            ), None
        pinned_at, now_at = pinned.metadata_location, found.metadata_location
        if pinned_at is not None and now_at is not None and now_at != pinned_at:
            detail["currentMetadataLocation"] = now_at
            return item(
                ItemStatus.FAILED,
                f"the table's metadata was rewritten since the trigger: snapshot {pinned.snapshot_id} is now "
                f"recorded in {now_at}, the trigger pinned {pinned_at}",
            ), None
        return item(ItemStatus.PASSED, f"snapshot {pinned.snapshot_id} is still retained"), found

    def _schema(
        self, pinned: ReplayInput, snapshot: SnapshotInfo | None, manifest: SpoolManifest | None
    ) -> ChecklistItem:
        def item(status: ItemStatus, reason: str, **detail: Any) -> ChecklistItem:
            return ChecklistItem(
                Check.SCHEMA_COMPATIBLE,
                pinned.asset_key,
                status,
                reason,
                {"pinnedSchemaId": pinned.schema_id, **detail},
            )

        pinned_id = pinned.schema_id
        if pinned_id is None:
            return item(ItemStatus.SKIPPED, "the trigger pinned no schema id")
        if snapshot is not None and snapshot.schema_id is not None and snapshot.schema_id != pinned_id:
            return item(
                ItemStatus.FAILED,
                f"snapshot {snapshot.snapshot_id} now reports schema {snapshot.schema_id}, "
                f"the trigger pinned {pinned_id}",
                snapshotSchemaId=snapshot.schema_id,
            )
        spooled = manifest.table_schema.schema_id if manifest is not None else None
        if spooled is not None and spooled != pinned_id:
            return item(
                ItemStatus.FAILED,
                f"the spooled output has schema {spooled}, the trigger pinned {pinned_id}",
                manifestSchemaId=spooled,
            )
        state = self._store.get_state(pinned.asset_key)
        latest = state.latest_schema_id if state is not None else None
        if state is None or latest is None or latest == pinned_id:
            return item(
                ItemStatus.PASSED,
                f"schema {pinned_id} is still the table's schema"
                if latest == pinned_id
                else f"no newer schema than {pinned_id} is known",
            )
        status = state.schema_status
        if status is SchemaStatus.COMPATIBLE:
            return item(
                ItemStatus.PASSED,
                f"the schema moved from {pinned_id} to {latest}, approved as compatible",
                latestSchemaId=latest,
            )
        verdict = "was rejected" if status is SchemaStatus.REJECTED else "is not approved as compatible"
        return item(
            ItemStatus.FAILED,
            f"the schema moved from {pinned_id} to {latest}, which {verdict}",
            latestSchemaId=latest,
            schemaStatus=status.value,
        )


def _inconsistency(uri: str, document: dict[str, Any], manifest: SpoolManifest) -> ObjectProblem | None:
    """A sealed manifest that contradicts itself: its checksum, or its objects' row counts."""
    stated, computed = document[CHECKSUM_FIELD], manifest_checksum(document)
    if stated != computed:
        detail = f"the manifest's sha256 is {stated}, its content hashes to {computed}: it was changed after sealing"
        return ObjectProblem(uri, Problem.MANIFEST_CHECKSUM, detail)
    counts = [o.row_count for o in manifest.objects if o.row_count is not None]
    if manifest.objects and len(counts) == len(manifest.objects) and sum(counts) != manifest.row_count:
        detail = f"the objects' row counts add up to {sum(counts)}, the manifest says {manifest.row_count}"
        return ObjectProblem(uri, Problem.ROW_COUNT, detail)
    return None


class SnapshotSourceExistence(SnapshotExistence):
    """SnapshotExistence through a SnapshotSource: one pointer read and one read of the retained snapshots.

    Looks on the table's main line only, so a snapshot orphaned by a rollback counts as gone
    (the pre-flight then refuses, the safe side). For Paimon this reads up to ``limit`` snapshot
    files; a format adapter with a direct lookup (Iceberg ``snapshot_by_id``, Paimon's snapshot
    file) can replace it. Delta and Hudi versions are read from just before the pinned one, so the
    lookup is one read (Delta: the commit file; Hudi: the timeline listing and the instant's metadata).
    """

    def __init__(self, sources: SnapshotSources, limit: int = 10_000) -> None:
        self._sources = sources
        self._limit = limit

    def find_snapshot(self, asset: AssetRegistration, snapshot_id: int) -> SnapshotInfo | None:
        if asset.source is None or asset.format not in TABLE_FORMATS:
            return None
        source = self._sources(asset.format)
        pointer = source.pointer(asset.source)
        if not pointer:
            return None
        if asset.format in _ORDERED_BY_ID:
            before = SnapshotCursor(snapshot_id=snapshot_id - 1) if snapshot_id > 0 else SnapshotCursor.beginning()
            batch = source.snapshots_since(asset.source, before, pointer, limit=1)
        else:
            batch = source.snapshots_since(asset.source, None, pointer, limit=self._limit)
        return next((s for s in batch.snapshots if s.snapshot_id == snapshot_id), None)


# formats whose snapshot ids are their order (Delta versions, Hudi instant times): the pinned id can be read directly
_ORDERED_BY_ID = frozenset({AssetFormat.DELTA, AssetFormat.HUDI})
