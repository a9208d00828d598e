"""The watermark store's write, previewed: what ``PUT /watermarks?dryRun=true`` answers."""

from __future__ import annotations

from lakehook.domain.errors import ConflictError
from lakehook.domain.watermarks import WatermarkPut, WatermarkRecord
from lakehook.ports import WatermarkStore


def preview_watermark_put(store: WatermarkStore, body: WatermarkPut, asset_key: str, now_ms: int) -> WatermarkRecord:
    """The record a put would write, without writing it. A compare-and-set whose ``expectedVersion`` no
    longer matches raises ConflictError (409), as the put itself would."""
    current = store.get(body.namespace, asset_key, body.key)
    version = current.version if current else 0
    if body.expected_version is not None and body.expected_version != version:
        raise ConflictError(
            f"watermark {body.namespace}/{asset_key}/{body.key} is at version {version}, not {body.expected_version}"
        )
    return WatermarkRecord(
        namespace=body.namespace,
        asset_key=asset_key,
        key=body.key,
        value=body.value,
        version=version + 1,
        updated_at=now_ms,
    )
