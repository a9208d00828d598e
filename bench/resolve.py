"""Resolve: requests and time for one asset change feeding 1, 100 and 10,000 rules (in-process moto).

Each rule is one group over the changed asset and a second asset that already has a snapshot, so
one change makes every rule READY. Rules are bulk-loaded with the store's own item format; the
changed asset's state record goes through `handle_stream_batch`, as the resolver function gets it.
- requests: boto3 calls the resolver made (exact); the budget is one Query for the rules of the asset
  (paginated past 1 MB), one batched read (BatchGetItem pages of 100 keys: states and group cursors),
  one TransactWriteItems per claim;
- time: wall clock on this machine. moto's TransactWriteItems deep-copies the whole table to roll back,
  so its cost grows with the table (not so on DynamoDB); the 10,000-rule claims therefore go to the
  in-memory trigger store (request count = claims, one transaction each, as the tests show), and
  one moto transaction at that table size is timed on its own;
- inside moto: the wall time spent in moto's in-process request handling (its `BotocoreStubber`: parsing the
  request, the backend's work, the response), timed around it, and its share of the resolver's time: on
  moto, most of the 100-rule time is moto's, not lakehook's. The 1- and 100-rule cases are run
  `LAKEHOOK_BENCH_RESOLVE_REPEATS` times (default 3): median seconds, min-max. The 100-rule case is also run
  with lakehook's moto adapter (`lakehook.local.moto_dynamodb`, as the local stack runs moto: a transaction
  journals the items it touches instead of copying the table), which shows how much of the stock figure is
  moto's table copy.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from moto import mock_aws
from tests.fakes.memory_rules import InMemoryTriggerStore
from tests.support import RequestCounter, create_table

from lakehook.adapters.dynamodb import keys
from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.rule_store import rule_items
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, trigger_key
from lakehook.handlers import handle_stream_batch
from lakehook.observability import logger
from lakehook.settings import Settings
from lakehook.usecases.ingest import IngestEvents
from lakehook.usecases.resolve import ResolveAssetChange, ResolverStores

TABLE = "lakehook-bench"
CHANGED = "paimon://lake/ods/orders"
OTHER = "paimon://lake/ods/payments"
MISSING = "paimon://lake/ods/not_yet"
REPEATS = int(os.environ.get("LAKEHOOK_BENCH_RESOLVE_REPEATS", "3"))


@contextmanager
def _inside_moto() -> Iterator[list[float]]:
    """Adds up the wall time of moto's in-process request handling while the block runs (moto unchanged)."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.__call__
    spent = [0.0]

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    BotocoreStubber.__call__ = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        BotocoreStubber.__call__ = original  # type: ignore[method-assign]


def _record(table: Any, asset_key: str) -> dict[str, Any]:
    """The stream record of the asset's state item, as Lambda would hand it over."""
    raw = table.meta.client.get_item(TableName=TABLE, Key={"PK": keys.asset_pk(asset_key), "SK": "STATE"})
    image = {k: TypeSerializer().serialize(v) for k, v in raw["Item"].items()}
    return {
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"PK": image["PK"], "SK": image["SK"]},
            "NewImage": image,
            "SequenceNumber": "1",
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def _scenario(rules: int, claims_on_moto: bool, ready: bool = True, adapted: bool = False) -> dict[str, Any]:
    from lakehook.local import moto_dynamodb

    with mock_aws(), moto_dynamodb.adapted(adapted):
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        other = OTHER if ready else MISSING
        with table.batch_writer() as batch:
            for i in range(rules):
                rule = Rule.model_validate(
                    {
                        "ruleId": f"rule_{i:05d}",
                        "target": {"type": "webhook", "url": f"https://x.example/{i}", "secretRef": "t/x"},
                        "groups": [{"groupId": "g", "members": [{"assetKey": CHANGED}, {"assetKey": other}]}],
                    }
                )
                meta, index = rule_items(rule, 1, 0, 0)
                for item in (meta, *index):
                    batch.put_item(Item=item)
        ingest = IngestEvents(DynamoDBAssetStore(table))
        ingest.ingest(AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=OTHER, snapshotId=1), SourceType.PUSH)
        ingest.ingest(
            AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=CHANGED, snapshotId=1), SourceType.PUSH
        )
        container = Container(Settings(table_name=TABLE, region="us-east-1"))
        container.overrides["table"] = table
        triggers: Any = DynamoDBTriggerStore(table) if claims_on_moto else InMemoryTriggerStore()
        container.overrides["trigger_store"] = triggers
        container.overrides["resolver"] = ResolveAssetChange(
            ResolverStores(
                container.rule_store,
                container.state_reader,
                triggers,
                container.state_history,
                container.deferral_store,
            ),
            observer=None,
        )
        record = _record(table, CHANGED)
        counter = RequestCounter().attach(table.meta.client)
        with _inside_moto() as moto:
            began = time.perf_counter()
            answer = handle_stream_batch({"Records": [record]}, container)
            seconds = time.perf_counter() - began
        assert answer == {"batchItemFailures": []}
        calls = dict(counter.calls)
        claimed = (
            len(triggers.claim_order)
            if isinstance(triggers, InMemoryTriggerStore)
            else len([i for i in table.scan(ProjectionExpression="SK")["Items"] if i["SK"] == keys.CLAIM_SORT])
        )
        if not claims_on_moto:
            calls["TransactWriteItems"] = claimed  # one per claim, made on the in-memory store here
        row = {
            "moto": "adapted" if adapted else "stock",
            "rules": f"{rules:,}",
            "claims": f"{claimed:,}" + ("" if claims_on_moto or not ready else " (in-memory)"),
            "Query": calls.get("Query", 0),
            "BatchGetItem": calls.get("BatchGetItem", 0),
            "TransactWriteItems": calls.get("TransactWriteItems", 0),
            "other requests": sum(
                v for k, v in calls.items() if k not in ("Query", "BatchGetItem", "TransactWriteItems")
            ),
            "seconds": round(seconds, 2),
            "min-max": "one run",
            "ms per rule": round(seconds * 1000 / rules, 2),
            "s inside moto": round(moto[0], 2),
            "share inside moto": f"{moto[0] / seconds:.0%}",
            "ms per rule outside moto": round((seconds - moto[0]) * 1000 / rules, 2),
        }
        if not ready:
            row["note"] = "every rule blocked (its second asset is unknown): reads and evaluation only"
        elif not claims_on_moto:
            row["note"] = f"one moto TransactWriteItems at this table size: {_one_transaction(table):.2f} s"
        return row


def _one_transaction(table: Any) -> float:
    store = DynamoDBTriggerStore(table)
    pins = (PinnedInput(asset_key=CHANGED, snapshot_id=1),)
    trigger = Trigger(
        trigger_key=trigger_key("probe", "g", pins, None, 0),
        rule_id="probe",
        group_id="g",
        inputs=pins,
        created_at=1,
        updated_at=1,
    )
    began = time.perf_counter()
    store.claim(trigger, GroupCursor.initial("probe", "g").after(trigger, {}), None)
    return time.perf_counter() - began


def _repeated(rules: int, adapted: bool = False) -> dict[str, Any]:
    """The scenario REPEATS times: the median run's figures, the spread of its seconds (counts are exact)."""
    runs = sorted((_scenario(rules, True, adapted=adapted) for _ in range(REPEATS)), key=lambda r: float(r["seconds"]))
    row = runs[len(runs) // 2]
    seconds = [float(r["seconds"]) for r in runs]
    shares = [r["share inside moto"] for r in runs]
    row["min-max"] = (
        f"{min(seconds):.2f}-{max(seconds):.2f} s ({len(runs)} runs); inside moto {min(shares)}-{max(shares)}"
    )
    row["seconds"] = round(statistics.median(seconds), 2)
    return row


def run() -> list[dict[str, Any]]:
    level = logger.log_level
    logger.setLevel("WARNING")  # one log line per claim would dominate the 10,000-rule case
    try:
        return [
            _repeated(1),
            _repeated(100),
            _repeated(100, adapted=True),
            _scenario(10_000, False),
            _scenario(10_000, True, ready=False),
        ]
    finally:
        logger.setLevel(level)


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
