"""Racing resolvers on partitioned rules against a moto server: generated commits of two partitioned tables (keys of
days, hours and regions; late, older commits among them), one stream batch handed to several resolvers at once, then
the resolver queue's messages taken by all of them at once (one at a time, as the SQS event source hands them, some
received again): one claim per (partition, combination of pins), none lost, nothing left pending that has nothing
new. The model of what must run is the test's own (the newest data commit of each table touching each partition), as
in ``tests/unit/test_partition_state_machine.py``.

Every resolver has its own clients on a ThreadedMotoServer on 127.0.0.1 that applies one DynamoDB request at a time,
as DynamoDB does (``tests.racing``; ``resolver_at`` as in ``test_claims_concurrency.py``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.partition_store import DynamoDBPartitionStore
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.domain.events import AssetEvent, IngestStatus, SourceType
from lakehook.domain.state import snapshot_record
from lakehook.ports.rules import StateChange
from lakehook.usecases.rules import parse_rule
from tests import racing
from tests.hypothesis_profiles import examples
from tests.integration.test_claims_concurrency import resolver_at
from tests.racing import atomic_dynamodb_server, drain_queue, race
from tests.wiring import ingest_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # racers against a moto server: the full gate only

TABLE = "lakehook-race"  # the table resolver_at (test_claims_concurrency.py) works on
RACERS = 3
DAYS = ("2026-12-01", "2026-12-02")
HOURS = ("09", "10")
REGIONS = ("eu", "us")
RUNS = itertools.count()  # each example has its own tables and rule on the shared server


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with atomic_dynamodb_server(TABLE) as url:
        yield url


orders_keys = st.lists(st.tuples(st.sampled_from(DAYS), st.sampled_from(REGIONS)), min_size=1, max_size=3)
clicks_keys = st.lists(
    st.tuples(st.sampled_from(DAYS), st.sampled_from(HOURS), st.sampled_from(REGIONS)), min_size=1, max_size=3
)
histories = st.lists(
    st.one_of(st.tuples(st.just("orders"), orders_keys), st.tuples(st.just("clicks"), clicks_keys)),
    min_size=2,
    max_size=6,
)


@settings(
    max_examples=examples(4),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    history=histories,
    mode=st.sampled_from(["ALL_UPDATED", "ANY_UPDATED"]),
    order=st.randoms(use_true_random=False),
)
def test_racing_resolvers_claim_each_partitions_combination_once_and_lose_none(
    endpoint: str, history: list[tuple[str, list[tuple[str, ...]]]], mode: str, order: random.Random
) -> None:
    n = next(RUNS)
    orders, clicks = f"paimon://lake/ods/race{n}-orders", f"iceberg://glue/ods/race{n}-clicks"
    rule_id = f"race{n}"
    table = racing.table_at(endpoint, TABLE)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    url = sqs.create_queue(QueueName=f"resolver-{rule_id}", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
    DynamoDBRuleStore(table).put_rule(
        parse_rule(
            rule_id,
            {
                "target": {"type": "eventbridge", "eventBusName": "runs"},
                "policy": {"mode": mode},
                "groups": [
                    {
                        "groupId": "g",
                        "partitionBy": ["dt", "region"],
                        "members": [
                            {"assetKey": orders, "partition": {}},
                            {"assetKey": clicks, "partition": {"fields": {"dt": {"field": "hour", "grain": "day"}}}},
                        ],
                    }
                ],
            },
        ),
        1,
    )

    # the commits, their ids shuffled per table (so some arrive after a newer one: late), each recorded and its
    # event's and the state's stream records kept in the order DynamoDB wrote them
    ids = {"orders": order.sample(range(1, 50), len(history)), "clicks": order.sample(range(1, 50), len(history))}
    store = DynamoDBAssetStore(table)
    ingest = ingest_events(store)
    commits: list[tuple[str, int, set[tuple[str, str]]]] = []  # (table, id, the (day, region) it touched)
    changes: list[StateChange] = []
    for n_commit, (which, keys) in enumerate(history):
        asset, sid = (orders, clicks)[which == "clicks"], ids[which][n_commit]
        if which == "orders":
            texts = sorted({f"dt={d}/region={r}" for d, r in keys})
            touched = {(d, r) for d, r in keys}
        else:
            texts = sorted({f"hour={d}-{h}/region={r}" for d, h, r in keys})
            touched = {(d, r) for d, _, r in keys}
        event = AssetEvent(
            eventType="SNAPSHOT_COMMITTED",
            assetKey=asset,
            snapshotId=sid,
            sequenceNumber=sid if which == "clicks" else None,
            partitions=texts,
        )
        before = store.get_state(asset)
        if ingest.ingest(event, SourceType.PUSH).status is not IngestStatus.DUPLICATE:
            changes.append(StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions))
            commits.append((which, sid, touched))
        after = store.get_state(asset)
        if after is not None and (before is None or after.version != before.version):
            changes.append(StateChange(asset, after))

    resolvers = [
        resolver_at(endpoint, url, max_facts=2, max_claims_per_group=2, max_partition_claims=2, pending_page=2)
        for _ in range(RACERS)
    ]
    reports = race(RACERS, lambda i: resolvers[i](changes))  # the same batch, to each of them at once

    def drain(i: int) -> int:
        return drain_queue(endpoint, url, resolvers[i], redeliver=0.2, seed=i)

    race(RACERS, drain)

    claimed = [t.trigger_key for r in reports for t in r.claimed]
    assert len(claimed) == len(set(claimed)), "two resolvers claimed one key"
    triggers = DynamoDBTriggerStore(table).list_for_rule(rule_id, limit=1000).items
    runs = [(t.partition, tuple(sorted((p.asset_key, p.snapshot_id or 0) for p in t.inputs))) for t in triggers]
    assert len(runs) == len(set(runs)), f"a partition ran twice with the same pins: {sorted(runs)}"
    last: dict[str, dict[str, int]] = {}
    for partition, pins in sorted(runs, key=lambda run: [sid for _, sid in run[1]]):
        assert partition is not None
        mine = dict(pins)
        if partition in last:  # pins of one partition only move forward
            assert all(mine[a] >= last[partition][a] for a in mine), (partition, last[partition], mine)
        last[partition] = {a: max(mine[a], last.get(partition, {}).get(a, 0)) for a in mine}
    pending = set(DynamoDBPartitionStore(table).pending(rule_id, "g", limit=1000))
    expected_pending = set()
    for d, r in itertools.product(DAYS, REGIONS):
        text = f"dt={d}/region={r}"
        newest = {
            asset: max((sid for which, sid, touched in commits if which == name and (d, r) in touched), default=None)
            for name, asset in (("orders", orders), ("clicks", clicks))
        }
        ran = last.get(text, {})
        moved = [sid is not None and sid > ran.get(asset, 0) for asset, sid in newest.items()]
        if any(moved):
            expected_pending.add(text)
        if all(sid is not None for sid in newest.values()):
            holds = all(moved) if mode == "ALL_UPDATED" else any(moved)
            assert not holds, f"lost: {text} should run with {newest}; its last run pinned {ran or None}"
    assert pending == expected_pending, f"pending {sorted(pending)}, the model says {sorted(expected_pending)}"
