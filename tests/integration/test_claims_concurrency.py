"""Racing claims over HTTP against a moto server: each trigger key is claimed exactly once.

Every thread has its own boto3 client, as separate Lambda invocations would, and talks to a
ThreadedMotoServer on 127.0.0.1 (requests are served concurrently, one thread each).
The server applies one DynamoDB request at a time, as DynamoDB does (see ``tests.racing``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from lakehook.adapters.dynamodb.asset_store import DynamoDBAssetStore
from lakehook.adapters.dynamodb.deferral_store import DynamoDBDeferralStore
from lakehook.adapters.dynamodb.rule_store import DynamoDBRuleStore
from lakehook.adapters.dynamodb.state_history import DynamoDBStateHistory
from lakehook.adapters.dynamodb.state_reader import DynamoDBStateReader
from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
from lakehook.domain.events import AssetEvent, EventType, SourceType
from lakehook.domain.rules import Rule
from lakehook.domain.triggers import GroupCursor, PinnedInput, Trigger, trigger_key
from lakehook.ports.rules import ClaimOutcome, Deferral, StateChange
from lakehook.usecases.resolve import ResolveAssetChange, ResolverStores
from tests import racing
from tests.racing import atomic_dynamodb_server, drain_queue, race
from tests.wiring import ingest_events, resolve_asset_change

pytestmark = pytest.mark.slow  # racers against a moto server: the full gate only

TABLE = "lakehook-race"
RACERS = 8
A = "paimon://lake/ods/a"
B = "paimon://lake/ods/b"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with atomic_dynamodb_server(TABLE) as url:
        yield url


def table_at(url: str) -> Any:
    return racing.table_at(url, TABLE)


def resolver_at(url: str, queue: str | None = None, **limits: int) -> ResolveAssetChange:
    """A resolver with its own clients on the moto server, as a separate Lambda invocation has (``queue``: the
    resolver queue's URL, with the partition store)."""
    import boto3

    from lakehook.adapters.dynamodb.partition_store import DynamoDBPartitionStore
    from lakehook.adapters.sqs import SQSWorkQueue
    from lakehook.usecases.resolve import ResolverLimits

    mine = table_at(url)
    sqs = boto3.session.Session(region_name="us-east-1").client("sqs", endpoint_url=url)
    return resolve_asset_change(
        ResolverStores(
            DynamoDBRuleStore(mine),
            DynamoDBStateReader(mine),
            DynamoDBTriggerStore(mine),
            DynamoDBStateHistory(mine),
            DynamoDBDeferralStore(mine),
            partitions=DynamoDBPartitionStore(mine) if queue else None,
            resolver_queue=SQSWorkQueue(sqs, queue) if queue else None,
        ),
        limits=ResolverLimits(**limits),
        observer=None,
    )


def test_racing_claims_of_the_same_versions_claim_each_key_once(endpoint: str) -> None:
    stores = [DynamoDBTriggerStore(table_at(endpoint)) for _ in range(RACERS)]
    groups = [f"g{i}" for i in range(12)]

    def claim_all(i: int) -> list[ClaimOutcome]:
        outcomes = []
        for group in groups:
            pins = (PinnedInput(asset_key=A, snapshot_id=1),)
            key = trigger_key("race", group, pins, None, 0)
            trigger = Trigger(trigger_key=key, rule_id="race", group_id=group, inputs=pins, created_at=i, updated_at=i)
            cursor = GroupCursor.initial("race", group).after(trigger, {})
            outcomes.append(stores[i].claim(trigger, cursor, None).outcome)
        return outcomes

    results = race(RACERS, claim_all)
    for index, group in enumerate(groups):
        outcomes = Counter(r[index] for r in results)
        assert outcomes[ClaimOutcome.CLAIMED] == 1, (group, outcomes)
    cursors = stores[0].get_cursors([("race", g) for g in groups])
    assert {c.seq for c in cursors.values()} == {1}


def test_racing_claims_along_one_cursor_never_fork_it_nor_go_backwards(endpoint: str) -> None:
    # Every racer reads the group's cursor and claims some newer version (each its own random pick),
    # until version 30 is claimed. The cursor condition lets one claim per cursor state through, so
    # the claims form one chain: sequences 1..n, each once, versions strictly increasing.
    stores = [DynamoDBTriggerStore(table_at(endpoint)) for _ in range(RACERS)]
    top = 30

    def climb(i: int) -> list[tuple[int, int]]:
        store, chooser, won = stores[i], random.Random(i), []
        while True:
            cursor = store.get_cursors([("chain", "g")]).get(("chain", "g"))
            at = cursor.pins[A].snapshot_id if cursor is not None else 0
            if at is None or at >= top:
                return won
            version = chooser.randint(at + 1, min(top, at + 3))
            pins = (PinnedInput(asset_key=A, snapshot_id=version),)
            base = cursor or GroupCursor.initial("chain", "g")
            trigger = Trigger(
                trigger_key=trigger_key("chain", "g", pins, None, 0),
                rule_id="chain",
                group_id="g",
                inputs=pins,
                sequence=base.seq + 1,
                created_at=version,
                updated_at=version,
            )
            if store.claim(trigger, base.after(trigger, {}), cursor).outcome is ClaimOutcome.CLAIMED:
                won.append((trigger.sequence, version))

    chain = sorted(c for won in race(RACERS, climb) for c in won)
    sequences = [seq for seq, _ in chain]
    versions = [version for _, version in chain]
    assert sequences == list(range(1, len(chain) + 1)), "two claims were made from the same cursor"
    assert versions == sorted(set(versions)) and versions[-1] == top, "the chain went backwards"
    listed = DynamoDBTriggerStore(table_at(endpoint)).list_for_rule("chain", limit=100).items
    assert [t.inputs[0].snapshot_id for t in listed] == versions[::-1]  # newest first


def test_eight_resolvers_on_the_same_changes_claim_each_key_once(endpoint: str) -> None:
    table = table_at(endpoint)
    rules = DynamoDBRuleStore(table)
    for rule_id, mode in (("each", "EACH_VERSION"), ("any", "ANY_UPDATED"), ("all", "ALL_UPDATED")):
        rules.put_rule(
            Rule.model_validate(
                {
                    "ruleId": rule_id,
                    "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
                    "policy": {"mode": mode},
                    "groups": [{"groupId": "g", "members": [{"assetKey": A}, {"assetKey": B}]}],
                }
            ),
            1,
        )
    store = DynamoDBAssetStore(table)
    ingest = ingest_events(store)
    changes = []
    for asset, snapshots in ((B, (1,)), (A, (1, 2, 3, 4))):
        for sid in snapshots:
            ingest.ingest(
                AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid), SourceType.PUSH
            )
            changes.append(StateChange(asset, store.get_state(asset)))

    resolvers = [resolver_at(endpoint) for _ in range(RACERS)]
    reports = race(RACERS, lambda i: resolvers[i](changes))
    for _ in range(3):  # head of line: each run starts (SUCCEEDED wakes the group on every resolver at once)
        for item in table.scan()["Items"]:
            if item.get("itemType") == "TRIGGER" and item["ruleId"] == "each" and item["status"] == "TRIGGERING":
                table.update_item(
                    Key={"PK": item["PK"], "SK": item["SK"]},
                    UpdateExpression="SET #s = :s",
                    ExpressionAttributeNames={"#s": "status"},
                    ExpressionAttributeValues={":s": "SUCCEEDED"},
                )
        reports += race(RACERS, lambda i: resolvers[i](deferred=[Deferral("each", "g", 0)]))
    claimed = [t.trigger_key for r in reports for t in r.claimed]
    assert len(claimed) == len(set(claimed)), "a key was claimed by two resolvers"
    triggers = DynamoDBTriggerStore(table)
    each = [[p.snapshot_id for p in t.inputs] for t in reversed(triggers.list_for_rule("each").items)]
    assert each == [[1, 1], [2, 1], [3, 1], [4, 1]]  # every version, in order, once
    assert [[p.snapshot_id for p in t.inputs] for t in triggers.list_for_rule("any").items] == [[4, 1]]
    assert [[p.snapshot_id for p in t.inputs] for t in triggers.list_for_rule("all").items] == [[4, 1]]
    assert sorted(claimed) == sorted(
        t.trigger_key for r in ("each", "any", "all") for t in triggers.list_for_rule(r).items
    )


def test_racing_replays_under_one_idempotency_key_claim_one_run_and_answer_it_to_all(endpoint: str) -> None:
    from lakehook.domain.triggers import TriggerStatus
    from lakehook.usecases.replay import ReplayTrigger
    from lakehook.usecases.spool import PreflightReplay, VerifySpoolManifest
    from tests.fakes.memory import InMemoryAssetRegistry, InMemoryAssetStore
    from tests.fakes.memory_coverage import InMemoryObjectStore, InMemorySnapshotExistence

    pins = (PinnedInput(asset_key=A, snapshot_id=1),)
    original = Trigger(
        trigger_key=trigger_key("replayed", "g", pins, None, 0),
        rule_id="replayed",
        group_id="g",
        status=TriggerStatus.SUCCEEDED,
        inputs=pins,
        created_at=1,
        updated_at=2,
        manifest_uri="s3://manifests/manifests/replayed.json",
    )
    assert DynamoDBTriggerStore(table_at(endpoint)).put_replay(original)
    preflight = PreflightReplay(
        VerifySpoolManifest(InMemoryObjectStore()),
        InMemoryAssetRegistry(),
        InMemoryAssetStore(),
        InMemorySnapshotExistence(),
    )
    replays = [ReplayTrigger(DynamoDBTriggerStore(table_at(endpoint)), preflight) for _ in range(RACERS)]

    def replay(i: int) -> Any:
        return replays[i].answer(original.trigger_key, idempotency_key="one-request")

    answers = race(RACERS, replay)
    claims = [t for t in DynamoDBTriggerStore(table_at(endpoint)).list_for_rule("replayed").items if t.replay_of]
    assert len(claims) == 1, [t.trigger_key for t in claims]  # exactly one run
    assert {a.body["replay"]["triggerKey"] for a in answers} == {claims[0].trigger_key}  # everyone is told it
    assert sorted(a.replayed for a in answers) == [False] + [True] * (RACERS - 1)
    assert {a.status for a in answers} == {201}


def test_racing_resolvers_drain_the_resolver_queue_and_claim_each_partition_once(endpoint: str) -> None:
    """Four resolvers handle the same stream batch (redelivered to each) of two commits touching 40 days, at
    small bounds, and then take the resolver queue's messages (one at a time, as the SQS event source hands them,
    some received again when a racer does not delete them) until it is empty: every day runs once, no key is
    claimed twice, and no partition is left pending. (Small: moto copies the table for every transaction.)"""

    import boto3

    from lakehook.adapters.dynamodb.partition_store import DynamoDBPartitionStore
    from lakehook.domain.state import snapshot_record

    table = table_at(endpoint)
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    url = sqs.create_queue(QueueName="resolver-race", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
    orders, payments = "paimon://lake/ods/race-orders", "paimon://lake/ods/race-payments"
    DynamoDBRuleStore(table).put_rule(
        Rule.model_validate(
            {
                "ruleId": "daily",
                "target": {"type": "eventbridge", "eventBusName": "lakehook-runs"},
                "groups": [
                    {
                        "groupId": "g",
                        "partitionBy": ["dt"],
                        "members": [{"assetKey": orders, "partition": {}}, {"assetKey": payments, "partition": {}}],
                    }
                ],
            }
        ),
        1,
    )
    days = [f"dt=2026-{1 + i // 28:02d}-{1 + i % 28:02d}" for i in range(40)]
    ingest = ingest_events(DynamoDBAssetStore(table))
    changes = []
    for asset, sid in ((payments, 1), (orders, 1)):
        event = AssetEvent(eventType=EventType.SNAPSHOT_COMMITTED, assetKey=asset, snapshotId=sid, partitions=days)
        ingest.ingest(event, SourceType.PUSH)
        changes.append(StateChange(asset, snapshot=snapshot_record(event), partitions=event.partitions))

    racers = 4
    resolvers = [
        resolver_at(endpoint, url, max_facts=25, max_claims_per_group=10, pending_page=15) for _ in range(racers)
    ]
    reports = race(racers, lambda i: resolvers[i](changes))

    def drain(i: int) -> int:
        return drain_queue(endpoint, url, resolvers[i], redeliver=0.1, seed=i)

    handled = race(racers, drain)
    assert sum(handled) > 0
    triggers = DynamoDBTriggerStore(table).list_for_rule("daily", limit=1000).items
    assert sorted(t.partition for t in triggers) == sorted(days)  # each day once
    claimed = [t.trigger_key for r in reports for t in r.claimed]
    assert len(claimed) == len(set(claimed))
    assert DynamoDBPartitionStore(table).count_pending("daily", "g") == 0
