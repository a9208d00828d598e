"""The bounded JSON parser every request body goes through: one test per limit, and properties."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakehook.domain.errors import ValidationError
from lakehook.domain.json_input import json_depth, nesting_depth, parse_json, parse_json_body
from lakehook.domain.limits import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS
from tests.hypothesis_profiles import examples
from tests.work_budget import call_budget

REFUSAL_CALLS = 1_000  # calls (tests/work_budget.py) to refuse a body: none per character or nesting level


def refusal(data: bytes | str) -> str:
    with pytest.raises(ValidationError) as raised:
        parse_json_body(data if isinstance(data, bytes) else data.encode())
    assert raised.value.field == "body"
    return str(raised.value)


def deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


# --- depth ----------------------------------------------------------------------------------------


def test_nesting_at_the_limit_is_parsed_and_one_more_is_refused_naming_it() -> None:
    assert json_depth(parse_json(deep(MAX_JSON_DEPTH))) == MAX_JSON_DEPTH
    message = refusal(deep(MAX_JSON_DEPTH + 1))
    assert f"deeper than {MAX_JSON_DEPTH} levels" in message


def test_objects_count_like_arrays() -> None:
    body = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    assert "deeper than" in refusal(body)


@pytest.mark.parametrize("depth", [1000, 100_000, 1_000_000])
def test_very_deep_bodies_are_refused_quickly_never_a_recursion_error(depth: int) -> None:
    # a recursive parser raises RecursionError here; one with a raised limit makes a call per level (the budget)
    with call_budget(REFUSAL_CALLS):
        assert "deeper than" in refusal(deep(depth))
        assert "deeper than" in refusal("[" * depth)  # unclosed: the parser would recurse just the same


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"s": "[" * 1000 + '\\"' + "{" * 1000, "t": ["]]]"]})
    assert parse_json(text)["t"] == ["]]]"]


def test_an_unterminated_string_of_escapes_is_scanned_in_linear_time() -> None:
    # A regex that backtracks would try each quote again: quadratic in the body size, some 10^11 steps for this
    # body, which never finishes (the suite's timeout stops it); the linear scan takes milliseconds. No Python-level
    # work per character either (the budget).
    body = '["' + '\\"' * 400_000
    with call_budget(REFUSAL_CALLS):
        assert "not valid JSON" in refusal(body)


# --- numbers --------------------------------------------------------------------------------------


def test_a_number_of_the_limit_in_digits_is_parsed_and_one_more_digit_is_refused() -> None:
    assert parse_json("9" * MAX_NUMBER_DIGITS) == int("9" * MAX_NUMBER_DIGITS)
    assert parse_json("-" + "9" * MAX_NUMBER_DIGITS) == -int("9" * MAX_NUMBER_DIGITS)
    message = refusal("9" * (MAX_NUMBER_DIGITS + 1))
    assert f"{MAX_NUMBER_DIGITS + 1} digits; the limit is {MAX_NUMBER_DIGITS} digits" in message


@pytest.mark.parametrize("digits", [4301, 100_000])  # int() itself refuses more than 4300 digits (a ValueError)
def test_huge_integers_are_a_400_not_a_value_error(digits: int) -> None:
    assert "the limit is" in refusal('{"snapshotId": ' + "1" * digits + "}")


def test_long_floats_and_out_of_range_floats_are_refused() -> None:
    assert "the limit is" in refusal("0." + "1" * MAX_NUMBER_DIGITS)
    assert "out of range" in refusal("1e400")
    assert parse_json("1e-400") == 0.0  # underflows to zero: a value, if an odd one
    assert parse_json("2.5e3") == 2500.0


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(literal: str) -> None:
    assert f"has {literal}" in refusal('{"value": ' + literal + "}")


# --- text -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b'{"a": "\xff"}', b"\xc3\x28", b'{"a": "\xed\xa0\x80"}', b"\xfe\xff\x00{"])
def test_a_body_that_is_not_utf8_is_refused(data: bytes) -> None:
    assert "not UTF-8" in refusal(data)


def test_a_lone_surrogate_escape_is_refused_and_a_pair_is_a_character() -> None:
    assert "unpaired surrogate" in refusal('{"tag": "\\ud800"}')
    assert "unpaired surrogate" in refusal('{"\\udfff": 1}')
    assert parse_json('{"tag": "\\ud83d\\ude00"}') == {"tag": "\U0001f600"}


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_an_empty_body_is_refused(text: str) -> None:
    assert "empty" in refusal(text)


@pytest.mark.parametrize("text", ["{bad", "[1,]", "{'a': 1}", '{"a": 1} {"b": 2}', "\ufeff{}", '"\x01"'])
def test_invalid_json_is_refused_with_where(text: str) -> None:
    assert "not valid JSON" in refusal(text)


# --- duplicate keys -------------------------------------------------------------------------------


def test_a_duplicate_key_is_refused_naming_it_at_any_depth() -> None:
    assert "'snapshotId' twice" in refusal('{"snapshotId": 1, "snapshotId": 2}')
    assert "'k' twice" in refusal('{"events": [{"a": 1}, {"k": 1, "b": 2, "k": 1}]}')
    assert parse_json('[{"k": 1}, {"k": 2}]') == [{"k": 1}, {"k": 2}]  # one key per object is fine


# --- properties -----------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**MAX_NUMBER_DIGITS - 1), max_value=10**MAX_NUMBER_DIGITS - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=40,
)


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES, st.booleans())
def test_any_json_within_the_limits_parses_to_what_was_sent(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert nesting_depth(text) == json_depth(value)
    if json_depth(value) <= MAX_JSON_DEPTH:
        assert parse_json(text) == value


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}"\\,:0123456789.eE-+ntrufalse ', max_size=200).map(str.encode))
def test_any_bytes_parse_or_are_a_validation_error(data: bytes) -> None:
    try:
        parse_json_body(data)
    except ValidationError as exc:
        assert exc.field == "body"
