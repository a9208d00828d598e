"""DynamoDBStateHistory: past state images ``ASSET#<assetKey>`` / ``HIST#<version>`` and the snapshot log
``ASSET#<assetKey>`` / ``SNAPLOG#<order>``, kept for a while (TTL)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from lakehook.adapters.aws import is_conditional_failure
from lakehook.adapters.dynamodb import keys
from lakehook.domain.json_form import json_form
from lakehook.domain.state import AssetState
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord
from lakehook.ports.rules import StateHistory


class DynamoDBStateHistory(StateHistory):
    """One item per state version; writes go through BatchWriteItem (25 per request)."""

    def __init__(self, table: Any, retention_days: int = 14) -> None:
        self._table = table
        self._retention_seconds = retention_days * 86400

    def record(self, states: Mapping[str, Sequence[AssetState]], now_ms: int) -> None:
        unique = {(k, s.version): s for k, items in states.items() for s in items}
        if not unique:
            return
        with self._table.batch_writer(overwrite_by_pkeys=["PK", "SK"]) as batch:
            for (asset_key, version), state in unique.items():
                batch.put_item(
                    Item={
                        **keys.history_key(asset_key, version),
                        keys.ITEM_TYPE: "STATE_HISTORY",
                        "assetKey": asset_key,
                        "body": json.dumps(
                            state.model_dump(by_alias=True, mode="json", exclude_none=True),
                            separators=(",", ":"),
                            sort_keys=True,
                        ),
                        keys.TTL_ATTRIBUTE: now_ms // 1000 + self._retention_seconds,
                    }
                )

    def between(self, asset_key: str, first_version: int, last_version: int) -> list[AssetState]:
        if first_version > last_version:
            return []
        low = keys.history_key(asset_key, first_version)["SK"]
        high = keys.history_key(asset_key, last_version)["SK"]
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.asset_pk(asset_key)) & Key("SK").between(low, high),
            "ConsistentRead": True,
        }
        found: list[AssetState] = []
        while True:
            answer = self._table.query(**kwargs)
            found.extend(AssetState.model_validate(json.loads(i["body"])) for i in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                return found
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]

    def record_snapshots(self, snapshots: Mapping[str, Sequence[SnapshotRecord]], now_ms: int) -> None:
        """One conditional put per snapshot not logged yet (a redelivered record keeps its first ``recordedAt``,
        which is when a gap before it started to settle)."""
        unique: dict[tuple[str, int], SnapshotRecord] = {}
        for asset_key, records in snapshots.items():
            for record in records:
                unique.setdefault((asset_key, record.order), record)  # the first wins in a batch too, as across them
        for (asset_key, _), record in sorted(unique.items()):
            self.log_snapshot(asset_key, record, now_ms)

    def log_snapshot(self, asset_key: str, record: SnapshotRecord, now_ms: int, *, late: bool = False) -> bool:
        try:
            self._table.put_item(
                Item={
                    **keys.snapshot_log_key(asset_key, record.order),
                    keys.ITEM_TYPE: "SNAPLOG",
                    "assetKey": asset_key,
                    "recordedAt": now_ms,
                    "body": json.dumps(json_form(record), separators=(",", ":"), sort_keys=True),
                    keys.TTL_ATTRIBUTE: now_ms // 1000 + self._retention_seconds,
                    **({"late": True} if late else {}),
                },
                ConditionExpression="attribute_not_exists(PK)",
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            return False
        return True

    def snapshots_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.asset_pk(asset_key))
            & Key("SK").between(keys.snapshot_log_key(asset_key, order + 1)["SK"], keys.SNAPLOG_PREFIX + "~"),
            "ConsistentRead": True,
            "Limit": limit,
        }
        found: list[LoggedSnapshot] = []
        while len(found) < limit:
            answer = self._table.query(**kwargs)
            found.extend(
                LoggedSnapshot(
                    SnapshotRecord.model_validate(json.loads(i["body"])), int(i["recordedAt"]), late=bool(i.get("late"))
                )
                for i in answer.get("Items", [])
            )
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return found[:limit]
