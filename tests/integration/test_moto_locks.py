"""The local DynamoDB under concurrent requests (lakehook.local.moto_locks on a ThreadedMotoServer).

Threads hammer one moto server over loopback, as the local stack's functions do: conditional updates on one
item lose nothing, a transaction meeting an item another request holds is cancelled with TransactionConflict,
transactions racing to claim one key let exactly one win, and the stream numbers every write once, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from lakehook.local import moto_locks
from lakehook.ports.rules import Claim, ClaimOutcome
from tests.racing import first_transaction_waits_for_a_rival

pytestmark = pytest.mark.integration

TABLE = "locks"
THREADS = 8


def _client(local_moto: str) -> Any:
    config = Config(retries={"mode": "standard", "max_attempts": 1}, max_pool_connections=THREADS)
    return boto3.client(
        "dynamodb",
        endpoint_url=local_moto,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=config,
    )


@pytest.fixture()
def table(local_moto: str) -> Iterator[Any]:
    client = _client(local_moto)
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK")],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    yield client
    client.delete_table(TableName=TABLE)
    assert moto_locks.item_locks.held() == 0  # every request let its item go


def _key(pk: str, sk: str = "s") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _run(threads: int, work: Any) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            work(index)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    started = [threading.Thread(target=guarded, args=(i,)) for i in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(timeout=120)
    return errors


def _code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def test_conditional_updates_on_one_item_lose_nothing(table: Any, local_moto: str) -> None:
    """Read, then write only if nobody wrote meanwhile (optimistic locking): every increment lands once."""
    table.put_item(TableName=TABLE, Item={**_key("counter"), "n": {"N": "0"}})
    per_thread = 25
    landed = [0] * THREADS

    def work(index: int) -> None:
        client = _client(local_moto)
        while landed[index] < per_thread:
            seen = client.get_item(TableName=TABLE, Key=_key("counter"), ConsistentRead=True)["Item"]["n"]["N"]
            try:
                client.update_item(
                    TableName=TABLE,
                    Key=_key("counter"),
                    UpdateExpression="SET n = :next",
                    ConditionExpression="n = :seen",
                    ExpressionAttributeValues={":seen": {"N": seen}, ":next": {"N": str(int(seen) + 1)}},
                )
                landed[index] += 1
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise

    assert _run(THREADS, work) == []
    final = table.get_item(TableName=TABLE, Key=_key("counter"))["Item"]["n"]["N"]
    assert int(final) == THREADS * per_thread == sum(landed)


def test_a_transaction_meeting_a_held_item_is_cancelled_with_transaction_conflict(table: Any) -> None:
    """An item held by a request in progress (its lock taken here) cancels a transaction naming it."""
    held = moto_locks.item_key(_Backend(), TABLE, _key("a"))
    assert held is not None
    assert moto_locks.item_locks.acquire(held, blocking=False)
    try:
        with pytest.raises(ClientError) as caught:
            table.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": TABLE, "Item": {**_key("b"), "v": {"N": "1"}}}},
                    {"Put": {"TableName": TABLE, "Item": {**_key("a"), "v": {"N": "1"}}}},
                ]
            )
    finally:
        moto_locks.item_locks.release(held)
    assert _code(caught.value) == "TransactionCanceledException"
    reasons = [r["Code"] for r in caught.value.response["CancellationReasons"]]
    assert reasons == ["None", "TransactionConflict"]
    assert "Item" not in table.get_item(TableName=TABLE, Key=_key("b"))  # nothing of it was written
    table.transact_write_items(  # once the item is free, the same transaction goes through
        TransactItems=[{"Put": {"TableName": TABLE, "Item": {**_key(pk), "v": {"N": "1"}}}} for pk in ("a", "b")]
    )
    assert table.get_item(TableName=TABLE, Key=_key("a"))["Item"]["v"] == {"N": "1"}


class _Backend:
    """Just what item_key reads of moto's backend: the table's key schema."""

    class _Table:
        hash_key_attr, range_key_attr = "PK", "SK"

    def get_table(self, name: str) -> Any:
        return self._Table()


def test_racing_claims_let_exactly_one_win_and_conflicts_show(table: Any, local_moto: str) -> None:
    """Claims on overlapping items: each key is won once; losers see the condition or a conflict, never both win."""
    keys, rounds = 3, 20
    outcomes: list[tuple[int, str]] = []
    lock = threading.Lock()

    def work(index: int) -> None:
        client = _client(local_moto)
        for claim in range(rounds):
            items = [
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {**_key(f"claim{claim}", f"k{k}"), "owner": {"N": str(index)}},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
                for k in range(keys)
            ]
            items.append(
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": _key("wins"),
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                }
            )
            while True:
                try:
                    client.transact_write_items(TransactItems=items)
                    outcome = "won"
                except ClientError as exc:
                    codes = {r["Code"] for r in exc.response.get("CancellationReasons", [])} - {"None"}
                    if codes == {"TransactionConflict"}:
                        with lock:
                            outcomes.append((claim, "conflict"))
                        continue  # as lakehook does: a pure conflict is retried
                    assert "ConditionalCheckFailed" in codes, exc.response
                    outcome = "lost"
                with lock:
                    outcomes.append((claim, outcome))
                break

    with first_transaction_waits_for_a_rival():  # the claims meet at least once, whatever the scheduler does
        assert _run(THREADS, work) == []
    for claim in range(rounds):
        assert [o for c, o in outcomes if c == claim].count("won") == 1
        owners = {
            table.get_item(TableName=TABLE, Key=_key(f"claim{claim}", f"k{k}"))["Item"]["owner"]["N"]
            for k in range(keys)
        }
        assert len(owners) == 1  # one transaction wrote every item of the claim
    wins = table.get_item(TableName=TABLE, Key=_key("wins"))["Item"]["n"]["N"]
    assert int(wins) == rounds
    assert any(o == "conflict" for _, o in outcomes), "no TransactionConflict under contention"


def test_the_stream_numbers_every_concurrent_write_once_in_order(table: Any, local_moto: str) -> None:
    per_thread = 30

    def work(index: int) -> None:
        client = _client(local_moto)
        for n in range(per_thread):
            client.put_item(TableName=TABLE, Item={**_key(f"t{index}", f"n{n:03d}"), "n": {"N": str(n)}})

    assert _run(THREADS, work) == []
    streams = boto3.client(
        "dynamodbstreams",
        endpoint_url=local_moto,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    arn = table.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    sequence = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert len(records) == THREADS * per_thread
    assert sequence == sorted(set(sequence))
    for index in range(THREADS):  # each writer's records in the order it wrote them
        mine = [r["dynamodb"]["NewImage"]["n"]["N"] for r in records if r["dynamodb"]["Keys"]["PK"]["S"] == f"t{index}"]
        assert mine == [str(n) for n in range(per_thread)]


def test_claims_made_together_that_meet_a_conflict_are_made_one_by_one(local_moto: str) -> None:
    """lakehook's trigger store on this server: a transaction of several claims that meets an item another request
    holds (one claim's cursor, held here for the first transaction only) is cancelled with TransactionConflict, and
    the claims are then made each in a transaction of its own, all of them."""
    from lakehook.adapters.dynamodb import keys
    from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
    from tests.contracts.builders import cursor_after, initial, trigger
    from tests.support import create_table

    client = _client(local_moto)
    create_table(client, "claims-conflict")
    resource = boto3.resource(
        "dynamodb",
        endpoint_url=local_moto,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    store = DynamoDBTriggerStore(resource.Table("claims-conflict"))
    claims = []
    for group in ("a", "b", "c"):
        made = trigger(1, group_id=group)
        claims.append(Claim(made, cursor_after(initial("dwd", group), made), None))
    held = moto_locks.item_key(
        _Backend(), "claims-conflict", {k: {"S": v} for k, v in keys.cursor_key("dwd", "b").items()}
    )
    assert held is not None
    sent: list[int] = []

    def hold_first(params: dict[str, Any], **_: Any) -> None:
        sent.append(len(params["TransactItems"]))
        if len(sent) == 1:
            assert moto_locks.item_locks.acquire(held, blocking=False)

    def release_first(**_: Any) -> None:
        if len(sent) == 1:
            moto_locks.item_locks.release(held)

    events = store._client.meta.events
    events.register("provide-client-params.dynamodb.TransactWriteItems", hold_first)
    events.register("after-call.dynamodb.TransactWriteItems", release_first)
    conflicts = moto_locks.conflicts

    answers = store.claim_many(claims)

    assert [a.outcome for a in answers] == [ClaimOutcome.CLAIMED] * 3
    assert moto_locks.conflicts == conflicts + 1
    assert sent == [6, 2, 2, 2]  # the three together, then each alone
    assert store.get_cursors([c.ref for c in claims]) == {c.ref: c.cursor for c in claims}
    client.delete_table(TableName="claims-conflict")
