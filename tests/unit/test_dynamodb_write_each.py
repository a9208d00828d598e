"""write_each (adapters/dynamodb/transactions.py): independent conditional writes made up to 100 to a transaction.
On moto: what is made is what single conditional writes in order would make, in a request per 100 writes (one more
per transaction a failed condition cancelled). Against a fake DynamoDB client answering as DynamoDB documents a
cancelled transaction (``TransactionCanceledException`` with one ``CancellationReasons`` entry per action, in
order: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html): a conflict with
another transaction is made again action by action, a throttle (or a single write meeting a transaction,
``TransactionConflictException``) again after a backoff, a few times, and any other cancellation raises."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from lakehook.adapters.dynamodb.transactions import MAX_TRANSACTION_ITEMS, RETRIES, write_each
from tests.hypothesis_profiles import examples
from tests.support import RequestCounter, create_table

TABLE = "write-each"


def put(pk: str, order: int) -> dict[str, Any]:
    """A put kept only over an older item (as a partition fact's)."""
    return {
        "Put": {
            "TableName": TABLE,
            "Item": {"PK": pk, "SK": "F", "order": order},
            "ConditionExpression": "attribute_not_exists(PK) OR #order < :order",
            "ExpressionAttributeNames": {"#order": "order"},
            "ExpressionAttributeValues": {":order": order},
        }
    }


def in_order(kept: dict[str, int], writes: list[tuple[str, int]]) -> list[bool]:
    """What single conditional puts, one after the other, make (the reference)."""
    made = []
    for pk, order in writes:
        made.append(pk not in kept or kept[pk] < order)
        if made[-1]:
            kept[pk] = order
    return made


@settings(max_examples=examples(10), deadline=None)
@given(
    before=st.dictionaries(st.integers(0, 300).map(str), st.integers(0, 5), max_size=50),
    writes=st.lists(st.tuples(st.integers(0, 300).map(str), st.integers(0, 5)), max_size=130),
)
@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_what_is_made_is_what_single_writes_in_order_make_in_a_request_per_hundred(
    before: dict[str, int], writes: list[tuple[str, int]]
) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        for pk, order in before.items():
            table.put_item(Item={"PK": pk, "SK": "F", "order": order})
        counter = RequestCounter().attach(table.meta.client)

        made = write_each(table.meta.client, [put(pk, order) for pk, order in writes])
        requests = dict(counter.calls)

        reference = dict(before)
        expected = in_order(reference, writes)
        assert made == expected
        assert {i["PK"]: int(i["order"]) for i in table.scan()["Items"]} == reference
        repeated = len(writes) - len({pk for pk, _ in writes})
        failed = expected.count(False)
        # one transaction per 100 writes at least; each failed condition costs at most one more (its transaction is
        # made again without it), each repeated item at most one more (it waits for a transaction of its own)
        assert set(requests) <= {"TransactWriteItems", "PutItem"}  # one write alone is a PutItem
        transactions = requests.get("TransactWriteItems", 0) + requests.get("PutItem", 0)
        assert math.ceil(len(writes) / MAX_TRANSACTION_ITEMS) <= transactions
        assert transactions <= math.ceil(len(writes) / MAX_TRANSACTION_ITEMS) + failed + repeated


@pytest.mark.slow  # a bound at scale (hundreds of partitions or items): make test runs it
def test_250_new_items_take_three_requests() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        counter = RequestCounter().attach(table.meta.client)
        assert write_each(table.meta.client, [put(f"p{i}", 1) for i in range(250)]) == [True] * 250
        assert dict(counter.calls) == {"TransactWriteItems": 3}


class _Cancelling:
    """A DynamoDB client whose transactions are cancelled with the given codes per action, as DynamoDB answers,
    until it has answered them all; then it makes each transaction (recording its actions). Its single writes are
    refused with ``single`` errors (DynamoDB's ``TransactionConflictException`` while another transaction holds the
    item), then made."""

    def __init__(self, *answers: list[str], single: list[str] | None = None) -> None:
        self.answers = list(answers)
        self.single = list(single or [])
        self.made: list[list[str]] = []

    def transact_write_items(self, TransactItems: list[dict[str, Any]], ClientRequestToken: str) -> dict[str, Any]:
        assert ClientRequestToken
        names = [a["Put"]["Item"]["PK"] for a in TransactItems]
        if self.answers:
            codes = self.answers.pop(0)
            assert len(codes) == len(TransactItems)
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
                    "CancellationReasons": [{"Code": code} for code in codes],
                },
                "TransactWriteItems",
            )
        self.made.append(names)
        return {}

    def put_item(self, **request: Any) -> dict[str, Any]:
        if self.single:
            raise ClientError({"Error": {"Code": self.single.pop(0), "Message": "refused"}}, "PutItem")
        self.made.append([request["Item"]["PK"]])
        return {}


def _no_wait(seconds: float) -> None:
    assert 0 <= seconds <= 0.05 * 2**RETRIES


def test_a_conflict_with_another_transaction_is_made_again_write_by_write() -> None:
    client = _Cancelling(["None", "TransactionConflict", "None"])
    assert write_each(client, [put("a", 1), put("b", 1), put("c", 1)], _no_wait) == [True, True, True]
    assert client.made == [["a"], ["b"], ["c"]]


def test_a_failed_condition_drops_only_its_write_and_the_others_go_again() -> None:
    client = _Cancelling(["None", "ConditionalCheckFailed", "None"])
    assert write_each(client, [put("a", 1), put("b", 1), put("c", 1)], _no_wait) == [True, False, True]
    assert client.made == [["a", "c"]]


@pytest.mark.parametrize("code", ["ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"])
def test_a_throttled_transaction_is_made_again_after_a_backoff_and_raises_when_it_stays_throttled(code: str) -> None:
    waits: list[float] = []
    client = _Cancelling(*[["None", code]] * RETRIES)
    assert write_each(client, [put("a", 1), put("b", 1)], waits.append) == [True, True]
    assert client.made == [["a", "b"]] and len(waits) == RETRIES
    with pytest.raises(ClientError):
        write_each(_Cancelling(*[["None", code]] * (RETRIES + 1)), [put("a", 1), put("b", 1)], _no_wait)


def test_a_single_write_meeting_another_transaction_is_made_again() -> None:
    client = _Cancelling(single=["TransactionConflictException"] * RETRIES)
    assert write_each(client, [put("a", 1)], _no_wait) == [True]
    with pytest.raises(ClientError):
        write_each(_Cancelling(single=["TransactionConflictException"] * (RETRIES + 1)), [put("a", 1)], _no_wait)


@pytest.mark.parametrize("codes", [["ValidationError", "None"], ["None", "ItemCollectionSizeLimitExceeded"]])
def test_any_other_cancellation_raises(codes: list[str]) -> None:
    with pytest.raises(ClientError):
        write_each(_Cancelling(codes), [put("a", 1), put("b", 1)], _no_wait)


def test_any_other_error_of_a_single_write_raises() -> None:
    with pytest.raises(ClientError):
        write_each(_Cancelling(single=["ValidationException"]), [put("a", 1)], _no_wait)


def test_one_write_is_a_single_conditional_write() -> None:
    client = _Cancelling()
    assert write_each(client, [put("a", 1)]) == [True]
    assert client.made == [["a"]]
