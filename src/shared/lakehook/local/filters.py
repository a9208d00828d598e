"""Lambda event-filtering patterns (the FilterCriteria of an event source mapping), for the local runtime.

Implements the pattern language Lambda documents for filtering: a pattern is a nested object whose
leaves are lists of accepted values; a value is a literal or one of ``prefix``, ``suffix``,
``exists``, ``anything-but``, ``numeric`` and ``equals-ignore-case``. A record passes when any
filter matches (filters are OR'ed); a mapping without filters passes everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISSING = object()


def matches_any(record: dict[str, Any], patterns: list[dict[str, Any]]) -> bool:
    return not patterns or any(matches(record, p) for p in patterns)


def matches(value: Any, pattern: dict[str, Any]) -> bool:
    """Whether a record (a JSON object) matches one pattern."""
    if not isinstance(value, dict):
        return False
    for key, expected in pattern.items():
        actual = value.get(key, _MISSING)
        if isinstance(expected, dict):
            if actual is _MISSING or not matches(actual, expected):
                return False
        elif isinstance(expected, list):
            if not any(_leaf(actual, rule) for rule in expected):
                return False
        else:
            raise ValueError(f"filter pattern leaf for {key!r} must be a list, got {expected!r}")
    return True


def _leaf(actual: Any, rule: Any) -> bool:
    if isinstance(rule, dict):
        return _operator(actual, rule)
    if actual is _MISSING:
        return False
    if isinstance(actual, list):
        return rule in actual
    return bool(actual == rule)


def _operator(actual: Any, rule: dict[str, Any]) -> bool:
    """One ``{operator: argument}`` leaf: ``exists`` on any value, the others on a present one."""
    ((op, arg),) = rule.items()
    if op == "exists":
        return (actual is not _MISSING) is bool(arg)
    if actual is _MISSING:
        return False
    check = _OPERATORS.get(op)
    if check is None:
        raise ValueError(f"unsupported filter operator {op!r}")
    return check(actual, arg)


def _anything_but(actual: Any, arg: Any) -> bool:
    if isinstance(arg, dict) and "prefix" in arg:
        return not (isinstance(actual, str) and actual.startswith(arg["prefix"]))
    excluded = arg if isinstance(arg, list) else [arg]
    return actual not in excluded


def _numeric(actual: Any, conditions: list[Any]) -> bool:
    try:
        number = float(actual)
    except (TypeError, ValueError):
        return False
    checks = {"<": number.__lt__, "<=": number.__le__, "=": number.__eq__, ">": number.__gt__, ">=": number.__ge__}
    pairs = zip(conditions[::2], conditions[1::2], strict=True)
    return all(checks[op](float(bound)) for op, bound in pairs)


# the operators judged on a present value: actual, argument -> whether it matches
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "prefix": lambda actual, arg: isinstance(actual, str) and actual.startswith(arg),
    "suffix": lambda actual, arg: isinstance(actual, str) and actual.endswith(arg),
    "equals-ignore-case": lambda actual, arg: isinstance(actual, str) and actual.lower() == str(arg).lower(),
    "anything-but": _anything_but,
    "numeric": _numeric,
}
