"""The adapted moto writes DynamoDB's attribute values into an answer exactly as stock moto's serializer does
(lakehook.local.moto_answers), and without walking botocore's shape model for each of them.

Generated attribute values (every type, nested maps and lists, empty strings and sets, binary as bytes and as
text, and values moto's own code must take: unknown or lower-case members, a string where a value should be, a
tuple for a list) are serialized as a ``GetItem``, a ``Query`` and a DynamoDB Streams ``GetRecords`` answer by
moto's serializer, stock and adapted: the JSON bodies must be the same, character for character.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto.core import serialize
from moto.core.responses import BaseResponse, get_service_model

from lakehook.local import moto_dynamodb
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.integration

_text = st.text(max_size=6)
_odd_scalar = st.one_of(st.none(), st.integers(-5, 5), st.just({}), st.just([]))
_wire_leaf: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.builds(lambda v: {"S": v}, st.one_of(_text, _odd_scalar)),
    st.builds(lambda v: {"N": v}, st.one_of(st.integers().map(str), st.integers())),
    st.builds(lambda v: {"B": v}, st.one_of(st.binary(max_size=6), _text)),
    st.builds(lambda v: {"SS": v}, st.lists(st.one_of(_text, _odd_scalar), max_size=3)),
    st.builds(lambda v: {"NS": v}, st.lists(st.one_of(st.integers().map(str), st.integers()), max_size=3)),
    st.builds(lambda v: {"BS": v}, st.lists(st.binary(max_size=4), max_size=3)),
    st.builds(lambda v: {"NULL": v}, st.one_of(st.just(True), st.none())),
    st.builds(lambda v: {"BOOL": v}, st.booleans()),
)
# what the fast path hands back to moto: not a plain dict of AttributeValue's members, or a list member not a list
_odd_leaf: st.SearchStrategy[Any] = st.one_of(
    st.builds(lambda v: {"s": v}, _text),
    st.builds(lambda v: {"X": v}, _text),
    st.builds(lambda a, b: {"S": a, "N": b}, _text, st.integers().map(str)),
    st.builds(lambda v: {"SS": tuple(v)}, st.lists(_text, max_size=2)),
    _text,
)


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(_text, st.one_of(st.none(), children), max_size=4)),
        st.builds(lambda items: {"L": items}, st.lists(st.one_of(st.none(), children), max_size=4)),
    )


values = st.recursive(st.one_of(_wire_leaf, _wire_leaf, _odd_leaf), _nest, max_leaves=12)
items = st.dictionaries(st.text(min_size=1, max_size=5), values, max_size=5)


def _body(service: str, operation: str, result: Any) -> str:
    """The JSON body moto's serializer writes for ``result`` as its answer to ``operation`` (as
    ``ActionResult.execute_result`` builds the serializer for DynamoDB's handler)."""
    operation_model = get_service_model(service).operation_model(operation)
    picker = serialize.XFormedAttributePicker(response_transformers=BaseResponse.RESPONSE_KEY_PATH_TO_TRANSFORMER)
    serializer_class = serialize.get_serializer_class(service, "json")
    answer = serializer_class(operation_model=operation_model, pretty_print=False, value_picker=picker)
    return str(answer.serialize(result)["body"])


def _answers(item: dict[str, Any]) -> list[str]:
    return [
        _body("dynamodb", "GetItem", {"Item": item}),
        _body("dynamodb", "Query", {"Items": [item, item], "Count": 2, "ScannedCount": 2}),
        _body("dynamodbstreams", "GetRecords", {"Records": [{"eventName": "INSERT", "dynamodb": {"NewImage": item}}]}),
    ]


def _both(make: Callable[[], list[str]]) -> tuple[list[str], list[str]]:
    with moto_dynamodb.adapted(False):
        stock = make()
    with moto_dynamodb.adapted(True):
        adapted = make()
    return stock, adapted


@settings(max_examples=examples(300))
@given(item=items)
def test_an_answer_s_attribute_values_are_written_as_stock_moto_writes_them(item: dict[str, Any]) -> None:
    stock, adapted = _both(lambda: _answers(item))
    assert adapted == stock


def _picked(item: dict[str, Any]) -> tuple[str, list[str]]:
    """The GetItem answer's body and the keys moto's value picker was asked for while writing it (counted only
    while it is written: the adapter's install reads the picker's source, as it is, first)."""
    asked: list[str] = []
    stock_pick = serialize.AttributePicker.__call__

    def counting(self: Any, context: Any) -> Any:
        asked.append(context.key)
        return stock_pick(self, context)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serialize.AttributePicker, "__call__", counting)
        body = _body("dynamodb", "GetItem", {"Item": item})
    return body, asked


def test_a_large_item_s_values_are_written_without_moto_s_value_picker() -> None:
    # GIVEN an item of 1,000 strings in a list and 1,000 numbers in a map (a state item's partition keys)
    item = {
        "keys": {"L": [{"S": f"dt={i}"} for i in range(1_000)]},
        "by": {"M": {str(i): {"N": str(i)} for i in range(1_000)}},
    }
    # WHEN stock and adapted moto write its GetItem answer
    with moto_dynamodb.adapted(False):
        stock, stock_asked = _picked(item)
    with moto_dynamodb.adapted(True):
        adapted, adapted_asked = _picked(item)
    # THEN the same body, the adapted one asking the picker only for the answer's own members (Item,
    # ConsumedCapacity), stock moto for each of the ten members of each of the 2,002 attribute values
    assert adapted == stock
    assert sorted(adapted_asked) == ["ConsumedCapacity", "Item"]
    assert len(stock_asked) == 2 + 10 * 2_002
