"""The asset state item (``ASSET#<assetKey>`` / ``STATE``) and the domain's ``AssetState``, mapped both ways here.

The domain describes each advance by the state's typed fields (``domain.state_changes.StateField``) and reads an
``AssetState``; what the store hands back is an item: numbers as ``Decimal``, string sets as ``set``, the tag
and backfill logs as the sets the advances add to. Naming each field's stored attribute (``attribute_path``),
and turning an item into the read model or into the fields a refused change saw (``fields_of_item``), is this
module's job, so the domain never sees an item or an attribute name. The stream reader, the asset store, the
state reader and the in-memory fake of the store all read states through it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from lakehook.domain.ordering import backfill_view, latest_tag
from lakehook.domain.state import AssetState, BackfillStatus
from lakehook.domain.state_changes import StateField

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


def attribute_path(name: StateField) -> tuple[str, ...]:
    """The stored attribute of a state field, camelCase, and the field of its map for a nested one
    (``latest_data.order`` is ``latestData.order``)."""
    return _PATHS[name]


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.capitalize() for word in rest)


_PATHS = {name: tuple(_camel(part) for part in name.value.split(".")) for name in StateField}


def stored_value(item: dict[str, Any], name: StateField) -> Any:
    """A state field's value as a stored item holds it (a map's field for a nested one), or None when absent."""
    value: Any = item
    for attribute in attribute_path(name):
        value = value.get(attribute) if isinstance(value, dict) else None
    return value


def fields_of_item(item: dict[str, Any]) -> dict[StateField, Any]:
    """The state fields a stored item holds, as plain values: what a refused change hands its use case."""
    found = {name: plain(stored_value(item, name)) for name in StateField}
    return {name: value for name, value in found.items() if value is not None}
