"""The asset state item (``ASSET#<assetKey>`` / ``STATE``) and the domain's ``AssetState``, mapped both ways here.

The domain describes each advance by the state's attribute names (``domain.state.Advance``) and reads an
``AssetState``; what the store hands back is an item: numbers as ``Decimal``, string sets as ``set``, the tag
and backfill logs as the sets the advances add to. Turning that item into the read model is this module's
job, so the domain never sees an item. The stream reader, the asset store, the state reader and the
in-memory fake of the store all read states through it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from lakehook.domain.ordering import backfill_view, latest_tag
from lakehook.domain.state import AssetState, BackfillStatus

# The attributes of the item that are fields of the read model, by alias or by name.
_FIELDS = {f.alias or name for name, f in AssetState.model_fields.items()} | set(AssetState.model_fields)


def asset_state_from_item(asset_key: str, item: dict[str, Any] | None) -> AssetState:
    """The read model of a stored state item (None or {}: the state of an asset nothing was recorded for)."""
    item = item or {}
    data = {k: plain(v) for k, v in item.items() if k in _FIELDS}
    if "tagLog" in item:
        newest = latest_tag({str(e) for e in item["tagLog"]})
        if newest is not None:
            data.update(latestTag=newest.tag, latestTagSnapshotId=newest.snapshot_id)
    if "backfillsStarted" in item or "backfillsCompleted" in item:
        started = {str(b) for b in item.get("backfillsStarted") or ()}
        completed = {str(b) for b in item.get("backfillsCompleted") or ()}
        legacy = item.get("backfillId")  # written before the sets: fold it in
        if legacy is not None:
            (completed if item.get("backfillStatus") == BackfillStatus.COMPLETED.value else started).add(legacy)
        view = backfill_view(started, completed)
        data.update(backfillId=view.backfill_id, backfillStatus=view.status)
    return AssetState.model_validate({**data, "assetKey": asset_key})


def plain(value: Any) -> Any:
    """DynamoDB hands numbers back as Decimal and sets as set; make them plain."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset):
        return {plain(v) for v in value}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
