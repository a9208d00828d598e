"""Every single-table key is built here, from one prefix enum.

Layout (PK / SK):
- ``ASSET#<assetKey>`` / ``STATE``            the advance-only asset state (streamed to the resolver)
- ``ASSET#<assetKey>`` / ``META``             the asset registration (GSI1: ``ASSETS`` / assetKey)
- ``ASSET#<assetKey>`` / ``EVENT#<eventId>``  a raw event, TTL ``expiresAt`` (GSI1: ``EVENTS#<assetKey>`` / time)
- ``ASSET#<assetKey>`` / ``POLL``             the asset's poll status (last poll, last error, backoff)
- ``PRODUCER#<id>``    / ``META``             a producer
- ``WM#<namespace>#<assetKey>`` / ``KEY#<key>`` a watermark
"""

from __future__ import annotations

from enum import StrEnum


class Prefix(StrEnum):
    ASSET = "ASSET#"
    EVENT = "EVENT#"
    EVENTS = "EVENTS#"
    PRODUCER = "PRODUCER#"
    WATERMARK = "WM#"
    KEY = "KEY#"


class Sort(StrEnum):
    STATE = "STATE"
    META = "META"
    POLL = "POLL"


ASSETS_INDEX_PK = "ASSETS"
GSI1 = "GSI1"
TTL_ATTRIBUTE = "expiresAt"
ITEM_TYPE = "itemType"


def asset_pk(asset_key: str) -> str:
    return f"{Prefix.ASSET}{asset_key}"


def state_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.STATE}


def asset_meta_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.META}


def event_key(asset_key: str, event_id: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": f"{Prefix.EVENT}{event_id}"}


def events_index_pk(asset_key: str) -> str:
    return f"{Prefix.EVENTS}{asset_key}"


def events_index_sk(received_at_ms: int, event_id: str) -> str:
    return f"{received_at_ms:015d}#{event_id}"


def producer_key(producer_id: str) -> dict[str, str]:
    return {"PK": f"{Prefix.PRODUCER}{producer_id}", "SK": Sort.META}


def watermark_pk(namespace: str, asset_key: str) -> str:
    return f"{Prefix.WATERMARK}{namespace}#{asset_key}"


def watermark_key(namespace: str, asset_key: str, key: str) -> dict[str, str]:
    return {"PK": watermark_pk(namespace, asset_key), "SK": f"{Prefix.KEY}{key}"}


def poll_status_key(asset_key: str) -> dict[str, str]:
    return {"PK": asset_pk(asset_key), "SK": Sort.POLL}
