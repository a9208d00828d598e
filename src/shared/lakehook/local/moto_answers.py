"""moto's DynamoDB answers serialized without walking botocore's shape model for every attribute value.

moto (5.2.5) serializes an answer by walking the operation's output shape: for every ``AttributeValue`` of every
item it asks each of the shape's ten members (``S``, ``N``, ``B``, ``SS``, ``NS``, ``BS``, ``M``, ``L``, ``NULL``,
``BOOL``) through six alias providers, about 0.12 ms of CPU per attribute value. An answer carrying a state item
with 1,000 partition keys costs moto more than a second, most of an integration test's time
(``bench/test-suite.md``). The values it walks are already in wire form (``{"S": "x"}``, from moto's
``dynamo_to_dict`` or a stream record's ``to_json``): :func:`wire` builds the same JSON value directly, member by
member as moto's serializer would (strings through ``str``, blobs through the serializer's own base64, maps and lists
of attribute values recursively, booleans as they are), and hands anything else (a value that is not a plain dict of
those members, a list member that is not a list, a member of an unexpected type) back to moto's own code.

It applies only to the ``dynamodb`` and ``dynamodbstreams`` services' ``AttributeValue`` shape, with moto's default
value picker and no response transformer; :mod:`lakehook.local.moto_dynamodb` installs it with its other adaptations
and fingerprints every moto function whose behaviour it reproduces. A property test holds it to moto's own
serializer on generated attribute values (``tests/integration/test_moto_answers.py``).
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Any

SERVICES = frozenset({"dynamodb", "dynamodbstreams"})
SHAPE = "AttributeValue"
# the AttributeValue shape's members as botocore's model declares them (name -> how the member is written), in order
_MEMBERS: dict[str, tuple[str, str]] = {
    "S": ("string", "string"),
    "N": ("string", "string"),
    "B": ("blob", "blob"),
    "SS": ("list", "string"),
    "NS": ("list", "string"),
    "BS": ("list", "blob"),
    "M": ("map", SHAPE),
    "L": ("list", SHAPE),
    "NULL": ("boolean", "boolean"),
    "BOOL": ("boolean", "boolean"),
}
_NAMES = frozenset(_MEMBERS)
_EMPTY: list[Any] = [None, {}, []]  # what moto's JSON string serializer leaves as it is (anything else: str())


class _Stock:
    """The marker :func:`wire` answers when moto's own serializer must write the value."""


STOCK = _Stock()
_FITS = "_lakehook_answers_fit"  # on a serializer: whether its answer's attribute values may be written here
_checked_lock = threading.Lock()
_checked: dict[int, tuple[Any, bool]] = {}  # id(shape) -> (the shape, whether it is the AttributeValue shape known)


def applies(serializer: Any, shape: Any) -> bool:
    """Whether :func:`wire` may write values of ``shape`` for ``serializer`` (else moto's own code does): moto's
    JSON serializer of one of :data:`SERVICES`, its default value picker, and the AttributeValue shape above."""
    if shape.name != SHAPE:
        return False
    fits = serializer.__dict__.get(_FITS)  # one answer asks for each of its attribute values: decided once
    if fits is None:
        fits = _serializer_fits(serializer)
        serializer.__dict__[_FITS] = fits
    return bool(fits) and _known_shape(shape)


def _serializer_fits(serializer: Any) -> bool:
    from moto.core.serialize import JSONSerializer

    if type(serializer) is not JSONSerializer or serializer.service_model.service_name not in SERVICES:
        return False
    return _default_picker(serializer)


def _known_shape(shape: Any) -> bool:
    held = _checked.get(id(shape))
    if held is not None and held[0] is shape:
        return held[1]
    known = _shape_is_known(shape)
    with _checked_lock:
        _checked[id(shape)] = (shape, known)
    return known


def _shape_is_known(shape: Any) -> bool:
    """The shape has exactly the members above, in that order, of those types, and none renamed on the wire."""
    members = shape.members
    if list(members) != list(_MEMBERS) or shape.serialization.get("name") or shape.is_document_type:
        return False
    for name, member in members.items():
        kind, inner = _MEMBERS[name]
        member.parent = shape  # as moto's structure serializer sets it before reading the member
        if member.type_name != kind or member.serialization.get("name"):
            return False
        if kind == "list" and _inner_kind(member.member) != inner:
            return False
        if kind == "map" and (member.key.type_name != "string" or member.value.name != SHAPE):
            return False
    return True


def _inner_kind(shape: Any) -> str:
    return str(shape.name if shape.name == SHAPE else shape.type_name)


def _default_picker(serializer: Any) -> bool:
    from moto.core.serialize import DEFAULT_ALIAS_PROVIDERS, XFormedAttributePicker

    picker = serializer._value_picker
    return (
        type(picker) is XFormedAttributePicker
        and not picker.response_transformers
        and picker.alias_providers is DEFAULT_ALIAS_PROVIDERS
    )


def wire(serializer: Any, value: Any, shape: Any) -> Any:
    """``value`` (an AttributeValue in wire form) as moto's JSON serializer writes it for ``shape`` (one
    :func:`applies` to), or :data:`STOCK`."""
    if type(value) is not dict or not value.keys() <= _NAMES:
        return STOCK
    written: dict[str, Any] = {}
    for name, (kind, inner) in _MEMBERS.items():
        member = value.get(name)
        if member is None:
            continue
        one = _member(serializer, kind, inner, member, shape.members[name])
        if one is STOCK:
            return STOCK
        written[name] = one
    return written


def _member(serializer: Any, kind: str, inner: str, member: Any, member_shape: Any) -> Any:
    """One member (not None) of an AttributeValue as moto writes it, or :data:`STOCK`."""
    if kind == "string":
        return _string(member)
    if kind == "blob":
        return serializer._base64(member)
    if kind == "boolean":
        return member
    if kind == "map":
        if type(member) is not dict or not all(member):
            return STOCK  # moto writes a value under an empty key into the map itself, not under the key
        return {key: _nested(serializer, v, member_shape.value) for key, v in member.items() if v is not None}
    if type(member) is not list:
        return STOCK
    return _list(serializer, member, inner, member_shape.member)


def _string(value: Any) -> Any:
    if isinstance(value, Enum):
        value = value.value
    return str(value) if value not in _EMPTY else value


def _list(serializer: Any, values: list[Any], inner: str, item_shape: Any) -> list[Any]:
    if inner == "string":
        return [_string(v) for v in values]
    if inner == "blob":
        return [serializer._base64(v) for v in values]
    return [None if v is None else _nested(serializer, v, item_shape) for v in values]


def _nested(serializer: Any, value: Any, shape: Any) -> Any:
    """A list's or map's attribute value (not None): written here, or by moto's serializer where :func:`wire`
    declines (as moto writes a list's item or a map's value: under a key of its own, then taken out)."""
    written = wire(serializer, value, shape)
    if written is not STOCK:
        return written
    holder: dict[str, Any] = {}
    serializer._serialize(holder, value, shape, SHAPE)
    return holder[SHAPE]
