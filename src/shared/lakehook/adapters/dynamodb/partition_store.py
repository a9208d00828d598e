"""DynamoDBPartitionStore: partition facts (conditional puts, advance-only, many to a transaction) and pending
partitions."""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from boto3.dynamodb.conditions import Key

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.batch_reads import batch_get, integral
from lakehook.adapters.dynamodb.transactions import write_each
from lakehook.domain.commit_pieces import CommitPiece, CommitRef, KnownPieces, by_commit
from lakehook.domain.json_form import json_form
from lakehook.domain.partition_evaluation import FactKey, PartitionFact
from lakehook.domain.versions import LoggedSnapshot, SnapshotRecord
from lakehook.ports.partitions import PartitionStore

_NOT_LOGGED: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(PK)"}
_NOT_LOGGED_WHOLE: dict[str, Any] = {
    "ConditionExpression": "attribute_not_exists(PK) OR attribute_exists(#partial)",
    "ExpressionAttributeNames": {"#partial": "partial"},
}


class DynamoDBPartitionStore(PartitionStore):
    """``ASSET#<assetKey>`` / ``PFACT#<mapping>#<partition>``, ``ASSET#<assetKey>`` / ``PVER#<mapping>#<hash>#<order>``
    (EACH_VERSION, TTL), ``ASSET#<assetKey>`` / ``PCOMMIT#<order>`` (EACH_VERSION: commits whose partitions are
    known, or known in part: ``partial``, TTL), ``ASSET#<assetKey>`` / ``PPIECES#<order>`` (EACH_VERSION: the pieces
    kept of a commit known in part, TTL) and ``RULE#<ruleId>`` / ``PPEND#<groupId>#<partition>`` on the single table
    (keys.py)."""

    def __init__(self, table: Any, retention_days: int = 14) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name
        self._retention_seconds = retention_days * 86400  # as the state history's snapshot log

    def advance(self, facts: Sequence[PartitionFact], now_ms: int) -> list[PartitionFact]:
        """Conditional puts (kept only where no fact at least as new is), up to 100 to a transaction
        (:func:`write_each`): the whole item is the fact, so a put says it all."""
        actions = [
            {
                "Put": {
                    "TableName": self._name,
                    "Item": {
                        **keys.partition_fact_key(fact.asset_key, fact.mapping, fact.partition),
                        keys.ITEM_TYPE: "PARTITION_FACT",
                        **_fact_attributes(fact),
                        "updatedAt": now_ms,
                    },
                    "ConditionExpression": "attribute_not_exists(PK) OR #order < :order",
                    "ExpressionAttributeNames": {"#order": "order"},
                    "ExpressionAttributeValues": {":order": fact.order},
                }
            }
            for fact in facts
        ]
        return [fact for fact, made in zip(facts, write_each(self._client, actions), strict=True) if made]

    def facts(self, wanted: Collection[FactKey]) -> dict[FactKey, PartitionFact]:
        found = batch_get(self._client, self._name, [keys.partition_fact_key(*k) for k in wanted])
        facts = (_fact(integral(item)) for item in found)
        return {f.key: f for f in facts}

    def record_versions(self, versions: Sequence[PartitionFact], now_ms: int) -> None:
        """Batched puts (25 a request): a version is what its commit was, so writing it again changes nothing."""
        with self._table.batch_writer(overwrite_by_pkeys=["PK", "SK"]) as batch:
            for version in versions:
                item = {
                    **keys.partition_version_key(version.asset_key, version.mapping, version.partition, version.order),
                    keys.ITEM_TYPE: "PARTITION_VERSION",
                    **_fact_attributes(version),
                    keys.TTL_ATTRIBUTE: now_ms // 1000 + self._retention_seconds,
                }
                batch.put_item(Item=item)

    def versions_after(self, key: FactKey, order: int, limit: int) -> list[PartitionFact]:
        asset_key, mapping, partition = key
        prefix = keys.partition_versions_prefix(mapping, partition)
        low = keys.partition_version_key(asset_key, mapping, partition, order + 1)["SK"]
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.asset_pk(asset_key)) & Key("SK").between(low, prefix + "~"),
            "ConsistentRead": True,
            "Limit": limit,
        }
        found: list[PartitionFact] = []
        while len(found) < limit:
            answer = self._table.query(**kwargs)
            found.extend(_fact(integral(item)) for item in answer.get("Items", []) if int(item["order"]) > order)
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return found[:limit]

    def log_commits(
        self,
        commits: Mapping[str, Sequence[SnapshotRecord]],
        now_ms: int,
        in_part: Mapping[str, Sequence[SnapshotRecord]] | None = None,
    ) -> None:
        """Conditional puts of the commits not logged yet (or logged in part), and of those known in part not logged
        yet (``partial``), 100 to a transaction (a redelivered commit keeps its first ``recordedAt``)."""
        whole = {(asset, r.order): r for asset, records in commits.items() for r in reversed(records)}
        part = {(asset, r.order): r for asset, records in (in_part or {}).items() for r in reversed(records)}
        actions = [self._log_action(a, r, now_ms, False) for (a, _), r in sorted(whole.items())]
        actions += [self._log_action(a, r, now_ms, True) for (a, o), r in sorted(part.items()) if (a, o) not in whole]
        write_each(self._client, actions)

    def _log_action(self, asset_key: str, record: SnapshotRecord, now_ms: int, partial: bool) -> dict[str, Any]:
        """The conditional put logging one commit: known whole, unless logged so before; or known in part (an item
        with ``partial``), unless logged before at all."""
        item: dict[str, Any] = {
            **keys.partition_commit_key(asset_key, record.order),
            keys.ITEM_TYPE: "PARTITION_COMMIT",
            "recordedAt": now_ms,
            "body": json.dumps(json_form(record), separators=(",", ":"), sort_keys=True),
            keys.TTL_ATTRIBUTE: now_ms // 1000 + self._retention_seconds,
        }
        if partial:
            return {"Put": {"TableName": self._name, "Item": {**item, "partial": True}, **_NOT_LOGGED}}
        return {"Put": {"TableName": self._name, "Item": item, **_NOT_LOGGED_WHOLE}}

    def commits_after(self, asset_key: str, order: int, limit: int) -> list[LoggedSnapshot]:
        low = keys.partition_commit_key(asset_key, order + 1)["SK"]
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("PK").eq(keys.asset_pk(asset_key))
            & Key("SK").between(low, keys.PARTITION_COMMIT_PREFIX + "~"),
            "ConsistentRead": True,
            "Limit": limit,
        }
        found: list[LoggedSnapshot] = []
        while len(found) < limit:
            answer = self._table.query(**kwargs)
            for item in answer.get("Items", []):
                record = SnapshotRecord.model_validate(json.loads(item["body"]))
                if record.order > order:
                    found.append(LoggedSnapshot(record, int(item["recordedAt"]), partial=bool(item.get("partial"))))
            if "LastEvaluatedKey" not in answer:
                break
            kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return found[:limit]

    def commit_pieces(self, commits: Collection[CommitRef]) -> dict[CommitRef, KnownPieces]:
        """Batched reads (100 a request) of the commits' pieces items."""
        wanted = [keys.partition_pieces_key(asset, order) for asset, order in commits]
        found = batch_get(self._client, self._name, wanted) if wanted else []
        return {(str(i["assetKey"]), int(i["order"])): _known_pieces(i) for i in found}

    def note_pieces(self, pieces: Sequence[CommitPiece], now_ms: int) -> dict[CommitRef, SnapshotRecord]:
        """One ``UpdateItem`` per commit: its spans added to a string set (a span kept before changes nothing), its
        count set when a piece knows it; the item it leaves (``ALL_NEW``) tells whether the commit is whole."""
        whole: dict[CommitRef, SnapshotRecord] = {}
        for (asset_key, order), mine in sorted(by_commit(pieces).items()):
            record = mine[0].record
            total = next((p.total for p in mine if p.total is not None), None)
            sets = ["#type = :type", "#asset = :asset", "#order = :order", "#body = if_not_exists(#body, :body)"]
            sets.append("#ttl = if_not_exists(#ttl, :ttl)")
            names = {"#type": keys.ITEM_TYPE, "#asset": "assetKey", "#order": "order", "#body": "body"}
            names |= {"#ttl": keys.TTL_ATTRIBUTE, "#spans": "spans"}
            values: dict[str, Any] = {
                ":type": "PARTITION_COMMIT_PIECES",
                ":asset": asset_key,
                ":order": order,
                ":body": json.dumps(json_form(record), separators=(",", ":"), sort_keys=True),
                ":ttl": now_ms // 1000 + self._retention_seconds,
                ":spans": {f"{p.start}:{p.size}" for p in mine},
            }
            if total is not None:
                sets.append("#total = :total")
                values[":total"] = total
                names["#total"] = "total"
            answer = self._table.update_item(
                Key=keys.partition_pieces_key(asset_key, order),
                UpdateExpression=f"SET {', '.join(sets)} ADD #spans :spans",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
            if _known_pieces(answer.get("Attributes", {})).whole:
                whole[(asset_key, order)] = record
        return whole

    def stored_versions(self, wanted: Collection[tuple[FactKey, int]]) -> set[tuple[FactKey, int]]:
        """Batched reads (100 a request) of the version items themselves."""
        items = [keys.partition_version_key(*key, order) for key, order in wanted]
        found = (_fact(integral(item)) for item in batch_get(self._client, self._name, items)) if items else ()
        return {(version.key, version.order) for version in found}

    def mark_pending(self, rule_id: str, group_id: str, partitions: Collection[str], now_ms: int) -> None:
        with self._table.batch_writer(overwrite_by_pkeys=["PK", "SK"]) as batch:
            for partition in partitions:
                batch.put_item(
                    Item={
                        **keys.pending_partition_key(rule_id, group_id, partition),
                        keys.ITEM_TYPE: "PENDING_PARTITION",
                        "partitionKey": partition,
                        "mark": f"{now_ms}-{secrets.token_hex(6)}",
                        "markedAt": now_ms,
                    }
                )

    def clear_pending(self, rule_id: str, group_id: str, marks: Mapping[str, str]) -> None:
        """Conditional deletes, up to 100 to a transaction (:func:`write_each`): a mark that changed since it was read
        (a racing resolver found the partition pending again) stays."""
        write_each(
            self._client,
            [
                {
                    "Delete": {
                        "TableName": self._name,
                        "Key": keys.pending_partition_key(rule_id, group_id, partition),
                        "ConditionExpression": "#mark = :mark",
                        "ExpressionAttributeNames": {"#mark": "mark"},
                        "ExpressionAttributeValues": {":mark": mark},
                    }
                }
                for partition, mark in marks.items()
            ],
        )

    def pending(self, rule_id: str, group_id: str, limit: int, after: str | None = None) -> dict[str, str]:
        found: dict[str, str] = {}
        prefix = keys.pending_partitions_prefix(group_id)
        condition = (
            Key("PK").eq(keys.rule_pk(rule_id)) & Key("SK").begins_with(prefix)
            if after is None
            else Key("PK").eq(keys.rule_pk(rule_id)) & Key("SK").between(prefix, f"{prefix}{after}")
        )
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        while len(found) < limit:
            page = self._table.query(**kwargs, Limit=limit - len(found))
            found.update(
                {str(i["partitionKey"]): str(i["mark"]) for i in page.get("Items", []) if i["partitionKey"] != after}
            )
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found

    def marks(self, rule_id: str, group_id: str, partitions: Collection[str]) -> dict[str, str]:
        wanted = [keys.pending_partition_key(rule_id, group_id, p) for p in partitions]
        found = batch_get(self._client, self._name, wanted) if wanted else []
        return {str(i["partitionKey"]): str(i["mark"]) for i in found}

    def pending_since(self, rule_id: str, group_id: str) -> dict[str, int]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": _pending(rule_id, group_id),
            "ScanIndexForward": True,
            "ProjectionExpression": "partitionKey, markedAt",
        }
        found: dict[str, int] = {}
        while True:
            page = self._table.query(**kwargs)
            found.update({str(i["partitionKey"]): int(i["markedAt"]) for i in page.get("Items", []) if "markedAt" in i})
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def count_pending(self, rule_id: str, group_id: str) -> int:
        condition = Key("PK").eq(keys.rule_pk(rule_id)) & Key("SK").begins_with(
            keys.pending_partitions_prefix(group_id)
        )
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, "Select": "COUNT"}
        count = 0
        while True:
            page = self._table.query(**kwargs)
            count += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return count
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _pending(rule_id: str, group_id: str) -> Any:
    return Key("PK").eq(keys.rule_pk(rule_id)) & Key("SK").begins_with(keys.pending_partitions_prefix(group_id))


def _known_pieces(item: Mapping[str, Any]) -> KnownPieces:
    """A pieces item's spans (``<start>:<size>``) and the commit's count."""
    spans = frozenset((int(a), int(b)) for a, b in (str(s).split(":") for s in item.get("spans", ())))
    total = item.get("total")
    return KnownPieces(spans, int(total) if total is not None else None)


def _fact_attributes(fact: PartitionFact) -> dict[str, Any]:
    """A fact's attributes, as a fact item and a version item both hold them (read back by :func:`_fact`)."""
    item: dict[str, Any] = {
        "assetKey": fact.asset_key,
        "mapping": fact.mapping,
        "partitionKey": fact.partition,
        "snapshotId": fact.snapshot_id,
        "order": fact.order,
    }
    if fact.schema_id is not None:
        item["schemaId"] = fact.schema_id
    if fact.commit_time is not None:
        item["commitTime"] = fact.commit_time
    return item


def _fact(item: dict[str, Any]) -> PartitionFact:
    return PartitionFact(
        asset_key=item["assetKey"],
        mapping=item["mapping"],
        partition=item["partitionKey"],
        snapshot_id=item["snapshotId"],
        order=item["order"],
        schema_id=item.get("schemaId"),
        commit_time=item.get("commitTime"),
    )
