"""DynamoDBPollStatusStore: one ``ASSET#<key>`` / ``POLL`` item per polled asset."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get
from lakehook.domain.snapshots import PollStatus
from lakehook.ports.lakehouse import PollStatusStore


class DynamoDBPollStatusStore(PollStatusStore):
    """The status is kept as JSON plus the attributes an operator filters on (failures, next attempt)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def get(self, asset_key: str) -> PollStatus | None:
        item = self._table.get_item(Key=keys.poll_status_key(asset_key), ConsistentRead=True).get("Item")
        return None if item is None else PollStatus.model_validate(json.loads(item["body"]))

    def get_many(self, asset_keys: Collection[str]) -> dict[str, PollStatus]:
        """One BatchGetItem per 100 keys."""
        items = batch_get(self._table.meta.client, self._table.name, [keys.poll_status_key(k) for k in asset_keys])
        found = (PollStatus.model_validate(json.loads(i["body"])) for i in items)
        return {s.asset_key: s for s in found}

    def put(self, status: PollStatus) -> None:
        item: dict[str, Any] = {
            **keys.poll_status_key(status.asset_key),
            keys.ITEM_TYPE: "POLL_STATUS",
            "assetKey": status.asset_key,
            "consecutiveFailures": status.consecutive_failures,
            # every field, nulls too: a gap's ``resumedAtSnapshotId`` is required even when it is null
            "body": json.dumps(status.model_dump(by_alias=True, mode="json"), sort_keys=True),
        }
        if status.next_attempt_at is not None:
            item["nextAttemptAt"] = status.next_attempt_at
        if status.last_polled_at is not None:
            item["lastPolledAt"] = status.last_polled_at
        self._table.put_item(Item=item)
