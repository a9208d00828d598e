"""The local stack's moto adapter (lakehook.local.moto_dynamodb) answers exactly as stock moto does.

Generated operation sequences (puts, updates, deletes, gets, batch gets, table and index queries with
ranges, order, limits, filters and pages, transactions that succeed or are cancelled) run on stock moto and
on the adapted moto, each on a fresh table of the same shape; every answer, the final table and the stream
records must be the same. Then the guards: the pinned moto is the supported one and the functions the adapter
relies on read as recorded (a moto upgrade fails here, loudly), and an unsupported moto stays stock.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import moto
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from lakehook.local import moto_dynamodb
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


def _create(client: Any, name: str, ranged: bool) -> None:
    if not ranged:
        client.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        return
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK", "GSI1PK", "GSI1SK", "kind")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                    {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "ByKind",
                "KeySchema": [{"AttributeName": "kind", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )


# --- operations -----------------------------------------------------------------------------------------------

pks = st.sampled_from(["p0", "p1", "p2"])
sks = st.sampled_from(["a", "b", "b1", "c", "d"])
gsi_pks = st.sampled_from(["g0", "g1"])
numbers = st.integers(min_value=0, max_value=3).map(lambda n: {"N": str(n)})
keys = st.builds(lambda p, s: {"PK": {"S": p}, "SK": {"S": s}}, pks, sks)


@st.composite
def items(draw: Any) -> dict[str, Any]:
    item: dict[str, Any] = {**draw(keys), "n": draw(numbers)}
    if draw(st.integers(0, 3)):  # mostly in the index
        item["GSI1PK"] = {"S": draw(gsi_pks)}
        if draw(st.integers(0, 3)):
            item["GSI1SK"] = {"S": draw(sks)}
    if draw(st.booleans()):
        item["kind"] = {"S": draw(st.sampled_from(["rule", "state"]))}
    if draw(st.booleans()):
        item["pad"] = {"S": "x" * draw(st.integers(min_value=0, max_value=40))}
    return item


conditions = st.sampled_from(
    [None, "attribute_not_exists(PK)", "attribute_exists(PK)", "n = :one", "n < :one", "attribute_not_exists(nope)"]
)
updates = st.sampled_from(
    [
        "SET n = if_not_exists(n, :zero) + :one",
        "SET GSI1PK = :g, GSI1SK = :s",
        "REMOVE GSI1PK",
        "SET kind = :kind",
        "REMOVE kind, n",
    ]
)


def _values(expression: str | None, g: str = "g1", s: str = "c") -> dict[str, Any]:
    every = {":one": {"N": "1"}, ":zero": {"N": "0"}, ":g": {"S": g}, ":s": {"S": s}, ":kind": {"S": "rule"}}
    return {k: v for k, v in every.items() if expression and k in expression}


def _with_condition(request: dict[str, Any], condition: str | None, return_old: bool) -> dict[str, Any]:
    if condition:
        request["ConditionExpression"] = condition
        values = {**request.get("ExpressionAttributeValues", {}), **_values(condition)}
        if values:
            request["ExpressionAttributeValues"] = values
        if return_old:
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return request


@st.composite
def puts(draw: Any) -> tuple[str, dict[str, Any]]:
    return "put_item", _with_condition({"Item": draw(items())}, draw(conditions), draw(st.booleans()))


@st.composite
def update_requests(draw: Any) -> dict[str, Any]:
    expression = draw(updates)
    request: dict[str, Any] = {"Key": draw(keys), "UpdateExpression": expression}
    values = _values(expression, draw(gsi_pks), draw(sks))
    if values:
        request["ExpressionAttributeValues"] = values
    return _with_condition(request, draw(conditions), draw(st.booleans()))


@st.composite
def queries(draw: Any) -> tuple[str, dict[str, Any]]:
    index = draw(st.sampled_from([None, "GSI1", "ByKind"]))
    request: dict[str, Any] = {}
    if index == "ByKind":
        request.update(
            IndexName=index,
            KeyConditionExpression="kind = :h",
            ExpressionAttributeValues={":h": {"S": draw(st.sampled_from(["rule", "state"]))}},
        )
    else:
        hash_name, range_name = ("GSI1PK", "GSI1SK") if index else ("PK", "SK")
        if index:
            request["IndexName"] = index
        h = draw(gsi_pks if index else pks)
        expression = f"{hash_name} = :h"
        values: dict[str, Any] = {":h": {"S": h}}
        kind = draw(st.sampled_from([None, "begins", "between", "gt", "le"]))
        if kind == "begins":
            expression += f" AND begins_with({range_name}, :r)"
            values[":r"] = {"S": draw(st.sampled_from(["b", "c", "z"]))}
        elif kind == "between":
            expression += f" AND {range_name} BETWEEN :r AND :r2"
            values.update({":r": {"S": "a"}, ":r2": {"S": draw(sks)}})
        elif kind in ("gt", "le"):
            expression += f" AND {range_name} {'>' if kind == 'gt' else '<='} :r"
            values[":r"] = {"S": draw(sks)}
        request.update(KeyConditionExpression=expression, ExpressionAttributeValues=values)
    if draw(st.booleans()):
        request["ScanIndexForward"] = False
    if draw(st.booleans()):
        request["Limit"] = draw(st.integers(min_value=1, max_value=3))
    if draw(st.booleans()):
        request["FilterExpression"] = "n >= :f"
        request["ExpressionAttributeValues"][":f"] = {"N": "1"}
    if index is None and draw(st.booleans()):
        request["ProjectionExpression"] = "SK, n"
    if index is None and draw(st.booleans()):
        request["ConsistentRead"] = True
    return "query", request


@st.composite
def transactions(draw: Any) -> tuple[str, dict[str, Any]]:
    actions = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["Put", "Update", "Delete", "ConditionCheck"]))
        if kind == "Put":
            action = _with_condition({"Item": draw(items())}, draw(conditions), draw(st.booleans()))
        elif kind == "Update":
            action = draw(update_requests())
        elif kind == "Delete":
            action = _with_condition({"Key": draw(keys)}, draw(conditions), draw(st.booleans()))
        else:
            condition = draw(conditions.filter(bool))
            action = _with_condition({"Key": draw(keys)}, condition, draw(st.booleans()))
        actions.append({kind: action})
    return "transact_write_items", {"TransactItems": actions}


writes = st.one_of(
    puts(),
    update_requests().map(lambda r: ("update_item", r)),
    st.builds(lambda k, c, o: ("delete_item", _with_condition({"Key": k}, c, o)), keys, conditions, st.booleans()),
    transactions(),
)
reads = st.one_of(
    queries(),
    queries(),
    queries(),
    keys.map(lambda k: ("get_item", {"Key": k, "ConsistentRead": True})),
    st.lists(keys, min_size=1, max_size=4, unique_by=lambda k: (k["PK"]["S"], k["SK"]["S"])).map(
        lambda ks: ("batch_get_item", {"Keys": ks})
    ),
)
# each step a write and then reads (queries most), so that reads see every kind of write
steps = st.tuples(writes, st.lists(reads, min_size=1, max_size=3)).map(lambda step: [step[0], *step[1]])
operations = st.lists(steps, min_size=2, max_size=12).map(lambda s: [op for step in s for op in step])


# --- running a sequence -----------------------------------------------------------------------------------------


def _named(request: dict[str, Any], table: str) -> dict[str, Any]:
    request = copy.deepcopy(request)
    if "TransactItems" in request:
        for action in request["TransactItems"]:
            next(iter(action.values()))["TableName"] = table
    elif "Keys" in request:
        return {"RequestItems": {table: {"Keys": request["Keys"]}}}
    else:
        request["TableName"] = table
    return request


def _answer(client: Any, operation: str, request: dict[str, Any], table: str) -> str:
    """The answer as JSON, the table's name replaced (answers name it, e.g. in ConsumedCapacity)."""
    return json.dumps(_raw_answer(client, operation, request, table), default=str, sort_keys=True).replace(
        table, "<table>"
    )


def _raw_answer(client: Any, operation: str, request: dict[str, Any], table: str) -> Any:
    try:
        if operation == "query":
            pages = []
            while True:
                page = client.query(**_named(request, table))
                page.pop("ResponseMetadata")
                pages.append(page)
                if "LastEvaluatedKey" not in page or len(pages) > 30:
                    return pages
                request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
        answer = getattr(client, operation)(**_named(request, table))
    except ClientError as exc:
        error = exc.response["Error"]
        message = error.get("Message", "").replace(table, "<table>")
        return ("error", error["Code"], message, exc.response.get("CancellationReasons"), exc.response.get("Item"))
    answer.pop("ResponseMetadata")
    if operation == "batch_get_item":
        got = answer["Responses"][table]
        return sorted(got, key=lambda i: (i["PK"]["S"], i["SK"]["S"]))
    return answer


def _moto_table(table: str) -> Any:
    # in-process moto serves no DynamoDB Streams endpoint: read the stream from moto's own model
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table(table)


def _stream(client: Any, table: str) -> list[Any]:
    shard = _moto_table(table).stream_shard
    records = shard.get(shard.starting_sequence_number, 100_000)
    return [
        {k: v for k, v in r["dynamodb"].items() if k not in ("ApproximateCreationDateTime", "SizeBytes")}
        | {"event": r["eventName"]}
        for r in records
    ]


def _run(client: Any, ops: list[tuple[str, dict[str, Any]]], adapted: bool) -> tuple[list[Any], list[Any], Any]:
    table = f"{'adapted' if adapted else 'stock'}-{next(_names)}"
    with moto_dynamodb.adapted(adapted):
        _create(client, table, ranged=True)
        try:
            answers = [_answer(client, op, request, table) for op, request in ops]
            scan = client.scan(TableName=table, ConsistentRead=True)["Items"]
            return answers, scan, _stream(client, table)
        finally:
            client.delete_table(TableName=table)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
def test_adapted_moto_answers_as_stock_moto(client: Any, ops: list[tuple[str, dict[str, Any]]]) -> None:
    # GIVEN the same operations WHEN run on stock moto and on the adapted one THEN every answer is the same
    stock = _run(client, ops, adapted=False)
    fast = _run(client, ops, adapted=True)
    assert fast[0] == stock[0]
    assert fast[1] == stock[1], "the tables differ after the same operations"
    assert fast[2] == stock[2], "the stream records differ"


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(
        st.one_of(
            st.builds(
                lambda i, n, c: ("put_item", _with_condition({"Item": {"id": {"N": str(i)}, "n": n}}, c, False)),
                st.integers(0, 5),
                numbers,
                st.sampled_from([None, "attribute_not_exists(id)", "n = :one"]),
            ),
            st.integers(0, 5).map(
                lambda i: (
                    "query",
                    {"KeyConditionExpression": "id = :h", "ExpressionAttributeValues": {":h": {"N": str(i)}}},
                )
            ),
            st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(
                lambda ids: (
                    "transact_write_items",
                    {
                        "TransactItems": [
                            {
                                "Update": {
                                    "Key": {"id": {"N": str(i)}},
                                    "UpdateExpression": "SET n = :one",
                                    "ConditionExpression": "attribute_exists(id)",
                                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                                }
                            }
                            for i in ids
                        ]
                    },
                )
            ),
        ),
        min_size=1,
        max_size=15,
    )
)
def test_adapted_moto_answers_as_stock_moto_on_a_hash_only_table(
    client: Any, ops: list[tuple[str, dict[str, Any]]]
) -> None:
    answers = []
    for adapted in (False, True):
        table = f"hash-{'adapted' if adapted else 'stock'}-{next(_names)}"
        with moto_dynamodb.adapted(adapted):
            _create(client, table, ranged=False)
            try:
                run = [_answer(client, op, request, table) for op, request in ops]
                scan = client.scan(TableName=table)["Items"]
                answers.append((run, sorted(scan, key=lambda i: int(i["id"]["N"])), _stream(client, table)))
            finally:
                client.delete_table(TableName=table)
    assert answers[1] == answers[0]


# --- what the adapter changes -------------------------------------------------------------------------------------


def _fill(client: Any, table: str, partitions: int, per_partition: int) -> None:
    for p in range(partitions):
        for s in range(per_partition):
            client.put_item(
                TableName=table,
                Item={"PK": {"S": f"p{p}"}, "SK": {"S": f"s{s:03d}"}, "GSI1PK": {"S": f"g{p}"}, "GSI1SK": {"S": "x"}},
            )


def test_queries_walk_one_partition_not_the_table(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    table = f"walk-{next(_names)}"
    with moto_dynamodb.adapted(True):
        _create(client, table, ranged=True)
        _fill(client, table, partitions=20, per_partition=5)
        walked: list[int] = []
        stock_all_items = moto_dynamodb._stock[moto_dynamodb._TABLE_ALL_ITEMS]

        def counting(self: Any) -> Any:
            items = stock_all_items(self)
            walked.append(len(items))
            return items

        # the index is built once (one walk), then never again; table queries never walk the table
        monkeypatch.setitem(moto_dynamodb._stock, moto_dynamodb._TABLE_ALL_ITEMS, counting)
        for p in range(20):
            page = client.query(
                TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": f"p{p}"}}
            )
            assert [i["SK"]["S"] for i in page["Items"]] == [f"s{s:03d}" for s in range(5)]
        assert walked == []
        for p in range(20):
            page = client.query(
                TableName=table,
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :g",
                ExpressionAttributeValues={":g": {"S": f"g{p}"}},
            )
            assert page["Count"] == 5
        assert walked == [100]
        monkeypatch.undo()  # before the block gives moto its functions back
        client.delete_table(TableName=table)


def test_a_range_query_hands_moto_only_the_items_its_range_condition_keeps(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an asset's partition holds every event record and a few rules: a rule lookup must not grow with the events
    table = f"range-{next(_names)}"
    with moto_dynamodb.adapted(True):
        _create(client, table, ranged=True)
        for s in range(300):
            client.put_item(TableName=table, Item={"PK": {"S": "asset"}, "SK": {"S": f"EVENT#{s:04d}"}})
        for r in ("a", "b", "c"):
            client.put_item(TableName=table, Item={"PK": {"S": "asset"}, "SK": {"S": f"RULE#{r}"}})
        handed: list[int] = []
        narrowed = moto_dynamodb._partition_range_items

        def counting(*args: Any) -> list[Any]:
            items = narrowed(*args)
            handed.append(len(items))
            return items

        monkeypatch.setattr(moto_dynamodb, "_partition_range_items", counting)
        cases = [
            ("begins_with(SK, :r)", {":r": {"S": "RULE#"}}, ["RULE#a", "RULE#b", "RULE#c"]),
            ("SK BETWEEN :r AND :r2", {":r": {"S": "EVENT#0010"}, ":r2": {"S": "EVENT#0012"}}, None),
            ("SK > :r", {":r": {"S": "RULE#a"}}, ["RULE#b", "RULE#c"]),
        ]
        for condition, values, expected in cases:
            page = client.query(
                TableName=table,
                KeyConditionExpression=f"PK = :p AND {condition}",
                ExpressionAttributeValues={":p": {"S": "asset"}} | values,
            )
            found = [i["SK"]["S"] for i in page["Items"]]
            assert found == (expected or ["EVENT#0010", "EVENT#0011", "EVENT#0012"])
        assert handed == [4, 5, 3]  # the matches, and the nearest item on either side (for Limit's stop)
        monkeypatch.undo()
        client.delete_table(TableName=table)


def test_a_range_query_that_takes_limit_items_says_there_may_be_more_as_stock_moto_does(client: Any) -> None:
    # found by test_adapted_moto_answers_as_stock_moto: moto stops with a LastEvaluatedKey when Limit items are
    # taken and its walk has any item left, one its range condition refuses too
    answers = []
    for adapted in (False, True):
        table = f"limit-{next(_names)}"
        with moto_dynamodb.adapted(adapted):
            _create(client, table, ranged=True)
            for sk in ("a", "b", "c"):
                client.put_item(TableName=table, Item={"PK": {"S": "p0"}, "SK": {"S": sk}})
            request = {"ExpressionAttributeValues": {":h": {"S": "p0"}, ":r": {"S": "b"}}, "Limit": 1}
            answers.append(
                [
                    _answer(client, "query", {**request, "KeyConditionExpression": condition, **order}, table)
                    for condition in ("PK = :h AND begins_with(SK, :r)", "PK = :h AND SK <= :r", "PK = :h AND SK >= :r")
                    for order in ({}, {"ScanIndexForward": False})
                ]
            )
            client.delete_table(TableName=table)
    stock, fast = answers
    assert fast == stock
    assert all("LastEvaluatedKey" in answer for answer in stock)  # each stops at its first match


def test_a_cancelled_transaction_copies_no_table_and_keeps_the_stream_flowing(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    table = f"journal-{next(_names)}"
    copied: list[str] = []
    real_deepcopy = copy.deepcopy

    def watching(value: Any, memo: Any = None) -> Any:
        if isinstance(value, Table):
            copied.append(value.name)
        return real_deepcopy(value, memo)

    with moto_dynamodb.adapted(True):
        _create(client, table, ranged=True)
        _fill(client, table, partitions=2, per_partition=3)
        # a stream reader's shard iterator holds the shard object and the next sequence number
        shard = _moto_table(table).stream_shard
        assert len(shard.get(shard.starting_sequence_number, 100)) == 6
        next_sequence = shard.starting_sequence_number + 6
        monkeypatch.setattr(models.copy, "deepcopy", watching)

        # WHEN a transaction writes one item, then fails a condition on another
        with pytest.raises(ClientError) as cancelled:
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": {"PK": {"S": "p0"}, "SK": {"S": "new"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"PK": {"S": "p1"}, "SK": {"S": "s000"}},
                            "ConditionExpression": "attribute_not_exists(PK)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                ]
            )
        reasons = cancelled.value.response["CancellationReasons"]
        assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
        assert reasons[1]["Item"]["SK"] == {"S": "s000"}
        assert copied == []
        # THEN the put is gone, and a later write reaches a reader holding its old iterator, without the put
        assert "Item" not in client.get_item(TableName=table, Key={"PK": {"S": "p0"}, "SK": {"S": "new"}})
        client.put_item(TableName=table, Item={"PK": {"S": "p0"}, "SK": {"S": "after"}})
        later = shard.get(next_sequence, 100)
        assert [r["dynamodb"]["Keys"]["SK"]["S"] for r in later] == ["after"]
        client.delete_table(TableName=table)


# --- guards -------------------------------------------------------------------------------------------------------


def test_the_pinned_moto_is_the_one_the_adapter_supports() -> None:
    pinned = re.search(r"^moto==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE)
    assert pinned, "constraints.txt pins no moto"
    assert pinned.group(1) in moto_dynamodb.SUPPORTED_MOTO_VERSIONS
    assert moto.__version__ == pinned.group(1)


def test_moto_internals_the_adapter_relies_on_are_unchanged() -> None:
    # A moto upgrade lands here: re-read each function named, re-check the adapter against it, then record
    # the new version in SUPPORTED_MOTO_VERSIONS and the new sha256 in FINGERPRINTS.
    assert moto_dynamodb.problems() == []


def test_an_unsupported_moto_stays_stock_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb.models.table import Table

    with moto_dynamodb.adapted(False):
        stock_query = Table.query
        monkeypatch.setattr(moto, "__version__", "0.0.1")
        with pytest.warns(RuntimeWarning, match=r"moto 0\.0\.1 is not a supported version"):
            assert moto_dynamodb.install() is False
        assert Table.query is stock_query
        with pytest.raises(moto_dynamodb.UnsupportedMotoError, match="not a supported version"):
            moto_dynamodb.install(strict=True)
        assert not moto_dynamodb.installed()
        monkeypatch.undo()


def test_a_changed_moto_function_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "moto.dynamodb.models.table:Table.query"
    monkeypatch.setitem(moto_dynamodb.FINGERPRINTS, name, "0" * 16)
    found = moto_dynamodb.problems()
    assert len(found) == 1
    assert found[0].startswith(f"{name} changed")
