"""Bounded JSON parsing: every request body goes through ``parse_json_body`` before any model sees it.

Python's ``json`` recurses once per nesting level (a deep body is a RecursionError) and ``int()`` refuses
more than 4300 digits (a ValueError): both would be a 500. So the depth is counted by a linear scan
before parsing, and each number literal is measured by the parser's hooks before it is converted.
Duplicate keys, NaN / Infinity and unpaired surrogates are refused too: a body means one thing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from lakehook.domain.errors import ValidationError
from lakehook.domain.limits import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS

# A JSON string, matched possessively (no backtracking: linear even on an unterminated string of escapes);
# the closing quote is optional so an unterminated string ends the scan instead of restarting it. Runs of
# plain characters are taken whole ("unrolled"): ten times faster than one alternation per character.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPEN = frozenset("[{")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

BODY = "body"
BODY_SUBJECT = "request body"  # how messages name the text, unless parse_json is told otherwise


class _Refused(Exception):
    """Raised from inside the parser's hooks; turned into a ValidationError outside it."""


def decode_utf8(data: bytes) -> str:
    """The body as text; a body that is not UTF-8 is a 400."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"request body is not UTF-8 (byte {exc.start} is invalid); send UTF-8 JSON", field=BODY
        ) from exc


def nesting_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest array/object nesting of JSON text, counting brackets outside strings.

    Stops counting (and answers ``limit + 1``) once the limit is passed. The count equals the depth the
    parser reaches for valid JSON, and bounds it for invalid JSON: the parser stops at the first error,
    and up to that point this scan has seen exactly the same brackets.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1
            if depth < 0:  # a closer without an opener: the parser stops here
                return deepest
    return deepest


def json_depth(value: Any) -> int:
    """The nesting depth of a parsed JSON value (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _integer(literal: str) -> int:
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_NUMBER_DIGITS:
        raise _Refused(f"request body has a number of {digits} digits; the limit is {MAX_NUMBER_DIGITS} digits")
    return int(literal)


def _float(literal: str) -> float:
    digits = sum(c.isdigit() for c in literal)
    if digits > MAX_NUMBER_DIGITS:
        raise _Refused(f"request body has a number of {digits} digits; the limit is {MAX_NUMBER_DIGITS} digits")
    value = float(literal)
    if math.isinf(value):
        raise _Refused(f"request body has a number out of range: {literal}")
    return value


def _constant(name: str) -> Any:
    raise _Refused(f"request body has {name}, which is not JSON; send a number or null")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Refused(f"request body has the key {key!r} twice in one object; send each key once")
        found[key] = value
    return found


def parse_json(text: str, subject: str = BODY_SUBJECT) -> Any:
    """Parse JSON text within the limits; anything else is a ValidationError naming what is wrong.

    ``subject`` names the text in messages (the API's "request body", the CLI's ``--json`` or a file)."""
    try:
        return _parse_json(text)
    except ValidationError as exc:
        if subject == BODY_SUBJECT:
            raise
        raise ValidationError(str(exc).replace(BODY_SUBJECT, subject, 1), field=exc.field) from exc


def _parse_json(text: str) -> Any:
    if not text.strip():
        raise ValidationError("request body is empty; expected JSON", field=BODY)
    if nesting_depth(text) > MAX_JSON_DEPTH:
        raise ValidationError(
            f"request body nests arrays/objects deeper than {MAX_JSON_DEPTH} levels (the limit)", field=BODY
        )
    try:
        value = json.loads(
            text, parse_int=_integer, parse_float=_float, parse_constant=_constant, object_pairs_hook=_object
        )
    except _Refused as exc:
        raise ValidationError(str(exc), field=BODY) from exc
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field=BODY
        ) from exc
    if _SURROGATE_ESCAPE.search(text):  # only an escape can smuggle a lone surrogate into valid UTF-8
        for string in _strings(value):
            try:
                string.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValidationError(
                    "request body has a string with an unpaired surrogate escape (\\ud800-\\udfff)", field=BODY
                ) from exc
    return value


def parse_json_body(data: bytes) -> Any:
    """Decode UTF-8 and parse within the limits (see ``parse_json``)."""
    return parse_json(decode_utf8(data))
