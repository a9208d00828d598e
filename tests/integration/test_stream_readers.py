"""The local stack's two stream readers give the same records (lakehook.local.moto_streams).

The stack reads the table's stream from moto's memory; Lambda reads it through the Streams API. Hypothesis
writes sequences of every kind of write (PutItem, UpdateItem, DeleteItem, a transaction, a cancelled
transaction, a refused conditional write) with attributes of every DynamoDB type to a ThreadedMotoServer
over loopback, and both readers must then answer the same records, field for field, in the same order,
including what a cancelled transaction or a refused write did not append. A moto whose stream internals
changed fails here (and :func:`moto_streams.problems` names it).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehook.local import moto_dynamodb, moto_streams
from tests.hypothesis_profiles import examples
from tests.support import create_table

pytestmark = pytest.mark.integration

_tables = itertools.count()


def _clients(local_moto: str) -> tuple[Any, Any]:
    options = {
        "endpoint_url": local_moto,
        "region_name": "us-east-1",
        "aws_access_key_id": "local",
        "aws_secret_access_key": "local",
    }
    return boto3.client("dynamodb", **options), boto3.client("dynamodbstreams", **options)


def _table(client: Any, name: str | None = None) -> tuple[str, str]:
    """A table made as template.yaml declares it (keys, index, stream, TTL); its name and stream ARN."""
    name = name or f"streams{next(_tables)}"
    create_table(client, name)
    return name, client.describe_table(TableName=name)["Table"]["LatestStreamArn"]


_text = st.text(alphabet="abcxyz-é☃", min_size=1, max_size=6)
_number = st.integers(min_value=-(10**6), max_value=10**6).map(str)
_binary = st.binary(min_size=1, max_size=6)
_scalar = st.one_of(
    _text.map(lambda v: {"S": v}),
    _number.map(lambda v: {"N": v}),
    _binary.map(lambda v: {"B": v}),
    st.booleans().map(lambda v: {"BOOL": v}),
    st.just({"NULL": True}),
    st.sets(_text, min_size=1, max_size=3).map(lambda v: {"SS": sorted(v)}),
    st.sets(_number, min_size=1, max_size=3).map(lambda v: {"NS": sorted(v)}),
    st.sets(_binary, min_size=1, max_size=3).map(lambda v: {"BS": sorted(v)}),
)
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.sampled_from(["m", "n", "o"]), inner, max_size=3).map(lambda v: {"M": v}),
    ),
    max_leaves=6,
)
_attributes = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _value, max_size=3)
_key = st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.sampled_from(["s1", "s2"]))
_write = st.one_of(
    st.tuples(st.just("put"), _key, _attributes),
    st.tuples(st.just("update"), _key, _attributes),
    st.tuples(st.just("delete"), _key, st.just({})),
    st.tuples(st.just("transact"), _key, _attributes),
    st.tuples(st.just("cancelled"), _key, _attributes),
    st.tuples(st.just("refused"), _key, _attributes),
)


def _apply(client: Any, table: str, write: tuple[str, tuple[str, str], dict[str, Any]]) -> None:
    kind, (pk, sk), attributes = write
    key = {"PK": {"S": pk}, "SK": {"S": sk}}
    item = key | attributes
    if kind == "put":
        client.put_item(TableName=table, Item=item)
    elif kind == "update":
        if not attributes:
            client.update_item(TableName=table, Key=key, UpdateExpression="REMOVE a")
            return
        names = {f"#{n}": n for n in attributes}
        values = {f":{n}": v for n, v in attributes.items()}
        expression = "SET " + ", ".join(f"#{n} = :{n}" for n in attributes)
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    elif kind == "delete":
        client.delete_item(TableName=table, Key=key)
    elif kind == "transact":
        other = {"PK": {"S": pk + "-t"}, "SK": {"S": sk}}
        client.transact_write_items(
            TransactItems=[{"Put": {"TableName": table, "Item": item}}, {"Put": {"TableName": table, "Item": other}}]
        )
    elif kind == "cancelled":  # the second action's condition fails: the first one's record must not stay
        with pytest.raises(ClientError, match="TransactionCanceled"):
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": item | {"cancelled": {"BOOL": True}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"PK": {"S": "never"}, "SK": {"S": "written"}},
                            "ConditionExpression": "attribute_exists(PK)",
                        }
                    },
                ]
            )
    else:  # a refused conditional write appends nothing
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):
            client.put_item(TableName=table, Item=item, ConditionExpression="attribute_exists(never)")


def _read_all(reader: moto_streams.StreamReader) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    while batch := reader.read():
        records += batch
    return records


def test_this_moto_can_be_read_in_process() -> None:
    assert moto_streams.problems() == []


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(writes=st.lists(_write, min_size=1, max_size=8), split=st.integers(min_value=0, max_value=8))
def test_both_readers_give_the_same_records(local_moto: str, writes: list[Any], split: int) -> None:
    client, streams = _clients(local_moto)
    table, stream_arn = _table(client)
    try:
        http = moto_streams.HttpStreamReader(streams, stream_arn)
        memory = moto_streams.MotoStreamReader(stream_arn)
        seen_http: list[dict[str, Any]] = []
        seen_memory: list[dict[str, Any]] = []
        for index, write in enumerate(writes):
            if index == split:  # read part-way too: both readers carry on from where they were
                seen_http += _read_all(http)
                seen_memory += _read_all(memory)
            _apply(client, table, write)
        seen_http += _read_all(http)
        seen_memory += _read_all(memory)
        assert seen_memory == seen_http
        assert {r["eventSourceARN"] for r in seen_memory} <= {stream_arn}
        sequence = [int(r["dynamodb"]["SequenceNumber"]) for r in seen_memory]
        assert sequence == sorted(set(sequence))  # each record once, in order
        assert not any("cancelled" in (r["dynamodb"].get("NewImage") or {}) for r in seen_memory)
    finally:
        client.delete_table(TableName=table)


def test_the_in_process_reader_reads_a_new_stream_from_its_start(local_moto: str) -> None:
    client, _ = _clients(local_moto)
    table, stream_arn = _table(client)
    reader = moto_streams.MotoStreamReader(stream_arn)
    client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "1"}})
    client.put_item(TableName=table, Item={"PK": {"S": "b"}, "SK": {"S": "1"}})
    assert [r["eventName"] for r in reader.read()] == ["INSERT", "INSERT"]
    client.delete_table(TableName=table)
    assert reader.read() == []  # no table, no stream
    time.sleep(0.001)  # moto labels a stream with its creation time
    _, new_arn = _table(client, table)
    try:
        client.put_item(TableName=table, Item={"PK": {"S": "c"}, "SK": {"S": "1"}})
        records = reader.read()
        assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in records] == ["c"]  # the new stream's first record
        assert new_arn != stream_arn and {r["eventSourceARN"] for r in records} == {new_arn}
    finally:
        client.delete_table(TableName=table)


def test_a_changed_moto_function_is_named() -> None:
    changed = dict(moto_streams.FINGERPRINTS) | {"moto.dynamodb.models.table:StreamShard.get": "0" * 16}
    assert any("StreamShard.get changed" in p for p in moto_dynamodb.problems(changed))
