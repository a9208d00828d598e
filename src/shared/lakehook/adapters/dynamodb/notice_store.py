"""Commit-notice state on the asset's META item (``noticeAt``, ``noticeMissedAt``), written by UpdateItem.

The attributes ride on the registration item, so the planner's listing of registrations (one GSI1 query per
page) reads them at no extra request. Each write is conditional on the registration existing, so a notice for a
table deleted meanwhile creates nothing. A ``PUT /assets`` replaces the item and with it the notice state: the
table is polled fast until its next notice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.registry import index_page
from lakehook.domain.assets import AssetRegistration
from lakehook.domain.notice_state import NoticeState
from lakehook.ports import Page
from lakehook.ports.notices import NoticeStore, PlannedAsset

NOTICE_AT = "noticeAt"
MISSED_AT = "noticeMissedAt"


class DynamoDBNoticeStore(NoticeStore):
    def __init__(self, table: Any) -> None:
        self._table = table

    def record_notice(self, asset_keys: Sequence[str], at_ms: int) -> None:
        for key in asset_keys:  # one UpdateItem each: a notice names one table in practice
            self._update(key, f"SET {NOTICE_AT} = :at REMOVE {MISSED_AT}", at_ms)

    def record_missed(self, asset_key: str, at_ms: int) -> None:
        self._update(asset_key, f"SET {MISSED_AT} = if_not_exists({MISSED_AT}, :at)", at_ms)

    def _update(self, asset_key: str, expression: str, at_ms: int) -> None:
        try:
            self._table.update_item(
                Key=keys.asset_meta_key(asset_key),
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":at": at_ms},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def notices(self, asset_key: str) -> NoticeState:
        item = self._table.get_item(
            Key=keys.asset_meta_key(asset_key), ProjectionExpression=f"{NOTICE_AT}, {MISSED_AT}"
        ).get("Item")
        return notice_state(item or {})

    def list_planned(self, limit: int, next_token: str | None = None) -> Page[PlannedAsset]:
        items, token = index_page(self._table, keys.ASSETS_INDEX_PK, limit, next_token)
        return Page(
            [PlannedAsset(AssetRegistration.model_validate(json.loads(i["body"])), notice_state(i)) for i in items],
            token,
        )


def notice_state(item: dict[str, Any]) -> NoticeState:
    """The notice state a stored item carries (none: an empty state)."""
    at, missed = item.get(NOTICE_AT), item.get(MISSED_AT)
    return NoticeState(None if at is None else int(at), None if missed is None else int(missed))
