"""DynamoDBDedupStore on a moto server that applies one request at a time (as DynamoDB does): of many
deliveries of one trigger key racing, exactly one starts the run; the others see it in progress or answered."""

from __future__ import annotations

from typing import Any

import boto3

from lakehook.receiver import DynamoDBDedupStore
from tests.racing import atomic_dynamodb_server, race


def client(url: str) -> Any:
    return boto3.session.Session(region_name="us-east-1").client("dynamodb", endpoint_url=url)


def create(url: str, table: str) -> str:
    client(url).create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return table


def test_one_of_many_racing_deliveries_starts_the_run() -> None:
    with atomic_dynamodb_server("lakehook-race-main") as url:
        table = create(url, "receiver-dedup-race")
        for key in ("r.g.race1", "r.g.race2", "r.g.race3"):
            outcomes = race(8, lambda _, key=key: DynamoDBDedupStore(client(url), table).begin(key))
            assert sum(o is None for o in outcomes) == 1
            assert all(o.in_progress for o in outcomes if o is not None)


def test_answers_are_repeated_released_keys_start_again_and_expired_ones_count_as_absent() -> None:
    with atomic_dynamodb_server("lakehook-answers-main") as url:
        table = create(url, "receiver-dedup-answers")
        now = [1_000.0]
        store = DynamoDBDedupStore(client(url), table, ttl_seconds=60, clock=lambda: now[0])
        assert store.begin("k") is None
        store.finish("k", {"runId": "run-1", "triggerKey": "k"})
        seen = store.begin("k")
        assert seen is not None and seen.answer == {"runId": "run-1", "triggerKey": "k"}
        item = client(url).get_item(TableName=table, Key={"pk": {"S": "lakehook-trigger#k"}})["Item"]
        assert item["expiresAt"] == {"N": "1060"}  # epoch seconds, for the table's TTL

        assert store.begin("released") is None
        store.release("released")
        assert store.begin("released") is None

        now[0] += 61  # past its TTL, not yet deleted by DynamoDB: absent
        assert store.begin("k") is None
