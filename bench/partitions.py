"""Partitions: the DynamoDB requests of one commit touching N partitions, for 1 and 10 partitioned rules (moto).

Each rule has one group keyed on `dt` over orders and payments (both partitioned members, mapped alike, so the
rules share the facts). Payments has already committed data to every day; then one orders commit touches N days
(N = 1, 100, 1,000, 10,000: the event's own item keeps its first 1,000 keys, the rest are its part items, whose
own stream records bring them to later invocations: `partition_drain` measures those), and the resolver handles its
event's stream record (`StateChange` with the commit's partitions, as `stream_records.resolver_input` makes it).
- requests: boto3 calls of that one invocation, exact, by operation; `TransactWriteItems` are the fact writes
  (conditional puts, 100 to a transaction, shared by the rules; one alone is a `PutItem`), the claims (up to 50 in
  one transaction, at most 100 per group and invocation: the rest wait, pending, for the deferred next invocation;
  this resolver has no work queue, `partition_drain` measures the stack's, which carries them over, up to 1,000 an
  invocation) and the pending partitions cleared (the days payments left pending: conditional deletes, 100 to a
  transaction; one alone is a `DeleteItem`), `BatchGetItem` the batched reads (states and cursors; pending marks;
  facts; partition cursors);
- time: wall clock on this machine, on lakehook's moto adapter (`lakehook.local.moto_dynamodb`: a transaction
  journals the items it touches instead of copying the table, as the local stack runs moto).
"""

from __future__ import annotations

import time
from typing import Any

import boto3
from moto import mock_aws
from tests.support import RequestCounter, create_table

from lakehook.adapters.dynamodb.rule_store import rule_items
from lakehook.container import Container
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.rules import Rule
from lakehook.domain.state import snapshot_record
from lakehook.observability import logger
from lakehook.ports.rules import StateChange
from lakehook.settings import Settings
from lakehook.usecases.ingest import IngestEvents

TABLE = "lakehook-bench"
ORDERS = "paimon://lake/ods/orders"
PAYMENTS = "paimon://lake/ods/payments"


def _days(n: int) -> list[str]:
    """n distinct days from 2000-01-01 on (ISO dates: the keys sort as the days do)."""
    from datetime import date, timedelta

    first = date(2000, 1, 1)
    return [f"dt={(first + timedelta(days=i)).isoformat()}" for i in range(n)]


def _scenario(touched: int, rules: int) -> dict[str, Any]:
    from lakehook.local import moto_dynamodb

    with mock_aws(), moto_dynamodb.adapted(True):
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        with table.batch_writer() as batch:
            for i in range(rules):
                rule = Rule.model_validate(
                    {
                        "ruleId": f"daily_{i:03d}",
                        "target": {"type": "eventbridge", "eventBusName": "runs"},
                        "groups": [
                            {
                                "groupId": "g",
                                "partitionBy": ["dt"],
                                "members": [
                                    {"assetKey": ORDERS, "partition": {}},
                                    {"assetKey": PAYMENTS, "partition": {}},
                                ],
                            }
                        ],
                    }
                )
                meta, index = rule_items(rule, 1, 0, 0)
                for item in (meta, *index):
                    batch.put_item(Item=item)
        container = Container(Settings(table_name=TABLE, region="us-east-1"))
        container.overrides["table"] = table
        resolver = container.resolver
        ingest = IngestEvents(container.asset_store)
        days = _days(touched)

        def commit(asset: str, sid: int) -> StateChange:
            event = AssetEvent(
                eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid, partitions=days[:1000]
            )
            if touched > 1000:  # a poller keeps the first 1000 keys and says how many there were
                from lakehook.domain.partitions import TouchedPartitions

                event = event.model_copy(update={"partitions": TouchedPartitions.of(days)})
            ingest.ingest(event, SourceType.PUSH)
            return StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions)

        resolver([commit(PAYMENTS, 1)])
        change = commit(ORDERS, 1)
        counter = RequestCounter().attach(table.meta.client)
        began = time.perf_counter()
        report = resolver([change])
        seconds = time.perf_counter() - began
        calls = dict(counter.calls)
        return {
            "partitions touched": f"{touched:,}",
            "keys kept": f"{min(touched, 1000):,}",
            "rules": rules,
            "claims": len(report.claimed),
            **{op: calls.get(op, 0) for op in ("Query", "BatchGetItem", "PutItem", "TransactWriteItems")},
            "DeleteItem": calls.get("DeleteItem", 0),
            "BatchWriteItem": calls.get("BatchWriteItem", 0),
            "other requests": sum(
                v
                for k, v in calls.items()
                if k not in ("Query", "BatchGetItem", "PutItem", "TransactWriteItems", "DeleteItem", "BatchWriteItem")
            ),
            "seconds": round(seconds, 2),
            "deferred": "yes" if report.deferred else "no",
        }


def run() -> list[dict[str, Any]]:
    level = logger.log_level
    logger.setLevel("WARNING")  # one log line per claim
    try:
        return [_scenario(n, 1) for n in (1, 100, 1000, 10_000)] + [_scenario(100, 10)]
    finally:
        logger.setLevel(level)


if __name__ == "__main__":
    from bench.run import markdown_table

    print(markdown_table(run()))
